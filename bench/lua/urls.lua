-- wrk script: cycles through a pre-generated list of request paths (one per line, optionally
-- "path<TAB>etag"), so the Zipf order of the list is the order of the traffic. Requests are
-- formatted once in init: the per-request cost in wrk is a table index, the same for every server.
-- Arguments (after --): <list file> [inm] [offset]  ("inm" sends If-None-Match with the line's
-- ETag; offset = where in the list to start, so successive warm-up runs continue the pass).
--
-- Or: <list file> mix <per> <seed>: every request a new combination. The pool is every value of
-- the first list parameter (`name=a,b,c`) of every line, with its multiplicity, so values are drawn
-- with the list's own skew; each request takes <per> distinct values from it at random, seeded, so
-- one run's sequence is the same every time and runs with different seeds share no request.
local reqs = {}
local n = 0
local i = 0
local pool = {}
local np = 0
local prefix, suffix
local per = 0

local function readMix(file)
  for line in io.lines(file) do
    local head, values, tail = line:match("^([^?]+%?[%w_]+=)([^&\t]+)([^\t]*)")
    if values then
      prefix, suffix = prefix or head, suffix or tail
      for v in values:gmatch("[^,]+") do
        np = np + 1
        pool[np] = v
      end
    end
  end
  if np < per * 2 then error("too few values in " .. tostring(file) .. " for " .. per .. " per request") end
end

function init(args)
  local file = args[1]
  if args[2] == "mix" then
    per = tonumber(args[3])
    readMix(file)
    math.randomseed(tonumber(args[4]) or 1)
    return
  end
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

local function mixed()
  local seen, out, k = {}, {}, 0
  while k < per do
    local v = pool[math.random(np)]
    if not seen[v] then
      seen[v] = true
      k = k + 1
      out[k] = v
    end
  end
  return wrk.format("GET", prefix .. table.concat(out, ",") .. suffix)
end

function request()
  if per > 0 then return mixed() end
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
