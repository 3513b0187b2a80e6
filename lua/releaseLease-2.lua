--[[
  Gives a snowflake worker-id lease back (a clean shutdown), so the id is free at once. The holder
  may lower the id's issued-until bound to the latest time it really issued at (it has stopped
  issuing before calling this), so the next holder need not wait for the bound it had announced.

  Input:
    KEYS[1]  {seq:<name>}:lease:<id>, the lease key (value: the holder's token)
    KEYS[2]  {seq:<name>}:until, the issued-until hash (see acquireLease)
    ARGV[1]  the holder's token
    ARGV[2]  the worker id (the field of KEYS[2])
    ARGV[3]  the final bound (Unix ms): the latest time the holder issued at, or the bound it found
             when it acquired if later; empty: keep the stored bound

  Output:
    1   released: the key is deleted, the bound set to ARGV[3] (when given)
    -7  not held: the key is gone or holds another token; nothing changed (the bound stays, since a
        later holder may have raised it)
]]
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
  return -7
end
redis.call("DEL", KEYS[1])
if ARGV[3] ~= "" then
  redis.call("HSET", KEYS[2], ARGV[2], ARGV[3])
end
return 1
