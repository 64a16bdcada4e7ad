--[[
  Takes up to ARGV[1] waiting jobs at once, oldest first, into the caller's active list
  (list-job-queue.ts): when the queue is deep, a worker that just took one job with BLMOVE takes
  the next ones in one round trip, so jobs reach it, run and finish in groups that share round
  trips and event-loop turns. An empty queue returns an empty list and the worker blocks again.

  Input:
    KEYS[1] wait      list of job elements, taken from the right
    KEYS[2] active    the worker's active list
    ARGV[1] the most jobs to take

  Output: the elements taken, oldest first (possibly none)
]]
local taken = {}
for i = 1, tonumber(ARGV[1]) do
  local element = redis.call('LMOVE', KEYS[1], KEYS[2], 'RIGHT', 'LEFT')
  if not element then break end
  taken[i] = element
end
return taken
