-- watchdog acquire (Redisson's tryLockInnerAsync, rebuilt): a hash lock
-- whose field is the owner and whose value is the reentry count.
-- KEYS[1] = lock key; ARGV[1] = lease in ms; ARGV[2] = owner field.
-- Returns {1, 0} when acquired (or re-entered), {0, pttl} when held by
-- someone else (pttl -1: a foreign key without expiry).
local kind = redis.call("TYPE", KEYS[1]).ok
if kind == "none" or (kind == "hash" and redis.call("HEXISTS", KEYS[1], ARGV[2]) == 1) then
    redis.call("HINCRBY", KEYS[1], ARGV[2], 1)
    redis.call("PEXPIRE", KEYS[1], ARGV[1])
    return {1, 0}
end
return {0, redis.call("PTTL", KEYS[1])}
