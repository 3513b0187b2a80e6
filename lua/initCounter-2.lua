--[[
  Creates a counter that does not exist yet, for a (sequence, period) that MongoDB has never
  reserved anything for. Never overwrites (I2); replay uses restoreCounter instead.

  Input:
    KEYS[1]  counter hash {seq:<name>}:<period>
    KEYS[2]  idd:marker (see claimBlock): without it, a missing counter may be one Redis lost, so
             nothing is created
    ARGV[1]  cur: start - 1
    ARGV[2]  max: the reservation MongoDB holds (>= cur)
    ARGV[3]  epoch: the fence value claims must present
    ARGV[4]  the marker the caller read

  Output:
    1   created
    -4  the counter exists already; nothing changed
    -5  the marker is missing or not ARGV[4]; nothing changed
]]
if redis.call("GET", KEYS[2]) ~= ARGV[4] then
  return -5
end
if redis.call("EXISTS", KEYS[1]) == 1 then
  return -4
end
redis.call("HSET", KEYS[1], "cur", ARGV[1], "max", ARGV[2], "epoch", ARGV[3])
return 1
