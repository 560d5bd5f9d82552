#!lua flags=allow-oom
-- One heartbeat: flush the counts, rewrite the busy work, refresh the process's hash and its
-- expiry, record its working lists' queue names, pop one remote signal. A script rather than
-- a MULTI so that it may run when Redis is out of memory (allow-oom): a worker must be able to
-- start and drain the queues that free the memory.
--
-- KEYS[1] = stat:processed, KEYS[2] = stat:failed, KEYS[3] = today's processed counter,
-- KEYS[4] = today's failed counter, KEYS[5] = IDENTITY:work, KEYS[6] = IDENTITY:workers,
-- KEYS[7] = processes, KEYS[8] = the IDENTITY hash, KEYS[9] = working_lists,
-- KEYS[10] = IDENTITY-signals.
-- ARGV[1] = processed, ARGV[2] = failed (since the last beat), ARGV[3] = the daily counters'
-- lifetime, ARGV[4] = the process hashes' lifetime, ARGV[5] = IDENTITY, ARGV[6] = the JSON list
-- of its queue names, ARGV[7] = F, then F (field, value) pairs of the IDENTITY hash, then
-- (thread id, work JSON) pairs of the busy work.
-- Returns {the signal popped or nil, the identities in working_lists, 1 if the IDENTITY hash
-- was missing (a first beat, or Redis lost it: restarted empty, flushed, or away > its lifetime)}.

local counts = {{tonumber(ARGV[1]), 1, 3}, {tonumber(ARGV[2]), 2, 4}}
for _, c in ipairs(counts) do
  if c[1] > 0 then
    redis.call('INCRBY', KEYS[c[2]], c[1])
    redis.call('INCRBY', KEYS[c[3]], c[1])
    redis.call('EXPIRE', KEYS[c[3]], ARGV[3])
  end
end
local first_work = 8 + 2 * tonumber(ARGV[7])
redis.call('UNLINK', KEYS[5], KEYS[6])
if #ARGV >= first_work then
  for _, key in ipairs({KEYS[5], KEYS[6]}) do
    redis.call('HSET', key, unpack(ARGV, first_work, #ARGV))
    redis.call('EXPIRE', key, ARGV[4])
  end
end
redis.call('SADD', KEYS[7], ARGV[5])
local renewed = redis.call('EXISTS', KEYS[8]) == 0 and 1 or 0
redis.call('HSET', KEYS[8], unpack(ARGV, 8, first_work - 1))
-- The beat's time is Redis's: hosts' clocks may differ, and a peer judges silence by it.
local now = redis.call('TIME')
redis.call('HSET', KEYS[8], 'beat', string.format('%d.%06d', now[1], now[2]))
redis.call('EXPIRE', KEYS[8], ARGV[4])
redis.call('HSET', KEYS[9], ARGV[5], ARGV[6])
local signal = redis.call('RPOP', KEYS[10])
return {signal, redis.call('HKEYS', KEYS[9]), renewed}
