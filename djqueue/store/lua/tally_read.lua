#!lua
-- The counts of a job set per kind of entry (tally.lua), counted again first when they cannot
-- be trusted: when the hash is missing, of another type, holds a count that is not a
-- non-negative integer, totals another number than ZCARD (a writer that does not count:
-- Ruby Sidekiq, redis-cli), or was last counted whole more than ARGV[1] seconds ago (a
-- writer that does not count and both added and removed since leaves the total right).
-- Counting again reads the whole set in this one call.
-- KEYS[1] = the sorted set, KEYS[2] = its tally hash; ARGV[1] = the most seconds since the
-- last whole count.
-- Returns {1 when counted again else 0, ZCARD, {field, count, ...} (the '#' and '@' fields
-- left out), the bad keys met (bad_keys.lua)}: a tally of another type, or holding a count
-- that is not a number, is named and replaced.

--!include bad_keys
--!include tally

local set, kept = KEYS[1], KEYS[2]
local size = redis.call('ZCARD', set)
local now = tonumber(redis.call('TIME')[1])

local function without_totals(found)
  local flat = {}
  for i = 1, #found, 2 do
    local name = found[i]
    if name ~= '#' and name ~= '@' then
      flat[#flat + 1] = name
      flat[#flat + 1] = found[i + 1]
    end
  end
  return flat
end

local replacing = 'replaced: its counts are taken again from every entry'
if key_is(kept, 'hash', replacing) and tally_kept(kept) then
  local found = redis.call('HGETALL', kept)
  local sound, total, at = true, nil, nil
  for i = 1, #found, 2 do
    local value = tonumber(found[i + 1])
    if not value then
      bad_key(kept, 'holds a count that is not a number; ' .. replacing)
      sound = false
    elseif found[i] == '#' then total = value
    elseif found[i] == '@' then at = value
    elseif value < 0 or value ~= math.floor(value) then sound = false end
  end
  if sound and total == size and at and now - at <= tonumber(ARGV[1]) then
    return {0, size, without_totals(found), bad_keys}
  end
end

redis.call('DEL', kept)
local counts, start = {}, 0
while start < size do
  local items = redis.call('ZRANGE', set, start, start + 999)
  if #items == 0 then break end
  for i = 1, #items do
    local name = tally_field(items[i])
    counts[name] = (counts[name] or 0) + 1
  end
  start = start + #items
end
local flat, batch = {}, {'#', size, '@', now}
for name, count in pairs(counts) do
  flat[#flat + 1] = name
  flat[#flat + 1] = count
  batch[#batch + 1] = name
  batch[#batch + 1] = count
  if #batch >= 1000 then  -- unpack() takes a few thousand values at most
    redis.call('HSET', kept, unpack(batch))
    batch = {}
  end
end
if #batch > 0 then redis.call('HSET', kept, unpack(batch)) end
return {1, size, flat, bad_keys}
