#!lua flags=no-writes
-- One stretch of a filtered listing of a queue (a list) or a job set (a sorted set), filtered
-- inside Redis so that a page of a 100,000-job set copies one page to the caller, not the set.
-- One call reads at most ARGV[4] entries from index ARGV[3], which bounds how long Redis is
-- busy; the caller repeats from the returned index, lowering ARGV[5] and ARGV[6] by what it
-- already has. Fields are matched as text ("class":"NAME"), not decoded: cjson costs three
-- times the rest of the scan.
-- KEYS[1] = the list or sorted set
-- ARGV[1] = "list" or "zset"; ARGV[2] = "1" for the highest score first (zset)
-- ARGV[3] = first index; ARGV[4] = entries per call
-- ARGV[5] = matches to step over; ARGV[6] = most matches to return
-- ARGV[7] = text to find (plain, case-sensitive; "" for any)
-- ARGV[8] = "1" when the text may only match the jid, the job name or the error
-- ARGV[9] = job name: class, display_class or wrapped ("" for any); ARGV[10] = queue ("" any)
-- ARGV[11] = "1" to count matches per job name (with the queue filter only) and per queue
-- (with the job filter only)
-- ARGV[12] = "1" to stop once ARGV[6] matches are found (a bulk action's batch): the index
-- returned is then the one after the last match
-- Returns {next index or -1 at the end, matches, {member, position, ...},
--          {job name, count, ...}, {queue, count, ...}}; the position is the list index from
-- the head, or the score.
local key, kind, desc = KEYS[1], ARGV[1], ARGV[2] == '1'
local start, budget = tonumber(ARGV[3]), tonumber(ARGV[4])
local skip, limit = tonumber(ARGV[5]), tonumber(ARGV[6])
local text, fields_only = ARGV[7], ARGV[8] == '1'
local job, queue, facets = ARGV[9], ARGV[10], ARGV[11] == '1'
local stop_when_full = ARGV[12] == '1'
local chunk = 1000

-- The first string value of a field: a plain find for the key, then a short match (a pattern
-- tried at every quote of the entry costs five times as much).
local function field(member, name)
  local _, last = string.find(member, '"' .. name .. '":', 1, true)
  if not last then return nil end
  return string.match(member, '^%s*"([^"\\]*)"', last + 1)
end

local function shown_name(member)
  return field(member, 'display_class') or field(member, 'wrapped') or field(member, 'class')
end

local function has_text(member)
  if text == '' then return true end
  if not string.find(member, text, 1, true) then return false end
  if not fields_only then return true end
  for _, name in ipairs({'jid', 'class', 'display_class', 'wrapped', 'error_class', 'error_message'}) do
    local value = field(member, name)
    if value and string.find(value, text, 1, true) then return true end
  end
  return false
end

-- The cheap test first: an entry that does not contain the name at all is not that job.
local function is_job(member)
  if not string.find(member, job, 1, true) then return false end
  return shown_name(member) == job or field(member, 'class') == job
end

-- Members only: a score is looked up for the few rows returned (reading every score costs a
-- third of the scan).
local function position(member, index)
  if kind == 'list' then return tostring(index) end
  return redis.call('ZSCORE', key, member)
end

local size = kind == 'list' and redis.call('LLEN', key) or redis.call('ZCARD', key)
local count_queues = facets and kind ~= 'list'  -- a queue page is one queue
local matches, rows, names, queues = 0, {}, {}, {}
local stop = math.min(start + budget, size)
while start < stop do
  local items
  if kind == 'list' then
    items = redis.call('LRANGE', key, start, start + chunk - 1)
  elseif desc then
    items = redis.call('ZRANGE', key, start, start + chunk - 1, 'REV')
  else
    items = redis.call('ZRANGE', key, start, start + chunk - 1)
  end
  for i = 1, #items do
    local member = items[i]
    if has_text(member) then
      local job_ok = job == '' or is_job(member)
      local queue_ok, q = true, nil
      if queue ~= '' or count_queues then
        q = field(member, 'queue') or ''
        queue_ok = queue == '' or q == queue
      end
      if job_ok and queue_ok then
        matches = matches + 1
        if matches > skip and #rows < limit * 2 then
          rows[#rows + 1] = member
          rows[#rows + 1] = position(member, start + i - 1)
          if stop_when_full and #rows >= limit * 2 then
            return {start + i, matches, rows, {}, {}}
          end
        end
      end
      -- Each filter's counts as if that filter were not set, as Django's admin counts them.
      if facets and queue_ok then
        local name = shown_name(member) or ''
        names[name] = (names[name] or 0) + 1
      end
      if count_queues and job_ok then queues[q] = (queues[q] or 0) + 1 end
    end
  end
  if #items == 0 then break end
  start = start + #items
end
if start >= size then start = -1 end

local function pairs_of(counts)
  local flat = {}
  for name, count in pairs(counts) do
    flat[#flat + 1] = name
    flat[#flat + 1] = count
  end
  return flat
end

return {start, matches, rows, pairs_of(names), pairs_of(queues)}
