#!lua
-- Fire a periodic job: claim its tick, push the job, record the run, in one step, so a tick is
-- pushed once across every process and host (djqueue's and sidekiq-cron's pollers alike) and
-- a crash can never claim a tick without pushing it.
-- KEYS[1] = cron_job:NAME, KEYS[2] = cron_job:NAME:enqueued, KEYS[3] = cron_job:NAME:jid_history,
-- KEYS[4] = the queues set, KEYS[5] = queue:QUEUE, KEYS[6] = cron_jobs (the layout's set),
-- KEYS[7] = sidekiq-cron 2's set (cron_jobs:default; KEYS[6] itself when firing in that layout).
-- ARGV[1] = the tick's epoch ('' to run now: no claim), ARGV[2] = the tick as ISO 8601 UTC (the
-- claimed member, sidekiq-cron's format), ARGV[3] = QUEUE, ARGV[4] = the job JSON ('' to only
-- skip the tick of a disabled job),
-- ARGV[5] = last_enqueue_time ('%Y-%m-%d %H:%M:%S +0000'), ARGV[6] = the history entry JSON,
-- ARGV[7] = history entries kept, ARGV[8] = seconds of claimed ticks kept, ARGV[9] = the job's
-- member of KEYS[6], ARGV[10] = the status key prefix (a tracked job's status becomes 'pending').
-- A job no longer in KEYS[6] is gone, even if its hash is left: sidekiq-cron 2 moves 1.8's
-- entries to its namespace and leaves their old hashes behind, which must never fire again.
-- A tick that falls while the job is disabled is claimed as skipped, so that enabling the job
-- later never fires it as a missed tick.
-- Returns 1 when pushed, 0 when the tick was claimed before (or, skipping, the job is enabled
-- after all), -1 when the job is disabled, -2 when it no longer exists, -3 when firing in 1.8's
-- layout while sidekiq-cron 2's set exists (a sidekiq-cron 2 server is moving the entries: its
-- poller claims ticks in its own layout, so this tick must be claimed there), 2 when the tick was
-- claimed but the job not pushed: it is unique (unique.lua) and another job holds its lock. A key of the wrong type
-- is an error reply naming it, given before the first write: no tick is claimed unpushed.
--!include status
--!include unique
local status_prefix = table.remove(ARGV)
local expected = {'hash', 'zset', 'list', 'set', 'list'}
local function wrong(i)
  local kind = redis.call('TYPE', KEYS[i])['ok']
  if kind ~= expected[i] and kind ~= 'none' then
    return 'WRONGTYPE ' .. KEYS[i] .. ' is ' .. type_name(kind) .. ', not ' .. type_name(expected[i]) ..
      '; nothing was written'
  end
  return kind == 'none' and 'none' or nil
end
for i = 1, 2 do
  local found = wrong(i)
  if i == 1 and found == 'none' then return -2 end
  if found and found ~= 'none' then return redis.error_reply(found) end
end
if KEYS[7] ~= KEYS[6] and redis.call('EXISTS', KEYS[7]) == 1 then return -3 end
local jobs = redis.call('TYPE', KEYS[6])['ok']
if jobs == 'none' or (jobs == 'set' and redis.call('SISMEMBER', KEYS[6], ARGV[9]) == 0) then
  return -2
end
-- A claim lost to another poller (the common case with several workers) ends here, cheaply.
if ARGV[1] ~= '' and ARGV[4] ~= '' and redis.call('ZSCORE', KEYS[2], ARGV[2]) then return 0 end
for i = 3, 5 do
  local found = wrong(i)
  if found and found ~= 'none' then return redis.error_reply(found) end
end
if ARGV[1] ~= '' then
  local state = redis.call('HGET', KEYS[1], 'status')
  if state and state ~= 'enabled' then
    redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
    redis.call('ZREMRANGEBYSCORE', KEYS[2], 0, '(' .. (tonumber(ARGV[1]) - tonumber(ARGV[8])))
    return -1
  end
  if ARGV[4] == '' then return 0 end
  if redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2]) == 0 then return 0 end
  redis.call('ZREMRANGEBYSCORE', KEYS[2], 0, '(' .. (tonumber(ARGV[1]) - tonumber(ARGV[8])))
end
local unique = unique_job(ARGV[4])
if unique and unique_claim(status_prefix, unique, 0) then
  return 2
end
redis.call('LPUSH', KEYS[5], ARGV[4])
redis.call('SADD', KEYS[4], ARGV[3])
redis.call('HSET', KEYS[1], 'last_enqueue_time', ARGV[5])
redis.call('LPUSH', KEYS[3], ARGV[6])
redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[7]) - 1)
local job = status_job(ARGV[4])
if job then
  status_moving(status_prefix, job, 'pending', 0, 'enqueued_at', status_text(job['enqueued_at']),
    'payload', ARGV[4])
end
return 1
