-- Enter a job's limiters, all of them or none, in one step (djqueue.limits).
--
-- KEYS[1] = the limiters hash (name -> definition JSON), KEYS[2] = the hits hash (name ->
-- times a limiter refused), KEYS[3] = the schedule set, KEYS[4] = the working list holding
-- the job (KEYS[3] again when there is no job to put back), KEYS[5] = the set of limiters
-- with parked jobs, KEYS[6] = the turns hash (name -> when the last job a window or a bucket
-- refused is due again), then three per limiter: its key, its parked list and its admitted
-- set (admission.lua; the job given leaves every admitted set first: it takes its slot now
-- or is refused it, either way it is no longer on its way).
-- ARGV[1] = the lease of a concurrency slot (seconds), ARGV[2] = the holder (a jid, or a jid
-- and a token for a limiter entered in code), ARGV[3] = seconds the two hashes live after
-- the last use, ARGV[4] = the job as stored in its working list ('' for none), ARGV[5] =
-- seconds until a job refused by a concurrency limiter is due again when it cannot be parked
-- (its parked list's key holds another type), ARGV[6] = the status key prefix; then five
-- per limiter, in KEYS' order: kind ('concurrent', 'window', 'bucket'), name, limit, per
-- (seconds; 0 for 'concurrent'), definition JSON.
-- Returns {0} when every limiter let the holder in (each one is then taken), else {the
-- position (1-based) of the first that refused, the seconds until it opens (-1 for a
-- concurrency limiter: that is not known), 1 when the job was parked, the bad keys met}:
-- nothing is taken and its hit is counted. Each limiter's definition is written when it lets
-- the holder in (a full limiter was entered by someone, who wrote it: a refusal costs less
-- so). A job given is moved in the same step, so a refusal costs one round trip: refused by
-- a concurrency limiter, it is parked until a slot is given back (parking.lua); by a window
-- or a bucket, it is put back in the schedule set for the moment the limiter opens
-- (putting_back.lua), or, when jobs it refused are due then already, for the turn after the
-- last of them, at the limiter's pace (per / limit seconds apart): jobs due together would
-- all be taken together and all but the few it lets in be refused again. Times are Redis's (TIME), so workers on hosts whose clocks differ agree.
--
-- concurrent: a sorted set holder -> lease expiry; expired leases are dropped first (a
--   killed worker's), a holder already in keeps its slot.
-- window: a sorted set of grants (score = when) over the last `per` seconds; it opens when
--   the grant that fills it leaves the window.
-- bucket: a hash {tokens, at}: `limit` tokens at most, refilled at limit/per a second; it
--   opens when one token is back.

--!include putting_back
--!include parking

local FIRST = 6
-- Added to the moment a limiter opens, against the rounding of the times' sums.
local MARGIN = 0.001
local now = parking_clock()
local lease = tonumber(ARGV[1])
local holder = ARGV[2]
local life = tonumber(ARGV[3])
local job = ARGV[4]
local fallback = tonumber(ARGV[5])
local status_prefix = ARGV[6]
local count = (#KEYS - FIRST) / 3
local buckets = {}

if job ~= '' then
  for i = 1, count do
    local admitted = KEYS[FIRST + 3 * i]
    if ARGV[6 + (i - 1) * 5 + 1] == 'concurrent'
        and key_is(admitted, 'zset', 'skipped: its jobs are counted until the sweep') then
      redis.call('ZREM', admitted, holder)
    end
  end
end

for i = 1, count do
  local key = KEYS[FIRST + 3 * i - 2]
  local base = 6 + (i - 1) * 5
  local kind, name = ARGV[base + 1], ARGV[base + 2]
  local limit, per = tonumber(ARGV[base + 3]), tonumber(ARGV[base + 4])
  local ok
  local wait = -1
  if kind == 'concurrent' then
    local free = free_slots(key, limit)
    ok = redis.call('ZSCORE', key, holder) or free > 0
  elseif kind == 'window' then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - per)
    local granted = redis.call('ZCARD', key)
    ok = granted < limit
    if not ok then
      -- The grant whose leaving makes room: the oldest, unless the limit was lowered.
      local filling = redis.call('ZRANGE', key, granted - limit, granted - limit, 'WITHSCORES')
      wait = math.max(0, tonumber(filling[2]) + per - now) + MARGIN
    end
  else
    local state = redis.call('HMGET', key, 'tokens', 'at')
    local tokens, at = tonumber(state[1]), tonumber(state[2])
    if tokens == nil or at == nil then
      tokens = limit
    else
      tokens = math.min(limit, tokens + math.max(0, now - at) * limit / per)
    end
    buckets[i] = tokens
    ok = tokens >= 1
    wait = (1 - tokens) * per / limit + MARGIN
  end
  if ok then
    redis.call('HSET', KEYS[1], name, ARGV[base + 5])
  else
    redis.call('HINCRBY', KEYS[2], name, 1)
    redis.call('EXPIRE', KEYS[2], life)
    local parked = 0
    if job ~= '' and kind == 'concurrent' then
      parked = park(KEYS[4], KEYS[FIRST + 3 * i - 1], KEYS[5], name, job, status_prefix)
      if parked < 0 then
        wait = fallback
      end
    end
    if job ~= '' and kind ~= 'concurrent' then
      local due = now + wait
      if key_is(KEYS[6], 'hash', 'skipped: refused jobs come back at the opening, unpaced') then
        local last = tonumber(redis.call('HGET', KEYS[6], name))
        if last and last + per / limit > due then
          due = last + per / limit
        end
        redis.call('HSET', KEYS[6], name, string.format('%.6f', due))
        local keep = math.ceil(due - now + per) + 1
        if redis.call('TTL', KEYS[6]) < keep then
          redis.call('EXPIRE', KEYS[6], keep)
        end
      end
      wait = due - now
    end
    if job ~= '' and (kind ~= 'concurrent' or parked < 0) then
      put_back(KEYS[3], KEYS[4], job, string.format('%.6f', now + wait), status_prefix)
    end
    return {i, string.format('%.6f', wait), parked == 1 and 1 or 0, bad_keys}
  end
end

for i = 1, count do
  local key = KEYS[FIRST + 3 * i - 2]
  local base = 6 + (i - 1) * 5
  local kind, per = ARGV[base + 1], tonumber(ARGV[base + 4])
  if kind == 'concurrent' then
    redis.call('ZADD', key, now + lease, holder)
    redis.call('EXPIRE', key, math.ceil(lease) + 1)
  elseif kind == 'window' then
    redis.call('ZADD', key, now, holder .. '@' .. string.format('%.6f', now))
    redis.call('EXPIRE', key, math.ceil(per) + 1)
  else
    redis.call('HSET', key, 'tokens', string.format('%.17g', buckets[i] - 1),
      'at', string.format('%.6f', now))
    redis.call('EXPIRE', key, math.ceil(per) + 1)
  end
end
redis.call('EXPIRE', KEYS[1], life)
return {0}
