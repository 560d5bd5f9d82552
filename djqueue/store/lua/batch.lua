-- Batches and chains (djqueue/batch.py), included by the scripts that write a new job or end a
-- job's run: push (jobs added), take's acknowledgements (success, and a chain's next step),
-- retry_later, bury and finish (failures, deaths). A job is in a batch when its JSON carries
-- a top-level "bid", and is a chain's step when it carries "chain": a plain string.find tests
-- for each first, so any other job costs one substring search and nothing else.
--
-- A batch is the hash OWN..'batch:'..BID (fields in docs/design.md, "Batches"), with the set
-- of the jids that have not succeeded (':pending') and the hash jid -> latest failure
-- (':failed'). Every count moves only on a change of one of those two: a success is counted
-- when its SREM from ':pending' removes it (so a job run again after a crash, or acknowledged
-- twice, counts once), a first failure when its HSET into ':failed' creates the field. A
-- callback is pushed when its '<event>_at' field is created (HSETNX): once, whoever gets there.
-- Key names are made from the status key prefix each script receives (OWN..'status:'), as the
-- unique locks' are; queue names from the namespace before OWN.

--!include status

local BATCH_RETENTION = 7 * 24 * 3600

-- The namespace prefix ('' or 'NS:'): the status prefix without 'djqueue:status:'.
local function batch_namespace(prefix)
  return string.sub(prefix, 1, -16)
end

local function batch_key(prefix, bid)
  return namespace_own(prefix) .. 'batch:' .. bid
end

-- The batch's keys live its retention from their last change.
local function batch_touch(key)
  local ttl = tonumber(redis.call('HGET', key, 'retention')) or BATCH_RETENTION
  redis.call('EXPIRE', key, ttl)
  redis.call('EXPIRE', key .. ':pending', ttl)
  redis.call('EXPIRE', key .. ':failed', ttl)
end

-- Whether the batch KEY's keys are of their types (a hash, the ':pending' set, the ':failed'
-- hash; absent is fine), checked once per call. A batch with a key of another type is named
-- (bad_keys) and counted nowhere, and no job may join it: the job's own move goes on, as
-- every script does with a shared key of the wrong type.
local batch_checked = {}
local function batch_sound(key)
  local known = batch_checked[key]
  if known == nil then
    local doing = 'skipped: the batch is not counted'
    known = key_is(key, 'hash', doing) and key_is(key .. ':pending', 'set', doing)
      and key_is(key .. ':failed', 'hash', doing)
    batch_checked[key] = known
  end
  return known
end

-- The decoded job when it carries FIELD ('bid' or 'chain'), else nil. A job is decoded once
-- per call (push.lua looks at a job of a batch before it writes it, and when it counts it).
local function batch_job(json, field)
  if not string.find(json, '"' .. field .. '":', 1, true) then return nil end
  local decoded = job_decoded(json)
  if decoded and decoded[field] ~= nil then
    return decoded
  end
  return nil
end

-- Jobs counted at the end of a call, per batch (`batch_count`): jids by bid, bids in order.
local batch_gathered, batch_bids = {}, {}
local function batch_gather(json)
  local job = batch_job(json, 'bid')
  if not job or type(job['bid']) ~= 'string' then return end
  local bid = job['bid']
  local jids = batch_gathered[bid]
  if not jids then
    jids = {}
    batch_gathered[bid] = jids
    batch_bids[#batch_bids + 1] = bid
  end
  jids[#jids + 1] = job['jid']
end

-- COMMAND (SADD, SREM, HDEL) on KEY with every jid of JIDS, in slices; the total it answers.
local function batch_each(command, key, jids)
  local done, from = 0, 1
  while from <= #jids do
    local stop = math.min(from + 3999, #jids)
    done = done + redis.call(command, key, unpack(jids, from, stop))
    from = stop + 1
  end
  return done
end

-- A job text made from a template cut at its placeholder argument: HEAD .. VALUE .. TAIL, or
-- without the placeholder when VALUE is nil; then TAIL's closing brace gets EXTRA fields and
-- enqueued_at (now).
local function batch_splice(head, tail, value, extra)
  local text
  if value then
    text = head .. value .. tail
  elseif string.sub(head, -1) == ',' then
    text = string.sub(head, 1, -2) .. tail
  elseif string.sub(tail, 1, 1) == ',' then
    text = head .. string.sub(tail, 2)
  else
    text = head .. tail
  end
  return string.sub(text, 1, -2) .. (extra or '') .. ',"enqueued_at":' .. status_now() .. '}'
end

-- Push a job made in Lua (a callback, a chain's next step) to QUEUE. A queue key of another
-- type is noted and the job not pushed (Lua cannot roll back what came before).
local function batch_push(prefix, queue, json)
  local ns = batch_namespace(prefix)
  local key = ns .. 'queue:' .. queue
  if not key_is(key, 'list', 'a batch callback or chain step for it was not pushed') then
    return
  end
  redis.call('LPUSH', key, json)
  redis.call('SADD', ns .. 'queues', queue)
  local job = status_job(json)
  if job then
    status_moving(prefix, job, 'pending', 0, 'enqueued_at', status_text(job['enqueued_at']),
      'payload', json)
  end
end

-- The status given to a callback (its last argument).
local function batch_status(key, bid, event)
  local v = redis.call('HMGET', key, 'description', 'total', 'pending', 'failures', 'dead',
    'parent')
  local status = {bid = bid, event = event, description = v[1] or '',
    total = tonumber(v[2]) or 0, pending = tonumber(v[3]) or 0,
    failures = tonumber(v[4]) or 0, dead = tonumber(v[5]) or 0}
  if v[6] then status['parent'] = v[6] end
  return cjson.encode(status)
end

-- EVENT ('complete', 'success', 'death') has happened: its callbacks are pushed, once.
-- Returns true the first time (the caller then tells the parent), false after, or when the
-- batch was cancelled (no callback of a cancelled batch is pushed).
local function batch_fire(prefix, key, bid, event)
  if redis.call('HEXISTS', key, 'cancelled_at') == 1 then return false end
  if redis.call('HSETNX', key, event .. '_at', status_now()) == 0 then return false end
  local templates = redis.call('HGET', key, 'push:' .. event)
  if templates then
    local ok, items = pcall(cjson.decode, templates)
    if ok and type(items) == 'table' then
      local status = batch_status(key, bid, event)
      for _, item in ipairs(items) do
        batch_push(prefix, item[1], batch_splice(item[2], item[3], status))
      end
    else
      bad_key(key, 'has callbacks that are not JSON; none pushed for ' .. event)
    end
  end
  return true
end

-- After a count moved: fire what the counts now say, and pass a child's complete and
-- success on to its parent (a child is one member of its parent's remaining and pending).
local batch_check
batch_check = function(prefix, bid)
  local key = batch_key(prefix, bid)
  if not batch_sound(key) then return end
  local v = redis.call('HMGET', key, 'remaining', 'pending', 'parent', 'complete_at',
    'success_at')
  if not v[1] then return end
  local parent = v[3]
  if tonumber(v[1]) <= 0 and not v[4] and batch_fire(prefix, key, bid, 'complete') and parent then
    local parent_key = batch_key(prefix, parent)
    if batch_sound(parent_key) and redis.call('EXISTS', parent_key) == 1 then
      redis.call('HINCRBY', parent_key, 'remaining', -1)
      batch_touch(parent_key)
      batch_check(prefix, parent)
    end
  end
  if tonumber(v[2]) <= 0 and not v[5] and batch_fire(prefix, key, bid, 'success') and parent then
    local parent_key = batch_key(prefix, parent)
    if batch_sound(parent_key) and redis.call('EXISTS', parent_key) == 1 then
      redis.call('HINCRBY', parent_key, 'pending', -1)
      redis.call('HINCRBY', parent_key, 'children', -1)
      batch_touch(parent_key)
      batch_check(prefix, parent)
    end
  end
end

-- A job of the batch died: counted in it and in every batch above it; each one's death
-- callbacks are pushed at its first.
local function batch_died(prefix, bid)
  while bid do
    local key = batch_key(prefix, bid)
    if not batch_sound(key) or redis.call('EXISTS', key) == 0 then return end
    redis.call('HINCRBY', key, 'dead', 1)
    batch_fire(prefix, key, bid, 'death')
    batch_touch(key)
    bid = redis.call('HGET', key, 'parent')
  end
end

-- The jobs (their JSON as stored) were added to their batches by a push: gathered with
-- `batch_gather`, counted here once per jid (SADD answers how many were new), per batch.
local function batch_count_added(prefix)
  for _, bid in ipairs(batch_bids) do
    local key = batch_key(prefix, bid)
    if batch_sound(key) and redis.call('EXISTS', key) == 1 then
      local added = batch_each('SADD', key .. ':pending', batch_gathered[bid])
      if added > 0 then
        redis.call('HINCRBY', key, 'total', added)
        redis.call('HINCRBY', key, 'pending', added)
        redis.call('HINCRBY', key, 'remaining', added)
      end
      batch_touch(key)
    end
  end
  batch_gathered, batch_bids = {}, {}
end

-- The jobs (their JSON as stored) ran and were acknowledged: gathered with `batch_gather`,
-- counted here, per batch. A success counts once: only a jid the SREM removes from
-- ':pending' (so a job run twice after a crash counts once); one that leaves ':failed' as it
-- does had its first run counted at its first failure.
local function batch_count_successes(prefix)
  for _, bid in ipairs(batch_bids) do
    local key = batch_key(prefix, bid)
    local jids = batch_gathered[bid]
    local removed = batch_sound(key) and batch_each('SREM', key .. ':pending', jids) or 0
    if removed > 0 then
      local failed_before = batch_each('HDEL', key .. ':failed', jids)
      redis.call('HINCRBY', key, 'pending', -removed)
      if removed > failed_before then
        redis.call('HINCRBY', key, 'remaining', failed_before - removed)
      end
      batch_touch(key)
      batch_check(prefix, bid)
    end
  end
  batch_gathered, batch_bids = {}, {}
end

-- The job (its JSON, with its failure recorded when ERROR_CLASS is nil) failed; DIED: it will
-- not run again (dead, dropped, discarded). Its first failure ends its first run.
local function batch_failed(prefix, json, died, error_class, error_message)
  local job = batch_job(json, 'bid')
  if not job or type(job['bid']) ~= 'string' then return end
  local bid, jid = job['bid'], job['jid']
  local key = batch_key(prefix, bid)
  if not batch_sound(key) or redis.call('EXISTS', key) == 0 then return end
  if redis.call('SISMEMBER', key .. ':pending', jid) == 0 then return end
  local before = redis.call('HGET', key .. ':failed', jid)
  local was_dead = before and string.find(before, '"dead":true', 1, true)
  local entry = {class = status_text(job['class']),
    error_class = error_class or status_text(job['error_class']),
    error_message = error_message or status_text(job['error_message']),
    at = tonumber(status_now())}
  if died or was_dead then entry['dead'] = true end
  redis.call('HSET', key .. ':failed', jid, cjson.encode(entry))
  if not before then
    redis.call('HINCRBY', key, 'failures', 1)
    redis.call('HINCRBY', key, 'remaining', -1)
  end
  batch_touch(key)
  if died and not was_dead then
    batch_died(prefix, bid)
  end
  batch_check(prefix, bid)
end

-- A chain's step succeeded (RESULT: its return value as JSON, '' when not known): the next
-- step is pushed, carrying the steps after it.
local function chain_next(prefix, json, result)
  local job = batch_job(json, 'chain')
  if not job then return end
  local chain = job['chain']
  if type(chain) ~= 'table' or type(chain['next']) ~= 'table' or not chain['next'][1] then
    return
  end
  local steps = chain['next']
  local step = steps[1]
  local rest = {}
  for i = 2, #steps do rest[#rest + 1] = steps[i] end
  local extra = nil
  if #rest > 0 then
    extra = ',"chain":' .. cjson.encode({pass_result = chain['pass_result'], next = rest})
  end
  local value = nil
  if chain['pass_result'] then
    value = (result and result ~= '') and result or 'null'
  end
  batch_push(prefix, step['queue'], batch_splice(step['head'], step['tail'], value, extra))
end

-- Why a job may not be added to the existing batch KEY (nil: it may): gone, cancelled, or
-- succeeded already (a batch that has completed but not succeeded takes jobs: its failed
-- jobs' retries may add some).
local function batch_closed(key)
  if not batch_sound(key) then return 'has a key of the wrong type' end
  if redis.call('EXISTS', key) == 0 then return 'is unknown or expired' end
  if redis.call('HEXISTS', key, 'cancelled_at') == 1 then return 'was cancelled' end
  if redis.call('HEXISTS', key, 'success_at') == 1 then return 'has succeeded' end
  return nil
end

-- Before anything is written: the batch definitions DEFS (JSON texts, see batch.py) and the
-- jobs JSONS that name a batch. Returns the definitions of the batches to create (parents
-- first), or nil and why nothing may be written: a job or a reopened batch naming a batch
-- that is gone, cancelled or has succeeded.
local function batch_prepare(prefix, defs, jsons)
  local known, order = {}, {}
  local visit
  visit = function(def)
    if type(def) ~= 'table' or type(def['bid']) ~= 'string' then
      return 'a batch definition has no bid; no job was written'
    end
    local bid = def['bid']
    if known[bid] then return nil end
    if type(def['parent_def']) == 'table' then
      local err = visit(def['parent_def'])
      if err then return err end
    end
    local key = batch_key(prefix, bid)
    if not batch_sound(key) then
      return 'batch ' .. bid .. ' has a key of the wrong type; no job was written'
    end
    local exists = redis.call('EXISTS', key) == 1
    if def['reopen'] then
      local why = batch_closed(key)
      if why then return 'batch ' .. bid .. ' ' .. why .. '; no job was written' end
    elseif not exists then
      local parent = def['parent']
      if type(parent) == 'string' and not known[parent] then
        local why = batch_closed(batch_key(prefix, parent))
        if why then return 'batch ' .. parent .. ' ' .. why .. '; no job was written' end
      end
      order[#order + 1] = def
    end
    known[bid] = true
    return nil
  end
  for _, text in ipairs(defs) do
    local ok, def = pcall(cjson.decode, text)
    if not ok then return nil, 'a batch definition is not JSON; no job was written' end
    local err = visit(def)
    if err then return nil, err end
  end
  for _, json in ipairs(jsons) do
    local job = batch_job(json, 'bid')
    if job and type(job['bid']) == 'string' and not known[job['bid']] then
      -- A batch this Redis does not hold (another program's: Sidekiq Pro writes "bid" too)
      -- is none of djqueue's business: the job is written as it is, counted nowhere.
      local key = batch_key(prefix, job['bid'])
      local why = (not batch_sound(key) or redis.call('EXISTS', key) == 1) and batch_closed(key)
      if why then return nil, 'batch ' .. job['bid'] .. ' ' .. why .. '; no job was written' end
      known[job['bid']] = true
    end
  end
  return order
end

-- Create the batch of DEF (a decoded definition of a batch that does not exist yet); a child
-- counts as one member of its parent's remaining and pending, and one of its children.
local function batch_create(prefix, def)
  local bid = def['bid']
  local key = batch_key(prefix, bid)
  local retention = tonumber(def['retention']) or BATCH_RETENTION
  local fields = {'description', status_text(def['description']),
    'created_at', status_text(def['created_at']), 'retention', tostring(retention),
    'total', 0, 'pending', 0, 'remaining', 0, 'failures', 0, 'dead', 0, 'children', 0,
    'callbacks', status_text(def['callbacks'])}
  if type(def['parent']) == 'string' then
    fields[#fields + 1] = 'parent'
    fields[#fields + 1] = def['parent']
  end
  if type(def['push']) == 'table' then
    for _, event in ipairs({'complete', 'success', 'death'}) do
      local items = def['push'][event]
      if type(items) == 'table' and items[1] then
        fields[#fields + 1] = 'push:' .. event
        fields[#fields + 1] = cjson.encode(items)
      end
    end
  end
  redis.call('HSET', key, unpack(fields))
  batch_touch(key)
  local listing = namespace_own(prefix) .. 'batches'
  if key_is(listing, 'zset', 'skipped: the batch is left out of the listing') then
    redis.call('ZADD', listing, tonumber(def['created_at']) or 0, bid)
    if redis.call('TTL', listing) < retention then
      redis.call('EXPIRE', listing, retention)
    end
  end
  if type(def['parent']) == 'string' then
    local parent_key = batch_key(prefix, def['parent'])
    redis.call('HINCRBY', parent_key, 'children', 1)
    redis.call('HINCRBY', parent_key, 'pending', 1)
    redis.call('HINCRBY', parent_key, 'remaining', 1)
    batch_touch(parent_key)
  end
end
