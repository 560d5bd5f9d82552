#!lua
-- A failed job to the retry set, out of the working list that held it, in one step.
--
-- KEYS[1] = the retry set, KEYS[2] = the working list.
-- ARGV[1] = the job as stored in the working list, ARGV[2] = its JSON with the failure
-- recorded, ARGV[3] = when to try again (epoch seconds), ARGV[4] = the retry set's tally
-- (tally.lua), ARGV[5] = the status key prefix (a
-- tracked job's status becomes 'retry', with its error and the time of the next try).
-- A tracked job whose status carries a cancel request is left where it is: {2} (the caller
-- ends it, as cancelled). Returns {1}, or {0} when the job was no longer in the working list: it was pushed back to
-- its queue meanwhile (and runs again from there), or this is a second try of a call whose
-- reply was lost. Either way the job is in exactly one place. {-1, bad keys} when the retry
-- key is not a sorted set: nothing is done (the caller buries the job instead), since a
-- ZADD failing after the LREM would lose it. A job of a batch counts its failure there
-- (batch.lua).

--!include status
--!include batch
--!include tally
local status_prefix = table.remove(ARGV)
local counted = table.remove(ARGV)
if not key_is(KEYS[1], 'zset', 'skipped: failed jobs go to the dead set') then
  return {-1, bad_keys}
end
local job = status_job(ARGV[2])
if job and status_stop_asked(status_prefix, job) then
  return {2, bad_keys}
end
if redis.call('LREM', KEYS[2], 1, ARGV[1]) == 1 then
  tally_zadd(counted, KEYS[1], ARGV[3], ARGV[2])
  if job then
    status_failed(status_prefix, job, 'retry', tonumber(ARGV[3]) - tonumber(redis.call('TIME')[1]),
      'retry_at', ARGV[3])
  end
  batch_failed(status_prefix, ARGV[2], false)
  return {1, bad_keys}
end
return {0, bad_keys}
