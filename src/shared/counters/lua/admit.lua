--[[
  Admits one request for an API key, all or nothing: revocation, rpm and tpm over a sliding
  60 s log, concurrency slots, and a budget reservation. A refused request changes nothing
  except the removal of entries and reservations that had already expired.

  Time is the caller's `now` (ARGV[1]), never Redis TIME, so tests control the clock and the
  memory counters behave the same; ingress hosts are expected to keep NTP time. Key TTLs are
  durations computed from that now.

  Input:
    KEYS[1] revoked    string, present once the key is revoked (no TTL)
    KEYS[2] window     zset: member "<reservationId>|<tokens>", score admission ms
    KEYS[3] holds      zset: member reservationId, score expiry ms (one concurrency slot each)
    KEYS[4] state      hash: tok = tokens in window, rsv = reserved nano-USD,
                             r:<reservationId> = "<reservedNanos>|<tokens>"
    KEYS[5] spend      hash: t = period kind, p = period start ms, n = settled nano-USD

    ARGV[1]  now ms
    ARGV[2]  reservationId
    ARGV[3]  tokens for the tpm window
    ARGV[4]  nano-USD to reserve
    ARGV[5]  rpm, -1 for none
    ARGV[6]  tpm, -1 for none
    ARGV[7]  max concurrent, -1 for none
    ARGV[8]  budget nano-USD for the period, -1 for none
    ARGV[9]  period kind (none, daily, weekly, monthly)
    ARGV[10] period start ms
    ARGV[11] period end ms, -1 for none
    ARGV[12] reservation TTL ms
    ARGV[13] TTL ms for window, holds and state
    ARGV[14] TTL ms for spend
    ARGV[15] spend seed from the ledger, '' when the caller has none yet

  Output: { status, windowRequests, windowTokens, resetMs, retryMs (-1: never) }
    status is ok, revoked, rate_limited, budget_exceeded, concurrency, or seed: the period's
    spend is unknown here; call again with ARGV[15] read from the ledger (first writer wins,
    like SET NX, so concurrent seeders cannot double-count).

  Numbers handed back to Redis go through string.format('%d'): Lua's tostring keeps only 14
  significant digits, which would corrupt nano-USD sums.
]]
local now = tonumber(ARGV[1])
local rid = ARGV[2]
local tokens = tonumber(ARGV[3])
local reserve = tonumber(ARGV[4])
local rpm = tonumber(ARGV[5])
local tpm = tonumber(ARGV[6])
local maxc = tonumber(ARGV[7])
local budget = tonumber(ARGV[8])
local pend = tonumber(ARGV[11])
local WINDOW = 60000
local IN_FLIGHT = 1000

local function int(x) return string.format('%d', x) end

-- Entries that left the window give their tokens back.
local cutoff = int(now - WINDOW)
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', cutoff)
if #gone > 0 then
  local freed = 0
  for i = 1, #gone do freed = freed + tonumber(string.match(gone[i], '|(%d+)$')) end
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', cutoff)
  redis.call('HINCRBY', KEYS[4], 'tok', int(-freed))
end

-- Reservations a dead worker never settled give their money and slot back.
local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ARGV[1])
if #expired > 0 then
  local released = 0
  for i = 1, #expired do
    local f = 'r:' .. expired[i]
    local v = redis.call('HGET', KEYS[4], f)
    if v then
      released = released + tonumber(string.match(v, '^(%d+)'))
      redis.call('HDEL', KEYS[4], f)
    end
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[1])
  redis.call('HINCRBY', KEYS[4], 'rsv', int(-released))
end

local count = redis.call('ZCARD', KEYS[2])
local holds = redis.call('ZCARD', KEYS[3])
local totals = redis.call('HMGET', KEYS[4], 'tok', 'rsv')
local used = tonumber(totals[1] or '0')
local rsv = tonumber(totals[2] or '0')
-- A total whose set has gone (expired or reset) is stale, not real usage.
if count == 0 and used ~= 0 then redis.call('HDEL', KEYS[4], 'tok'); used = 0 end
if holds == 0 and rsv ~= 0 then redis.call('HDEL', KEYS[4], 'rsv'); rsv = 0 end

local function reset_ms(n)
  if n == 0 then return 0 end
  local newest = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  return tonumber(newest[2]) + WINDOW - now
end
local function refuse(status, retry)
  return { status, count, used, reset_ms(count), retry }
end

if redis.call('EXISTS', KEYS[1]) == 1 then return refuse('revoked', -1) end

if budget >= 0 then
  local s = redis.call('HMGET', KEYS[5], 't', 'p', 'n')
  -- Fresh unless it is for another period kind or an older period (a caller whose clock is
  -- behind just uses the newer period rather than overwriting it).
  if not (s[1] == ARGV[9] and s[2] and tonumber(s[2]) >= tonumber(ARGV[10])) then
    if ARGV[15] == '' then return { 'seed', 0, 0, 0, -1 } end
    redis.call('HSET', KEYS[5], 't', ARGV[9], 'p', ARGV[10], 'n', ARGV[15])
    redis.call('PEXPIRE', KEYS[5], ARGV[14])
    s[3] = ARGV[15]
  end
  local spent = tonumber(s[3])
  if spent + rsv + reserve > budget then
    local retry = -1
    if reserve <= budget then
      if spent + reserve <= budget then
        retry = IN_FLIGHT -- only in-flight reservations are in the way
      elseif pend >= 0 then
        retry = pend - now
      end
    end
    return refuse('budget_exceeded', retry)
  end
end

local over_rpm = rpm >= 0 and count + 1 > rpm
local over_tpm = tpm >= 0 and used + tokens > tpm
if over_rpm or over_tpm then
  local retry = 0
  if over_rpm then
    if rpm == 0 then return refuse('rate_limited', -1) end
    -- The (count - rpm)-th oldest entry must leave before one more request fits.
    local e = redis.call('ZRANGE', KEYS[2], count - rpm, count - rpm, 'WITHSCORES')
    retry = math.max(retry, tonumber(e[2]) + WINDOW - now)
  end
  if over_tpm then
    if tokens > tpm then return refuse('rate_limited', -1) end
    local entries = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
    local freed = 0
    for i = 1, #entries, 2 do
      freed = freed + tonumber(string.match(entries[i], '|(%d+)$'))
      if used - freed + tokens <= tpm then
        retry = math.max(retry, tonumber(entries[i + 1]) + WINDOW - now)
        break
      end
    end
  end
  return refuse('rate_limited', retry)
end

if maxc >= 0 and holds >= maxc then
  return refuse('concurrency', maxc == 0 and -1 or IN_FLIGHT)
end

-- Admitted. Only keys with a rate limit need the window log.
if rpm >= 0 or tpm >= 0 then
  redis.call('ZADD', KEYS[2], ARGV[1], rid .. '|' .. ARGV[3])
  redis.call('HINCRBY', KEYS[4], 'tok', ARGV[3])
  redis.call('PEXPIRE', KEYS[2], ARGV[13])
  count = count + 1
  used = used + tokens
end
redis.call('ZADD', KEYS[3], int(now + tonumber(ARGV[12])), rid)
redis.call('HSET', KEYS[4], 'r:' .. rid, ARGV[4] .. '|' .. ARGV[3])
redis.call('HINCRBY', KEYS[4], 'rsv', ARGV[4])
redis.call('PEXPIRE', KEYS[3], ARGV[13])
redis.call('PEXPIRE', KEYS[4], ARGV[13])
return { 'ok', count, used, reset_ms(count), -1 }
