--[[
  Leases a free worker id of one snowflake sequence to a new holder. Ids are recycled: an id whose
  lease key expired (its holder stopped renewing) or was released is free again. The id's
  issued-until bound survives the lease, so the new holder learns the latest time the id's earlier
  holders may have issued at and issues only later times (no duplicate when a clock went back).

  Input:
    KEYS[1]  {seq:<name>}:until, a hash: worker id -> issued-until bound (Unix ms) of its holders
    KEYS[2]  {seq:<name>}:lease:, the prefix of the lease keys: the lease of id i is the string
             KEYS[2]..i holding its holder's token and expiring with the lease (same hash tag as
             KEYS[1], so the keys the script builds live in the same slot)
    ARGV[1]  the new holder's token, random and fresh per acquire
    ARGV[2]  the lease TTL, ms (Redis expires the key TTL after this script runs)
    ARGV[3]  the number of worker ids, 2^workerBits (at most 65536: one scan visits each once)
    ARGV[4]  the id to try first (a preference, or random); the scan goes up from it and wraps
    ARGV[5]  the new holder's issued-until bound: its clock when it sent this, plus the TTL (Unix ms)
    ARGV[6]  the latest earlier bound the holder takes without waiting long: its clock plus the
             backward step it waits out (Unix ms)
    ARGV[7]  what a missing state (KEYS[1] absent) means: "lost" (or absent: hold off, below), "ask"
             (change nothing and answer {-1, Redis time in ms, node}: the caller asks MongoDB whether
             the sequence was ever leased, docs/design.md §5.6), or "new" (MongoDB recorded this
             caller's first lease of the sequence: no hold-off, also none a state of this node holds,
             if this node is ARGV[8] and Redis's time is at most ARGV[9], the deadline the caller
             derived from the time "ask" answered)

  Redis state: the lease keys and bounds live in Redis only. KEYS[1] also holds `node`, the node
  identity (master_replid) the sequence's snowflake state was written under, and `holdoff`. When
  `node` is missing or another node's (Redis lost its data, restarted, or a replica was promoted),
  leases and bounds may have vanished or gone back: `holdoff` becomes this script's Redis time plus
  the TTL, and every bound handed out is at least that, so a holder whose lease vanished, still
  issuing until its local validity ends, never shares a time with a new holder of its id. The one
  exception is a brand-new sequence (ARGV[7] "new" in time): no lease of it can have vanished.

  Output:
    {id, previous, heldOff}  id leased (SET PX, the token as value); previous is its bound before
                    this acquire (false: never leased), raised to the hold-off when that is later, and
                    heldOff is 1 then (0 otherwise). The bound is now max(previous, ARGV[5]); the
                    holder issues only times later than previous and not later than ARGV[5]
    -6  every id is leased; nothing changed
    {-1, now, node}  ARGV[7] "ask" and no state: nothing changed; Redis's time (ms) and node identity

  Which id: the first free one from ARGV[4] up whose bound is at most ARGV[6]; when every free id has
  a later bound (this holder's clock is behind the ids' earlier holders), the free id with the
  earliest bound, so the holder waits or refuses as little as it can.
]]
local node = string.match(redis.call("INFO", "replication"), "master_replid:(%w+)")
local state = redis.call("HMGET", KEYS[1], "node", "holdoff")
local holdoff = state[2] and tonumber(state[2]) or nil
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local new = ARGV[7] == "new" and ARGV[8] == node and now <= tonumber(ARGV[9])
if state[1] ~= node then
  local missing = redis.call("EXISTS", KEYS[1]) == 0
  if missing and ARGV[7] == "ask" then
    return {-1, now, node}
  end
  if missing and new then
    holdoff = nil
    redis.call("HSET", KEYS[1], "node", node)
  else
    holdoff = now + tonumber(ARGV[2])
    redis.call("HSET", KEYS[1], "node", node, "holdoff", string.format("%d", holdoff))
  end
elseif new then
  -- This node's state, written after this caller's first-lease record (another worker's lease, held
  -- off): its hold-off covers no lease this caller could meet before its deadline.
  holdoff = nil
end
local n = tonumber(ARGV[3])
local start = tonumber(ARGV[4])
local accept = tonumber(ARGV[6])
local best, bestUntil, bestHeld = nil, nil, 0
for i = 0, n - 1 do
  local id = (start + i) % n
  if redis.call("EXISTS", KEYS[2] .. id) == 0 then
    local u = redis.call("HGET", KEYS[1], id)
    local held = 0
    if holdoff and (u and tonumber(u) or 0) < holdoff then
      u, held = tostring(holdoff), 1
    end
    if not u or tonumber(u) <= accept then
      best, bestUntil, bestHeld = id, u, held
      break
    end
    if not best or tonumber(u) < tonumber(bestUntil) then
      best, bestUntil, bestHeld = id, u, held
    end
  end
end
if not best then
  return -6
end
redis.call("SET", KEYS[2] .. best, ARGV[1], "PX", ARGV[2])
if not bestUntil or tonumber(ARGV[5]) > tonumber(bestUntil) then
  redis.call("HSET", KEYS[1], best, ARGV[5])
end
return {best, bestUntil or false, bestHeld}
