-- Redlock extension on one node (the redlock_extend switch): extend the
-- key while it holds our token, or lock it anew where it is missing (a
-- node that restarted empty lost it: redsync's "extend or lock", its
-- PR #149). Someone else's token: refused.
-- KEYS[1] = lock key; ARGV[1] = our token; ARGV[2] = TTL in ms.
-- Returns 1 extended (or locked again), 0 refused.
local value = redis.call("GET", KEYS[1])
if value == ARGV[1] then
    return redis.call("PEXPIRE", KEYS[1], ARGV[2])
elseif not value then
    redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
    return 1
end
return 0
