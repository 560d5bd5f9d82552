-- How many jobs are parked for a limiter's slots (parking.lua), per queue they go back to:
-- the Queues page, a queue's page and `djqueue queues` show them beside a queue's size, since
-- a parked job is in no queue. Reads only.
--
-- KEYS[1] = the set of limiters with parked jobs.
-- ARGV[1] = the parked list prefix, ARGV[2] = the default queue (for a job without one),
-- ARGV[3] = the one queue to count ('' for every queue).
-- ARGV[4] = how many jobs of one parked list are read at most.
-- Returns {{queue, count, ...}, {queue, ...}, the bad keys met}: the second list names the
-- queues whose count is a floor, seen in a parked list longer than ARGV[4] whose rest was not
-- read. A parked list or an index of another type is not counted (noted). Each job read is
-- decoded (1.4-2.2 us each: 7 ms for 5,000), paid by a page view, not by the jobs; the bound
-- keeps a burst parked at the push (a million jobs for a limit of 3) from holding Redis for
-- seconds at every view of the Queues page.

--!include parking

local SLICE = 1000
local counts, order, floors = {}, {}, {}
local only, most = ARGV[3], tonumber(ARGV[4])
if key_is(KEYS[1], 'set', 'skipped: parked jobs not counted') then
  for _, name in ipairs(redis.call('SMEMBERS', KEYS[1])) do
    local parked = ARGV[1] .. name
    if key_is(parked, 'list', 'skipped: its jobs not counted') then
      local cut = redis.call('LLEN', parked) > most
      local start = 0
      while start < most do
        local jobs = redis.call('LRANGE', parked, start, math.min(start + SLICE, most) - 1)
        for _, job in ipairs(jobs) do
          local queue = parked_queue(job, ARGV[2])
          if only == '' or queue == only then
            if not counts[queue] then
              counts[queue] = 0
              order[#order + 1] = queue
            end
            counts[queue] = counts[queue] + 1
            if cut then
              floors[queue] = true
            end
          end
        end
        if #jobs < SLICE then
          break
        end
        start = start + SLICE
      end
    end
  end
end
local reply, floor_names = {}, {}
for _, queue in ipairs(order) do
  reply[#reply + 1] = queue
  reply[#reply + 1] = counts[queue]
  if floors[queue] then
    floor_names[#floor_names + 1] = queue
  end
end
return {reply, floor_names, bad_keys}
