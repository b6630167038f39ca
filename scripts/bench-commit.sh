#!/usr/bin/env bash
# The commit benchmark of docs/benchmarks.md, in one run: a `folio serve`
# on loopback, then `folio load commit` (embedded log on/off, native
# --server, HTTP --http, PostgreSQL pgbench, alternating rounds), then wrk
# against the HTTP API (scripts/wrk-commit.lua, 32 connections, 1 KiB
# creates with a bearer token), with the server's log and lock counters
# read around the wrk runs.
#
#   scripts/install-bench-tools.sh     # once: wrk, PostgreSQL, perf
#   cargo build --release
#   scripts/bench-commit.sh [OUT]      # default docs/results/commit
#
# Environment: CLIENTS (1,8,32), SECONDS_PER (5), ROUNDS (3), WRK_RUNS (3),
# WRK_SECONDS (10), BENCH_DIR (target/bench-commit: on the data disk),
# FOLIO (the load tool, target/release/folio), SERVER_FOLIO (the server
# binary, default FOLIO: another build, to compare servers under one load
# tool).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/results/commit}
folio=${FOLIO:-target/release/folio}
server_folio=${SERVER_FOLIO:-$folio}
clients=${CLIENTS:-1,8,32}
seconds=${SECONDS_PER:-5}
rounds=${ROUNDS:-3}
wrk_runs=${WRK_RUNS:-3}
wrk_seconds=${WRK_SECONDS:-10}
dir=${BENCH_DIR:-target/bench-commit}
for tool in "$folio" wrk pgbench; do
    command -v "$tool" >/dev/null || { echo "missing $tool (scripts/install-bench-tools.sh, cargo build --release)" >&2; exit 1; }
done
rm -rf "$dir" && mkdir -p "$dir/data" "$out"
password="bench-admin-$RANDOM$RANDOM"
FOLIO_NEW_PASSWORD=$password "$folio" --data "$dir/data" user add admin --admin
token=$("$folio" --data "$dir/data" user token admin --label bench)
"$server_folio" --data "$dir/data" serve --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 2>"$dir/serve.log" &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q "serving data directory" "$dir/serve.log" && break; sleep 0.1; done
line=$(head -n 1 "$dir/serve.log")
native=$(sed -E 's/.* on native ([^,]+),.*/\1/' <<<"$line")
http=$(sed -E 's/.* http ([^;,]+)[;,].*/\1/' <<<"$line")
echo "server: native $native, http $http (pid $server_pid)"
export FOLIO_PASSWORD=$token
"$folio" --server "$native" --user admin load commit --clients "$clients" --seconds "$seconds" \
    --rounds "$rounds" --http "http://$http" --pgbench --dir "$dir" --out "$out" | tee "$out/load-commit.txt"
"$folio" --server "$native" --user admin db create wrk.fdb >/dev/null
stats() { "$folio" --server "$native" --user admin show stats; }
stats >"$dir/stats-before-wrk.json"
: >"$out/wrk.txt"
for i in $(seq "$wrk_runs"); do
    FOLIO_DB=wrk.fdb FOLIO_TOKEN=$token wrk -t2 -c32 -d"${wrk_seconds}s" --latency \
        -s scripts/wrk-commit.lua "http://$http" | tee -a "$out/wrk.txt" | tail -n 1
done
stats >"$dir/stats-after-wrk.json"
python3 - "$dir/stats-before-wrk.json" "$dir/stats-after-wrk.json" <<'PY' | tee "$out/wrk-server-counters.txt"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
d = {k: b[k] - a[k] for k in ("op.create.count", "log.commits", "log.fsyncs", "lock.waits", "lock.wait_us")}
n = max(d["op.create.count"], 1)
print("wrk, server side: %d creates, %.1f creates per log batch, %.1f per fsync, %.1f%% lock waits (mean %.0f us)" % (
    n, n / max(d["log.commits"], 1), n / max(d["log.fsyncs"], 1), 100.0 * d["lock.waits"] / n,
    d["lock.wait_us"] / max(d["lock.waits"], 1)))
PY
