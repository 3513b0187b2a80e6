--[[
  Renews one snowflake worker-id lease, if its holder still holds it. A lease that expired or that
  another holder took over is lost for good: renewing it would let two holders issue with one id.

  Input:
    KEYS[1]  {seq:<name>}:lease:<id>, the lease key (value: the holder's token)
    KEYS[2]  {seq:<name>}:until, the issued-until hash (see acquireLease)
    ARGV[1]  the holder's token
    ARGV[2]  the lease TTL, ms
    ARGV[3]  the worker id (the field of KEYS[2])
    ARGV[4]  the holder's new issued-until bound: its clock when it sent this, plus the TTL (Unix ms)

  Output:
    1   renewed: the key expires TTL from now; the bound is max(stored, ARGV[4])
    -7  lost: the key is gone (expired) or holds another token; nothing changed
]]
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
  return -7
end
redis.call("PEXPIRE", KEYS[1], ARGV[2])
local u = redis.call("HGET", KEYS[2], ARGV[3])
if not u or tonumber(ARGV[4]) > tonumber(u) then
  redis.call("HSET", KEYS[2], ARGV[3], ARGV[4])
end
return 1
