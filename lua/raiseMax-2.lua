--[[
  Raises the reservation (max) of one counter. Call it only after MongoDB holds a reservation at
  least as high (I1: MongoDB first, then Redis). Never lowers max (I2) and never creates a counter:
  a missing counter means Redis lost its state, and only replay may rebuild it.

  Input:
    KEYS[1]  counter hash {seq:<name>}:<period> (fields cur, max, epoch)
    KEYS[2]  idd:marker (see claimBlock)
    ARGV[1]  the new max, a decimal integer
    ARGV[2]  the epoch the caller expects
    ARGV[3]  the marker the caller read

  Output:
    the max now in force (>= ARGV[1] unless fenced or missing)
    -1  the counter does not exist
    -2  fenced: the counter's epoch is not ARGV[2]
    -5  the marker is missing or not ARGV[3]
]]
if redis.call("GET", KEYS[2]) ~= ARGV[3] then
  return -5
end
local state = redis.call("HMGET", KEYS[1], "max", "epoch")
if not state[1] or not state[2] then
  return -1
end
if state[2] ~= ARGV[2] then
  return -2
end
if tonumber(ARGV[1]) > tonumber(state[1]) then
  redis.call("HSET", KEYS[1], "max", ARGV[1])
  return tonumber(ARGV[1])
end
return tonumber(state[1])
