-- Renew the leases of the concurrency slots a live process holds (its heartbeat calls this).
--
-- KEYS = the slots' sorted sets, one per holder in ARGV (a key may repeat).
-- ARGV[1] = the lease (seconds), ARGV[2..] = the holders, in KEYS' order.
-- A slot whose lease ran out meanwhile (the process stalled past it) is not taken again:
-- another holder may have its place now. Returns how many leases were renewed.

local t = redis.call('TIME')
local expiry = tonumber(t[1]) + tonumber(t[2]) / 1000000 + tonumber(ARGV[1])
local renewed = 0
for i, key in ipairs(KEYS) do
  renewed = renewed + redis.call('ZADD', key, 'XX', 'CH', expiry, ARGV[i + 1])
  redis.call('EXPIRE', key, math.ceil(tonumber(ARGV[1])) + 1)
end
return renewed
