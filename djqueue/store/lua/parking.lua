-- Parking jobs a concurrency limiter refused (included by limit_enter.lua, limit_leave.lua,
-- limit_unpark.lua, put_back.lua and admission.lua; see "Limits" in docs/design.md).
--
-- A refused job leaves its working list for the limiter's parked list in the step that
-- refused it, and stays there, out of every queue, until a slot is given back: then the
-- oldest parked job goes to the front of its queue (the end the fetch takes next). So a
-- blocked job costs one refusal, not one per pass through its queue. A parked list holds the
-- jobs exactly as stored, newest at the left; the set of limiters with parked jobs (the
-- index) lets the janitor's sweep find every list.

--!include status

-- Seconds an admitted set (admission.lua) lives after its last entry: longer than any job
-- waits in a queue; an entry is removed when its job takes or is refused its slot, and the
-- janitor's sweep drops the entries older than a lease (limit_unpark.lua).
local ADMITTED_LIFE = 7 * 86400

-- How many parked jobs of paused queues one unparking may send back before it stops looking
-- for a job of a running queue (each is one move; they would not run anyway).
local PARKED_LOOK = 100

-- JOB joins PARKED, the list of limiter NAME (a list: checked by the caller), at its newest
-- end, and NAME is noted in INDEX for the sweep.
local function park_job(parked, index, name, job)
  redis.call('LPUSH', parked, job)
  if key_is_kept(index, 'set', 'skipped: only slots given back unpark these jobs') then
    redis.call('SADD', index, name)
  end
end

-- Park JOB (as stored in WORKING) in PARKED, the list of limiter NAME, noted in INDEX.
-- Returns 1; 0 when the job had left the working list (it is in exactly one place either
-- way); -1 when PARKED is not a list (noted in bad_keys; the caller puts the job back in
-- time instead). A tracked job stays 'pending': it waits for its turn, as in a queue.
local function park(working, parked, index, name, job, status_prefix)
  if not key_is(parked, 'list', 'skipped: the job is put back in time instead') then
    return -1
  end
  if redis.call('LREM', working, 1, job) ~= 1 then
    return 0
  end
  park_job(parked, index, name, job)
  local tracked = status_job(job)
  if tracked then
    status_moving(status_prefix, tracked, 'pending', 0)
  end
  return 1
end

-- The queue a parked job goes back to: its "queue" field, else DEFAULT (as the poller); and
-- its jid (nil when it has none).
local function parked_queue(job, default)
  local ok, decoded = pcall(cjson.decode, job)
  if not ok or type(decoded) ~= 'table' then
    return default, nil
  end
  local jid = type(decoded['jid']) == 'string' and decoded['jid'] or nil
  if type(decoded['queue']) == 'string' and decoded['queue'] ~= '' then
    return decoded['queue'], jid
  end
  return default, jid
end

local parking_now

-- Redis's clock in seconds, read once per script call: what admitted entries are dated by
-- and what a slot's lease is compared with.
local function parking_clock()
  if not parking_now then
    local t = redis.call('TIME')
    parking_now = tonumber(t[1]) + tonumber(t[2]) / 1000000
  end
  return parking_now
end

-- JID is on its way to a slot of the limiter whose admitted set is ADMITTED (sent to its
-- queue, not started): a push or an unparking meanwhile does not count that slot free.
local function enter_admitted(admitted, jid)
  redis.call('ZADD', admitted, parking_clock(), jid)
  redis.call('EXPIRE', admitted, ADMITTED_LIFE)
end

-- Whether QUEUE is in the paused queues' set PAUSED, for a caller that checked PAUSED is a
-- set (a paused set of another type pauses nothing, noted there). A paused queue's jobs
-- take no limiter slot: nothing takes them before the resume.
local function queue_paused(paused, queue)
  return redis.call('SISMEMBER', paused, queue) == 1
end

-- Jobs of the concurrency limiter whose admitted set is ADMITTED sent to their queues and not
-- started yet (park-at-push, admission.lua): 0 when the key holds another type (noted).
local function admitted_count(admitted)
  if not key_is_kept(admitted, 'zset', 'skipped: jobs sent to their queues are not counted') then
    return 0
  end
  return redis.call('ZCARD', admitted)
end

-- Send up to COUNT of limiter NAME's parked jobs (PARKED), oldest first, to the front of
-- their queues (QUEUE_PREFIX .. name). A job of a paused queue (in the set PAUSED) met on the
-- way goes back to its queue too, where it waits for the resume as that queue's other jobs
-- do, and does not count: the free slot is for a job that can run. A job whose queue key is
-- not a list stays parked, moved to the newest end. NAME leaves INDEX once nothing is
-- parked. Each job of a running queue sent back enters ADMITTED (jid -> now), the limiter's
-- jobs on their way to a slot, so that a push meanwhile does not take the same slot
-- (admission.lua). Returns how many jobs of running queues went back.
local function unpark(parked, index, name, count, paused, queue_prefix, default, admitted)
  if not key_is(parked, 'list', 'skipped: its jobs stay parked') then
    return 0
  end
  local pausing = key_is(paused, 'set', 'skipped: no queue counts as paused')
  local admitting = key_is(admitted, 'zset', 'skipped: jobs sent back are not counted')
  local moved, looked = 0, 0
  local moves = {}
  while moved < count and looked < count + PARKED_LOOK do
    local job = redis.call('LINDEX', parked, -1)
    if not job then
      break
    end
    looked = looked + 1
    local queue, jid = parked_queue(job, default)
    local key = queue_prefix .. queue
    if key_is(key, 'list', 'skipped: a job parked for it stays parked') then
      redis.call('RPOP', parked)
      moves[#moves + 1] = {key, job}
      if not (pausing and queue_paused(paused, queue)) then
        moved = moved + 1
        if admitting and jid then
          enter_admitted(admitted, jid)
        end
      end
    else
      redis.call('LMOVE', parked, parked, 'RIGHT', 'LEFT')
    end
  end
  -- The newest first, so that the oldest ends at the very front, taken first.
  for i = #moves, 1, -1 do
    redis.call('RPUSH', moves[i][1], moves[i][2])
  end
  if redis.call('LLEN', parked) == 0 and key_is(index, 'set', 'skipped') then
    redis.call('SREM', index, name)
  end
  return moved
end

-- Free slots of the concurrency limiter KEY (a sorted set holder -> lease expiry) holding
-- LIMIT at most, once the leases that ran out by now (parking_clock) are dropped (a killed
-- worker's).
local function free_slots(key, limit)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', parking_clock())
  return limit - redis.call('ZCARD', key)
end

-- Slots of the concurrency limiter KEY (LIMIT at most) neither held nor promised to a job on
-- its way to one (in ADMITTED: sent to its queue, not started yet).
local function room(key, admitted, limit)
  return free_slots(key, limit) - admitted_count(admitted)
end
