#!lua
-- A tracked job's end written at once as it leaves its working list: a failed job dropped
-- (retry: false, or a retry_in hook discarding it) ends 'dead' with its error. A tracked job
-- that ran ends with its batched acknowledgement in take.lua instead; untracked jobs never
-- come here.
--
-- KEYS[1] = the working list. ARGV[1] = the job as stored there, ARGV[2] = the state, then
-- (field, value) pairs for the status hash (result, error_class, ...), then the status key
-- prefix. Returns {1, the bad keys met (bad_keys.lua)}, or {0} when the job had left the
-- working list already (pushed back at a shutdown: it runs again, and its status says
-- 'pending'). A unique job frees its lock (unique.lua).
--!include status
--!include unique
local status_prefix = table.remove(ARGV)
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then
  return {0}
end
unique_release(status_prefix, ARGV[1], 'end')
local job = status_job(ARGV[1])
if job then
  status_finished(status_prefix, job, ARGV[2], unpack(ARGV, 3, #ARGV))
end
return {1, bad_keys}
