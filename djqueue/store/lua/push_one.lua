#!lua
-- Push one job to one queue: push.lua's commonest case, with less to parse on the hot path.
-- KEYS[1] = the queues set, KEYS[2] = queue:NAME; ARGV[1] = NAME, ARGV[2] = the job JSON,
-- ARGV[3] = the status key prefix (a tracked job's status becomes 'pending').
-- LPUSH goes first: if the queue key holds something else it fails before any write. The
-- queues set is checked beforehand, so a failure never leaves the job written.
--!include status
local status_prefix = table.remove(ARGV)
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'set' and kind ~= 'none' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' is a ' .. kind .. ', not a set; no job was written')
end
local length = redis.call('LPUSH', KEYS[2], ARGV[2])
redis.call('SADD', KEYS[1], ARGV[1])
local job = status_job(ARGV[2])
if job then
  status_moving(status_prefix, job, 'pending', 0, 'enqueued_at', status_text(job['enqueued_at']),
    'payload', ARGV[2])
end
return length
