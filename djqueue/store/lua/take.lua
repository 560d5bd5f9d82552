-- Acknowledge finished jobs, push back unstarted ones, and take up to N jobs, in one round trip:
-- the worker's hot path. With N = 0 and one job to push back it requeues a single job.
--
-- KEYS = pairs (queue:NAME, its working list), always in the same order; a queue is named by
-- its pair number (1-based).
-- ARGV[1] = how many jobs to take (0: none).
-- ARGV[2] = the pair numbers in the order to try them, separated by spaces.
-- ARGV[3] = how many acknowledgements follow (A).
-- Then A pairs (pair number, job JSON): finished jobs, removed from their working list.
-- Then pairs (pair number, job JSON): unstarted jobs, moved from the working list back to the
-- front of their queue (only if still there, so never twice), newest first.
-- Returns {how many jobs were pushed back, then pair number, job JSON, ... for each job taken}.
--
-- A job moves from its queue to the working list atomically (LMOVE), so it is recorded as taken
-- by this process until acknowledged: a crash leaves it there, to be pushed back. A batch
-- empties the first non-empty queue of the order before it moves on to the next one.

local first_back = 4 + 2 * tonumber(ARGV[3])
for i = 4, first_back - 1, 2 do
  redis.call('LREM', KEYS[2 * tonumber(ARGV[i])], 1, ARGV[i + 1])
end
local pushed = 0
for i = first_back, #ARGV, 2 do
  local pair = 2 * tonumber(ARGV[i])
  if redis.call('LREM', KEYS[pair], 1, ARGV[i + 1]) == 1 then
    redis.call('RPUSH', KEYS[pair - 1], ARGV[i + 1])
    pushed = pushed + 1
  end
end

local wanted = tonumber(ARGV[1])
local taken = {pushed}
if wanted > 0 then
  local count = 0
  for pair in string.gmatch(ARGV[2], '%d+') do
    local queue, working = KEYS[2 * pair - 1], KEYS[2 * pair]
    while count < wanted do
      local job = redis.call('LMOVE', queue, working, 'RIGHT', 'LEFT')
      if not job then
        break
      end
      count = count + 1
      taken[2 * count] = tonumber(pair)
      taken[2 * count + 1] = job
    end
    if count >= wanted then
      break
    end
  end
end
return taken
