-- redis-lua-stock, the "cancel" of TCC: give back what "try" reserved when
-- the order could not be persisted, or when the sweep found the
-- reservation stale with no order behind it. Only a reservation still on
-- record (and not newer than ARGV[4]) is given back, so a reservation is
-- never given back twice, and a fresh one of the same buyer is left alone.
-- KEYS[1] = stock:product:{id}, KEYS[2] = buyers:product:{id},
-- KEYS[3] = reservations:product:{id}
-- ARGV[1] = user id, ARGV[2] = quantity, ARGV[3] = reservation member,
-- ARGV[4] = newest reservation time (ms) to cancel
-- Returns 1 given back, 0 nothing to give back.
local reserved_at = redis.call("ZSCORE", KEYS[3], ARGV[3])
if not reserved_at or tonumber(reserved_at) > tonumber(ARGV[4]) then
    return 0
end
redis.call("ZREM", KEYS[3], ARGV[3])
-- No stock key: a reload (from the database) is due and will count it.
if redis.call("EXISTS", KEYS[1]) == 1 then
    redis.call("INCRBY", KEYS[1], ARGV[2])
end
redis.call("SREM", KEYS[2], ARGV[1])
return 1
