-- wrk script: every request a new combination. The pool is every value of the first list parameter
-- (`name=a,b,c`) of every line of a request list, with its multiplicity, so values are drawn with
-- the list's own skew; each request takes <per> distinct values from it at random, seeded, so one
-- run's sequence is the same every time and two runs with different seeds share no request.
-- Arguments (after --): <list file> <per> <seed>
local pool = {}
local np = 0
local prefix, suffix
local per = 100

function init(args)
  for line in io.lines(args[1]) do
    local head, values, tail = line:match("^([^?]+%?[%w_]+=)([^&\t]+)([^\t]*)")
    if values then
      prefix, suffix = prefix or head, suffix or tail
      for v in values:gmatch("[^,]+") do
        np = np + 1
        pool[np] = v
      end
    end
  end
  per = tonumber(args[2]) or per
  if np < per * 2 then error("too few values in " .. tostring(args[1]) .. " for " .. per .. " per request") end
  math.randomseed(tonumber(args[3]) or 1)
end

function request()
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

-- The runner's summary line, as urls.lua prints it.
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"durationUs":%d,"bytes":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},"latencyUs":{"mean":%.1f,"max":%d,"p50":%d,"p90":%d,"p99":%d,"p999":%d}}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency.max, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9)))
end
