-- Enable or disable a periodic job, if it still exists (a plain HSET would recreate a deleted
-- one as a hash without a schedule).
-- KEYS[1] = cron_job:NAME; ARGV[1] = 'enabled' or 'disabled'. Returns 1 if set, 0 if gone.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[1])
return 1
