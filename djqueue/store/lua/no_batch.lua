-- Stands in for batch.lua in push.lua's variant for jobs of no batch (scripts.py: PUSH), so
-- the common push's script is as small as it was before batches: Redis keeps each loaded
-- script, compiled, in its memory, and a Redis at its maxmemory has none to spare.
local function batch_prepare() return {} end
local function batch_create() end
local function batch_gather() end
local function batch_count_added() end
local function batch_check() end
