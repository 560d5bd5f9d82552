#!lua flags=no-writes
-- One stretch of a filtered listing of a queue (a list) or a job set (a sorted set), filtered
-- inside Redis so that a page of a 100,000-job set copies one page to the caller, not the set.
-- One call reads at most ARGV[4] entries from index ARGV[3], which bounds how long Redis is
-- busy; the caller repeats from the returned index, lowering ARGV[5] and ARGV[6] by what it
-- already has. Texts are compared as the JSON spells them (the caller escapes its own).
-- KEYS[1] = the list or sorted set
-- ARGV[1] = "list" or "zset"; ARGV[2] = "1" for the highest score first (zset)
-- ARGV[3] = first index; ARGV[4] = most entries this call reads
-- ARGV[5] = matches to step over; ARGV[6] = most matches to return
-- ARGV[7] = text to find (plain; any case but in the jid; "" for any)
-- ARGV[8] = "1" when the text may only match the jid, the job name or the error
-- ARGV[9] = job name: class, display_class or wrapped ("" for any); ARGV[10] = queue ("" any)
-- ARGV[11] = "1" to count matches per job name (with the queue filter only) and per queue
-- (with the job filter only)
-- ARGV[12] = "1" to stop once ARGV[6] matches are found (a bulk action's batch): the index
-- returned is then the one after the last match
-- ARGV[13] = "1" when a job's queue is its retry_queue if it has one (retry, dead);
-- ARGV[14] = the queue of a job that names none (the default queue)
-- Returns {next index or -1 at the end, matches, {member, position, ...},
--          {job name, count, ...}, {queue, count, ...}}; the position is the list index from
-- the head, or the score.
local key, kind, desc = KEYS[1], ARGV[1], ARGV[2] == '1'
local start, budget = tonumber(ARGV[3]), tonumber(ARGV[4])
local skip, limit = tonumber(ARGV[5]), tonumber(ARGV[6])
local text, fields_only = ARGV[7], ARGV[8] == '1'
local job, queue, facets = ARGV[9], ARGV[10], ARGV[11] == '1'
local stop_when_full = ARGV[12] == '1'
local prefer_retry_queue, default_queue = ARGV[13] == '1', ARGV[14]
local chunk = 1000

--!include fields

-- The queue the job goes to when retried or run, as the lists show it.
local function queue_of(member)
  return named_queue(member, prefer_retry_queue) or default_queue
end

-- Search text is found whatever its case (ASCII letters), except in the jid: a jid is found
-- as written. The exact find comes first; then plain finds of every case of the text's
-- fewest-letters stretch of up to three characters (an entry holding the text in any case
-- holds one of them), and only an entry holding one is copied in lower case: lowering every
-- entry would cost several times the rest of the scan.
local lowered = string.lower(text)
local probes = {''}
do
  local width = math.min(3, #lowered)
  local best, fewest = 1, width + 1
  for i = 1, #lowered - width + 1 do
    local _, letters = string.gsub(string.sub(lowered, i, i + width - 1), '%a', '')
    if letters < fewest then best, fewest = i, letters end
  end
  for j = best, best + width - 1 do
    local c, grown = string.sub(lowered, j, j), {}
    for _, probe in ipairs(probes) do
      grown[#grown + 1] = probe .. c
      if string.upper(c) ~= c then grown[#grown + 1] = probe .. string.upper(c) end
    end
    probes = grown
  end
end

local function may_hold(member)
  for i = 1, #probes do
    if string.find(member, probes[i], 1, true) then return true end
  end
  return false
end

local function has_lowered(value)
  return string.find(string.lower(value), lowered, 1, true) ~= nil
end

local function found_apart_from_jid(member)
  local lower = string.lower(member)
  if not string.find(lower, lowered, 1, true) then return false end
  local jid = field(member, 'jid')
  if not jid then return true end
  local first, last = string.find(lower, '"jid":"' .. string.lower(jid) .. '"', 1, true)
  if not first then return true end
  lower = string.sub(lower, 1, first - 1) .. string.sub(lower, last + 1)
  return string.find(lower, lowered, 1, true) ~= nil
end

local function has_text(member)
  if text == '' then return true end
  if not fields_only then
    if string.find(member, text, 1, true) then return true end
    return may_hold(member) and found_apart_from_jid(member)
  end
  if not string.find(member, text, 1, true) and not (may_hold(member) and has_lowered(member)) then
    return false
  end
  local jid = field(member, 'jid')
  if jid and string.find(jid, text, 1, true) then return true end
  for _, name in ipairs({'class', 'display_class', 'wrapped', 'error_class', 'error_message'}) do
    local value = field(member, name)
    if value and has_lowered(value) then return true end
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
  local last = math.min(start + chunk, stop) - 1  -- no further than asked: a part ends here
  if kind == 'list' then
    items = redis.call('LRANGE', key, start, last)
  elseif desc then
    items = redis.call('ZRANGE', key, start, last, 'REV')
  else
    items = redis.call('ZRANGE', key, start, last)
  end
  for i = 1, #items do
    local member = items[i]
    if has_text(member) then
      local job_ok = job == '' or is_job(member)
      local queue_ok, q = true, nil
      if queue ~= '' or count_queues then
        q = queue_of(member)
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
