-- wrk script for the HTTP commit benchmark (docs/benchmarks.md, "commit"):
-- every request creates one document of 1 KiB in FOLIO_DB, signed in with
-- the API token in FOLIO_TOKEN (a bearer token), and counts as one commit.
--
--   FOLIO_DB=wrk.fdb FOLIO_TOKEN=folio_... \
--     wrk -t2 -c32 -d10s -s scripts/wrk-commit.lua http://127.0.0.1:8080
--
-- A response other than 201 Created is counted and reported at the end,
-- so a run that measured refusals cannot pass for a fast one.
local db = os.getenv("FOLIO_DB") or "wrk.fdb"
local token = os.getenv("FOLIO_TOKEN") or error("set FOLIO_TOKEN to an API token")

wrk.method = "POST"
wrk.path = "/db/" .. db .. "/docs"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. token
wrk.body = '{"Form":"Memo","Body":"' .. string.rep("x", 1024) .. '"}'

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  not_created = 0
end

function response(status, headers, body)
  if status ~= 201 then
    not_created = not_created + 1
  end
end

function done(summary, latency, requests)
  local refused = 0
  for _, t in ipairs(threads) do
    refused = refused + t:get("not_created")
  end
  local secs = summary.duration / 1e6
  io.write(string.format(
    "commits/s %.0f  p50 %.2f ms  p99 %.2f ms  max %.2f ms  not created %d  socket errors %d\n",
    (summary.requests - refused) / secs,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    refused, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
