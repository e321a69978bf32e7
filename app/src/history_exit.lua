-- A critical section ends (see history.rs). KEYS[1] inside hash of the
-- product, ARGV[1] the member that entered. Returns 1 when it was inside.
return redis.call('HDEL', KEYS[1], ARGV[1])
