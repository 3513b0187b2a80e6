--[[
  Records one sequence's answers of a batch, if the caller is still the sequence's issuer: the
  sequence's fence must hold the gen the caller's blocks were claimed under, set on this node. This
  is where numbers count as issued (G2): a worker that another issuer superseded (it lost its
  partition, it routes by an outgrown partition count, a zombie) fails here and publishes nothing,
  and the newer issuer issues only from blocks claimed after raising the fence (docs/design.md I3).
  A fence of another node or none (Redis lost data, or a replica that missed writes was promoted)
  is refused too, so blocks claimed before the loss are never published. The worker calls this once
  per sequence of the batch, pipelined. Recorded answers are kept for the dedupe window, so a retried
  request gets the same numbers from any worker (G6). The batch's largest snowflake id raises the
  sequence's high mark, which the next issuer issues above (G2 across a failover).

  Input:
    KEYS[1]        the sequence's fence {seq:<name>}:fence (fields gen, node)
    KEYS[2]        {seq:<name>}:high, the snowflake high mark (untouched when ARGV[3] is "")
    KEYS[3..]      {seq:<name>}:answer:<requestId>, one per answer
    ARGV[1]        the gen the caller claimed under
    ARGV[2]        how long answers are kept, in ms (0: not kept; the fence is still checked)
    ARGV[3]        the batch's largest snowflake id of the sequence, 19 zero-padded digits (string
                   order = number order), or "" for a counter sequence
    ARGV[4..]      the answers, in KEYS order (from KEYS[3])

  Output:
    an array with, per answer, false when recorded now, or the answer recorded earlier (which is
    the one to send)
    -10  the fence is of another node or missing: nothing recorded
    -9   superseded: the fence holds another gen; nothing recorded
]]
local node = string.match(redis.call("INFO", "replication"), "master_replid:(%w+)")
local fence = redis.call("HMGET", KEYS[1], "gen", "node")
if fence[2] ~= node then
  return -10
end
if fence[1] ~= ARGV[1] then
  return -9
end
local ttl = tonumber(ARGV[2])
local out = {}
for i = 3, #KEYS do
  local earlier = false
  if ttl > 0 then
    if not redis.call("SET", KEYS[i], ARGV[i + 1], "NX", "PX", ttl) then
      earlier = redis.call("GET", KEYS[i]) or false
    end
  end
  out[i - 2] = earlier
end
if ARGV[3] ~= "" then
  local high = redis.call("GET", KEYS[2])
  if not high or ARGV[3] > high then
    redis.call("SET", KEYS[2], ARGV[3])
  end
end
return out
