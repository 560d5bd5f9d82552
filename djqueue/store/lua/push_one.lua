#!lua
-- Push one job to one queue: push.lua's commonest case, with less to parse on the hot path.
-- KEYS[1] = the queues set, KEYS[2] = queue:NAME; ARGV[1] = NAME, ARGV[2] = the job JSON,
-- ARGV[3] = the status key prefix (a tracked job's status becomes 'pending').
-- LPUSH goes first: if the queue key holds something else it fails before any write. The
-- queues set is checked beforehand, so a failure never leaves the job written.
-- A unique job (unique.lua) takes its lock first; when another job holds it, nothing is
-- written and the reply is {the job's jid, the holder's, the bad keys met}; else the queue's
-- new length, as
-- {length, the bad keys met} when a lock key of another type was replaced.
-- A job naming its concurrency limiters goes to the parked list of one without room instead
-- (admission.lua); the reply is then the queue's length without it.
--!include status
--!include unique
--!include admission
local status_prefix = table.remove(ARGV)
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'set' and kind ~= 'none' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' is a ' .. kind .. ', not a set; no job was written')
end
local unique = unique_job(ARGV[2])
local limited = string.find(ARGV[2], '"concurrent_limits":', 1, true)
if unique or limited then
  local queue_kind = redis.call('TYPE', KEYS[2])['ok']
  if queue_kind ~= 'list' and queue_kind ~= 'none' then
    return redis.error_reply('WRONGTYPE ' .. KEYS[2] .. ' is a ' .. queue_kind .. ', not a list; no job was written')
  end
end
if unique then
  local holder = unique_claim(status_prefix, unique, 0)
  if holder then
    return {unique['jid'], holder, bad_keys}
  end
end
local length
if limited and not admit(ARGV[2], status_prefix) then
  length = redis.call('LLEN', KEYS[2])
else
  length = redis.call('LPUSH', KEYS[2], ARGV[2])
end
redis.call('SADD', KEYS[1], ARGV[1])
local job = status_job(ARGV[2])
if job then
  status_moving(status_prefix, job, 'pending', 0, 'enqueued_at', status_text(job['enqueued_at']),
    'payload', ARGV[2])
end
if #bad_keys > 0 then
  return {length, bad_keys}
end
return length
