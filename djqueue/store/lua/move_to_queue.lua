#!lua flags=allow-oom
-- Move entries of a sorted set (schedule, retry, dead) to their queues: the poller moving due
-- jobs, and "retry now" / "add to queue" from the API and the admin pages.
--
-- KEYS[1] = the sorted set, KEYS[2] = the queues set, KEYS[2 + n] = the queue of entry n.
-- ARGV = for each entry n: the member as stored, the queue's name, the job JSON to push.
-- Then the set's tally ('' for none; tally.lua), then the status key prefix (a tracked job's
-- status becomes 'pending').
-- A job naming its concurrency limiters goes to the parked list of one without room instead
-- of its queue (admission.lua); it counts as moved.
-- Returns {how many entries were moved, how many stayed because their queue key is not a list,
-- the bad keys met (bad_keys.lua)}. A queues key that is not a set is not written (the jobs
-- still move: a SADD failing after the ZREM would lose the job).
--
-- ZREM decides: an entry that is no longer in the set (another caller moved it first) is not
-- pushed, so two pollers, two admins, or an admin and the poller never push one job twice,
-- and no crash can lose a job between the removal and the push.

local function is_list(key)
  local kind = redis.call('TYPE', key)['ok']
  return kind == 'list' or kind == 'none'
end

--!include status
--!include admission
--!include tally
local status_prefix = table.remove(ARGV)
local counted = table.remove(ARGV)
local moved, stuck = 0, 0
local listing = key_is(KEYS[2], 'set', 'skipped: queues are not listed there')
for n = 1, #ARGV / 3 do
  local member, queue, job = ARGV[3 * n - 2], ARGV[3 * n - 1], ARGV[3 * n]
  -- A queue key that is not a list keeps its entry in the set (Lua would not roll back a
  -- removal whose push failed).
  if not is_list(KEYS[2 + n]) then
    if redis.call('ZSCORE', KEYS[1], member) then
      stuck = stuck + 1
    end
  elseif tally_removed(counted, KEYS[1], member) then
    if listing then
      redis.call('SADD', KEYS[2], queue)
    end
    if admit(job, status_prefix) then
      redis.call('LPUSH', KEYS[2 + n], job)
    end
    local tracked = status_job(job)
    if tracked then
      status_rerun(status_prefix, tracked)
      status_moving(status_prefix, tracked, 'pending', 0,
        'enqueued_at', status_text(tracked['enqueued_at']))
    end
    moved = moved + 1
  end
end
return {moved, stuck, bad_keys}
