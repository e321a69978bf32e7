-- redlock with check_revision: one node's vote and its fencing counter in
-- one step. The attempt Kleppmann's "How to do distributed locking" argues
-- cannot work: every node keeps its own counter, the holder's token is the
-- largest its majority returned. A node that restarts without persistence
-- comes back with its counter at 0; nodes that never grant together drift
-- apart; the token then goes backwards.
-- KEYS[1] = lock:product:{id}, KEYS[2] = fence:product:{id}
-- ARGV[1] = our token, ARGV[2] = TTL in ms
-- Returns this node's counter after its INCR when the lock was set, nil when held.
if not redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
    return false
end
return redis.call("INCR", KEYS[2])
