-- A critical section begins (see history.rs).
-- KEYS[1] inside hash of the product (member -> "{entry µs}|{strategy}")
-- KEYS[2] run stats hash ("{strategy}|entries", "|overlaps", "|max_holders";
--         "stale", "sections_dropped")
-- KEYS[3] list of the run's first overlaps (JSON, at most 20)
-- KEYS[4] set of the run's products
-- KEYS[5] set of the run's overlapping members (inside, and another was
--         inside with them at some moment)
-- ARGV[1] member "{instance}:{n}", ARGV[2] strategy, ARGV[3] product,
-- ARGV[4] seconds the run's keys live, ARGV[5] the stale bound in µs
-- Returns how many sections are inside now, this one included.
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local bound = tonumber(ARGV[5])
-- Members inside for longer than the bound are taken for sections whose
-- exit was lost: dropped, counted as stale, not counted as holders.
local others = {}
local stale = 0
local inside = redis.call('HGETALL', KEYS[1])
for i = 1, #inside, 2 do
  local since = tonumber(string.match(inside[i + 1], '^%d+'))
  if since and now_us - since > bound then
    redis.call('HDEL', KEYS[1], inside[i])
    redis.call('SREM', KEYS[5], inside[i])
    stale = stale + 1
  else
    others[#others + 1] = inside[i]
  end
end
if stale > 0 then
  redis.call('HINCRBY', KEYS[2], 'stale', stale)
end
-- The entry time is written by hand, as an exact integer (cjson and
-- tostring write 14 significant digits: 1.7956143307258e+15).
local now_text = string.format('%.0f', now_us)
redis.call('HSET', KEYS[1], ARGV[1], now_text .. '|' .. ARGV[2])
local holders = #others + 1
local s = ARGV[2]
redis.call('HINCRBY', KEYS[2], s .. '|entries', 1)
if holders > 1 then
  redis.call('HINCRBY', KEYS[2], s .. '|overlaps', 1)
  -- Both sides of the overlap: this section and every one inside.
  redis.call('SADD', KEYS[5], ARGV[1])
  for _, other in ipairs(others) do
    redis.call('SADD', KEYS[5], other)
  end
  redis.call('EXPIRE', KEYS[5], ARGV[4])
  if redis.call('LLEN', KEYS[3]) < 20 then
    local rest = cjson.encode({ strategy = s, product = tonumber(ARGV[3]),
      entered = ARGV[1], inside = others })
    redis.call('RPUSH', KEYS[3], '{"at_us":' .. now_text .. ',' .. string.sub(rest, 2))
    redis.call('EXPIRE', KEYS[3], ARGV[4])
  end
end
local max = tonumber(redis.call('HGET', KEYS[2], s .. '|max_holders') or '0')
if holders > max then
  redis.call('HSET', KEYS[2], s .. '|max_holders', holders)
end
redis.call('SADD', KEYS[4], ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[4])
redis.call('EXPIRE', KEYS[4], ARGV[4])
return holders
