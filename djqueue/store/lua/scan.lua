#!lua flags=no-writes
-- One stretch of a filtered listing of a queue (a list) or a job set (a sorted set), filtered
-- inside Redis so that a page of a 100,000-job set copies one page to the caller, not the set.
-- One call reads at most ARGV[4] entries from index ARGV[3], which bounds how long Redis is
-- busy; the caller repeats from the returned index, lowering ARGV[5] and ARGV[6] by what it
-- already has. Texts are compared as the JSON spells them (the caller escapes its own).
-- KEYS[1] = the list or sorted set
-- ARGV[1] = "list" or "zset"; ARGV[2] = "1" for the highest score first (zset)
-- ARGV[3] = first index; ARGV[4] = entries per call
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

-- The string after a key, as the JSON spells it (escapes kept): from the opening quote to
-- the first quote not escaped by an odd run of backslashes.
local function raw_string(member, from)
  local quote = select(2, string.find(member, '^%s*"', from))
  if not quote then return nil end
  local pos = quote + 1
  while true do
    local close = string.find(member, '"', pos, true)
    if not close then return nil end
    local before = close - 1
    while before > quote and string.byte(member, before) == 92 do before = before - 1 end
    if (close - 1 - before) % 2 == 0 then return string.sub(member, quote + 1, close - 1) end
    pos = close + 1
  end
end

-- How a key is looked for. A plain find stops at every place the needle's first character
-- occurs to compare the rest, and '"' is the commonest character of a JSON text (four to a
-- string field), so a key is found by its tail from its rarest letter ('play_class":' for
-- "display_class":), then checked for what comes before it. The tail keeps the key's last
-- '_' and what follows: 'queue":' would find "queue": in every entry when looking for
-- "retry_queue":. Measured on 100,000 retry entries, a find from the quote costs about twice
-- one from a letter, and a key an entry does not have is read to its end.
local LETTERS = 'etaoinshrdlcumwfgypbvkjxqz'  -- English letters, the commonest first
local keys = {}
local function key_for(name)
  local before = #name
  local underscore = string.find(name, '_[^_]*$')
  if underscore then before = underscore - 1 end
  local best, rank = 1, 0
  for i = 1, before do
    local r = string.find(LETTERS, string.sub(name, i, i), 1, true) or 0
    if r > rank then best, rank = i, r end
  end
  local head = '"' .. string.sub(name, 1, best - 1)
  local key = {string.sub(name, best) .. '":', #head, head}
  keys[name] = key
  return key
end

-- The next place of a key's tail from index from whose head is right (first and last index of
-- the key, quote to colon), or nil.
local function key_at(member, key, from)
  local tail, back, head = key[1], key[2], key[3]
  while true do
    local at, last = string.find(member, tail, from, true)
    if not at then return nil end
    if back == 1 then
      if string.byte(member, at - 1) == 34 then return at - 1, last end
    elseif string.sub(member, at - back, at - 1) == head then
      return at - back, last
    end
    from = at + 1
  end
end

-- A top-level string field, read as text: the key's place (key_at), then the string after it
-- as the JSON spells it (decoding every entry with cjson would cost three times the rest of
-- the scan; most strings hold no quote or backslash and are one anchored match, the rest are
-- read by raw_string). A key before the member's first nested object is a top-level key
-- (djqueue writes "queue" and "class" before "args"). One after it may be an argument's (an
-- argument may be an object with a "class" of its own, and Sidekiq writes "args" before
-- "class"): if that key is found twice, the entry is decoded instead, so only such entries
-- pay for cjson.
local decoded_member, decoded = nil, nil
local nested_member, nested = nil, 0
local function field(member, name)
  local key = keys[name] or key_for(name)
  local first, last = key_at(member, key, 1 + key[2])
  if not first then return nil end
  if nested_member ~= member then
    nested_member = member
    nested = 0  -- not an object from its first byte: nothing is proved top-level
    if string.byte(member, 1) == 123 then nested = string.find(member, '{', 2, true) or #member + 1 end
  end
  if first < nested or not key_at(member, key, last + 1 + key[2]) then
    return string.match(member, '^"([^"\\]*)"', last + 1) or raw_string(member, last + 1)
  end
  if decoded_member ~= member then
    local ok, value = pcall(cjson.decode, member)
    decoded_member, decoded = member, (ok and type(value) == 'table') and value or {}
  end
  local value = decoded[name]
  if type(value) ~= 'string' then return nil end
  return string.sub(cjson.encode(value), 2, -2)
end

-- The queue the job goes to when retried or run, as the lists show it.
local function queue_of(member)
  return (prefer_retry_queue and field(member, 'retry_queue')) or field(member, 'queue')
    or default_queue
end

local function shown_name(member)
  return field(member, 'display_class') or field(member, 'wrapped') or field(member, 'class')
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
