#!lua flags=allow-oom
-- Acknowledge finished jobs, push back unstarted ones, and take up to N jobs, in one round trip:
-- the worker's hot path. With N = 0 and one job to push back it requeues a single job.
--
-- KEYS = pairs (queue:NAME, its working list), always in the same order (a queue is named by
-- its pair number, 1-based), then the recoveries hash (see requeue_process.lua).
-- ARGV[1] = how many jobs to take (0: none).
-- ARGV[2] = the pair numbers in the order to try them, separated by spaces.
-- ARGV[3] = how many acknowledgements follow (A), ARGV[4] = how many ends of tracked jobs (E).
-- Then A pairs (pair number, job JSON): finished jobs, removed from their working list.
-- Then E groups (pair number, job JSON, state, result JSON, error class, error message):
-- tracked jobs that ran, removed from their working list with their end written in their
-- status (completed with the result, or cancelled), only if still there.
-- Then pairs (pair number, job JSON): unstarted jobs, moved from the working list back to the
-- front of their queue (only if still there, so never twice), newest first.
-- Then the status key prefix and this process's identity: a tracked job taken becomes 'active'
-- (its attempts counted, the process named), one pushed back 'pending' again. A unique job
-- (unique.lua) acknowledged or ended frees its lock; one taken frees it when it was pushed
-- with unique_until 'start'. A job of a batch (batch.lua) acknowledged counts as a success in
-- it, in the same step (an end 'cancelled' counts as a failure); a chain's step ended
-- 'completed' pushes the chain's next step, with its result when the chain passes results.
-- Returns {how many jobs were pushed back, the pair numbers of the queues whose key this call
-- checked, negative for one skipped because its key is not a list (space-separated), the
-- positions (1-based) among the jobs taken of
-- those entered in the recoveries hash (space-separated, usually ''), the bad keys met (see
-- bad_keys.lua: {key, problem, ...}, usually empty), then pair number, job JSON, ... per job
-- taken}. Jobs are looked up there only while the hash exists (after a crash), so the common
-- case costs one TYPE per call, not a lookup per job; a recoveries key that is not a hash is
-- skipped (no job counts as recovered) and noted.
--
-- A job moves from its queue to the working list atomically (LMOVE), so it is recorded as taken
-- by this process until acknowledged: a crash leaves it there, to be pushed back. A batch
-- empties the first non-empty queue of the order before it moves on to the next one.
-- A queue key of another type (a string where a list belongs) is checked before any write that
-- touches it and skipped, so one broken key cannot stop the healthy queues (Lua does not roll
-- back: an error after some moves would leave them done while the caller sees a failure).

--!include jid_of

--!include status
--!include unique
--!include batch
local identity = table.remove(ARGV)
local status_prefix = table.remove(ARGV)
local skipped = {}
local function usable(pair)
  if skipped[pair] == nil then
    skipped[pair] = not key_is(KEYS[2 * pair - 1], 'list', 'skipped: the other queues are served')
  end
  return not skipped[pair]
end

local recoveries = KEYS[#KEYS]
local first_end = 5 + 2 * tonumber(ARGV[3])
local first_back = first_end + 6 * tonumber(ARGV[4])
for i = 5, first_end - 1, 2 do
  if redis.call('LREM', KEYS[2 * tonumber(ARGV[i])], 1, ARGV[i + 1]) == 1 then
    unique_release(status_prefix, ARGV[i + 1], 'end')
    batch_gather(ARGV[i + 1])
  end
end
for i = first_end, first_back - 1, 6 do
  if redis.call('LREM', KEYS[2 * tonumber(ARGV[i])], 1, ARGV[i + 1]) == 1 then
    unique_release(status_prefix, ARGV[i + 1], 'end')
    local tracked = status_job(ARGV[i + 1])
    local state = ARGV[i + 2]
    if tracked then
      local fields = {}
      for n, name in ipairs({'result', 'error_class', 'error_message'}) do
        if ARGV[i + 2 + n] ~= '' then
          fields[#fields + 1] = name
          fields[#fields + 1] = ARGV[i + 2 + n]
        end
      end
      -- The end it wrote: cancelled when a stop was asked; the batch and the chain agree.
      state = status_finished(status_prefix, tracked, ARGV[i + 2], unpack(fields))
    end
    if state == 'cancelled' then
      batch_failed(status_prefix, ARGV[i + 1], false, ARGV[i + 4], ARGV[i + 5])
    else
      batch_gather(ARGV[i + 1])
      if state == 'completed' then
        chain_next(status_prefix, ARGV[i + 1], ARGV[i + 3])
      end
    end
  end
end
batch_count_successes(status_prefix)
local pushed = 0
for i = first_back, #ARGV, 2 do
  local pair = tonumber(ARGV[i])
  if usable(pair) and redis.call('LREM', KEYS[2 * pair], 1, ARGV[i + 1]) == 1 then
    redis.call('RPUSH', KEYS[2 * pair - 1], ARGV[i + 1])
    pushed = pushed + 1
    local tracked = status_job(ARGV[i + 1])
    if tracked then
      status_moving(status_prefix, tracked, 'pending', 0)
      status_attempt(status_prefix .. tracked['jid'], -1)
    end
  end
end

local wanted = tonumber(ARGV[1])
local taken = {pushed, '', '', bad_keys}
local recovered = {}
local _, recoveries_kind = key_is(recoveries, 'hash', 'skipped: no job counts as recovered')
local recovering = recoveries_kind == 'hash'
if wanted > 0 then
  local count = 0
  for pair_text in string.gmatch(ARGV[2], '%d+') do
    local pair = tonumber(pair_text)
    if usable(pair) then
      local queue, working = KEYS[2 * pair - 1], KEYS[2 * pair]
      while count < wanted do
        local job = redis.call('LMOVE', queue, working, 'RIGHT', 'LEFT')
        if not job then
          break
        end
        count = count + 1
        taken[2 * count + 3] = pair
        taken[2 * count + 4] = job
        local tracked = status_job(job)
        if tracked then
          status_started(status_prefix, tracked, identity)
        end
        unique_release(status_prefix, job, 'start')
        if recovering then
          local jid = jid_of(job)
          if jid and redis.call('HEXISTS', recoveries, jid) == 1 then
            recovered[#recovered + 1] = tostring(count)
          end
        end
      end
      if count >= wanted then
        break
      end
    end
  end
end
local checked = {}
for pair, skip in pairs(skipped) do
  checked[#checked + 1] = tostring(skip and -pair or pair)
end
taken[2] = table.concat(checked, ' ')
taken[3] = table.concat(recovered, ' ')
return taken
