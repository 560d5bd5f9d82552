#!lua
-- Bury jobs in the dead set, then trim it: the one way anything reaches `dead`.
--
-- KEYS[1] = the dead set, KEYS[2] = where the jobs are now (unused when ARGV[1] is 'none').
-- ARGV[1] = the kind of KEYS[2]: 'list' (a working list or a queue: LREM), 'zset' (schedule
-- or retry: ZREM), 'none' (the jobs are in no key yet).
-- ARGV[2] = now, the score of death; ARGV[3] = the newest score the trim drops
-- (now - dead_timeout); ARGV[4] = the most jobs the set keeps.
-- Then pairs (the member as stored in KEYS[2], the JSON to bury), then the dead set's tally
-- and KEYS[2]'s ('' for none; tally.lua), then the status key prefix
-- (a tracked job's status becomes 'dead', with its error, and keeps it for its retention).
-- Returns {how many were buried, the bad keys met}. With no pairs, the call only trims the
-- set. A dead key that is not a sorted set buries nothing: the jobs stay where they are (a
-- ZADD failing after their removal would lose them). A tracked job asked to stop while it ran
-- leaves its working list without being buried: it ends cancelled. A unique job buried (or
-- ending cancelled) frees its lock (unique.lua); a job of a batch counts its death there
-- (batch.lua).
--
-- A job is buried only if this call removed it from its source, so two callers racing (two
-- admins, an admin and the poller, a retried call whose first reply was lost) bury it once.
-- The trim drops what is older than the dead timeout, then all but the newest jobs.

--!include status
--!include unique
--!include batch
--!include tally
local status_prefix = table.remove(ARGV)
local source_counted = table.remove(ARGV)
local counted = table.remove(ARGV)
local kind, now = ARGV[1], ARGV[2]
local buried = 0
if not key_is(KEYS[1], 'zset', 'skipped: jobs to bury stay where they are') then
  return {0, bad_keys}
end
for i = 5, #ARGV, 2 do
  local removed = 1
  if kind == 'list' then
    removed = redis.call('LREM', KEYS[2], 1, ARGV[i])
  elseif kind == 'zset' then
    removed = tally_removed(source_counted, KEYS[2], ARGV[i]) and 1 or 0
  end
  if removed == 1 then
    unique_release(status_prefix, ARGV[i + 1], 'end')
    local job = status_job(ARGV[i + 1])
    -- A job asked to stop while it ran (its retries used up, a poison job) stays out of
    -- `dead`: status_finished ends it cancelled with its error, as `cancel` answered.
    if not (job and status_stop_asked(status_prefix, job)) then
      tally_zadd(counted, KEYS[1], now, ARGV[i + 1])
      buried = buried + 1
    end
    if job then
      status_failed(status_prefix, job, 'dead', 0)
    end
    batch_failed(status_prefix, ARGV[i + 1], true)
  end
end
if buried > 0 or #ARGV == 4 then
  tally_range(counted, KEYS[1], '-inf', ARGV[3], 'BYSCORE')
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
  tally_range(counted, KEYS[1], 0, -(tonumber(ARGV[4]) + 1))
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(tonumber(ARGV[4]) + 1))
end
return {buried, bad_keys}
