-- The counts of a job set (retry, dead) per job, kept as its entries come and go (included by
-- every script that adds to or removes from those sets): the counts page of a 100,000-job set
-- cannot afford to read every entry, so the scripts that move one entry count it.
-- The hash TALLY (djqueue's own key beside the set, `Keys.tally`) holds one field per kind of
-- entry, the JSON array [shown name, class, retry_queue, queue] as fields.lua reads them from
-- the entry (false for one it lacks), with how many entries of that kind the set holds, and
-- the field '#', their total, which the reader (tally_read.lua) compares with ZCARD: any
-- writer that does not count (Ruby Sidekiq, redis-cli) changes the size without the total.
-- Only an existing hash is counted into: a missing one is built whole by the reader, never
-- started from one entry. A tally key of another type is left to the reader (which names
-- and replaces it), one whose counts are not integers is dropped (the reader counts again):
-- neither fails the move it follows.

--!include fields

local tally_kinds = {}

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

local function tally_field(member)
  return cjson.encode({shown_name(member) or false, field(member, 'class') or false,
    field(member, 'retry_queue') or false, field(member, 'queue') or false})
end

-- Count one entry in (delta 1) or out (delta -1) of the set TALLY counts.
local function tally(counts, member, delta)
  if not tally_kept(counts) then return end
  local name = tally_field(member)
  local count = redis.pcall('HINCRBY', counts, name, delta)
  local total = redis.pcall('HINCRBY', counts, '#', delta)
  if type(count) ~= 'number' or type(total) ~= 'number' then
    redis.call('DEL', counts)
    tally_kinds[counts] = 'none'
  elseif count == 0 then
    redis.call('HDEL', counts, name)
  end
end

-- Count out the entries of SET that a range removal is about to take: ZRANGE's arguments
-- after the key (read only while the set is counted).
local function tally_range(counts, set, ...)
  if not tally_kept(counts) then return end
  local gone = redis.call('ZRANGE', set, ...)
  for i = 1, #gone do tally(counts, gone[i], -1) end
end
