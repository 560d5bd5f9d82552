#!lua
-- A failed job to the retry set, out of the working list that held it, in one step.
--
-- KEYS[1] = the retry set, KEYS[2] = the working list.
-- ARGV[1] = the job as stored in the working list, ARGV[2] = its JSON with the failure
-- recorded, ARGV[3] = when to try again (epoch seconds), ARGV[4] = the status key prefix (a
-- tracked job's status becomes 'retry', with its error and the time of the next try).
-- Returns 1, or 0 when the job was no longer in the working list: it was pushed back to its
-- queue meanwhile (and runs again from there), or this is a second try of a call whose reply
-- was lost. Either way the job is in exactly one place.

--!include status
local status_prefix = table.remove(ARGV)
if redis.call('LREM', KEYS[2], 1, ARGV[1]) == 1 then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
  local job = status_job(ARGV[2])
  if job then
    status_failed(status_prefix, job, 'retry', tonumber(ARGV[3]) - tonumber(redis.call('TIME')[1]),
      'retry_at', ARGV[3])
  end
  return 1
end
return 0
