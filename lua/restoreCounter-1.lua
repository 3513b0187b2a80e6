--[[
  Sets a fenced counter's state after a restore computed it from MongoDB (a worker's, or replay's).
  cur and max only move forward (I2): each becomes the larger of the stored and the given value.
  Lifts the fence by setting the new epoch, which MongoDB already records, and marks the counter
  with this node's identity: it is trusted again here.

  Input:
    KEYS[1]  counter hash {seq:<name>}:<period>
    ARGV[1]  the fence token this restore set (fenceCounter)
    ARGV[2]  cur, ARGV[3] max, ARGV[4] the new epoch

  Output:
    {cur, max}  the state now in force
    -2  the fence is not ours any more (another restore took over); nothing changed
]]
local state = redis.call("HMGET", KEYS[1], "cur", "max", "epoch")
if state[3] ~= ARGV[1] then
  return -2
end
local cur = tonumber(ARGV[2])
local max = tonumber(ARGV[3])
if state[1] and tonumber(state[1]) > cur then
  cur = tonumber(state[1])
end
if state[2] and tonumber(state[2]) > max then
  max = tonumber(state[2])
end
if max < cur then
  max = cur
end
local node = string.match(redis.call("INFO", "replication"), "master_replid:(%w+)")
redis.call("HSET", KEYS[1], "cur", string.format("%d", cur), "max", string.format("%d", max), "epoch", ARGV[4], "node", node)
return {cur, max}
