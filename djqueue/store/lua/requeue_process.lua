#!lua flags=allow-oom
-- Push a process's working lists back to the front of their queues, oldest job first in line.
--
-- KEYS[1] = the working-lists index hash, KEYS[2] = the queues set, KEYS[3] = the recoveries
-- hash, then pairs (working list, queue:NAME).
-- ARGV[1] = the index field to delete when done ('' to keep it).
-- ARGV[2] = '1' when the process died (count the jobs' next starts), '' when it stopped
-- cleanly; ARGV[3] = the recoveries hash's lifetime in seconds; then one queue NAME per pair;
-- then the status key prefix (a tracked job's status goes back to 'pending').
-- Returns {the number of jobs pushed back, the bad keys met (bad_keys.lua)}.
--
-- A working list holds the newest job on the left; taking from the left and pushing on the
-- right (RPUSH, the end workers take from) leaves the oldest job at the very front.
-- After a crash, each job pushed back is entered in the recoveries hash (JID -> 0, kept if it is
-- there already): the worker that takes the job again counts its starts there, so a job that
-- kills every process running it ends in the dead set instead of looping forever.
-- A queue key that is not a list is skipped (its jobs stay in the working list, and so does
-- the index entry, for a later sweep): Lua does not roll back an error halfway. A recoveries
-- key that is not a hash is left alone: the jobs go back without being entered there.

--!include jid_of

--!include status
local status_prefix = table.remove(ARGV)
local moved, left = 0, 0
local listing = key_is(KEYS[2], 'set', 'skipped: queues are not listed there')
local recording = ARGV[2] ~= ''
  and key_is(KEYS[3], 'hash', 'skipped: jobs pushed back after a crash are not counted')
for i = 4, #KEYS, 2 do
  local kind = redis.call('TYPE', KEYS[i + 1])['ok']
  if kind ~= 'list' and kind ~= 'none' then
    left = left + redis.call('LLEN', KEYS[i])
  else
    local here = 0
    while true do
      local job = redis.call('LMOVE', KEYS[i], KEYS[i + 1], 'LEFT', 'RIGHT')
      if not job then
        break
      end
      if recording then
        local jid = jid_of(job)
        if jid then
          redis.call('HSETNX', KEYS[3], jid, 0)
          redis.call('EXPIRE', KEYS[3], ARGV[3])
        end
      end
      local tracked = status_job(job)
      if tracked then
        status_moving(status_prefix, tracked, 'pending', 0)
      end
      here = here + 1
    end
    if here > 0 and listing then
      redis.call('SADD', KEYS[2], ARGV[(i - 2) / 2 + 3])
    end
    moved = moved + here
  end
end
if ARGV[1] ~= '' and left == 0 then
  redis.call('HDEL', KEYS[1], ARGV[1])
end
return {moved, bad_keys}
