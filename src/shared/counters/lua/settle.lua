--[[
  Settles one admitted request: releases its reservation and concurrency slot, corrects its
  tpm window entry to the tokens really used, and adds its real cost to the period's spend.

  Input:
    KEYS[1] holds      zset: member reservationId, score expiry ms
    KEYS[2] state      hash: tok, rsv, r:<reservationId> = "<reservedNanos>|<tokens>"
    KEYS[3] window     zset: member "<reservationId>|<tokens>", score admission ms
    KEYS[4] spend      hash: t = period kind, p = period start ms, n = settled nano-USD

    ARGV[1] reservationId
    ARGV[2] real cost, nano-USD
    ARGV[3] tokens really used
    ARGV[4] period kind at settlement
    ARGV[5] period start ms at settlement
    ARGV[6] TTL ms for spend

  Output: 1 when the reservation was still held, 0 when it had expired (or was settled before).

  Spend grows even when the reservation had expired: the money was really spent. When spend is
  held for another period (or not at all) it is left alone: the next admission seeds it from the
  ledger, which has this cost once the worker recorded it.
]]
local held = 0
local f = 'r:' .. ARGV[1]
local v = redis.call('HGET', KEYS[2], f)
if v then
  held = 1
  local nanos, tok = string.match(v, '^(%d+)|(%d+)$')
  redis.call('HDEL', KEYS[2], f)
  redis.call('ZREM', KEYS[1], ARGV[1])
  -- string.format('%d'): tostring would round large nano-USD amounts, and HINCRBY rejects "-0".
  redis.call('HINCRBY', KEYS[2], 'rsv', string.format('%d', -tonumber(nanos)))
  local member = ARGV[1] .. '|' .. tok
  local score = redis.call('ZSCORE', KEYS[3], member)
  if score then
    redis.call('ZREM', KEYS[3], member)
    redis.call('ZADD', KEYS[3], score, ARGV[1] .. '|' .. ARGV[3])
    redis.call('HINCRBY', KEYS[2], 'tok', string.format('%d', tonumber(ARGV[3]) - tonumber(tok)))
  end
end

local s = redis.call('HMGET', KEYS[4], 't', 'p')
if s[1] == ARGV[4] and s[2] == ARGV[5] then
  redis.call('HINCRBY', KEYS[4], 'n', ARGV[2])
  redis.call('PEXPIRE', KEYS[4], ARGV[6])
end
return held
