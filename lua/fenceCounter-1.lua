--[[
  Fences one counter for a restore (I5): sets its epoch to a token no worker holds, so every claim
  and raise fails until restoreCounter sets the new epoch. A missing counter gets a hash holding
  only the fence, which claims treat as missing.

  Input:
    KEYS[1]  counter hash {seq:<name>}:<period>
    ARGV[1]  the fence token (unique per restore)
    ARGV[2]  "1": fence only a counter that is missing or suspect (a worker's automatic restore;
             one that another worker restored meanwhile is left alone); "stale:<epoch>": the same,
             and also one whose epoch is still <epoch> (MongoDB knows a newer one: a restore on
             another Redis superseded this counter's timeline); "": fence in any case (replay)

  Output:
    {cur, max, epoch, node}  the state before fencing (each false when absent)
    -4  ARGV[2] is "1" (or "stale:<epoch>" and the counter's epoch is another) and the counter
        exists under this node, or replay fenced it (its token starts "replay:"): nothing changed.
        A worker never takes over replay's fence: replay may have found the counter missing between
        a worker's first reservation and its initCounter, and it restores the counter itself; a
        fence only a worker left (killed mid-restore) is taken over by the next worker's restore
]]
local node = string.match(redis.call("INFO", "replication"), "master_replid:(%w+)")
local state = redis.call("HMGET", KEYS[1], "cur", "max", "epoch", "node")
local stale = string.match(ARGV[2], "^stale:(%d+)$")
local replaying = state[3] and string.sub(state[3], 1, 7) == "replay:"
if (ARGV[2] == "1" or stale) and (replaying or (state[1] and state[2] and state[4] == node and (not stale or state[3] ~= stale))) then
  return -4
end
redis.call("HSET", KEYS[1], "epoch", ARGV[1])
return state
