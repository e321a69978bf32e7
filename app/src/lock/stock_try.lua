-- redis-lua-stock, the "try" of TCC: check and reserve in one atomic step.
-- KEYS[1] = stock:product:{id}, KEYS[2] = buyers:product:{id}
-- ARGV[1] = user id, ARGV[2] = quantity
-- Returns the stock left (>= 0), or -1 stock not loaded, -2 already
-- purchased, -3 sold out.
local stock = redis.call("GET", KEYS[1])
if not stock then
    return -1
end
if redis.call("SISMEMBER", KEYS[2], ARGV[1]) == 1 then
    return -2
end
local quantity = tonumber(ARGV[2])
if tonumber(stock) < quantity then
    return -3
end
redis.call("SADD", KEYS[2], ARGV[1])
return redis.call("DECRBY", KEYS[1], quantity)
