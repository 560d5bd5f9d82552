-- Parking at the push (included by push.lua, push_one.lua and move_to_queue.lua; see "Limits"
-- in docs/design.md): a job whose payload names its concurrency limiters
-- ("concurrent_limits": [[name, limit], ...], written by djqueue's client) goes to its queue
-- only while each of them has room, counting the slots held and the jobs admitted to their
-- queues and not started yet; else it joins the parked list of the first without room, as a
-- job refused at the fetch does (parking.lua), and never reaches its queue before a slot is
-- free. A job without the field (a Ruby client's, one whose job declares no such limiter)
-- goes to its queue as ever. The admission count is a hint for the fetch: limit_enter.lua
-- still refuses and parks a job that finds its limiter full, so admitting too many costs a
-- refusal, and an entry whose job is gone (deleted from its queue) only holds room until the
-- janitor's sweep drops it (limit_unpark.lua).

--!include parking

-- Seconds the limiters' definitions live after the last one written (LIMITERS_TTL, which
-- limit_enter.lua is given).
local LIMITERS_LIFE = @LIMITERS_TTL@

-- The job's jid and its concurrency limiters as its payload names them ({{name, limit}, ...}),
-- or nil: the field is looked for as text first, so other jobs cost one string.find.
local function admission_limits(json)
  if not string.find(json, '"concurrent_limits":', 1, true) then
    return nil
  end
  local ok, decoded = pcall(cjson.decode, json)
  if not ok or type(decoded) ~= 'table' or type(decoded['jid']) ~= 'string'
      or type(decoded['concurrent_limits']) ~= 'table' then
    return nil
  end
  local found = {}
  for _, pair in ipairs(decoded['concurrent_limits']) do
    local limit = type(pair) == 'table' and tonumber(pair[2])
    -- A whole number of slots, as djqueue.limits accepts (not 0, inf or nan, which would
    -- park every job of the limiter for good or fail the encoding of its definition).
    if limit and limit >= 1 and limit <= 1e9 and limit == math.floor(limit)
        and type(pair[1]) == 'string' and pair[1] ~= '' then
      found[#found + 1] = {pair[1], limit}
    end
  end
  if #found == 0 then
    return nil
  end
  return decoded['jid'], found, decoded['queue']
end

-- Note limiter NAME's definition in LIMITERS (name -> JSON) unless one is there: a job parked
-- before any worker entered the limiter must not look, to the janitor's sweep, like one of a
-- limiter no longer defined (whose parked jobs all go back). The hash lives a week from its
-- last entry (djqueue.store.keys.LIMITERS_TTL, as limit_enter.lua keeps it).
local function define(limiters, name, limit)
  if key_is_kept(limiters, 'hash', 'skipped: the sweep reads it as undefined')
      and redis.call('HSETNX', limiters, name,
        cjson.encode({kind = 'concurrent', limit = limit, per = 0})) == 1
      and redis.call('TTL', limiters) < 0 then
    redis.call('EXPIRE', limiters, LIMITERS_LIFE)
  end
end

-- Whether limiter NAME may be admitted for as a concurrency limiter: not when the definition
-- in LIMITERS (written by the workers) is of another kind (a window or a bucket since a
-- deploy, whose grants are not slots: admission must neither count nor drop them). The
-- payload's limit is used, as the pushing code declared it; the fetch checks the workers'.
local function admits_as_concurrent(limiters, name)
  if not key_is_kept(limiters, 'hash', 'skipped: taken as a concurrency limiter') then
    return true
  end
  local raw = redis.call('HGET', limiters, name)
  if not raw then
    return true
  end
  local ok, definition = pcall(cjson.decode, raw)
  return not ok or type(definition) ~= 'table' or definition['kind'] == 'concurrent'
end

-- Admit JSON (a job about to be written to a queue) or park it; STATUS_PREFIX names the
-- namespace (namespace.lua). Returns true when the job is to be written to
-- its queue (entered in each limiter's admitted set), false when it was parked here. A
-- limiter whose keys hold other types admits (noted): the fetch still checks it.
local function admit(json, status_prefix)
  local jid, found, queue = admission_limits(json)
  if not jid then
    return true
  end
  local own = namespace_own(status_prefix)
  -- A paused queue's job is queued uncounted: counted, it would hold room its limiters'
  -- jobs of running queues could use until the sweep dropped it (a lease), and nothing
  -- takes it before the resume (then the fetch checks it, as any job's).
  local paused = own .. 'paused'
  if type(queue) == 'string' and key_is_kept(paused, 'set', 'skipped: no queue counts as paused')
      and queue_paused(paused, queue) then
    return true
  end
  local entering = {}
  for _, pair in ipairs(found) do
    local name, limit = pair[1], pair[2]
    local key, parked = own .. 'limit:' .. name, own .. 'parked:' .. name
    local admitted = own .. 'admitted:' .. name
    local unchecked = 'skipped: jobs go to their queues unchecked'
    if admits_as_concurrent(own .. 'limiters', name) and key_is_kept(key, 'zset', unchecked)
        and key_is_kept(parked, 'list', unchecked) and key_is_kept(admitted, 'zset', unchecked) then
      -- Parked jobs first: a slot given back goes to the oldest of them.
      if redis.call('LLEN', parked) > 0 or room(key, admitted, limit) <= 0 then
        park_job(parked, own .. 'parked', name, json)
        define(own .. 'limiters', name, limit)
        return false
      end
      entering[#entering + 1] = admitted
    end
  end
  for _, admitted in ipairs(entering) do
    enter_admitted(admitted, jid)
  end
  return true
end
