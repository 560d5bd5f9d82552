#!lua flags=allow-oom
-- A tracked job, or a unique job that lets go of its lock at its start, taken by BLMOVE (an idle processor's wait, which runs no script) becomes
-- 'active'. A second round trip, on the idle path only: a crash between the two leaves the job
-- in the working list with the status 'pending', which is what it becomes again once pushed
-- back.
--
-- A unique job pushed with unique_until 'start' frees its lock here (unique.lua), as take.lua
-- does for the jobs it takes.
--
-- ARGV[1] = the job JSON, ARGV[2] = the process identity, ARGV[3] = the status key prefix.
-- Returns the bad keys met (bad_keys.lua).
--!include status
--!include unique
local status_prefix = table.remove(ARGV)
local job = status_job(ARGV[1])
if job then
  status_started(status_prefix, job, ARGV[2])
end
unique_release(status_prefix, ARGV[1], 'start')
return bad_keys
