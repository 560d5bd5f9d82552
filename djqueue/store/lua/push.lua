#!lua
-- Write a batch of jobs atomically: due jobs to their queues (recording each queue's name in
-- the queues set), future jobs to the schedule. One call per batch, whatever the mix.
--
-- KEYS[1] = queues set, KEYS[2] = schedule zset, KEYS[3..] = queue:NAME lists.
-- ARGV[1] = number of queues N, then N pairs (NAME, COUNT) in KEYS order, then the job JSON
-- for each queue in that order (COUNT of them each), then (score, JSON) pairs for the schedule,
-- then the status key prefix (tracked jobs' status becomes 'pending' or 'scheduled').
--
-- Every key's type is checked before the first write: Redis does not roll a script back, so a
-- WRONGTYPE error halfway would leave some jobs written while the caller sees a failure.
-- LPUSH and ZADD take the values in slices because unpack() is limited to a few thousand values.

local SLICE = 4000
--!include status
local status_prefix = table.remove(ARGV)

local function check(key, want)
  local kind = redis.call('TYPE', key)['ok']
  if kind ~= 'none' and kind ~= want then
    return redis.error_reply('WRONGTYPE ' .. key .. ' is ' .. type_name(kind) .. ', not ' .. type_name(want) ..
      '; no job was written')
  end
  return nil
end

local nqueues = tonumber(ARGV[1])
local first_json = 2 + 2 * nqueues
local total = 0
for q = 1, nqueues do
  total = total + tonumber(ARGV[1 + 2 * q])
end
local first_scheduled = first_json + total

local err
if nqueues > 0 then
  err = check(KEYS[1], 'set')
  if err then return err end
end
for q = 1, nqueues do
  err = check(KEYS[2 + q], 'list')
  if err then return err end
end
if first_scheduled <= #ARGV then
  err = check(KEYS[2], 'zset')
  if err then return err end
end

local at = first_json
for q = 1, nqueues do
  local count = tonumber(ARGV[1 + 2 * q])
  redis.call('SADD', KEYS[1], ARGV[2 * q])
  local stop = at + count - 1
  while at <= stop do
    local last = math.min(at + SLICE - 1, stop)
    redis.call('LPUSH', KEYS[2 + q], unpack(ARGV, at, last))
    at = last + 1
  end
end
while at <= #ARGV do
  local last = math.min(at + SLICE - 1, #ARGV)
  redis.call('ZADD', KEYS[2], unpack(ARGV, at, last))
  at = last + 1
end
for i = first_json, first_scheduled - 1 do
  local job = status_job(ARGV[i])
  if job then
    status_moving(status_prefix, job, 'pending', 0, 'enqueued_at', status_text(job['enqueued_at']),
      'payload', ARGV[i])
  end
end
local now
for i = first_scheduled, #ARGV, 2 do
  local job = status_job(ARGV[i + 1])
  if job then
    now = now or tonumber(redis.call('TIME')[1])
    status_moving(status_prefix, job, 'scheduled', tonumber(ARGV[i]) - now,
      'scheduled_at', ARGV[i], 'created_at', status_text(job['created_at']), 'payload', ARGV[i + 1])
  end
end
return total + (#ARGV - first_scheduled + 1) / 2
