--[[
  A worker shutting down hands back the jobs it took but did not start (a take that raced its
  shutdown), unchanged and at the taking end of the queue, and leaves the workers set
  (list-job-queue.ts). Jobs it ran have already left its active list.

  Input:
    KEYS[1] workers   set of worker ids
    KEYS[2] wait      list of job elements, taken from the right
    KEYS[3] active    this worker's active list
    KEYS[4] alive     this worker's alive key
    ARGV[1] this worker's id

  Output: the number of jobs handed back
]]
local handed = 0
while redis.call('LMOVE', KEYS[3], KEYS[2], 'RIGHT', 'RIGHT') do
  handed = handed + 1
end
redis.call('DEL', KEYS[4])
redis.call('SREM', KEYS[1], ARGV[1])
return handed
