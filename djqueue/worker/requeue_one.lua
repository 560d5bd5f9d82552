-- Push one job from a working list back to the front of its queue, if it is still there.
--
-- KEYS[1] = working list, KEYS[2] = queue:NAME; ARGV[1] = job JSON.
-- Returns 1 when the job was pushed back, 0 when it was no longer in the working list (already
-- acknowledged, or pushed back by someone else), so a job is never pushed back twice.

if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 1 then
  redis.call('RPUSH', KEYS[2], ARGV[1])
  return 1
end
return 0
