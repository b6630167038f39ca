#!/usr/bin/env bash
# What an open console costs the commit rate (docs/benchmarks.md "The
# console's stats history"): one `folio serve` on loopback, then
# `folio load commit` against it in rounds, alternating two arms on the
# same server and data directory:
#   closed  nobody reads the stats history;
#   open    a poller reads GET /_stats/history as the dashboard does (the
#           whole hour once, then `?since=` the last sample), but every
#           second instead of every two.
# Which arm goes first alternates from one pair of rounds to the next.
# The server samples its statistics once a second in both arms (the ring
# is always kept): what differs is only the console reading it.
#
#   cargo build --release
#   scripts/bench-console.sh [OUT]      # default docs/results/console
#
# Environment: ROUNDS (pairs, 10), SECONDS_PER (20), CLIENTS (8),
# BENCH_DIR (target/bench-console), FOLIO (target/release/folio).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/results/console}
folio=${FOLIO:-target/release/folio}
rounds=${ROUNDS:-10}
seconds=${SECONDS_PER:-20}
clients=${CLIENTS:-8}
dir=${BENCH_DIR:-target/bench-console}
command -v "$folio" >/dev/null || { echo "missing $folio (cargo build --release)" >&2; exit 1; }
rm -rf "$dir" && mkdir -p "$dir/data" "$out"
password="bench-admin-$RANDOM$RANDOM"
FOLIO_NEW_PASSWORD=$password "$folio" --data "$dir/data" user add admin --admin
token=$("$folio" --data "$dir/data" user token admin --label bench)
"$folio" --data "$dir/data" serve --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 2>"$dir/serve.log" &
server_pid=$!
poller_pid=
cleanup() {
    [ -n "$poller_pid" ] && kill "$poller_pid" 2>/dev/null || true
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 50); do grep -q "serving data directory" "$dir/serve.log" && break; sleep 0.1; done
line=$(head -n 1 "$dir/serve.log")
native=$(sed -E 's/.* on native ([^,]+),.*/\1/' <<<"$line")
http=$(sed -E 's/.* http ([^;,]+)[;,].*/\1/' <<<"$line")
echo "server: native $native, http $http (pid $server_pid)"
export FOLIO_PASSWORD=$token

# The dashboard's reads, once a second, until killed; on exit, how many
# requests and bytes it made.
poll() {
    exec python3 - "http://$http" "$token" "$1" <<'PY'
import json, signal, sys, time, urllib.request
url, token, report = sys.argv[1:4]
n = size = 0
def done(*_):
    json.dump({"requests": n, "bytes": size}, open(report, "w"))
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
since = 0
while True:
    req = urllib.request.Request(url + "/_stats/history?since=%d" % since,
                                 headers={"Authorization": "Bearer " + token})
    body = urllib.request.urlopen(req).read()
    h = json.loads(body)
    n, size = n + 1, size + len(body)
    if h["t"]:
        since = h["t"][-1]
    time.sleep(1)
PY
}

commit_round() { # ARM INDEX
    "$folio" --server "$native" --user admin load commit --no-embedded --clients "$clients" \
        --seconds "$seconds" --rounds 1 --out "$dir/$1-$2" >/dev/null
}

: >"$dir/rounds.jsonl"
for i in $(seq "$rounds"); do
    if [ $((i % 2)) -eq 1 ]; then order="closed open"; else order="open closed"; fi
    for arm in $order; do
        if [ "$arm" = open ]; then
            poll "$dir/poller-$i.json" &
            poller_pid=$!
            sleep 2 # the first read, the whole hour, is the page opening
        fi
        commit_round "$arm" "$i"
        if [ "$arm" = open ]; then
            kill "$poller_pid"; wait "$poller_pid" || true; poller_pid=
        fi
        python3 - "$dir/$arm-$i/result.json" "$arm" "$i" >>"$dir/rounds.jsonl" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
row = r["results"][0]
m = [v for k, v in row.items() if isinstance(v, dict) and "median" in v][0]["median"]
print(json.dumps({"arm": sys.argv[2], "pair": int(sys.argv[3]),
                  "commits_per_sec": m["commits_per_sec"], "p99_us": m["p99_us"]}))
PY
        tail -n 1 "$dir/rounds.jsonl"
    done
done
cp "$dir/rounds.jsonl" "$out/rounds.jsonl"
cat "$dir"/poller-*.json | python3 -c '
import json, sys
rs = [json.loads(l) for l in sys.stdin.read().replace("}{", "}\n{").splitlines() if l.strip()]
print(json.dumps({"requests": sum(r["requests"] for r in rs), "bytes": sum(r["bytes"] for r in rs)}))
' >"$out/poller.json"
python3 - "$out/rounds.jsonl" "$clients" "$seconds" <<'PY' | tee "$out/summary.txt"
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
arm = lambda a: [r for r in rows if r["arm"] == a]
print("commit rate, %s clients, %s s a round, %d pairs (arms alternating, order alternating)"
      % (sys.argv[2], sys.argv[3], len(arm("open"))))
for a in ("closed", "open"):
    v = sorted(r["commits_per_sec"] for r in arm(a))
    q = st.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
    print("%-6s median %8.0f commits/s  quartiles %8.0f..%-8.0f  min %8.0f  max %8.0f" %
          (a, st.median(v), q[0], q[2], v[0], v[-1]))
pairs = {}
for r in rows:
    pairs.setdefault(r["pair"], {})[r["arm"]] = r["commits_per_sec"]
ratios = sorted(p["open"] / p["closed"] for p in pairs.values() if len(p) == 2)
q = st.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
print("open / closed, pair by pair: median %.3f  quartiles %.3f..%.3f  min %.3f  max %.3f"
      % (st.median(ratios), q[0], q[2], ratios[0], ratios[-1]))
print("pairs where open was faster: %d of %d" % (sum(r > 1 for r in ratios), len(ratios)))
PY
