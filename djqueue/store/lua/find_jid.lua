#!lua flags=no-writes
-- Find the entries of a list or a sorted set that mention a jid, scanning inside Redis, so that
-- find-by-jid does not copy a queue to the caller. One call scans at most ARGV[5] entries from
-- index ARGV[4], which bounds how long Redis is busy; the caller repeats from the returned
-- index. The caller parses the candidates and keeps the one whose "jid" field matches (an
-- argument may mention the same id).
-- KEYS[1] = the list or sorted set; ARGV[1] = jid, ARGV[2] = "list" or "zset",
-- ARGV[3] = the most candidates to return, ARGV[4] = first index, ARGV[5] = entries per call.
-- Returns {next index or -1 at the end, member, position, member, position, ...}: the
-- position is the list index from the head, or the score.
local key, needle, kind = KEYS[1], ARGV[1], ARGV[2]
local limit, start, budget = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local chunk = 1000
local stop = start + budget
local found = {-1}
while start < stop do
  local items, step
  if kind == 'list' then
    items = redis.call('LRANGE', key, start, start + chunk - 1)
    step = 1
  else
    items = redis.call('ZRANGE', key, start, start + chunk - 1, 'WITHSCORES')
    step = 2
  end
  for i = 1, #items, step do
    if string.find(items[i], needle, 1, true) then
      found[#found + 1] = items[i]
      if step == 1 then
        found[#found + 1] = start + i - 1
      else
        found[#found + 1] = items[i + 1]
      end
      if #found > limit * 2 then
        found[1] = start + (i - 1) / step + 1
        return found
      end
    end
  end
  if #items < chunk * step then
    return found
  end
  start = start + chunk
end
found[1] = start
return found
