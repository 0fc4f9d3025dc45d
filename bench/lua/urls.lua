-- wrk script: cycles through a pre-generated list of request paths (one per line, optionally
-- "path<TAB>etag"), so the Zipf order of the list is the order of the traffic. Requests are
-- formatted once in init: the per-request cost in wrk is a table index, the same for every server.
-- Arguments (after --): <list file> [inm] [offset]  ("inm" sends If-None-Match with the line's
-- ETag; offset = where in the list to start, so successive warm-up runs continue the pass).
local reqs = {}
local n = 0
local i = 0

function init(args)
  local file = args[1]
  local inm = args[2] == "inm"
  for line in io.lines(file) do
    local path, etag = line:match("^([^\t]+)\t?(.*)$")
    if path then
      local headers = {}
      if inm and etag ~= "" then headers["If-None-Match"] = etag end
      n = n + 1
      reqs[n] = wrk.format("GET", path, headers)
    end
  end
  if n == 0 then error("no request paths in " .. tostring(file)) end
  i = (tonumber(args[3]) or 0) % n
end

function request()
  i = i + 1
  if i > n then i = 1 end
  return reqs[i]
end

-- One JSON line the runner parses (latencies in microseconds).
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"durationUs":%d,"bytes":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},"latencyUs":{"mean":%.1f,"max":%d,"p50":%d,"p90":%d,"p99":%d,"p999":%d}}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency.max, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9)))
end
