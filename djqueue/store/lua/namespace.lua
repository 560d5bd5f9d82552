-- The namespace's own keys' prefix, derived from the status prefix every script that moves a
-- job receives as its last ARGV (status.lua): 'djqueue:' (or 'NS:djqueue:') from
-- 'djqueue:status:', so a script names the namespace's other keys without another argument.
local function namespace_own(status_prefix)
  return string.sub(status_prefix, 1, -8)
end
