-- redis-lua-stock, the "cancel" of TCC: give back what "try" reserved when
-- the order could not be persisted.
-- KEYS[1] = stock:product:{id}, KEYS[2] = buyers:product:{id}
-- ARGV[1] = user id, ARGV[2] = quantity
redis.call("INCRBY", KEYS[1], ARGV[2])
redis.call("SREM", KEYS[2], ARGV[1])
return 1
