--[[
  Records the answers of one batch of requests, if the caller still owns the request partition.
  This is where numbers count as issued (G2): a worker that lost its partition (paused past its
  session timeout, partitioned, a zombie) fails here and publishes nothing, and every later owner
  took a newer token and issues only from blocks claimed after taking it. Recorded answers are
  kept for the dedupe window, so a retried request gets the same numbers from any worker (G6).
  With them, the largest snowflake id the batch answered per snowflake sequence raises that
  sequence's high mark, which the partition's next owner issues above (G2 across a failover).
  The caller's partition count must still be the one in force (lua/takeOwner-2.lua): a worker
  that routes by a count the request topic outgrew homes some sequences on the wrong partition,
  and publishes nothing until it has learnt the new count.

  Input:
    KEYS[1]        idd:owner:<topic>:<partition>, a random token each new owner sets
    KEYS[2]        idd:route:<topic>, the partition count in force
    KEYS[3..a+2]   idd:answer:<sequence>:<requestId>, one per answer (a = ARGV[4])
    KEYS[a+3..]    {snow:<sequence>}:high, one per snowflake sequence the batch answered
    ARGV[1]        the owner token the caller took
    ARGV[2]        the partition count the caller routes by
    ARGV[3]        how long answers are kept, in ms (0: not kept; ownership is still checked)
    ARGV[4]        a, the number of answers
    ARGV[5..a+4]   the answers, in KEYS order
    ARGV[a+5..]    the batch's largest id per high key, 19 zero-padded digits (string order = number order)

  Output:
    an array with, per answer, false when recorded now, or the answer recorded earlier (which is
    the one to send)
    -2  fenced: the partition has a newer owner; nothing recorded
    n   (> 0) the partition count in force is n, not the caller's; nothing recorded
]]
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
  return -2
end
local inForce = tonumber(redis.call("GET", KEYS[2]) or "0")
if inForce ~= tonumber(ARGV[2]) then
  return inForce
end
local ttl = tonumber(ARGV[3])
local answers = tonumber(ARGV[4])
local out = {}
for i = 3, answers + 2 do
  local earlier = false
  if ttl > 0 then
    if not redis.call("SET", KEYS[i], ARGV[i + 2], "NX", "PX", ttl) then
      earlier = redis.call("GET", KEYS[i]) or false
    end
  end
  out[i - 2] = earlier
end
for i = answers + 3, #KEYS do
  local high = redis.call("GET", KEYS[i])
  if not high or ARGV[i + 2] > high then
    redis.call("SET", KEYS[i], ARGV[i + 2])
  end
end
return out
