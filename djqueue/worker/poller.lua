-- Move due jobs from the schedule or retry set into their queues, atomically per job.
--
-- KEYS[1] = the sorted set (schedule or retry), KEYS[2] = the queues set, KEYS[3] = dead,
-- then one key per job: its queue:NAME (unused for a malformed job).
-- ARGV[1] = now (epoch seconds), then per job three values: the member as stored, the JSON to
-- push (with enqueued_at set), and the queue NAME ('' for a malformed member, which goes to
-- the dead set with its text kept).
-- Returns the number of jobs moved.
--
-- ZREM decides: only the process whose ZREM removed the member pushes it, so two pollers
-- working on the same due jobs never push one twice.

local moved = 0
for j = 4, #KEYS do
  local a = 2 + (j - 4) * 3
  if redis.call('ZREM', KEYS[1], ARGV[a]) == 1 then
    if ARGV[a + 2] == '' then
      redis.call('ZADD', KEYS[3], ARGV[1], ARGV[a])
    else
      redis.call('SADD', KEYS[2], ARGV[a + 2])
      redis.call('LPUSH', KEYS[j], ARGV[a + 1])
    end
    moved = moved + 1
  end
end
return moved
