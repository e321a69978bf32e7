-- redis-lua-stock, after the "confirm" committed the order: forget the
-- reservation. If it is gone already — the sweep judged it stale and gave
-- the unit back, or a reload from the database dropped it — take the unit
-- again: the order exists, so the unit is sold. (This can overcount a unit
-- a reload already counted — an undersell — but never hands it out twice.)
-- KEYS[1] = stock:product:{id}, KEYS[2] = buyers:product:{id},
-- KEYS[3] = reservations:product:{id}
-- ARGV[1] = user id, ARGV[2] = quantity, ARGV[3] = reservation member
-- Returns 1 forgotten, 0 taken again, -1 no stock key (the reload counts it).
if redis.call("ZREM", KEYS[3], ARGV[3]) == 1 then
    return 1
end
if redis.call("EXISTS", KEYS[1]) == 0 then
    return -1
end
redis.call("SADD", KEYS[2], ARGV[1])
redis.call("DECRBY", KEYS[1], ARGV[2])
return 0
