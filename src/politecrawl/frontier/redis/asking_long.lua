-- ARGV: P, key, token. The key's request in flight has had no answer for
-- politeness.SLOW_ANSWER_S (a server that hangs): no reference for the budget policy
-- (`--defer-ratio`) until its release judges it again. 1 if the lease holds.
if redis.call('HGET', P .. 'owner', ARGV[2]) ~= ARGV[3] then return 0 end
soon_leave(ARGV[2])
return 1
