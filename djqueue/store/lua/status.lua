-- Job status, included by every script that moves a job (see scripts.py: `--!include status`).
-- A job is tracked when its JSON carries a top-level "retention" field (seconds to keep it
-- once finished): a plain string.find tests for it first, so an untracked job costs one
-- substring search and nothing else; only a match is decoded (an argument may hold the word).
-- A tracked job's status is the hash PREFIX..JID, and PREFIX..JID..':done' a one-element list
-- pushed when it finishes, which result() waiters block on. Each script receives PREFIX as
-- its last ARGV and pops it (table.remove), so the rest of its arguments keep their places.
-- Times are Redis's (TIME), as the heartbeat's are: hosts' clocks may differ.
-- A status key of another type, or an `attempts` that is not an integer, is this job's own
-- entry gone bad: it is repaired (replaced, counted again) and noted in `bad_keys`, so the job
-- still moves; an error there would come after the move and cycle the job for ever.

--!include bad_keys
--!include namespace

local STATUS_IN_FLIGHT = @IN_FLIGHT_TTL@

local function status_text(value)
  if type(value) == 'string' then return value end
  if type(value) == 'number' then return string.format('%.17g', value) end
  return ''
end

-- A job's JSON decoded, once per call whoever asks (the status code and batch.lua look at the
-- same jobs); false when it is not an object with a string jid. Nothing changes the tables.
local decoded_jobs = {}
local function job_decoded(json)
  local decoded = decoded_jobs[json]
  if decoded == nil then
    local ok
    ok, decoded = pcall(cjson.decode, json)
    if not ok or type(decoded) ~= 'table' or type(decoded['jid']) ~= 'string' then
      decoded = false
    end
    decoded_jobs[json] = decoded
  end
  return decoded
end

-- The decoded job when it is tracked, else nil.
local function status_job(job)
  if not string.find(job, '"retention":', 1, true) then return nil end
  local decoded = job_decoded(job)
  if decoded and tonumber(decoded['retention']) then
    return decoded
  end
  return nil
end

-- The job's status key, a hash or nothing: a key of another type there is replaced.
local function status_key(prefix, job)
  local key = prefix .. job['jid']
  if not key_is(key, 'hash', 'replaced') then
    redis.call('UNLINK', key)
  end
  return key
end

-- Add BY to the job's attempts; a count that is not an integer starts again from 0.
local function status_attempt(key, by)
  local attempts = redis.call('HGET', key, 'attempts')
  if not is_count(attempts) then
    bad_key(key, 'has attempts ' .. quoted(attempts) .. ', not an integer; counted again from 0')
    redis.call('HSET', key, 'attempts', 0)
  end
  redis.call('HINCRBY', key, 'attempts', by)
end

local function status_now()
  local now = redis.call('TIME')
  return string.format('%d.%06d', now[1], now[2])
end

-- A state on the way (scheduled, pending, active, retry): the hash lives STATUS_IN_FLIGHT
-- seconds plus `wait` (until a scheduled or retried job is due); an old result is dropped.
local function status_moving(prefix, job, state, wait, ...)
  local key = status_key(prefix, job)
  redis.call('HSET', key, 'state', state, 'class', status_text(job['class']),
    'queue', status_text(job['queue']), 'retention', status_text(job['retention']), ...)
  redis.call('EXPIRE', key, STATUS_IN_FLIGHT + math.max(0, math.ceil(tonumber(wait) or 0)))
  redis.call('UNLINK', key .. ':done')
end

-- A run that starts afresh (a dead or retrying job sent to its queue again): what the last
-- run ended with, and a cancel asked of it, do not carry over; the last error stays.
local function status_rerun(prefix, job)
  redis.call('HDEL', status_key(prefix, job), 'cancel', 'finished_at', 'result')
end

-- The longest retention kept (ten years): EXPIRE refuses larger values, and a script that
-- failed there would have moved the job already (Redis does not roll back).
local STATUS_MAX_TTL = 315360000

-- Asked to stop while it ran: cancel.lua flags only an 'active' job, and `djqueue.cancel`
-- then answered 'cancelling'. Whatever end such a job reaches (returned before it saw the
-- request, failed, retried, buried), it ends cancelled, so the answer and the end agree.
-- A status of the wrong type is repaired first (status_key): it asked nothing.
local function status_stop_asked(prefix, job)
  local key = status_key(prefix, job)
  return redis.call('HGET', key, 'state') == 'active'
    and redis.call('HEXISTS', key, 'cancel') == 1
end

-- An end (completed, dead, cancelled): both keys live `retention` seconds from now, and the
-- done list wakes every waiter (BLMOVE of its one element onto itself consumes nothing).
-- A job asked to stop ends cancelled whatever `state` says, without a return value.
-- Returns the state written.
local function status_finished(prefix, job, state, ...)
  local key = status_key(prefix, job)
  local ttl = math.min(STATUS_MAX_TTL, math.max(1, math.floor(tonumber(job['retention']))))
  local fields = {...}
  if state ~= 'cancelled' and status_stop_asked(prefix, job) then
    state = 'cancelled'
    local kept = {}
    for i = 1, #fields, 2 do
      if fields[i] ~= 'result' then
        kept[#kept + 1] = fields[i]
        kept[#kept + 1] = fields[i + 1]
      end
    end
    fields = kept
  end
  redis.call('HSET', key, 'state', state, 'finished_at', status_now(),
    'class', status_text(job['class']), 'queue', status_text(job['queue']),
    'retention', status_text(job['retention']), unpack(fields))
  redis.call('EXPIRE', key, ttl)
  redis.call('UNLINK', key .. ':done')
  redis.call('RPUSH', key .. ':done', state)
  redis.call('EXPIRE', key .. ':done', ttl)
  return state
end

-- Taken by a worker: active, one more attempt, and the process named (`workers` lists the
-- process of each attempt, the most recent STATUS_WORKERS of them).
local STATUS_WORKERS = 25
local function status_started(prefix, job, identity)
  local key = status_key(prefix, job)
  local workers = redis.call('HGET', key, 'workers')
  if workers and workers ~= '' then
    local _, count = string.gsub(workers, ' ', ' ')
    if count >= STATUS_WORKERS - 1 then
      workers = string.gsub(workers, '^[^ ]* ', '', 1)
    end
    workers = workers .. ' ' .. identity
  else
    workers = identity
  end
  status_moving(prefix, job, 'active', 0, 'started_at', status_now(), 'process', identity,
    'workers', workers)
  status_attempt(key, 1)
end

local function status_failed(prefix, job, state, wait, ...)
  local fields = {'error_class', status_text(job['error_class']),
    'error_message', status_text(job['error_message']), ...}
  if state == 'dead' then
    status_finished(prefix, job, state, unpack(fields))
  else
    status_moving(prefix, job, state, wait, unpack(fields))
  end
end
