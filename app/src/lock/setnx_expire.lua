-- setnx-expire-lua: SETNX and PEXPIRE inside one script, so no crash can
-- fall between them (000 scheme 3).
-- KEYS[1] = lock key; ARGV[1] = value; ARGV[2] = ttl in ms.
-- Returns 1 when the lock was taken, 0 when someone holds it.
if redis.call("SETNX", KEYS[1], ARGV[1]) == 1 then
    redis.call("PEXPIRE", KEYS[1], ARGV[2])
    return 1
end
return 0
