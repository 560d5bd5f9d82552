#!lua
-- Delete a batch of jobs from a queue by value, in one call and one pass of the list.
-- LREM per job walks the list once per job (50,000 deletions from a 100,000-job queue took 50
-- s); here each job is checked at the index it was read at, replaced by a marker, and one
-- LREM removes every marker. A job no longer at its index (jobs pushed since moved it) is
-- removed by value instead.
-- KEYS[1] = queue:NAME; ARGV[1] = a marker value unique to this call;
-- then pairs (index from the head, job JSON as stored), then the status key prefix (a unique
-- job deleted frees its lock: unique.lua).
-- Returns how many jobs were deleted (those already gone are not counted).
--!include unique
local status_prefix = table.remove(ARGV)
local queue, marker = KEYS[1], ARGV[1]
local deleted, marked = 0, false
for i = 2, #ARGV, 2 do
  local index, member = tonumber(ARGV[i]), ARGV[i + 1]
  local gone = 0
  if redis.call('LINDEX', queue, index) == member then
    redis.call('LSET', queue, index, marker)
    marked = true
    gone = 1
  else
    gone = redis.call('LREM', queue, 1, member)
  end
  if gone == 1 then
    deleted = deleted + 1
    unique_release(status_prefix, member, 'end')
  end
end
if marked then
  redis.call('LREM', queue, 0, marker)
end
return deleted
