-- Delete entries of a sorted set (schedule, retry, dead) by value, in one call.
-- KEYS[1] = the sorted set; ARGV = the members as stored, then the set's tally ('' for none;
-- tally.lua), then the status key prefix (a unique job deleted frees its lock: unique.lua).
-- Returns how many entries were deleted (those already gone are not counted).
--!include unique
--!include tally
local status_prefix = table.remove(ARGV)
local counted = table.remove(ARGV)
local deleted = 0
for i = 1, #ARGV do
  if tally_removed(counted, KEYS[1], ARGV[i]) then
    deleted = deleted + 1
    unique_release(status_prefix, ARGV[i], 'end')
  end
end
return deleted
