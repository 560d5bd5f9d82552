#!lua flags=allow-oom
-- A process leaves cleanly: flush its last counts and remove every trace of it. Allowed when
-- Redis is out of memory, as beat.lua is: it only counts and deletes.
--
-- KEYS[1..4] = the counters (see stat_counts.lua), KEYS[5] = processes, KEYS[6] =
-- working_lists, then the keys to unlink (the IDENTITY hash, its work hashes, its signals).
-- ARGV[1] = processed, ARGV[2] = failed, ARGV[3] = the daily counters' lifetime,
-- ARGV[4] = IDENTITY, ARGV[5] = '1' to delete its working_lists entry too ('' to keep it:
-- jobs were left in its working lists, for a live process to find).
-- Returns the bad keys met (bad_keys.lua): a bad counter, set or index is skipped, so the
-- rest of the leaving is done.

--!include stat_counts
add_counts(ARGV[1], ARGV[2], ARGV[3])
if key_is(KEYS[5], 'set', 'skipped') then
  redis.call('SREM', KEYS[5], ARGV[4])
end
if ARGV[5] ~= '' and key_is(KEYS[6], 'hash', 'skipped') then
  redis.call('HDEL', KEYS[6], ARGV[4])
end
redis.call('UNLINK', unpack(KEYS, 7))
return bad_keys
