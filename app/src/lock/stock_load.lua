-- redis-lua-stock: load a product's stock and buyers from the database.
-- Reservations on record are dropped: the database's numbers count only
-- committed orders, so an unconfirmed reservation is in the loaded stock
-- already and must not be given back again by the sweep.
-- KEYS[1] = stock:product:{id}, KEYS[2] = buyers:product:{id},
-- KEYS[3] = reservations:product:{id}
-- ARGV[1] = stock, ARGV[2] = "1" to keep an existing stock key (and then
-- change nothing), "0" to replace everything, ARGV[3..] = buyer ids
-- Returns 1 loaded, 0 kept.
if ARGV[2] == "1" and redis.call("EXISTS", KEYS[1]) == 1 then
    return 0
end
redis.call("SET", KEYS[1], ARGV[1])
redis.call("DEL", KEYS[3])
if ARGV[2] ~= "1" then
    redis.call("DEL", KEYS[2])
end
for i = 3, #ARGV do
    redis.call("SADD", KEYS[2], ARGV[i])
end
return 1
