-- The stats flush (see scripts.py: `--!include stat_counts`), shared by the heartbeat and a
-- process's leaving: KEYS[1] = stat:processed, KEYS[2] = stat:failed, KEYS[3] and KEYS[4] =
-- today's processed and failed counters. A counter that is not an integer (or not a string)
-- is skipped and noted, so one bad counter never stops a beat nor the other counters.

--!include bad_keys

local function add_counts(processed, failed, daily_ttl)
  for _, c in ipairs({{tonumber(processed), 1, 3}, {tonumber(failed), 2, 4}}) do
    if c[1] > 0 then
      for _, k in ipairs({c[2], c[3]}) do
        if key_is_count(KEYS[k], 'skipped: the counts are not added to it') then
          redis.call('INCRBY', KEYS[k], c[1])
        end
      end
      if redis.call('TYPE', KEYS[c[3]])['ok'] == 'string' then
        redis.call('EXPIRE', KEYS[c[3]], daily_ttl)
      end
    end
  end
end
