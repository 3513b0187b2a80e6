--[[
  Raises the reservation (max) of one counter. Call it only after MongoDB holds a reservation at
  least as high (I1: MongoDB first, then Redis). Never lowers max (I2) and never creates a counter:
  a missing counter is created or restored by the caller (§5.6).

  Input:
    KEYS[1]  counter hash {seq:<name>}:<period> (fields cur, max, epoch, node: see claimBlock)
    ARGV[1]  the new max, a decimal integer
    ARGV[2]  the epoch the caller expects

  Output:
    the max now in force (>= ARGV[1])
    -2  fenced by replay (see claimBlock), whatever else the counter holds
    -1  the counter does not exist
    -8  suspect: the counter's node is not this node (see claimBlock)
    -2  fenced: the counter's epoch is not ARGV[2]
]]
local node = string.match(redis.call("INFO", "replication"), "master_replid:(%w+)")
local state = redis.call("HMGET", KEYS[1], "max", "epoch", "node")
if state[2] and string.sub(state[2], 1, 7) == "replay:" then
  return -2
end
if not state[1] or not state[2] then
  return -1
end
if state[3] ~= node then
  return -8
end
if state[2] ~= ARGV[2] then
  return -2
end
if tonumber(ARGV[1]) > tonumber(state[1]) then
  redis.call("HSET", KEYS[1], "max", ARGV[1])
  return tonumber(ARGV[1])
end
return tonumber(state[1])
