#!lua flags=allow-oom
-- A tracked job taken by BLMOVE (an idle processor's wait, which runs no script) becomes
-- 'active'. A second round trip, on the idle path only: a crash between the two leaves the job
-- in the working list with the status 'pending', which is what it becomes again once pushed
-- back.
--
-- ARGV[1] = the job JSON, ARGV[2] = the process identity, ARGV[3] = the status key prefix.
-- Returns the bad keys met (bad_keys.lua).
--!include status
local status_prefix = table.remove(ARGV)
local job = status_job(ARGV[1])
if job then
  status_started(status_prefix, job, ARGV[2])
end
return bad_keys
