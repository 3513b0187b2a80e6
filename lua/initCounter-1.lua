--[[
  Creates a counter that does not exist yet, for a (sequence, period) that MongoDB has never
  reserved anything for, under this node's identity. Never overwrites (I2); a counter MongoDB
  knows is restored instead (restoreCounter).

  Input:
    KEYS[1]  counter hash {seq:<name>}:<period>
    ARGV[1]  cur: start - 1
    ARGV[2]  max: the reservation MongoDB holds (>= cur)
    ARGV[3]  epoch: the fence value claims must present

  Output:
    1   created, with node = this node's master_replid
    -4  the counter exists already; nothing changed
]]
if redis.call("EXISTS", KEYS[1]) == 1 then
  return -4
end
local node = string.match(redis.call("INFO", "replication"), "master_replid:(%w+)")
redis.call("HSET", KEYS[1], "cur", ARGV[1], "max", ARGV[2], "epoch", ARGV[3], "node", node)
return 1
