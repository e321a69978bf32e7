-- watchdog renewal: extend the lease only while the lock is still ours.
-- KEYS[1] = lock key; ARGV[1] = lease in ms; ARGV[2] = owner field.
-- Returns 1 renewed, 0 lost (gone, or someone else's).
if redis.call("TYPE", KEYS[1]).ok == "hash" and redis.call("HEXISTS", KEYS[1], ARGV[2]) == 1 then
    redis.call("PEXPIRE", KEYS[1], ARGV[1])
    return 1
end
return 0
