-- The counts of a job set (retry, dead) per job, kept as its entries come and go (included by
-- every script that adds to or removes from those sets): the counts page of a 100,000-job set
-- cannot afford to read every entry, so the scripts that move one entry count it.
-- The hash TALLY (djqueue's own key beside the set, `Keys.tally`) holds one field per kind of
-- entry, the JSON array [shown name, class, retry_queue, queue] as fields.lua reads them from
-- the entry (false for one it lacks), with how many entries of that kind the set holds; '#',
-- their total, which the reader (tally_read.lua) compares with ZCARD (any writer that does not
-- count, Ruby Sidekiq or redis-cli, changes the size without the total); '@', when the count
-- was started. While the reader builds the count, a few thousand entries per call in score
-- order, '>' holds the score it has counted up to: a move counts only an entry at or below it
-- (the build counts the others when it gets there), so a count being built stays exact.
-- Only an existing hash is counted into: a missing one is built by the reader, never started
-- from one entry. A tally key of another type, or one whose counts are not integers, is left
-- to the reader, which names it and counts again: neither fails the move it follows (this
-- call stops counting into it).

--!include fields

local tally_kinds, tally_bounds = {}, {}

-- Whether TALLY is a hash now (one TYPE per key and call); '' names no tally (schedule).
local function tally_kept(counts)
  if counts == '' then return false end
  local kind = tally_kinds[counts]
  if kind == nil then
    kind = redis.call('TYPE', counts)['ok']
    tally_kinds[counts] = kind
  end
  return kind == 'hash'
end

-- The score a count being built has reached ('>'; '' before its first entry: 'none'), or
-- false once it is complete.
local function tally_bound(counts)
  local bound = tally_bounds[counts]
  if bound == nil then
    bound = redis.call('HGET', counts, '>')
    if bound == '' then bound = 'none' elseif bound then bound = tonumber(bound) end
    tally_bounds[counts] = bound or false
  end
  return tally_bounds[counts]
end

-- Whether the count holds an entry at SCORE: every entry once complete, else those at or
-- below the score the build has reached.
local function tally_covers(counts, score)
  local bound = tally_bound(counts)
  if not bound then return true end
  return bound ~= 'none' and tonumber(score) <= bound
end

local function tally_field(member)
  return cjson.encode({shown_name(member) or false, field(member, 'class') or false,
    field(member, 'retry_queue') or false, field(member, 'queue') or false})
end

-- What tally_field tells apart, cheaper to make for every entry of a build (no table, no
-- JSON): each value with its length before it, '-' for one the entry lacks.
local function tally_part(value)
  if value then return #value .. ':' .. value end
  return '-'
end

local function tally_kind(member)
  local class = field(member, 'class')
  return tally_part(shown_name(member, class)) .. tally_part(class) .. tally_part(field(member, 'retry_queue'))
    .. tally_part(field(member, 'queue'))
end

local function tally_count(counts, member, delta)
  local name = tally_field(member)
  local count = redis.pcall('HINCRBY', counts, name, delta)
  local total = redis.pcall('HINCRBY', counts, '#', delta)
  if type(count) ~= 'number' or type(total) ~= 'number' then
    tally_kinds[counts] = 'none'  -- a count that is not an integer: the reader names it
  elseif count == 0 then
    redis.call('HDEL', counts, name)
  end
end

-- A member's score when a count being built needs it (nil otherwise): read before a removal.
local function tally_score(counts, set, member)
  if tally_kept(counts) and tally_bound(counts) then
    return redis.call('ZSCORE', set, member)
  end
  return nil
end

-- Count out an entry of the set that this call removed; SCORE from tally_score, read before.
local function tally_out(counts, member, score)
  if tally_kept(counts) and tally_covers(counts, score) then
    tally_count(counts, member, -1)
  end
end

-- ZADD SCORE MEMBER to SET and count it: a new entry in, and an entry already there whose
-- new score moves it across the score a build has reached in or out.
local function tally_zadd(counts, set, score, member)
  local before = tally_score(counts, set, member)
  if redis.call('ZADD', set, score, member) == 1 then
    if tally_kept(counts) and tally_covers(counts, score) then tally_count(counts, member, 1) end
  elseif before and tally_covers(counts, before) ~= tally_covers(counts, score) then
    tally_count(counts, member, tally_covers(counts, score) and 1 or -1)
  end
end

-- ZREM MEMBER from SET, counted out when it was there: whether it was.
local function tally_removed(counts, set, member)
  local score = tally_score(counts, set, member)
  if redis.call('ZREM', set, member) == 1 then
    tally_out(counts, member, score)
    return true
  end
  return false
end

-- Count out the entries of SET that a range removal is about to take: ZRANGE's arguments
-- after the key (read only while the set is counted).
local function tally_range(counts, set, ...)
  if not tally_kept(counts) then return end
  local range = {...}
  range[#range + 1] = 'WITHSCORES'
  local gone = redis.call('ZRANGE', set, unpack(range))
  for i = 1, #gone, 2 do tally_out(counts, gone[i], gone[i + 1]) end
end
