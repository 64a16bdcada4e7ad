-- wrk script of the benchmarks: POSTs the body in $BENCH_BODY_FILE with the headers in
-- $BENCH_HEADERS (one "name: value" per line) and prints one JSON line of results at the end.
-- Latencies are in microseconds; non-2xx answers are counted in errors.status.

local body_file = os.getenv("BENCH_BODY_FILE")
local header_lines = os.getenv("BENCH_HEADERS") or ""

wrk.method = "POST"
local f = assert(io.open(body_file, "rb"))
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
for line in string.gmatch(header_lines, "[^\n]+") do
  local name, value = string.match(line, "^%s*([^:]+):%s*(.-)%s*$")
  if name then wrk.headers[name] = value end
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '\nBENCH_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},"latency_us":{"p50":%d,"p90":%d,"p99":%d,"p999":%d,"max":%d,"mean":%.1f}}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9), latency.max, latency.mean))
end
