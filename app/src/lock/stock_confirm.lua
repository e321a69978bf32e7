-- redis-lua-stock, after the "confirm" committed the orders: forget their
-- reservations (one call per product for a whole batch of orders). If one
-- is gone already — the sweep judged it stale and gave the unit back, or a
-- reload from the database dropped it — take the unit again when it is
-- still there: the order exists, so the unit is sold. (This can overcount
-- a unit a reload already counted — an undersell — but never hands it out
-- twice.) When the stock left is below the order's quantity, the unit went
-- to another buyer meanwhile: nothing is taken (the stock never goes below
-- 0) and the caller undoes the order.
-- KEYS[1] = stock:product:{id}, KEYS[2] = buyers:product:{id},
-- KEYS[3] = reservations:product:{id}
-- ARGV = user id, quantity, reservation member — one triple per order
-- Returns one code per order, in order: 0 forgotten, 1 taken again,
-- 2 conflict (gone and not enough stock left: nothing changed), 3 no stock
-- key (the reload from the database counts the order).
local codes = {}
for i = 1, #ARGV, 3 do
    local code = 0
    if redis.call("ZREM", KEYS[3], ARGV[i + 2]) == 0 then
        local stock = redis.call("GET", KEYS[1])
        if not stock then
            code = 3
        elseif tonumber(stock) < tonumber(ARGV[i + 1]) then
            code = 2
        else
            redis.call("SADD", KEYS[2], ARGV[i])
            redis.call("DECRBY", KEYS[1], ARGV[i + 1])
            code = 1
        end
    end
    codes[#codes + 1] = code
end
return codes
