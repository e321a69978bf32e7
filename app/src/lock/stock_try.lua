-- redis-lua-stock, the "try" of TCC: check and reserve in one atomic step,
-- and record the reservation with its time so a sweep can give it back if
-- its confirm never comes (a crash between try and confirm).
-- KEYS[1] = stock:product:{id}, KEYS[2] = buyers:product:{id},
-- KEYS[3] = reservations:product:{id} (sorted set: member -> ms)
-- ARGV[1] = user id, ARGV[2] = quantity, ARGV[3] = reservation member
-- ("{user}:{quantity}")
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
-- Redis's own clock, so every replica's reservations share one timeline.
local now = redis.call("TIME")
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call("ZADD", KEYS[3], now_ms, ARGV[3])
redis.call("SADD", KEYS[2], ARGV[1])
return redis.call("DECRBY", KEYS[1], quantity)
