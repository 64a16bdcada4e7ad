--[[
  Settles one admitted request: releases its reservation and concurrency slot, corrects its
  tpm window entry to the tokens really used, and adds its real cost to the period's spend.
  A final settlement (with a ledger record) happens at most once per ledger id, and appends the
  record to the ledger stream in the same atomic step: the money Redis counts and the ledger that
  PostgreSQL will hold can never disagree, whatever fails after this script.

  Input:
    KEYS[1] holds      zset: member reservationId, score expiry ms
    KEYS[2] state      hash: tok, rsv, r:<reservationId> = "<reservedNanos>|<tokens>"
    KEYS[3] window     zset: member "<reservationId>|<tokens>", score admission ms
    KEYS[4] spend      hash: t = period kind, p = period start ms, n = settled nano-USD
    KEYS[5] settled    string, present once this ledger id was settled (TTL ARGV[8])
    KEYS[6] ledger     stream: field e = the ledger record (JSON); read by ledger-stream-consumer.ts
    KEYS[7..10]        the project's holds, state, window and spend (only when ARGV[9] is 1)

    ARGV[1] reservationId
    ARGV[2] real cost, nano-USD
    ARGV[3] tokens really used
    ARGV[4] period kind at settlement
    ARGV[5] period start ms at settlement
    ARGV[6] TTL ms for spend
    ARGV[7] the ledger record as JSON, '' for a release without one (a job that never ran)
    ARGV[8] TTL ms of the settled marker
    ARGV[9]  1 when the admission also reserved against a project, else 0 (ARGV[10..12] absent)
    ARGV[10] project period kind at settlement
    ARGV[11] project period start ms at settlement
    ARGV[12] project TTL ms for spend

  Output: { held, applied, streamId }
    held: 1 when the key's reservation was still held, 0 when it had expired (or was released before).
    applied: 0 when this ledger id was settled before (nothing changed), else 1.
    streamId: id of the appended ledger record, '' without one.

  Spend grows even when the reservation had expired: the money was really spent. When spend is
  held for another period (or not at all) it is left alone: the next admission seeds it from the
  ledger (plus this stream's pending records), which has this cost.

  The ledger stream is one key for the deployment, outside the API key's hash slot: this script
  needs a single Redis (or a cluster with the stream's slot co-located), as BullMQ does.
]]
if ARGV[7] ~= '' then
  if not redis.call('SET', KEYS[5], '1', 'NX', 'PX', ARGV[8]) then return { 0, 0, '' } end
end

-- Releases one level's reservation and adds the cost to its spend; 1 when it was still held.
local function settle_at(holds, state, window, spend, period, pstart, spendTtl)
  local held = 0
  local f = 'r:' .. ARGV[1]
  local v = redis.call('HGET', state, f)
  if v then
    held = 1
    local nanos, tok = string.match(v, '^(%d+)|(%d+)$')
    redis.call('HDEL', state, f)
    redis.call('ZREM', holds, ARGV[1])
    -- string.format('%d'): tostring would round large nano-USD amounts, and HINCRBY rejects "-0".
    redis.call('HINCRBY', state, 'rsv', string.format('%d', -tonumber(nanos)))
    local member = ARGV[1] .. '|' .. tok
    local score = redis.call('ZSCORE', window, member)
    if score then
      redis.call('ZREM', window, member)
      redis.call('ZADD', window, score, ARGV[1] .. '|' .. ARGV[3])
      redis.call('HINCRBY', state, 'tok', string.format('%d', tonumber(ARGV[3]) - tonumber(tok)))
    end
  end

  local s = redis.call('HMGET', spend, 't', 'p')
  if s[1] == period and s[2] == pstart then
    redis.call('HINCRBY', spend, 'n', ARGV[2])
    redis.call('PEXPIRE', spend, spendTtl)
  end
  return held
end

local held = settle_at(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[4], ARGV[5], ARGV[6])
if ARGV[9] == '1' then settle_at(KEYS[7], KEYS[8], KEYS[9], KEYS[10], ARGV[10], ARGV[11], ARGV[12]) end

local id = ''
if ARGV[7] ~= '' then id = redis.call('XADD', KEYS[6], '*', 'e', ARGV[7]) end
return { held, 1, id }
