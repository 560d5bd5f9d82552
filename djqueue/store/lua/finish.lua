#!lua
-- A tracked job's end written at once as it leaves its working list: a failed job dropped
-- (retry: false, or a retry_in hook discarding it) ends 'dead' with its error. A tracked job
-- that ran ends with its batched acknowledgement in take.lua instead; untracked jobs never
-- come here, unless in a batch.
--
-- KEYS[1] = the working list. ARGV[1] = the job as stored there, ARGV[2] = the state, then
-- (field, value) pairs for the status hash (result, error_class, ...), then the status key
-- prefix. Returns {1, the bad keys met (bad_keys.lua)}, or {0} when the job had left the
-- working list already (pushed back at a shutdown: it runs again, and its status says
-- 'pending'). A unique job frees its lock (unique.lua). A job of a batch (batch.lua) counts a
-- failure there, and a death when it ends 'dead'; untracked jobs of a batch come here too.
--!include status
--!include unique
--!include batch
local status_prefix = table.remove(ARGV)
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then
  return {0}
end
unique_release(status_prefix, ARGV[1], 'end')
local job = status_job(ARGV[1])
if job then
  status_finished(status_prefix, job, ARGV[2], unpack(ARGV, 3, #ARGV))
end
local error_fields = {}
for i = 3, #ARGV - 1, 2 do error_fields[ARGV[i]] = ARGV[i + 1] end
batch_failed(status_prefix, ARGV[1], ARGV[2] == 'dead', error_fields['error_class'] or '',
  error_fields['error_message'] or '')
return {1, bad_keys}
