-- Redlock extension on one node, as redsync extended before its PR #149
-- (the extend_held_only fault): only where the key still holds our token.
-- A node that restarted empty is never given the key back.
-- KEYS[1] = lock key; ARGV[1] = our token; ARGV[2] = TTL in ms.
-- Returns 1 extended, 0 refused (gone, or someone else's).
if redis.call("GET", KEYS[1]) == ARGV[1] then
    return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
