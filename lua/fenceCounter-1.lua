--[[
  Fences one counter for replay (I5): sets its epoch to a token no worker holds, so every claim
  and raise fails with "fenced" until restoreCounter sets the new epoch. A missing counter gets a
  hash holding only the fence, which claims treat as missing.

  Input:
    KEYS[1]  counter hash {seq:<name>}:<period>
    ARGV[1]  the fence token (unique per replay run)

  Output:
    {cur, max, epoch}  the state before fencing (each false when absent)
]]
local state = redis.call("HMGET", KEYS[1], "cur", "max", "epoch")
redis.call("HSET", KEYS[1], "epoch", ARGV[1])
return state
