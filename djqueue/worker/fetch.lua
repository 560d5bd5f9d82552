-- Acknowledge the job just finished and fetch the next one, in one round trip.
--
-- KEYS[1] = working list holding the finished job (any key when there is none),
-- then pairs (queue:NAME, its working list) in the order to try them.
-- ARGV[1] = the finished job's JSON, or '' when there is nothing to acknowledge.
-- Returns {position of the queue in the pairs (1-based), job JSON}, or nil when all are empty.
--
-- The job moves from its queue to the working list atomically (LMOVE), so it is recorded as
-- taken by this process until acknowledged: a crash leaves it there, to be pushed back.

if ARGV[1] ~= '' then
  redis.call('LREM', KEYS[1], 1, ARGV[1])
end
for i = 2, #KEYS, 2 do
  local job = redis.call('LMOVE', KEYS[i], KEYS[i + 1], 'RIGHT', 'LEFT')
  if job then
    return {i / 2, job}
  end
end
return nil
