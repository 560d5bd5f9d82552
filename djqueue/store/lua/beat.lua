#!lua flags=allow-oom
-- One heartbeat: flush the counts, rewrite the busy work, refresh the process's hash and its
-- expiry, record its working lists' queue names, pop one remote signal. A script rather than
-- a MULTI so that it may run when Redis is out of memory (allow-oom): a worker must be able to
-- start and drain the queues that free the memory.
--
-- KEYS[1] = stat:processed, KEYS[2] = stat:failed, KEYS[3] = today's processed counter,
-- KEYS[4] = today's failed counter, KEYS[5] = IDENTITY:work, KEYS[6] = IDENTITY:workers,
-- KEYS[7] = processes, KEYS[8] = the IDENTITY hash, KEYS[9] = working_lists,
-- KEYS[10] = IDENTITY-signals, KEYS[11] = the paused queues' set (read only).
-- ARGV[1] = processed, ARGV[2] = failed (since the last beat), ARGV[3] = the daily counters'
-- lifetime, ARGV[4] = the process hashes' lifetime, ARGV[5] = IDENTITY, ARGV[6] = the JSON list
-- of its queue names, ARGV[7] = F, then F (field, value) pairs of the IDENTITY hash, then
-- (thread id, work JSON) pairs of the busy work.
-- Returns {the signal popped or false, the identities in working_lists, 1 if the IDENTITY
-- hash was missing (a first beat, or Redis lost it: restarted empty, flushed, or away > its
-- lifetime), the bad keys met (bad_keys.lua), the names of the paused queues}. The paused set
-- rides on the beat so that a worker learns of a pause within one beat at no cost of its own;
-- one that is not a set pauses nothing (skipped, noted).
--
-- A key of the wrong type never stops the beat: a bad counter is skipped (stat_counts.lua);
-- this process's own hash and signal list are replaced; the shared `processes` set and
-- `working_lists` hash are skipped (the process is missing from them while they are bad), so
-- the process still beats and its peers still see it alive.

--!include stat_counts
add_counts(ARGV[1], ARGV[2], ARGV[3])
local first_work = 8 + 2 * tonumber(ARGV[7])
redis.call('UNLINK', KEYS[5], KEYS[6])
if #ARGV >= first_work then
  for _, key in ipairs({KEYS[5], KEYS[6]}) do
    redis.call('HSET', key, unpack(ARGV, first_work, #ARGV))
    redis.call('EXPIRE', key, ARGV[4])
  end
end
if key_is(KEYS[7], 'set', 'skipped: this process is not listed') then
  redis.call('SADD', KEYS[7], ARGV[5])
end
local renewed = redis.call('EXISTS', KEYS[8]) == 0 and 1 or 0
for _, own in ipairs({KEYS[8], KEYS[10]}) do
  if not key_is(own, own == KEYS[8] and 'hash' or 'list', 'replaced') then
    redis.call('UNLINK', own)
  end
end
redis.call('HSET', KEYS[8], unpack(ARGV, 8, first_work - 1))
-- The beat's time is Redis's: hosts' clocks may differ, and a peer judges silence by it.
local now = redis.call('TIME')
redis.call('HSET', KEYS[8], 'beat', string.format('%d.%06d', now[1], now[2]))
redis.call('EXPIRE', KEYS[8], ARGV[4])
local peers = {ARGV[5]}
if key_is(KEYS[9], 'hash', 'skipped: no process finds the jobs of this one should it die') then
  redis.call('HSET', KEYS[9], ARGV[5], ARGV[6])
  peers = redis.call('HKEYS', KEYS[9])
end
local paused = {}
if key_is(KEYS[11], 'set', 'skipped: no queue counts as paused') then
  paused = redis.call('SMEMBERS', KEYS[11])
end
return {redis.call('RPOP', KEYS[10]) or false, peers, renewed, bad_keys, paused}
