-- Included by scripts that need a job's jid (see scripts.py: `--!include jid_of`).
-- The job's own jid (decoded, not matched as text: an argument may hold a "jid" too).
local function jid_of(job)
  local ok, decoded = pcall(cjson.decode, job)
  if ok and type(decoded) == 'table' and type(decoded['jid']) == 'string' then
    return decoded['jid']
  end
  return nil
end
