-- Write a periodic job declared in code or settings, keeping what operators changed.
-- KEYS[1] = cron_jobs, KEYS[2] = cron_job:NAME, KEYS[3] = cron_job:NAME:enqueued.
-- ARGV[1] = the cron_jobs member, ARGV[2] = the current tick's epoch, ARGV[3] = that tick as
-- ISO 8601 UTC, ARGV[4] = the status of a new entry, ARGV[5..] = field, value pairs.
-- The status (enabled or disabled from a UI) and the last run of an existing entry stay. A new
-- entry, or one whose cron changed, has its current tick claimed, as sidekiq-cron's save does,
-- so that declaring a job never fires it at once: it first runs at its next tick.
-- Returns 1 for a new entry, 0 for an existing one.
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
return existed == 1 and 0 or 1
