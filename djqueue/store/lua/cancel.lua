#!lua
-- Cancel one job. Where it waits (a queue, the schedule, the retry set), it is removed and a
-- tracked job's status becomes 'cancelled' in the same step; a running tracked job gets a
-- 'cancel' flag in its status hash, which its process's heartbeat reads; 'held' flags a job
-- that is 'pending' too (not found in its queue: a worker holds it, not yet marked active).
--
-- KEYS[1] = the queue or sorted set holding the job (any key for 'running').
-- ARGV[1] = 'list', 'zset', 'running' or 'held'; ARGV[2] = the member as stored (the jid
-- for 'running' and 'held'); ARGV[3] = the sorted set's tally ('' for none; tally.lua);
-- ARGV[4] = the status key prefix.
-- A unique job removed from where it waits frees its lock (unique.lua).
-- Returns 1 when done, 0 when the job was not there (any more) or not running.
--!include status
--!include unique
--!include tally
local status_prefix = table.remove(ARGV)
local counted = table.remove(ARGV)
local kind, member = ARGV[1], ARGV[2]
if kind == 'running' or kind == 'held' then
  local key = status_prefix .. member
  local state = redis.call('HGET', key, 'state')
  if state ~= 'active' and not (kind == 'held' and state == 'pending') then
    return 0
  end
  redis.call('HSET', key, 'cancel', status_now())
  return 1
end
local removed
if kind == 'list' then
  removed = redis.call('LREM', KEYS[1], 1, member)
else
  removed = tally_removed(counted, KEYS[1], member) and 1 or 0
end
if removed == 0 then
  return 0
end
unique_release(status_prefix, member, 'end')
local job = status_job(member)
if job then
  status_finished(status_prefix, job, 'cancelled')
end
return 1
