-- redis-lua-stock, after the "confirm" committed the orders: forget their
-- reservations (one call per product for a whole batch of orders). If one
-- is gone already — the sweep judged it stale and gave the unit back, or a
-- reload from the database dropped it — take the unit again: the order
-- exists, so the unit is sold. (This can overcount a unit a reload already
-- counted — an undersell — but never hands it out twice.)
-- KEYS[1] = stock:product:{id}, KEYS[2] = buyers:product:{id},
-- KEYS[3] = reservations:product:{id}
-- ARGV = user id, quantity, reservation member — one triple per order
-- Returns how many units were taken again (0: every reservation was
-- forgotten), or -1 no stock key (the reload counts them).
local taken = 0
for i = 1, #ARGV, 3 do
    if redis.call("ZREM", KEYS[3], ARGV[i + 2]) == 0 then
        if redis.call("EXISTS", KEYS[1]) == 0 then
            return -1
        end
        redis.call("SADD", KEYS[2], ARGV[i])
        redis.call("DECRBY", KEYS[1], ARGV[i + 1])
        taken = taken + 1
    end
end
return taken
