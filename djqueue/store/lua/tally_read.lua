#!lua flags=allow-oom
-- The counts of a job set per kind of entry (tally.lua), built again first when they cannot
-- be trusted: when the hash is missing, of another type, holds a count that is not a
-- non-negative integer, totals another number than ZCARD (a writer that does not count:
-- Ruby Sidekiq, redis-cli), or was started more than ARGV[1] seconds ago (a writer that does
-- not count and both added and removed since leaves the total right).
-- A count is built in score order, at most about ARGV[2] entries per call (a run of equal
-- scores is read whole), so Redis is never busy for long; the caller calls again while the
-- reply says so. Moves between calls keep the part already built exact (tally.lua). A build
-- whose total differs from ZCARD at its end (a writer that does not count) starts again, and
-- says so (the caller decides how often it waits for another).
-- KEYS[1] = the sorted set, KEYS[2] = its tally hash; ARGV[1] = the most seconds since a
-- count was started; ARGV[2] = entries to read per call.
-- Returns {state, ZCARD, {field, count, ...}, the bad keys met (bad_keys.lua)}: state 0 when
-- the counts were trusted, 1 when this call completed a build, 2 while a build goes on (no
-- counts yet: call again), 3 the same after a build started again. A tally of another type,
-- or holding a count that is not a whole number (negative, a fraction, text), is named and
-- replaced.

--!include bad_keys
--!include tally

local set, kept = KEYS[1], KEYS[2]
local max_age, budget = tonumber(ARGV[1]), tonumber(ARGV[2])
local size = redis.call('ZCARD', set)
local now = tonumber(redis.call('TIME')[1])
local replacing = 'replaced: its counts are taken again from every entry'

local function counts_of(found)
  local flat = {}
  for i = 1, #found, 2 do
    local name = found[i]
    if name ~= '#' and name ~= '@' and name ~= '>' then
      flat[#flat + 1] = name
      flat[#flat + 1] = found[i + 1]
    end
  end
  return flat
end

local function start()
  redis.call('DEL', kept)
  redis.call('HSET', kept, '>', '', '#', 0, '@', now)
  return ''
end

-- Where the count stands: a complete one trusted ({0, ...}), else the score to build from.
local bound
if key_is(kept, 'hash', replacing) and tally_kept(kept) then
  local found = redis.call('HGETALL', kept)
  local sound, total, at = true, nil, nil
  for i = 1, #found, 2 do
    local value = tonumber(found[i + 1])
    if found[i] == '>' then bound = found[i + 1]
    elseif not value or (found[i] ~= '@' and (value < 0 or value ~= math.floor(value))) then
      bad_key(kept, 'holds a count that is not a whole number (' .. found[i] .. ' = '
        .. quoted(found[i + 1]) .. '); ' .. replacing)
      sound = false
    elseif found[i] == '#' then total = value
    elseif found[i] == '@' then at = value end
  end
  if not (sound and total and at and now - at <= max_age) then
    bound = start()
  elseif not bound then
    if total == size then return {0, size, counts_of(found), bad_keys} end
    bound = start()
  end
else
  bound = start()
end

-- Count the entries above the bound, a chunk at a time, each chunk ending with the whole run
-- of its last score, so that the bound is a score and covers whole runs.
local read, again = 0, false
while read < budget do
  local lower = bound == '' and '-inf' or '(' .. bound
  local chunk = redis.call('ZRANGE', set, lower, '+inf', 'BYSCORE', 'LIMIT', 0,
    math.min(1000, budget - read))
  if #chunk == 0 then
    if tonumber(redis.call('HGET', kept, '#')) == size then
      redis.call('HDEL', kept, '>')
      return {1, size, counts_of(redis.call('HGETALL', kept)), bad_keys}
    end
    bound = start()  -- a writer that does not count changed the set meanwhile
    again = true
  else
    -- Members only (scores cost a third of the read): the chunk's last score, and how many
    -- of the chunk lie below it, are two lookups; the run at that score is read whole.
    local last = redis.call('ZSCORE', set, chunk[#chunk])
    local below = redis.call('ZCOUNT', set, lower, '(' .. last)
    local counts, kinds, counted = {}, {}, 0
    local function add(member)
      local kind = tally_kind(member)
      local count = counts[kind]
      if not count then kinds[kind] = member end
      counts[kind] = (count or 0) + 1
      counted = counted + 1
    end
    for i = 1, below do add(chunk[i]) end
    local run = redis.call('ZRANGE', set, last, last, 'BYSCORE')
    for i = 1, #run do add(run[i]) end
    for kind, count in pairs(counts) do
      redis.call('HINCRBY', kept, tally_field(kinds[kind]), count)
    end
    redis.call('HINCRBY', kept, '#', counted)
    redis.call('HSET', kept, '>', last)
    bound = last
    read = read + counted
  end
end
return {again and 3 or 2, size, {}, bad_keys}
