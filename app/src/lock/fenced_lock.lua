-- fenced acquire: the lock and its fencing token in one atomic step, so no
-- holder can be delayed between SET NX and INCR and come out with a larger
-- token than the holder after it.
-- KEYS[1] = lock:product:{id}, KEYS[2] = fence:product:{id}
-- ARGV[1] = our token, ARGV[2] = TTL in ms
-- Returns {fencing token, fresh} when acquired — fresh = 1 when the counter
-- did not exist (Redis lost it, or a reset cleared it): the caller must
-- raise it above the database's fence_token — or nil when held.
if not redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
    return false
end
local fresh = 0
if redis.call("EXISTS", KEYS[2]) == 0 then
    fresh = 1
end
return {redis.call("INCR", KEYS[2]), fresh}
