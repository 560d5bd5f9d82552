-- Enter a job's limiters, all of them or none, in one step (djqueue.limits).
--
-- KEYS[1] = the limiters hash (name -> definition JSON), KEYS[2] = the hits hash (name ->
-- times a limiter refused), KEYS[3] = the schedule set, KEYS[4] = the working list holding
-- the job (KEYS[3] again when there is no job to put back), KEYS[5..] = each limiter's key.
-- ARGV[1] = the lease of a concurrency slot (seconds), ARGV[2] = the holder (a jid, or a jid
-- and a token for a limiter entered in code), ARGV[3] = seconds the two hashes live after
-- the last use, ARGV[4] = the job as stored in its working list ('' for none), ARGV[5] =
-- when a refused job is due again, ARGV[6] = the status key prefix; then five per limiter,
-- in KEYS' order: kind ('concurrent', 'window', 'bucket'), name, limit, per (seconds; 0 for
-- 'concurrent'), definition JSON.
-- Returns 0 when every limiter let the holder in (each one is then taken), else the
-- position (1-based) of the first that refused: nothing is taken, its hit is counted, and
-- the job (when given) is put back in the same step (putting_back.lua), so a refusal costs
-- one round trip. Times are Redis's (TIME), so workers on hosts whose clocks differ agree.
--
-- concurrent: a sorted set holder -> lease expiry; expired leases are dropped first (a
--   killed worker's), a holder already in keeps its slot.
-- window: a sorted set of grants (score = when) over the last `per` seconds.
-- bucket: a hash {tokens, at}: `limit` tokens at most, refilled at limit/per a second.

--!include putting_back

local FIRST = 4
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local lease = tonumber(ARGV[1])
local holder = ARGV[2]
local life = tonumber(ARGV[3])
local count = #KEYS - FIRST
local buckets = {}

for i = 1, count do
  local key = KEYS[i + FIRST]
  local base = 6 + (i - 1) * 5
  local kind, name = ARGV[base + 1], ARGV[base + 2]
  local limit, per = tonumber(ARGV[base + 3]), tonumber(ARGV[base + 4])
  redis.call('HSET', KEYS[1], name, ARGV[base + 5])
  local ok
  if kind == 'concurrent' then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
    ok = redis.call('ZSCORE', key, holder) or redis.call('ZCARD', key) < limit
  elseif kind == 'window' then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - per)
    ok = redis.call('ZCARD', key) < limit
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
  end
  if not ok then
    redis.call('HINCRBY', KEYS[2], name, 1)
    redis.call('EXPIRE', KEYS[2], life)
    redis.call('EXPIRE', KEYS[1], life)
    if ARGV[4] ~= '' then
      put_back(KEYS[3], KEYS[4], ARGV[4], ARGV[5], ARGV[6])
    end
    return i
  end
end

for i = 1, count do
  local key = KEYS[i + FIRST]
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
return 0
