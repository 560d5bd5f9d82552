-- How many jobs are parked for a limiter's slots (parking.lua), per queue they go back to:
-- the Queues page, a queue's page and `djqueue queues` show them beside a queue's size, since
-- a parked job is in no queue. Reads only.
--
-- KEYS[1] = the set of limiters with parked jobs.
-- ARGV[1] = the parked list prefix, ARGV[2] = the default queue (for a job without one),
-- ARGV[3] = the one queue to count ('' for every queue).
-- Returns {queue, count, ..., the bad keys met}: a parked list or an index of another type is
-- not counted (noted). Each parked job is decoded: the cost grows with the parked jobs' number
-- (1.4-2.2 us each: 7 ms for 5,000), paid by a page view, not by the jobs.

--!include parking

local SLICE = 1000
local counts, order = {}, {}
local only = ARGV[3]
if key_is(KEYS[1], 'set', 'skipped: parked jobs not counted') then
  for _, name in ipairs(redis.call('SMEMBERS', KEYS[1])) do
    local parked = ARGV[1] .. name
    if key_is(parked, 'list', 'skipped: its jobs not counted') then
      local start = 0
      while true do
        local jobs = redis.call('LRANGE', parked, start, start + SLICE - 1)
        for _, job in ipairs(jobs) do
          local queue = parked_queue(job, ARGV[2])
          if only == '' or queue == only then
            if not counts[queue] then
              counts[queue] = 0
              order[#order + 1] = queue
            end
            counts[queue] = counts[queue] + 1
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
local reply = {}
for _, queue in ipairs(order) do
  reply[#reply + 1] = queue
  reply[#reply + 1] = counts[queue]
end
return {reply, bad_keys}
