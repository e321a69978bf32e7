-- fenced: raise a counter that Redis lost to above the highest token the
-- database has seen, then hand out the next token — atomically, so two
-- seeders can never hand out the same token or a lower one.
-- KEYS[1] = fence:product:{id}; ARGV[1] = floor (products.fence_token)
-- Returns the new fencing token (> floor).
local current = tonumber(redis.call("GET", KEYS[1]) or "0")
if current < tonumber(ARGV[1]) then
    redis.call("SET", KEYS[1], ARGV[1])
end
return redis.call("INCR", KEYS[1])
