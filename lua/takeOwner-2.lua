--[[
  Gives the caller a gen for one request partition of the topic, under the request topic's partition
  count it routes by (docs/design.md I3). Sequences are homed by that count (docs/wire-contract.md:
  Routing), so a worker that routes by a smaller count than another worker already took a gen with
  would home some sequences elsewhere: it is refused and must learn the larger count first. The count
  in force only grows, as the topic's partition count does. The caller drops its blocks of the
  partition's sequences when this succeeds, and claims and records them under the new gen only.

  A gen only grows: max(the last gen + 1, Redis TIME in µs), so it grows also when this key was lost;
  when the key's node identity is not this node's (a failover, restart or flush since the last gen),
  ARGV[2] µs are added, so that a gen taken on a timeline that was lost, on a primary whose clock ran
  up to that much ahead, stays below every gen taken from now on.

  Input:
    KEYS[1]  {idd:<topic>}:gen, a hash: gen (the last gen taken), node (the node it was taken on)
    KEYS[2]  {idd:<topic>}:route, the largest partition count any owner routed by
    ARGV[1]  the partition count the caller routes by
    ARGV[2]  the margin after a node change, µs

  Output:
    {gen}  the caller's gen; the count in force is now the caller's
    n      (> 0) the count in force is n, larger than the caller's: nothing was set
]]
local count = tonumber(ARGV[1])
local inForce = tonumber(redis.call("GET", KEYS[2]) or "0")
if inForce > count then
  return inForce
end
if inForce < count then
  redis.call("SET", KEYS[2], count)
end
local node = string.match(redis.call("INFO", "replication"), "master_replid:(%w+)")
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local last = redis.call("HMGET", KEYS[1], "gen", "node")
if last[2] ~= node then
  now = now + tonumber(ARGV[2])
end
local gen = math.max(tonumber(last[1] or "0") + 1, now)
redis.call("HSET", KEYS[1], "gen", string.format("%d", gen), "node", node)
return {gen}
