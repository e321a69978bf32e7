-- Drop the sections a dead replica left inside (see history.rs).
-- KEYS[1] set of the run's products, KEYS[2] set of the run's overlapping
-- members; ARGV[1] prefix of the inside hashes, ARGV[2] the instance's
-- member prefix "{instance}:". Returns how many.
local removed = 0
for _, product in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local key = ARGV[1] .. product
  for _, member in ipairs(redis.call('HKEYS', key)) do
    if string.sub(member, 1, #ARGV[2]) == ARGV[2] then
      removed = removed + redis.call('HDEL', key, member)
      redis.call('SREM', KEYS[2], member)
    end
  end
end
return removed
