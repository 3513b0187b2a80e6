--[[
  Claims a block of consecutive numbers from one (sequence, period) counter, for an issuer under a
  gen (docs/design.md I3), and raises the sequence's fence to that gen.

  Input:
    KEYS[1]  counter hash {seq:<name>}:<period>, fields:
               cur    last number handed out (start - 1 before the first claim)
               max    reservation: the highest number that may be handed out (I1)
               epoch  fence of restores; a restore changes it, so claims made with an old epoch fail (I5)
               node   the node identity (master_replid) the counter was created or restored under
               claim, claimFirst, claimLast  the last claim's id and block (see ARGV[3])
               claimRec  the last claim as "id|first|last|gen|epoch|mode|atMs|claimant" (ARGV[6..8])
               prevRec, prevRec2, prevRec3  the claimRecs of the three claims before it, most
                         recent first (absent when unknown)
    KEYS[2]  the sequence's fence {seq:<name>}:fence, fields gen (the latest issuer's gen) and node
    ARGV[1]  wanted block size, integer >= 1
    ARGV[2]  the epoch the caller read when it started using this counter
    ARGV[3]  claim id, fresh per claim; a caller that got no answer (a timeout: the claim may have
             run) sends the same id again and gets the same block, so the block is not lost
    ARGV[4]  the caller's gen (the one it took for the sequence's home partition)
    ARGV[5]  "1" when the caller holds no block of this sequence under this gen (its first claim of
             the sequence under it): only then is a fence of another node, or none, taken over
    ARGV[6]  the claimant (the worker's id), kept in claimRec
    ARGV[7]  "s" when the caller writes the block's grant before using it (strict grant log), "r" else
    ARGV[8]  the caller's clock in ms when it claimed, kept in claimRec

  The three claims before this one are returned so that the claimer can record those whose
  claimants never wrote their grants (abandoned claims, docs/design.md G4): up to three takeovers
  in a row, each claimant killed between its claim and its grant, stay explained. A claimRec whose
  id is not `claim` was left by a release that did not write it (its claim overwrote only
  `claim`…): then that claim is unknown, and only the ones before it are returned.

  Output:
    {first, last, max, p1, p2, p3}  the block granted: first <= last, at most ARGV[1] numbers,
                        last <= max; cur is now last (cur only moves forward, I2); max tells the caller
                        its headroom; the fence is now (ARGV[4], this node); p1..p3 the claimRecs of the
                        three claims before this one, most recent first, each nil when unknown; a retry
                        of this claim gets the same ones
    -2   fenced by replay (epoch "replay:…"), even while the counter holds nothing else: replay is
         rewriting it, so the caller waits rather than restoring it (fenceCounter)
    -1   the counter does not exist: created or restored from MongoDB by the caller (§5.6)
    -8   suspect: the counter's node is not this node (the primary restarted or changed, or the
         counter predates node identities); it may have gone back in time: restore it (§5.11)
    -2   fenced: the counter's epoch is not ARGV[2] (a restore is rewriting it)
    -9   superseded: the fence holds a larger gen; a newer issuer took the sequence over
    -10  the fence is of another node or missing, and ARGV[5] is not "1": the caller may hold
         blocks claimed before Redis lost data; it drops them and takes its partition again
    -3   exhausted: cur = max; the reservation must be raised first

  Counters stay below 2^53 (Lua numbers are doubles); cur moves by HINCRBY with the block size, so
  the stored value is exact. Gens are Redis time in µs, below 2^53 until the year 2255.
]]
local node = string.match(redis.call("INFO", "replication"), "master_replid:(%w+)")
local state = redis.call("HMGET", KEYS[1], "cur", "max", "epoch", "node")
if state[3] and string.sub(state[3], 1, 7) == "replay:" then
  return -2
end
if not state[1] or not state[2] or not state[3] then
  return -1
end
if state[4] ~= node then
  return -8
end
if state[3] ~= ARGV[2] then
  return -2
end
local fence = redis.call("HMGET", KEYS[2], "gen", "node")
if fence[2] == node then
  if tonumber(fence[1]) > tonumber(ARGV[4]) then
    return -9
  end
elseif ARGV[5] ~= "1" then
  return -10
end
if fence[1] ~= ARGV[4] or fence[2] ~= node then
  redis.call("HSET", KEYS[2], "gen", ARGV[4], "node", node)
end
local last = redis.call("HMGET", KEYS[1], "claim", "claimFirst", "claimLast", "claimRec", "prevRec", "prevRec2", "prevRec3")
if last[1] == ARGV[3] then
  return {tonumber(last[2]), tonumber(last[3]), tonumber(state[2]), last[5], last[6], last[7]}
end
local cur = tonumber(state[1])
local max = tonumber(state[2])
if cur >= max then
  return -3
end
local size = math.min(tonumber(ARGV[1]), max - cur)
local to = redis.call("HINCRBY", KEYS[1], "cur", size)
local first = to - size + 1
local prev = false
if last[1] and last[4] and string.sub(last[4], 1, #last[1] + 1) == last[1] .. "|" then
  prev = last[4]
end
local firstText, toText = string.format("%d", first), string.format("%d", to)
local rec = table.concat({ARGV[3], firstText, toText, ARGV[4], ARGV[2], ARGV[7], ARGV[8], ARGV[6]}, "|")
redis.call("HSET", KEYS[1], "claim", ARGV[3], "claimFirst", firstText, "claimLast", toText, "claimRec", rec)
local before = {prev, last[5], last[6]}
local fields = {"prevRec", "prevRec2", "prevRec3"}
for i = 1, 3 do
  if before[i] then
    redis.call("HSET", KEYS[1], fields[i], before[i])
  else
    redis.call("HDEL", KEYS[1], fields[i])
  end
end
return {first, to, max, before[1], before[2], before[3]}
