-- Find the entries of a list or a sorted set that mention a jid, in one round trip, so that
-- find-by-jid does not copy a whole queue to the caller. The caller parses the candidates and
-- keeps the one whose "jid" field matches (an argument may mention the same id).
-- KEYS[1] = the list or sorted set; ARGV[1] = jid, ARGV[2] = "list" or "zset",
-- ARGV[3] = the most candidates to return.
-- Returns {member, position, member, position, ...}: the list index from the head, or the score.
local key, needle, kind = KEYS[1], ARGV[1], ARGV[2]
local limit = tonumber(ARGV[3])
local chunk = 1000
local found = {}
local start = 0
while true do
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
      if #found >= limit * 2 then
        return found
      end
    end
  end
  if #items < chunk * step then
    return found
  end
  start = start + chunk
end
