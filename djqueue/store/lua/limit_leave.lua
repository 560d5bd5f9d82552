#!lua flags=allow-oom
-- Give back a holder's concurrency slots, and for each slot given back send the oldest job
-- parked for it to the front of its queue (parking.lua), in the same step: a refusal parked
-- while the limiter was full always sees this step after it, so no wake-up is lost. Allowed
-- when Redis is out of memory: it removes and moves, and adds only the admitted entry of each
-- job it sends back (admission.lua), a few bytes.
--
-- KEYS[1] = the set of limiters with parked jobs, KEYS[2] = the paused queues' set, then three
-- per limiter: its key (holder -> lease expiry), its parked list and its admitted set (jobs
-- sent to their queues for its slots, not started yet: admission.lua).
-- ARGV[1] = the holder, ARGV[2] = the queue key prefix, ARGV[3] = the default queue (for a
-- parked job without one); then two per limiter, in KEYS' order: its name and its limit
-- (this process's).
-- Returns {jobs unparked, the bad keys met}. A slot that was not held (its lease ran out and
-- another holder took it) unparks nothing: the slot was not given back here; neither does one
-- whose limiter is still full (its limit was lowered) or whose free slot a job admitted to its
-- queue will take.

--!include parking

local holder = ARGV[1]
local unparked = 0
for i = 1, (#KEYS - 2) / 3 do
  local key, parked, admitted = KEYS[3 * i], KEYS[3 * i + 1], KEYS[3 * i + 2]
  local name, limit = ARGV[2 * i + 2], tonumber(ARGV[2 * i + 3])
  if key_is(key, 'zset', 'skipped: its slot not given back here')
      and redis.call('ZREM', key, holder) == 1 and redis.call('EXISTS', parked) == 1
      and room(key, admitted, limit) > 0 then
    unparked = unparked + unpark(parked, KEYS[1], name, 1, KEYS[2], ARGV[2], ARGV[3], admitted)
  end
end
return {unparked, bad_keys}
