-- Keys of the wrong kind (see scripts.py: `--!include bad_keys`). A script checks a key before
-- the write it guards (Lua does not roll back: a WRONGTYPE after a move would leave the move
-- done while the caller sees an error), skips or repairs a bad one, and notes it here; the
-- script returns `bad_keys` so its caller logs each key once by name (store/bad_keys.py).

local bad_keys = {}

local function bad_key(key, problem)
  bad_keys[#bad_keys + 1] = key
  bad_keys[#bad_keys + 1] = problem
end

-- A Redis type (as TYPE names it) with its article, as a person reads it: 'a sorted set'.
local function type_name(kind)
  if kind == 'zset' then
    return 'a sorted set'
  end
  return 'a ' .. kind
end

-- True when KEY holds a WANTED (a Redis type name) or nothing; else it is noted, with what is
-- done about it (DOING: 'skipped', 'replaced', ...), and false. Its type comes second.
local function key_is(key, wanted, doing)
  local kind = redis.call('TYPE', key)['ok']
  if kind == wanted or kind == 'none' then
    return true, kind
  end
  bad_key(key, 'holds ' .. type_name(kind) .. ', not ' .. type_name(wanted) .. '; ' .. doing)
  return false, kind
end

-- key_is asked once per key and call, for a key that no script replaces while it runs (the
-- limiters' keys that admission.lua checks for every job of a bulk push): its type can then
-- only go from none to WANTED during the call, so the first answer holds, and a bad key is
-- noted once.
local kept_types = {}
local function key_is_kept(key, wanted, doing)
  local found = kept_types[key]
  if found == nil then
    found = key_is(key, wanted, doing)
    kept_types[key] = found
  end
  return found
end

-- True when VALUE (a reply or nil) is absent or an integer INCRBY / HINCRBY accept.
local function is_count(value)
  return not value or (#value <= 18 and string.match(value, '^-?%d+$') ~= nil)
end

-- A value quoted for a problem's text, cut short.
local function quoted(value)
  return string.format('%q', string.sub(value, 1, 40))
end

-- True when KEY is absent or a string counter INCRBY accepts; else noted, and false.
local function key_is_count(key, doing)
  if not key_is(key, 'string', doing) then
    return false
  end
  local value = redis.call('GET', key)
  if is_count(value) then
    return true
  end
  bad_key(key, 'holds ' .. quoted(value) .. ', not an integer; ' .. doing)
  return false
end
