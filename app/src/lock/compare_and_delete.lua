-- Release a token lock: delete KEYS[1] only if it still holds our token.
-- GET and DEL run as one step inside Redis, so no other client can take the
-- lock between the check and the delete (the race of seed 004 v4).
-- KEYS[1] = lock key, ARGV[1] = our token. Returns 1 if deleted, 0 if not ours.
if redis.call("GET", KEYS[1]) == ARGV[1] then
    return redis.call("DEL", KEYS[1])
else
    return 0
end
