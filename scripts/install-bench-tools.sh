#!/usr/bin/env bash
# Installs the tools the benchmarks in docs/benchmarks.md use beside
# Folio's own load tool, from Debian's packages:
#   wrk         the outside HTTP load generator (scripts/wrk-commit.lua)
#   postgresql  pgbench and a server for `folio load commit --pgbench`
#   linux-perf  profiles of the server under load
#   chromium    renders a report.html to PNG to look at it
# PostgreSQL's initdb and pg_ctl live in a versioned directory; they are
# linked into /usr/local/bin so `load commit --pgbench` finds them.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
    echo "run as root (apt-get)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends wrk postgresql postgresql-contrib linux-perf chromium >/dev/null
for tool in initdb pg_ctl postgres; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        found=$(ls -d /usr/lib/postgresql/*/bin/"$tool" 2>/dev/null | sort -V | tail -n 1)
        [ -n "$found" ] && ln -sf "$found" /usr/local/bin/"$tool"
    fi
done
for tool in wrk pgbench initdb pg_ctl perf chromium; do
    printf '%-8s %s\n' "$tool" "$(command -v "$tool" || echo MISSING)"
done
