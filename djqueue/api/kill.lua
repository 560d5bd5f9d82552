-- Move sorted-set entries to the dead set, then trim it as a worker does when a job dies:
-- older than the dead timeout goes, and at most dead_max_jobs are kept (the newest).
-- KEYS[1] = the sorted set the entries are in, KEYS[2] = the dead set.
-- ARGV[1] = now (the score of death), ARGV[2] = the newest score dropped (now - dead_timeout), ARGV[3] = the most
-- jobs kept, ARGV[4..] = the members as stored. Returns how many entries were moved.
local moved = 0
for i = 4, #ARGV do
  if redis.call('ZREM', KEYS[1], ARGV[i]) == 1 then
    redis.call('ZADD', KEYS[2], ARGV[1], ARGV[i])
    moved = moved + 1
  end
end
if moved > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[2])
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -(tonumber(ARGV[3]) + 1))
end
return moved
