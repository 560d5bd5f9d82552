-- Push working lists back to the front of their queues, oldest job first in line.
--
-- KEYS[1] = the working-lists index hash, KEYS[2] = the queues set,
-- then pairs (working list, queue:NAME).
-- ARGV[1] = the index field to delete when done ('' to keep it), then one queue NAME per pair.
-- Returns the number of jobs pushed back.
--
-- A working list holds the newest job on the left; taking from the left and pushing on the
-- right (RPUSH, the end workers take from) leaves the oldest job at the very front.

local moved = 0
for i = 3, #KEYS, 2 do
  local here = 0
  while true do
    local job = redis.call('LMOVE', KEYS[i], KEYS[i + 1], 'LEFT', 'RIGHT')
    if not job then
      break
    end
    here = here + 1
  end
  if here > 0 then
    redis.call('SADD', KEYS[2], ARGV[(i - 1) / 2 + 1])
  end
  moved = moved + here
end
if ARGV[1] ~= '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
end
return moved
