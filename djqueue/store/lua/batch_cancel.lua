#!lua
-- Mark a batch cancelled (batch.lua): its callbacks are never pushed from now on, and jobs
-- pushed into it are refused; its running jobs read the mark (`Batch.cancelled`).
-- KEYS[1] = the batch hash. ARGV[1] = the status key prefix (unused but for the includes).
-- Returns 1 when marked (or marked already), 0 when the batch is unknown or expired.
--!include batch
table.remove(ARGV)
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('HSETNX', KEYS[1], 'cancelled_at', status_now())
batch_touch(KEYS[1])
return 1
