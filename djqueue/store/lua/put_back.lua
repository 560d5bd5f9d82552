#!lua flags=allow-oom
-- A job refused by a limiter it entered in its code, put back (see putting_back.lua): by a
-- concurrency limiter still full now, parked until a slot is given back (parking.lua; the
-- check and the parking are one step, so a slot given back after it unparks the job); else
-- (a window, a bucket, or a slot given back since the refusal) to the schedule set.
--
-- KEYS[1] = the schedule set, KEYS[2] = the working list; for a concurrency limiter also
-- KEYS[3] = its key, KEYS[4] = its parked list, KEYS[5] = the set of limiters with parked
-- jobs.
-- ARGV[1] = the job as stored, ARGV[2] = when it is due again (epoch seconds); for a
-- concurrency limiter ARGV[3] = its name, ARGV[4] = its limit; last, the status key prefix.
-- Returns {1 when put back, 2 when parked, 0 when the job had left the working list; the bad
-- keys met}.

--!include putting_back
--!include parking
local status_prefix = table.remove(ARGV)
if KEYS[3] then
  if key_is(KEYS[3], 'zset', 'skipped: the job is put back in time')
      and free_slots(KEYS[3], tonumber(ARGV[4])) <= 0 then
    local parked = park(KEYS[2], KEYS[4], KEYS[5], ARGV[3], ARGV[1], status_prefix)
    if parked >= 0 then
      return {parked * 2, bad_keys}
    end
  end
end
return {put_back(KEYS[1], KEYS[2], ARGV[1], ARGV[2], status_prefix), bad_keys}
