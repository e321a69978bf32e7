-- A critical section begins (see history.rs).
-- KEYS[1] inside hash of the product (member -> entry time, µs)
-- KEYS[2] run stats hash ("{strategy}|entries", "|overlaps", "|max_holders")
-- KEYS[3] list of the run's first overlaps (JSON, at most 20)
-- KEYS[4] set of the run's products
-- ARGV[1] member "{instance}:{n}", ARGV[2] strategy, ARGV[3] product,
-- ARGV[4] seconds the run's keys live
-- Returns how many sections are inside now, this one included.
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local others = redis.call('HKEYS', KEYS[1])
redis.call('HSET', KEYS[1], ARGV[1], now_us)
local holders = #others + 1
local s = ARGV[2]
redis.call('HINCRBY', KEYS[2], s .. '|entries', 1)
if holders > 1 then
  redis.call('HINCRBY', KEYS[2], s .. '|overlaps', 1)
  if redis.call('LLEN', KEYS[3]) < 20 then
    -- cjson writes numbers with 14 significant digits (1.7956143307258e+15
    -- for a time in µs): at_us is written by hand, as an exact integer.
    local rest = cjson.encode({ strategy = s, product = tonumber(ARGV[3]),
      entered = ARGV[1], inside = others })
    redis.call('RPUSH', KEYS[3],
      '{"at_us":' .. string.format('%.0f', now_us) .. ',' .. string.sub(rest, 2))
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
