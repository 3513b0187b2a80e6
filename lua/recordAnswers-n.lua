--[[
  Records a batch's answers of one or more sequences, if the caller is still each one's issuer:
  every sequence's fence must hold the gen the caller's blocks were claimed under, set on this node.
  This is where numbers count as issued (G2): a worker that another issuer superseded (it lost its
  partition, it routes by an outgrown partition count, a zombie) fails here and publishes nothing,
  and the newer issuer issues only from blocks claimed after raising the fence (docs/design.md I3).
  A fence of another node or none (Redis lost data, or a replica that missed writes was promoted)
  is refused too, so blocks claimed before the loss are never published. Every fence is checked
  before anything is written: a call records all its sequences' answers or none. The worker calls
  this once per batch on one Redis (once per 4,096 keys of a larger step; once per sequence on a
  Redis Cluster, whose calls name keys of one slot). Recorded answers are kept for the dedupe window, so a retried request gets the same
  numbers from any worker (G6). A batch's largest snowflake id of a sequence raises the sequence's
  high mark, which the next issuer issues above (G2 across a failover).

  Input, per sequence in turn (KEYS from 1, ARGV from 3):
    KEYS           {seq:<name>}:fence (fields gen, node), then {seq:<name>}:high (the snowflake
                   high mark), then {seq:<name>}:answer:<requestId>, one per answer
    ARGV           the number of its answers n; its largest snowflake id answered, 19 zero-padded
                   digits (string order = number order), or "" for a counter sequence; then its n
                   answers, in KEYS order
  and before them:
    ARGV[1]        the gen the caller claimed under
    ARGV[2]        how long answers are kept, in ms (0: not kept; the fences are still checked)

  Output:
    an array with, per answer (in KEYS order), false when recorded now, or the answer recorded
    earlier (which is the one to send)
    {-10, i}  sequence i's fence (1 for the first) is of another node or missing: nothing recorded
    {-9, i}   sequence i is superseded: its fence holds another gen; nothing recorded
]]
local node = string.match(redis.call("INFO", "replication"), "master_replid:(%w+)")
local sequences = {}
local k, a = 1, 3
while a <= #ARGV do
  local n = tonumber(ARGV[a])
  local fence = redis.call("HMGET", KEYS[k], "gen", "node")
  if fence[2] ~= node then
    return { -10, #sequences + 1 }
  end
  if fence[1] ~= ARGV[1] then
    return { -9, #sequences + 1 }
  end
  sequences[#sequences + 1] = { k, a, n }
  k = k + 2 + n
  a = a + 2 + n
end
local ttl = tonumber(ARGV[2])
local out = {}
for _, s in ipairs(sequences) do
  local keys, args, n = s[1], s[2], s[3]
  for j = 1, n do
    local earlier = false
    if ttl > 0 then
      if not redis.call("SET", KEYS[keys + 1 + j], ARGV[args + 1 + j], "NX", "PX", ttl) then
        earlier = redis.call("GET", KEYS[keys + 1 + j]) or false
      end
    end
    out[#out + 1] = earlier
  end
  local high = ARGV[args + 1]
  if high ~= "" then
    local was = redis.call("GET", KEYS[keys + 1])
    if not was or high > was then
      redis.call("SET", KEYS[keys + 1], high)
    end
  end
end
return out
