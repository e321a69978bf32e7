-- A critical section ends (see history.rs).
-- KEYS[1] inside hash of the product (member -> "{entry µs}|{strategy}")
-- KEYS[2] run stats hash (counts "sections_dropped" here)
-- KEYS[3] list of the run's finished sections (JSON, oldest exit first)
-- KEYS[4] set of the run's overlapping members
-- ARGV[1] the member that entered, ARGV[2] product, ARGV[3] seconds the
-- run's keys live, ARGV[4] how many finished sections the list keeps,
-- ARGV[5] "1" for a late exit (the retry of one that failed: the member
-- leaves, but its true exit time is unknown, so no record is written)
-- Returns 1 when the member was inside, 0 when it was not (dropped as
-- stale, forgotten, or its entry never reached the arbiter).
local entry = redis.call('HGET', KEYS[1], ARGV[1])
if not entry then
  return 0
end
redis.call('HDEL', KEYS[1], ARGV[1])
local overlap = redis.call('SREM', KEYS[4], ARGV[1]) == 1
if ARGV[5] == '1' then
  return 1
end
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local since, strategy = string.match(entry, '^(%d+)|(.*)$')
local instance = string.match(ARGV[1], '^(.*):[^:]*$') or ARGV[1]
-- Times written by hand, as exact integers (see history_enter.lua).
local record = '{"instance":' .. cjson.encode(instance)
  .. ',"member":' .. cjson.encode(ARGV[1])
  .. ',"strategy":' .. cjson.encode(strategy or '')
  .. ',"product":' .. string.format('%d', tonumber(ARGV[2]))
  .. ',"entered_us":' .. (since or '0')
  .. ',"exited_us":' .. string.format('%.0f', now_us)
  .. ',"overlap":' .. tostring(overlap) .. '}'
local kept = redis.call('RPUSH', KEYS[3], record)
local cap = tonumber(ARGV[4])
if kept > cap then
  redis.call('LTRIM', KEYS[3], kept - cap, -1)
  redis.call('HINCRBY', KEYS[2], 'sections_dropped', kept - cap)
end
redis.call('EXPIRE', KEYS[3], ARGV[3])
return 1
