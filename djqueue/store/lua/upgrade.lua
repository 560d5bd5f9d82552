#!lua
-- Move djqueue's own keys from layout 1's names (no prefix) to layout 2's (`djqueue:`), one
-- batch per call, so that nothing an earlier version wrote is lost (see upgrade.py).
--
-- KEYS[1] = layout 1's recoveries hash, KEYS[2] = layout 2's; then groups of four:
-- (old status hash, new status hash, old done list, new done list).
-- ARGV[1] = the recoveries hash's lifetime in seconds.
-- Returns {recoveries entries merged (-1: a recoveries key is not a hash, nothing merged),
-- statuses moved, statuses left (the new name taken)}.
--
-- Recoveries are merged, each jid keeping the larger count of starts (an old and a new process
-- may both have counted), and the old hash is deleted. A status moves (RENAME keeps its
-- lifetime) only when the old key is a job status (a hash with `state` and `retention`, so an
-- app's own `status:...` key in a shared Redis is never touched) and the new name is free;
-- when both layouts hold one, both stay and the read picks (StatusStore.read).

local function kind(key)
  return redis.call('TYPE', key)['ok']
end

local merged = 0
local old = {}
if kind(KEYS[1]) == 'hash' and (kind(KEYS[2]) == 'hash' or kind(KEYS[2]) == 'none') then
  old = redis.call('HGETALL', KEYS[1])
elseif kind(KEYS[1]) ~= 'none' then
  merged = -1
end
for i = 1, #old, 2 do
  local here = tonumber(redis.call('HGET', KEYS[2], old[i])) or -1
  local count = tonumber(old[i + 1]) or 0
  if count > here then
    redis.call('HSET', KEYS[2], old[i], count)
  end
  merged = merged + 1
end
if merged > 0 then
  redis.call('EXPIRE', KEYS[2], ARGV[1])
  redis.call('DEL', KEYS[1])
end

local moved, left = 0, 0
for i = 3, #KEYS, 4 do
  if kind(KEYS[i]) == 'hash'
      and redis.call('HEXISTS', KEYS[i], 'state') == 1
      and redis.call('HEXISTS', KEYS[i], 'retention') == 1 then
    if redis.call('EXISTS', KEYS[i + 1]) == 0 then
      redis.call('RENAME', KEYS[i], KEYS[i + 1])
      if kind(KEYS[i + 2]) == 'list'
          and redis.call('EXISTS', KEYS[i + 3]) == 0 then
        redis.call('RENAME', KEYS[i + 2], KEYS[i + 3])
      end
      moved = moved + 1
    else
      left = left + 1
    end
  end
end
return {merged, moved, left}
