#!lua flags=allow-oom
-- A job refused by a limiter it entered in its code, put back (see putting_back.lua).
--
-- KEYS[1] = the schedule set, KEYS[2] = the working list.
-- ARGV[1] = the job as stored, ARGV[2] = when it is due again (epoch seconds), ARGV[3] = the
-- status key prefix. Returns 1, or 0 when the job had left the working list.

--!include putting_back
return put_back(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3])
