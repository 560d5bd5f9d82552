#!lua
-- Write a batch of jobs atomically: due jobs to their queues (recording each queue's name in
-- the queues set), future jobs to the schedule. One call per batch, whatever the mix.
--
-- KEYS[1] = queues set, KEYS[2] = schedule zset, KEYS[3..] = queue:NAME lists.
-- ARGV[1] = number of queues N, then N pairs (NAME, COUNT) in KEYS order, then the job JSON
-- for each queue in that order (COUNT of them each), then (score, JSON) pairs for the schedule,
-- then the batch definitions (D JSON texts, see batch.lua: batch_prepare), D, '1' when some
-- job carries a "bid" (else ''), then the status key prefix (tracked jobs' status becomes 'pending' or 'scheduled').
--
-- Every key's type is checked before the first write: Redis does not roll a script back, so a
-- WRONGTYPE error halfway would leave some jobs written while the caller sees a failure.
-- LPUSH and ZADD take the values in slices because unpack() is limited to a few thousand values.
-- Unique jobs (unique.lua) take their locks after the checks, before anything is written: a
-- job whose lock another job holds is left out (its status untouched), and the reply names it.
-- A job naming its concurrency limiters goes to the parked list of one without room instead
-- of its queue (admission.lua): it counts as written, and its status is 'pending' as in a
-- queue.
-- Batches (batch.lua) are created, and the jobs written counted in theirs, in the same step;
-- a job or a definition naming a batch that is gone, cancelled or has succeeded makes the
-- call write nothing (an error reply that says which).
-- Returns {how many jobs were written, {jid, holder's jid, ...} of the jobs left out, the bad
-- keys met}.

local SLICE = 4000
--!include status
--!include unique
--!include batch
--!include admission
local status_prefix = table.remove(ARGV)
local has_bids = table.remove(ARGV) == '1'
local batch_defs = {}
for _ = 1, tonumber(table.remove(ARGV)) do
  table.insert(batch_defs, 1, table.remove(ARGV))
end

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

local named = {}
if has_bids then
  for i = first_json, first_scheduled - 1 do named[#named + 1] = ARGV[i] end
  for i = first_scheduled + 1, #ARGV, 2 do named[#named + 1] = ARGV[i] end
end
local creating, refused = batch_prepare(status_prefix, batch_defs, named)
if refused then
  return redis.error_reply('BATCH ' .. refused)
end

-- Locks: `out` holds the ARGV positions left out (both of a scheduled pair), nil if none.
local out, skipped = nil, {}
local now
local function claim(i, json, wait)
  local unique = unique_job(json)
  if not unique then return true end
  local holder = unique_claim(status_prefix, unique, wait)
  if not holder then return true end
  out = out or {}
  out[i] = true
  skipped[#skipped + 1] = unique['jid']
  skipped[#skipped + 1] = holder
  return false
end
for i = first_json, first_scheduled - 1 do
  claim(i, ARGV[i], 0)
end
for i = first_scheduled, #ARGV, 2 do
  if string.find(ARGV[i + 1], '"unique_digest":', 1, true) then
    now = now or tonumber(redis.call('TIME')[1])
    if not claim(i, ARGV[i + 1], tonumber(ARGV[i]) - now) then
      out[i + 1] = true
    end
  end
end

for _, def in ipairs(creating) do
  batch_create(status_prefix, def)
end

-- Admission (admission.lua), in each queue's order: `parked` holds the positions of the jobs
-- parked instead of queued, nil if none.
local parked
for i = first_json, first_scheduled - 1 do
  if not (out and out[i]) and not admit(ARGV[i], status_prefix) then
    parked = parked or {}
    parked[i] = true
  end
end

-- ARGV[first..last] without the positions left out or parked, sent with COMMAND to KEY in
-- slices.
local function write(command, key, first, last)
  local values, from, to = ARGV, first, last
  if out or parked then
    values = {}
    for i = first, last do
      if not (out and out[i]) and not (parked and parked[i]) then
        values[#values + 1] = ARGV[i]
      end
    end
    from, to = 1, #values
  end
  while from <= to do
    local stop = math.min(from + SLICE - 1, to)
    redis.call(command, key, unpack(values, from, stop))
    from = stop + 1
  end
end

local at = first_json
local written = 0
for q = 1, nqueues do
  local count = tonumber(ARGV[1 + 2 * q])
  local before = written
  local stop = at + count - 1
  for i = at, stop do
    if not (out and out[i]) then written = written + 1 end
  end
  if written > before then
    redis.call('SADD', KEYS[1], ARGV[2 * q])
    write('LPUSH', KEYS[2 + q], at, stop)
  end
  at = stop + 1
end
if at <= #ARGV then
  for i = at, #ARGV, 2 do
    if not (out and out[i]) then written = written + 1 end
  end
  write('ZADD', KEYS[2], at, #ARGV)
end
for i = first_json, first_scheduled - 1 do
  local job = not (out and out[i]) and status_job(ARGV[i])
  if job then
    status_moving(status_prefix, job, 'pending', 0, 'enqueued_at', status_text(job['enqueued_at']),
      'payload', ARGV[i])
  end
end
for i = first_scheduled, #ARGV, 2 do
  local job = not (out and out[i]) and status_job(ARGV[i + 1])
  if job then
    now = now or tonumber(redis.call('TIME')[1])
    status_moving(status_prefix, job, 'scheduled', tonumber(ARGV[i]) - now,
      'scheduled_at', ARGV[i], 'created_at', status_text(job['created_at']), 'payload', ARGV[i + 1])
  end
end
if #named > 0 then
  for i = first_json, first_scheduled - 1 do
    if not (out and out[i]) then batch_gather(ARGV[i]) end
  end
  for i = first_scheduled, #ARGV, 2 do
    if not (out and out[i]) then batch_gather(ARGV[i + 1]) end
  end
  batch_count_added(status_prefix)
end
for _, def in ipairs(creating) do
  batch_check(status_prefix, def['bid'])
end
return {written, skipped, bad_keys}
