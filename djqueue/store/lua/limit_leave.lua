#!lua flags=allow-oom
-- Give back a holder's concurrency slots, and for each slot given back send the oldest job
-- parked for it to the front of its queue (parking.lua), in the same step: a refusal parked
-- while the limiter was full always sees this step after it, so no wake-up is lost. Allowed
-- when Redis is out of memory: it removes and moves, and adds nothing.
--
-- KEYS[1] = the set of limiters with parked jobs, KEYS[2] = the paused queues' set, then two
-- per limiter: its key (holder -> lease expiry) and its parked list.
-- ARGV[1] = the holder, ARGV[2] = the queue key prefix, ARGV[3] = the default queue (for a
-- parked job without one); then two per limiter, in KEYS' order: its name and its limit
-- (this process's).
-- Returns {jobs unparked, the bad keys met}. A slot that was not held (its lease ran out and
-- another holder took it) unparks nothing: the slot was not given back here; neither does one
-- whose limiter is still full (its limit was lowered).

--!include parking

local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local holder = ARGV[1]
local unparked = 0
for i = 1, (#KEYS - 2) / 2 do
  local key, parked = KEYS[2 * i + 1], KEYS[2 * i + 2]
  local name, limit = ARGV[2 * i + 2], tonumber(ARGV[2 * i + 3])
  if key_is(key, 'zset', 'skipped: its slot not given back here')
      and redis.call('ZREM', key, holder) == 1 and redis.call('EXISTS', parked) == 1
      and free_slots(key, limit, now) > 0 then
    unparked = unparked + unpark(parked, KEYS[1], name, 1, KEYS[2], ARGV[2], ARGV[3])
  end
end
return {unparked, bad_keys}
