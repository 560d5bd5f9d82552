-- Move sorted-set entries to their queues, atomically per entry: an entry that is no longer in
-- the set (another admin clicked first, or the poller moved it) is not pushed, so two "retry
-- now" clicks never push a job twice, and a job is never removed without being pushed.
-- KEYS[1] = the sorted set, KEYS[2] = the queues set, KEYS[2 + n] = the queue of entry n.
-- ARGV = for each entry n: the member as stored, the queue's name, the job JSON to push.
-- Returns how many entries were moved.
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
