-- Unique jobs' locks (djqueue/unique.py), included by every script that writes a new job or
-- ends one's life as a waiting or running job (see scripts.py: `--!include unique`).
-- A job holds a lock when its JSON carries a top-level "unique_digest" field: a plain
-- string.find tests for it first, so any other job costs one substring search; only a match
-- is decoded (an argument may hold the word). The lock is the string key
-- OWN_PREFIX .. 'unique:' .. DIGEST holding the jid of the job that has it, with a lifetime
-- (`unique_for`, plus the wait of a scheduled job): a crashed worker never holds it for ever.
-- Its name is made from the status key prefix each script receives as its last ARGV
-- (OWN_PREFIX .. 'status:'), the lock being its sibling under the same own prefix
-- (`Keys.unique` in keys.py spells the same name).
-- A lock key of another type is this job's own entry gone bad: it is replaced and noted in
-- `bad_keys`, so the push or the move goes on.

--!include bad_keys
--!include namespace

-- The decoded job when it holds a unique lock, else nil.
local function unique_job(json)
  if not string.find(json, '"unique_digest":', 1, true) then return nil end
  local ok, decoded = pcall(cjson.decode, json)
  if ok and type(decoded) == 'table' and type(decoded['jid']) == 'string'
      and type(decoded['unique_digest']) == 'string' then
    return decoded
  end
  return nil
end

local function unique_key(status_prefix, job)
  return namespace_own(status_prefix) .. 'unique:' .. job['unique_digest']
end

-- Take the lock for JOB (decoded), due in WAIT seconds (0 for a queued job). Returns nil when
-- taken, or held by this very job already (a second write of it: an outbox row relayed
-- twice), else the jid of the job that holds it: the caller then writes nothing of JOB.
local function unique_claim(status_prefix, job, wait)
  local key = unique_key(status_prefix, job)
  local holder
  if key_is(key, 'string', 'replaced') then
    holder = redis.call('GET', key)
  else
    redis.call('UNLINK', key)
  end
  if holder and holder ~= job['jid'] then
    return holder
  end
  local ttl = math.ceil((tonumber(job['unique_for']) or 1) + math.max(0, tonumber(wait) or 0))
  redis.call('SET', key, job['jid'], 'EX', math.max(1, ttl))
  return nil
end

-- Free the lock of the job stored as JSON, if that job still holds it (a lock that expired
-- and was taken by a later push belongs to that push). MOMENT is 'start' when a worker takes
-- the job (only a job pushed with unique_until 'start' lets go then), else 'end'.
local function unique_release(status_prefix, json, moment)
  local job = unique_job(json)
  if not job then return end
  if moment == 'start' and job['unique_until'] ~= 'start' then return end
  local key = unique_key(status_prefix, job)
  if redis.call('TYPE', key)['ok'] == 'string' and redis.call('GET', key) == job['jid'] then
    redis.call('DEL', key)
  end
end
