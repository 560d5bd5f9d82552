-- Reading a job's top-level string fields as text, without decoding its JSON (included by
-- scan.lua, which filters and counts entries, and tally.lua, which keeps the counts of a job
-- set as entries come and go: both must read a job's name and queue the same way).

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
local key_needles = {}
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
  key_needles[name] = key
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
  local key = key_needles[name] or key_for(name)
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

-- The job name a list shows: display_class, wrapped, else class (CLASS when the caller read
-- it already; tally.lua keeps it apart too).
local function shown_name(member, class)
  return field(member, 'display_class') or field(member, 'wrapped') or class
    or field(member, 'class')
end

-- The queue a job names, as the lists show it: its retry_queue first when `prefer_retry` (the
-- retry and dead sets), else its queue; nil when it names none (the caller's default queue).
local function named_queue(member, prefer_retry)
  return (prefer_retry and field(member, 'retry_queue')) or field(member, 'queue')
end
