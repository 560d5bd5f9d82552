-- Write a periodic job declared in code or settings, keeping what operators changed.
-- KEYS[1] = cron_jobs, KEYS[2] = cron_job:NAME, KEYS[3] = cron_job:NAME:enqueued,
-- KEYS[4] = cron_job:NAME:jid_history.
-- ARGV[1] = the cron_jobs member, ARGV[2] = the current tick's epoch, ARGV[3] = that tick as
-- ISO 8601 UTC, ARGV[4] = the status of a new entry, ARGV[5..] = field, value pairs.
-- The status (enabled or disabled from a UI) and the last run of an existing entry stay. A new
-- entry, or one whose cron changed, has its current tick claimed, as sidekiq-cron's save does,
-- so that declaring a job never fires it at once: it first runs at its next tick.
-- The entry is djqueue's own, written again from the code: a key of it holding the wrong type
-- (a string where the hash should be) is replaced. cron_jobs is shared with Ruby and is never
-- replaced: of the wrong type, nothing is written.
-- Returns {1 for a new entry or 0 for an existing one, then 'KEY was a TYPE' per key replaced}.
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'set' and kind ~= 'none' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' is a ' .. kind .. ', not a set; nothing was written')
end
local replaced = {}
for i, expected in ipairs({'hash', 'zset', 'list'}) do
  local key = KEYS[i + 1]
  local found = redis.call('TYPE', key)['ok']
  if found ~= expected and found ~= 'none' then
    redis.call('DEL', key)
    table.insert(replaced, key .. ' was a ' .. found)
  end
end
local existed = redis.call('EXISTS', KEYS[2])
local old_cron = redis.call('HGET', KEYS[2], 'cron')
local new_cron = nil
for i = 5, #ARGV, 2 do
  if ARGV[i] == 'cron' then new_cron = ARGV[i + 1] end
end
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], unpack(ARGV, 5))
redis.call('HSETNX', KEYS[2], 'status', ARGV[4])
if redis.call('EXISTS', KEYS[3]) == 0 or old_cron ~= new_cron then
  redis.call('ZADD', KEYS[3], 'NX', ARGV[2], ARGV[3])
end
return {existed == 1 and 0 or 1, unpack(replaced)}
