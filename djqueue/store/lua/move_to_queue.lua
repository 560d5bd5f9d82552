-- Move entries of a sorted set (schedule, retry, dead) to their queues: the poller moving due
-- jobs, and "retry now" / "add to queue" from the API and the admin pages.
--
-- KEYS[1] = the sorted set, KEYS[2] = the queues set, KEYS[2 + n] = the queue of entry n.
-- ARGV = for each entry n: the member as stored, the queue's name, the job JSON to push.
-- Returns how many entries were moved.
--
-- ZREM decides: an entry that is no longer in the set (another caller moved it first) is not
-- pushed, so two pollers, two admins, or an admin and the poller never push one job twice,
-- and no crash can lose a job between the removal and the push.

local moved = 0
for n = 1, #ARGV / 3 do
  local member, queue, job = ARGV[3 * n - 2], ARGV[3 * n - 1], ARGV[3 * n]
  if redis.call('ZREM', KEYS[1], member) == 1 then
    redis.call('SADD', KEYS[2], queue)
    redis.call('LPUSH', KEYS[2 + n], job)
    moved = moved + 1
  end
end
return moved
