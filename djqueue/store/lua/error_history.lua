#!lua
-- One more failed attempt in a tracked job's error history: the status hash's `errors` field,
-- a JSON list of {class, message, traceback, at}, oldest first, the last ARGV[2] kept.
--
-- KEYS[1] = the job's status key.
-- ARGV[1] = the attempt's entry (JSON object), ARGV[2] = how many entries are kept.
-- Returns 1, or 0 when the job is not tracked (no status hash, or a key of another type: the
-- job's next transition replaces it) and nothing was written. A history that is not a JSON
-- list (written by hand) starts afresh rather than failing the settle.

if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' then
  return 0
end
local ok, history = pcall(cjson.decode, redis.call('HGET', KEYS[1], 'errors') or '[]')
if not ok or type(history) ~= 'table' then
  history = {}
end
history[#history + 1] = cjson.decode(ARGV[1])
local keep = tonumber(ARGV[2])
while #history > keep do
  table.remove(history, 1)
end
redis.call('HSET', KEYS[1], 'errors', cjson.encode(history))
return 1
