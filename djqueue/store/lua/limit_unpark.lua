#!lua flags=allow-oom
-- The janitor's sweep of parked jobs (parking.lua), once per beat across the cluster: for
-- every limiter with parked jobs, as many as it has free slots go to the front of their
-- queues. This is what brings parked jobs back when no holder gives a slot back: its holder
-- was killed (the lease ran out), the limit was raised, a parked job's queue was resumed
-- (slots given back meanwhile skipped it), the limiter is no longer defined (its definition
-- expired: then up to ARGV[5] of them go back, and are parked again if still refused). Free
-- slots are those neither held nor promised to a job admitted to its queue (admission.lua);
-- admitted entries older than ARGV[7] seconds are dropped first (a job deleted from its
-- queue, or one waiting so long behind others that a refusal costs less than the wait).
--
-- KEYS[1] = the set of limiters with parked jobs, KEYS[2] = the limiters hash (name ->
-- definition JSON), KEYS[3] = the paused queues' set.
-- ARGV[1] = the limiter key prefix, ARGV[2] = the parked list prefix, ARGV[3] = the queue key
-- prefix, ARGV[4] = the default queue, ARGV[5] = at most this many jobs per limiter and
-- sweep, ARGV[6] = the admitted set prefix, ARGV[7] = how long an admitted entry counts
-- (seconds).
-- Returns {jobs unparked, the bad keys met}; a limiter whose key holds another type keeps
-- its jobs parked (noted).

--!include parking

local now = parking_clock()
local most = tonumber(ARGV[5])
local unparked = 0
if not key_is(KEYS[1], 'set', 'skipped: only slots given back unpark jobs') then
  return {0, bad_keys}
end
local defined = key_is(KEYS[2], 'hash', 'skipped: parked jobs go back as undefined')
for _, name in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local free = most
  local admitted = ARGV[6] .. name
  if key_is(admitted, 'zset', 'skipped: jobs sent to their queues are not counted') then
    redis.call('ZREMRANGEBYSCORE', admitted, '-inf', now - tonumber(ARGV[7]))
  end
  local raw = defined and redis.call('HGET', KEYS[2], name)
  local ok, definition = pcall(cjson.decode, raw or '')
  if ok and type(definition) == 'table' and definition['kind'] == 'concurrent'
      and tonumber(definition['limit']) then
    local key = ARGV[1] .. name
    if key_is(key, 'zset', 'skipped: its parked jobs stay parked') then
      free = math.min(most, room(key, admitted, tonumber(definition['limit'])))
    else
      free = 0
    end
  end
  local parked = ARGV[2] .. name
  if free > 0 then
    unparked = unparked
      + unpark(parked, KEYS[1], name, free, KEYS[3], ARGV[3], ARGV[4], admitted)
  elseif redis.call('EXISTS', parked) == 0 then
    redis.call('SREM', KEYS[1], name)
  end
end
return {unparked, bad_keys}
