--[[
  Hands the jobs of workers that stopped sending heartbeats back to the queue (list-job-queue.ts).
  A worker process registers in the workers set and keeps its alive key fresh (SET PX) while it
  runs; the jobs it took wait in its own active list. Once its alive key has lapsed, its active
  jobs go back to the taking end of the queue with their re-run count raised by one, or, when they
  have already been re-run ARGV[2] times, are dropped (returned to the caller for its log).

  The active and alive keys of each worker are built from ARGV[1]: every key of the queue shares
  one hash tag, so in a cluster they all live in one slot.

  Input:
    KEYS[1] workers   set of worker ids
    KEYS[2] wait      list of job elements "<reruns>\n<job JSON>", taken from the right
    ARGV[1] the queue's key base: "<base>active:<id>" and "<base>alive:<id>"
    ARGV[2] how many times a job may be run again after its worker died

  Output: { jobs handed back, { dropped job JSON, ... } }
]]
local maxReruns = tonumber(ARGV[2])
local requeued = 0
local dropped = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('EXISTS', ARGV[1] .. 'alive:' .. id) == 0 then
    local active = ARGV[1] .. 'active:' .. id
    while true do
      local element = redis.call('RPOP', active)
      if not element then break end
      local newline = string.find(element, '\n', 1, true)
      local reruns = tonumber(string.sub(element, 1, newline - 1)) or 0
      if reruns >= maxReruns then
        dropped[#dropped + 1] = string.sub(element, newline + 1)
      else
        redis.call('RPUSH', KEYS[2], tostring(reruns + 1) .. string.sub(element, newline))
        requeued = requeued + 1
      end
    end
    redis.call('SREM', KEYS[1], id)
  end
end
return { requeued, dropped }
