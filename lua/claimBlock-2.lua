--[[
  Claims a block of consecutive numbers from one (sequence, period) counter.

  Input:
    KEYS[1]  counter hash {seq:<name>}:<period>, fields:
               cur    last number handed out (start - 1 before the first claim)
               max    reservation: the highest number that may be handed out (I1)
               epoch  fence; replay changes it, so claims made with an old epoch fail (I5)
               claim, claimFirst, claimLast  the last claim's id and block (see ARGV[4])
    KEYS[2]  idd:marker, the Redis state marker: written once when idd first uses an empty Redis
             and again by replay; an emptied Redis lacks it, so claims fail closed until replay
    ARGV[1]  wanted block size, integer >= 1
    ARGV[2]  the epoch the caller read when it started using this counter
    ARGV[3]  the marker the caller read
    ARGV[4]  claim id, fresh per claim; a caller that got no answer (a timeout: the claim may have
             run) sends the same id again and gets the same block, so the block is not lost

  Output:
    {first, last, max}  the block granted: first <= last, at most ARGV[1] numbers, last <= max;
                        cur is now last (cur only moves forward, I2); max tells the caller its headroom
    -1  the counter does not exist although the marker does: fail closed until replay
    -2  fenced: the counter's epoch is not ARGV[2]
    -3  exhausted: cur = max; the reservation must be raised first
    -5  the marker is missing or not ARGV[3]: Redis lost its state or replay rebuilt it

  Counters stay below 2^53 (Lua numbers are doubles); cur moves by HINCRBY with the block size, so
  the stored value is exact.
]]
if redis.call("GET", KEYS[2]) ~= ARGV[3] then
  return -5
end
local state = redis.call("HMGET", KEYS[1], "cur", "max", "epoch")
if not state[1] or not state[2] or not state[3] then
  return -1
end
if state[3] ~= ARGV[2] then
  return -2
end
local last = redis.call("HMGET", KEYS[1], "claim", "claimFirst", "claimLast")
if last[1] == ARGV[4] then
  return {tonumber(last[2]), tonumber(last[3]), tonumber(state[2])}
end
local cur = tonumber(state[1])
local max = tonumber(state[2])
if cur >= max then
  return -3
end
local size = math.min(tonumber(ARGV[1]), max - cur)
local to = redis.call("HINCRBY", KEYS[1], "cur", size)
redis.call("HSET", KEYS[1], "claim", ARGV[4], "claimFirst", to - size + 1, "claimLast", to)
return {to - size + 1, to, max}
