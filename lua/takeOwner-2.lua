--[[
  Makes the caller the owner of one request partition, under the request topic's partition count
  it routes by (G2). Sequences are homed by that count (README: Wire contract → Routing), so a
  worker that routes by a smaller count than another worker already took a partition with would
  home some sequences elsewhere: it is refused and must learn the larger count first. The count
  in force only grows, as the topic's partition count does. The caller drops its blocks of the
  partition's sequences when this succeeds, and issues only from blocks claimed afterwards (I3).

  Input:
    KEYS[1]  idd:owner:<topic>:<partition>, the partition's owner token
    KEYS[2]  idd:route:<topic>, the largest partition count any owner routed by
    ARGV[1]  the caller's new random token
    ARGV[2]  the partition count the caller routes by

  Output:
    0   the token is set, and the count in force is the caller's
    n   (> 0) the count in force is n, larger than the caller's: nothing was set
]]
local count = tonumber(ARGV[2])
local inForce = tonumber(redis.call("GET", KEYS[2]) or "0")
if inForce > count then
  return inForce
end
if inForce < count then
  redis.call("SET", KEYS[2], count)
end
redis.call("SET", KEYS[1], ARGV[1])
return 0
