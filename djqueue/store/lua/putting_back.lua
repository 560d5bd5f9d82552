-- Putting back a job a limiter refused (included by put_back.lua and limit_enter.lua): from
-- its working list to the schedule set at `at`, unchanged (not a failure: no retry counted);
-- a tracked job is 'scheduled' again. Returns 1, or 0 when the job was no longer in the
-- working list (pushed back meanwhile, or a second try of a call whose reply was lost): it is
-- in exactly one place either way.

--!include status

local function put_back(schedule, working, job, at, status_prefix)
  if redis.call('LREM', working, 1, job) ~= 1 then
    return 0
  end
  redis.call('ZADD', schedule, at, job)
  local tracked = status_job(job)
  if tracked then
    local now = redis.call('TIME')
    status_moving(status_prefix, tracked, 'scheduled', tonumber(at) - tonumber(now[1]),
      'scheduled_at', at)
  end
  return 1
end
