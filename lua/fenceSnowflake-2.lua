--[[
  The first use of a snowflake sequence under a gen (docs/design.md I3): raises the sequence's fence
  to the caller's gen, as a claim does for a counter sequence, and returns the high mark, the largest
  id recorded as answered, which the caller issues above (G2). A snowflake issuer holds no blocks,
  only a clock, so a fence of another node or none is taken over without more ado.

  Input:
    KEYS[1]  the sequence's fence {seq:<name>}:fence, fields gen and node (see claimBlock)
    KEYS[2]  {seq:<name>}:high, the high mark (19 zero-padded digits)
    ARGV[1]  the caller's gen

  Output:
    {high}  the high mark (false: none); the fence is now (ARGV[1], this node)
    -9      superseded: the fence holds a larger gen of this node
]]
local node = string.match(redis.call("INFO", "replication"), "master_replid:(%w+)")
local fence = redis.call("HMGET", KEYS[1], "gen", "node")
if fence[2] == node and tonumber(fence[1]) > tonumber(ARGV[1]) then
  return -9
end
if fence[1] ~= ARGV[1] or fence[2] ~= node then
  redis.call("HSET", KEYS[1], "gen", ARGV[1], "node", node)
end
return {redis.call("GET", KEYS[2])}
