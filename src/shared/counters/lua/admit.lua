--[[
  Admits one request for an API key, and for its project when it has one, all or nothing: the key's
  revocation, rpm and tpm over a sliding 60 s log, concurrency slots and a budget reservation; then
  the project's rpm, tpm and budget the same way. The request is reserved at both levels in this one
  call or at neither, so concurrent requests of a project's keys on any ingress can never spend past
  the project's budget. A refused request changes nothing except the removal of entries and
  reservations that had already expired.

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
    KEYS[6..9]         the project's window, holds, state and spend, same shapes (only when ARGV[16] is 1)

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
    ARGV[16] 1 when the key has a project, else 0 (then ARGV[17..24] are absent)
    ARGV[17] project rpm, -1 for none
    ARGV[18] project tpm, -1 for none
    ARGV[19] project budget nano-USD, -1 for none
    ARGV[20] project period kind
    ARGV[21] project period start ms
    ARGV[22] project period end ms, -1 for none
    ARGV[23] project TTL ms for spend
    ARGV[24] project spend seed, '' when the caller has none yet

  Output: { status, windowRequests, windowTokens, resetMs, retryMs (-1: never), level, held }, where
  held is 'in_flight' when only other requests' reservations keep a budget refusal from fitting
    status is ok, revoked, rate_limited, budget_exceeded, concurrency, or seed: the period's
    spend of `level` is unknown here; call again with its seed read from the ledger (first writer
    wins, like SET NX, so concurrent seeders cannot double-count). level is key or project: whose
    limit refused (or needs a seed); the window numbers are that level's. On ok they are the key's.

  The project's keys carry another hash tag than the API key's: this script needs a single Redis
  (or a cluster with both slots co-located), as the ledger stream of settle.lua already does.

  Numbers handed back to Redis go through string.format('%d'): Lua's tostring keeps only 14
  significant digits, which would corrupt nano-USD sums.
]]
local now = tonumber(ARGV[1])
local rid = ARGV[2]
local tokens = tonumber(ARGV[3])
local reserve = tonumber(ARGV[4])
local WINDOW = 60000
local IN_FLIGHT = 1000

local function int(x) return string.format('%d', x) end

-- One level's keys and limits.
local key = {
  revoked = KEYS[1], win = KEYS[2], holds = KEYS[3], state = KEYS[4], spend = KEYS[5],
  rpm = tonumber(ARGV[5]), tpm = tonumber(ARGV[6]), maxc = tonumber(ARGV[7]), budget = tonumber(ARGV[8]),
  period = ARGV[9], pstart = ARGV[10], pend = tonumber(ARGV[11]), spendTtl = ARGV[14], seed = ARGV[15], name = 'key',
}
local project = nil
if ARGV[16] == '1' then
  project = {
    win = KEYS[6], holds = KEYS[7], state = KEYS[8], spend = KEYS[9],
    rpm = tonumber(ARGV[17]), tpm = tonumber(ARGV[18]), maxc = -1, budget = tonumber(ARGV[19]),
    period = ARGV[20], pstart = ARGV[21], pend = tonumber(ARGV[22]), spendTtl = ARGV[23], seed = ARGV[24], name = 'project',
  }
end

-- Checks one level without reserving anything; returns nil when the request fits (L.count and
-- L.used then hold its window), else the refusal to answer with.
local function check(L)
  -- Entries that left the window give their tokens back.
  local cutoff = int(now - WINDOW)
  local gone = redis.call('ZRANGEBYSCORE', L.win, '-inf', cutoff)
  if #gone > 0 then
    local freed = 0
    for i = 1, #gone do freed = freed + tonumber(string.match(gone[i], '|(%d+)$')) end
    redis.call('ZREMRANGEBYSCORE', L.win, '-inf', cutoff)
    redis.call('HINCRBY', L.state, 'tok', int(-freed))
  end

  -- Reservations a dead worker never settled give their money and slot back.
  local expired = redis.call('ZRANGEBYSCORE', L.holds, '-inf', ARGV[1])
  if #expired > 0 then
    local released = 0
    for i = 1, #expired do
      local f = 'r:' .. expired[i]
      local v = redis.call('HGET', L.state, f)
      if v then
        released = released + tonumber(string.match(v, '^(%d+)'))
        redis.call('HDEL', L.state, f)
      end
    end
    redis.call('ZREMRANGEBYSCORE', L.holds, '-inf', ARGV[1])
    redis.call('HINCRBY', L.state, 'rsv', int(-released))
  end

  local count = redis.call('ZCARD', L.win)
  local holds = redis.call('ZCARD', L.holds)
  local totals = redis.call('HMGET', L.state, 'tok', 'rsv')
  local used = tonumber(totals[1] or '0')
  local rsv = tonumber(totals[2] or '0')
  -- A total whose set has gone (expired or reset) is stale, not real usage.
  if count == 0 and used ~= 0 then redis.call('HDEL', L.state, 'tok'); used = 0 end
  if holds == 0 and rsv ~= 0 then redis.call('HDEL', L.state, 'rsv'); rsv = 0 end
  L.count = count
  L.used = used

  local function reset_ms(n)
    if n == 0 then return 0 end
    local newest = redis.call('ZRANGE', L.win, -1, -1, 'WITHSCORES')
    return tonumber(newest[2]) + WINDOW - now
  end
  local function refuse(status, retry, held)
    return { status, count, used, reset_ms(count), retry, L.name, held or '' }
  end

  if L.revoked and redis.call('EXISTS', L.revoked) == 1 then return refuse('revoked', -1) end

  if L.budget >= 0 then
    local s = redis.call('HMGET', L.spend, 't', 'p', 'n')
    -- Fresh unless it is for another period kind or an older period (a caller whose clock is
    -- behind just uses the newer period rather than overwriting it).
    if not (s[1] == L.period and s[2] and tonumber(s[2]) >= tonumber(L.pstart)) then
      if L.seed == '' then return { 'seed', 0, 0, 0, -1, L.name, '' } end
      redis.call('HSET', L.spend, 't', L.period, 'p', L.pstart, 'n', L.seed)
      redis.call('PEXPIRE', L.spend, L.spendTtl)
      s[3] = L.seed
    end
    local spent = tonumber(s[3])
    if spent + rsv + reserve > L.budget then
      local retry = -1
      local held = ''
      if reserve <= L.budget then
        if spent + reserve <= L.budget then
          retry = IN_FLIGHT -- only in-flight reservations are in the way
          held = 'in_flight'
        elseif L.pend >= 0 then
          retry = L.pend - now
        end
      end
      return refuse('budget_exceeded', retry, held)
    end
  end

  local over_rpm = L.rpm >= 0 and count + 1 > L.rpm
  local over_tpm = L.tpm >= 0 and used + tokens > L.tpm
  if over_rpm or over_tpm then
    local retry = 0
    if over_rpm then
      if L.rpm == 0 then return refuse('rate_limited', -1) end
      -- The (count - rpm)-th oldest entry must leave before one more request fits.
      local e = redis.call('ZRANGE', L.win, count - L.rpm, count - L.rpm, 'WITHSCORES')
      retry = math.max(retry, tonumber(e[2]) + WINDOW - now)
    end
    if over_tpm then
      if tokens > L.tpm then return refuse('rate_limited', -1) end
      local entries = redis.call('ZRANGE', L.win, 0, -1, 'WITHSCORES')
      local freed = 0
      for i = 1, #entries, 2 do
        freed = freed + tonumber(string.match(entries[i], '|(%d+)$'))
        if used - freed + tokens <= L.tpm then
          retry = math.max(retry, tonumber(entries[i + 1]) + WINDOW - now)
          break
        end
      end
    end
    return refuse('rate_limited', retry)
  end

  if L.maxc >= 0 and holds >= L.maxc then
    return refuse('concurrency', L.maxc == 0 and -1 or IN_FLIGHT)
  end
  return nil
end

-- Reserves at one level what check() found room for. Only levels with a rate limit need the log.
local function reserve_at(L)
  if L.rpm >= 0 or L.tpm >= 0 then
    redis.call('ZADD', L.win, ARGV[1], rid .. '|' .. ARGV[3])
    redis.call('HINCRBY', L.state, 'tok', ARGV[3])
    redis.call('PEXPIRE', L.win, ARGV[13])
    L.count = L.count + 1
    L.used = L.used + tokens
  end
  redis.call('ZADD', L.holds, int(now + tonumber(ARGV[12])), rid)
  redis.call('HSET', L.state, 'r:' .. rid, ARGV[4] .. '|' .. ARGV[3])
  redis.call('HINCRBY', L.state, 'rsv', ARGV[4])
  redis.call('PEXPIRE', L.holds, ARGV[13])
  redis.call('PEXPIRE', L.state, ARGV[13])
end

local refused = check(key)
if refused then return refused end
if project then
  refused = check(project)
  if refused then return refused end
  reserve_at(project)
end
reserve_at(key)
local reset = 0
if key.count > 0 then
  local newest = redis.call('ZRANGE', key.win, -1, -1, 'WITHSCORES')
  reset = tonumber(newest[2]) + WINDOW - now
end
return { 'ok', key.count, key.used, reset, -1, 'key', '' }
