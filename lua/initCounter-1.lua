--[[
  Creates a counter that does not exist yet. Used for a (sequence, period) that MongoDB has never
  reserved anything for, and by replay after Redis lost its state; never overwrites (I2).

  Input:
    KEYS[1]  counter hash {seq:<name>}:<period>
    ARGV[1]  cur: the last number already handed out or skipped (start - 1 for a new counter)
    ARGV[2]  max: the reservation MongoDB holds (>= cur)
    ARGV[3]  epoch: the fence value claims must present

  Output:
    1   created
    -4  the counter exists already; nothing changed
]]
if redis.call("EXISTS", KEYS[1]) == 1 then
  return -4
end
redis.call("HSET", KEYS[1], "cur", ARGV[1], "max", ARGV[2], "epoch", ARGV[3])
return 1
