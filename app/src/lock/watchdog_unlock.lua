-- watchdog release: count one reentry down; on the last one delete the
-- lock and publish the releasing owner on its channel, so waiters wake at
-- once instead of polling (a process skips its own releases: it woke its
-- waiter already).
-- KEYS[1] = lock key; KEYS[2] = channel; ARGV[1] = lease in ms; ARGV[2] = owner field.
-- Returns 1 released, 0 still held (reentrant), -1 not ours.
if redis.call("TYPE", KEYS[1]).ok ~= "hash" or redis.call("HEXISTS", KEYS[1], ARGV[2]) == 0 then
    return -1
end
if redis.call("HINCRBY", KEYS[1], ARGV[2], -1) > 0 then
    redis.call("PEXPIRE", KEYS[1], ARGV[1])
    return 0
end
redis.call("DEL", KEYS[1])
redis.call("PUBLISH", KEYS[2], ARGV[2])
return 1
