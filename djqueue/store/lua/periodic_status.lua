-- Enable or disable a periodic job, if it still exists as a hash (a plain HSET would recreate a
-- deleted one as a hash without a schedule, or fail on a key of the wrong type).
-- KEYS[1] = cron_job:NAME; ARGV[1] = 'enabled' or 'disabled'. Returns 1 if set, 0 if not.
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[1])
return 1
