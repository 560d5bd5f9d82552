-- Push one or more jobs to a queue and record the queue's name, atomically.
-- KEYS[1] = the queues set, KEYS[2] = queue:NAME; ARGV[1] = NAME, ARGV[2..] = job JSON.
redis.call('SADD', KEYS[1], ARGV[1])
return redis.call('LPUSH', KEYS[2], unpack(ARGV, 2))
