--[[
  Records the answers of one batch of requests, if the caller still owns the request partition.
  This is where numbers count as issued (G2): a worker that lost its partition (paused past its
  session timeout, partitioned, a zombie) fails here and publishes nothing, and every later owner
  took a newer token and issues only from blocks claimed after taking it. Recorded answers are
  kept for the dedupe window, so a retried request gets the same numbers from any worker (G6).
  With them, the largest snowflake id the batch answered per snowflake sequence raises that
  sequence's high mark, which the partition's next owner issues above (G2 across a failover).

  Input:
    KEYS[1]        idd:owner:<topic>:<partition>, a random token each new owner sets
    KEYS[2..a+1]   idd:answer:<sequence>:<requestId>, one per answer (a = ARGV[3])
    KEYS[a+2..]    {snow:<sequence>}:high, one per snowflake sequence the batch answered
    ARGV[1]        the owner token the caller took
    ARGV[2]        how long answers are kept, in ms (0: not kept; ownership is still checked)
    ARGV[3]        a, the number of answers
    ARGV[4..a+3]   the answers, in KEYS order
    ARGV[a+4..]    the batch's largest id per high key, 19 zero-padded digits (string order = number order)

  Output:
    an array with, per answer, false when recorded now, or the answer recorded earlier (which is
    the one to send)
    -2  fenced: the partition has a newer owner; nothing recorded
]]
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
  return -2
end
local ttl = tonumber(ARGV[2])
local answers = tonumber(ARGV[3])
local out = {}
for i = 2, answers + 1 do
  local earlier = false
  if ttl > 0 then
    if not redis.call("SET", KEYS[i], ARGV[i + 2], "NX", "PX", ttl) then
      earlier = redis.call("GET", KEYS[i]) or false
    end
  end
  out[i - 1] = earlier
end
for i = answers + 2, #KEYS do
  local high = redis.call("GET", KEYS[i])
  if not high or ARGV[i + 2] > high then
    redis.call("SET", KEYS[i], ARGV[i + 2])
  end
end
return out
