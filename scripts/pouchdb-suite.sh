#!/usr/bin/env bash
# Runs PouchDB's own integration tests (tests/integration/test.*.js of
# PouchDB's source, the release that matches the npm `pouchdb` the
# CouchDB-door tests use) against `folio serve`'s CouchDB listener, the
# way PouchDB's CI runs them against CouchDB: in Node, with COUCH_HOST
# naming the server. Only the suites that talk to the server are run
# (their titles name the `http` adapter); local-only ones test PouchDB.
#
#   scripts/pouchdb-suite.sh [test-name ...]      default: the ten below
#
# Environment:
#   FOLIO_BIN      the folio binary (default target/debug/folio)
#   POUCHDB_GIT    PouchDB's git repository, a URL or a local git directory
#                  (default https://github.com/pouchdb/pouchdb.git)
#   SUITE_DIR      where the source, its npm modules and the results go
#                  (default target/pouchdb-suite)
#   GREP           mocha's --grep instead of the http suites' titles (only
#                  the http suites among those are counted still)
#   TIMEOUT        mocha's per-test timeout in ms (default 20000)
#
# PouchDB's source is not part of this repository: it is fetched (tests/
# and bin/ of the commit the release was built from) into SUITE_DIR, and
# what its Node runner needs is installed there from the npm registry.
# A summary per test file is printed and written to
# SUITE_DIR/results/summary.tsv; each file's mocha JSON report is kept
# beside it. The exit status is 0 when the run completed, whatever the
# tests said (the summary is the result).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
version=9.0.0
folio="${FOLIO_BIN:-$root/target/debug/folio}"
git_src="${POUCHDB_GIT:-https://github.com/pouchdb/pouchdb.git}"
dir="${SUITE_DIR:-$root/target/pouchdb-suite}"
timeout_ms="${TIMEOUT:-20000}"
default_tests=(basics all_docs bulk_docs bulk_get revs_diff changes conflicts attachments replication sync)
if [ $# -gt 0 ]; then tests=("$@"); else tests=("${default_tests[@]}"); fi

command -v node >/dev/null || { echo "node is not installed" >&2; exit 1; }
command -v npm >/dev/null || { echo "npm is not installed" >&2; exit 1; }
[ -x "$folio" ] || { echo "no folio binary at $folio (cargo build -p folio, or set FOLIO_BIN)" >&2; exit 1; }
mkdir -p "$dir"
src="$dir/src"

# 1. PouchDB's tests at the release. The release tag's commit ("build
#    9.0.0") drops tests/, so its parent is the source of the release.
if [ ! -f "$src/.version-$version" ]; then
    rm -rf "$src" "$dir/git"
    if [ -d "$git_src" ]; then
        gitdir="$git_src"
    else
        git clone --quiet --bare --depth 2 --branch "$version" "$git_src" "$dir/git"
        gitdir="$dir/git"
    fi
    mkdir -p "$src"
    git --git-dir="$gitdir" archive "$version^" tests bin | tar -x -C "$src"
    touch "$src/.version-$version"
fi

# 2. What the Node runner needs (PouchDB's devDependencies at that
#    commit, the few the integration tests load), and PouchDB itself from
#    npm, where the tests expect the monorepo's built packages.
cd "$src"
if [ ! -f node_modules/.folio-suite-ready ]; then
    echo '{"name":"pouchdb-suite","private":true}' > package.json
    npm install --no-audit --no-fund --loglevel=error \
        "pouchdb@$version" "pouchdb-adapter-memory@$version" \
        "pouchdb-utils@$version" "pouchdb-errors@$version" \
        "pouchdb-binary-utils@$version" "pouchdb-merge@$version" \
        "pouchdb-generate-replication-id@$version" \
        "pouchdb-checkpointer@$version" \
        mocha@10.2.0 chai@3.5.0 chai-as-promised@5.3.0 seedrandom@3.0.5 \
        throw-max-listeners-error@1.0.1 mkdirp@0.5.1 memdown@1.4.1 \
        rimraf@2.7.1 ncp@2.0.0 >&2
    touch node_modules/.folio-suite-ready
fi
mkdir -p packages/node_modules/pouchdb-for-coverage
ln -sfn ../../node_modules/pouchdb packages/node_modules/pouchdb
ln -sfn ../../node_modules/pouchdb-adapter-memory packages/node_modules/pouchdb-adapter-memory
# The tests take their helpers from the monorepo's coverage build; the
# same functions, from the published packages:
cat > packages/node_modules/pouchdb-for-coverage/index.js <<'EOF'
'use strict';
const PouchDB = require('pouchdb');
const u = require('pouchdb-utils');
const b = require('pouchdb-binary-utils');
const m = require('pouchdb-merge');
const errors = require('pouchdb-errors');
PouchDB.utils = {
  parseUri: u.parseUri, uuid: u.uuid, rev: u.rev, clone: u.clone,
  once: u.once, upsert: u.upsert, toPromise: u.toPromise,
  defaultBackOff: u.defaultBackOff, atob: b.atob, btoa: b.btoa,
  binaryStringToBlobOrBuffer: b.binaryStringToBlobOrBuffer, blob: b.blob,
  merge: m.merge, winningRev: m.winningRev,
  createError: errors.createError,
  generateErrorFromResponse: errors.generateErrorFromResponse,
  generateReplicationId: require('pouchdb-generate-replication-id'),
  checkpointer: require('pouchdb-checkpointer'),
  assign: Object.assign,
};
PouchDB.Errors = errors;
module.exports = PouchDB;
EOF

# 3. A Folio server with the CouchDB listener on and an administrator
#    (the tests create and destroy databases).
data="$dir/data"
rm -rf "$data" "$src/tmp"
mkdir -p "$data" "$dir/results"
FOLIO_NEW_PASSWORD=suite-admin-pw "$folio" --data "$data" user add admin --admin
log="$dir/results/server.log"
FOLIO__COUCHDB_LISTEN=127.0.0.1:0 "$folio" --data "$data" serve \
    --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 2>"$log" >/dev/null &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
couch=""
for _ in $(seq 1 600); do
    couch=$(grep -o 'couchdb [0-9.:]*' "$log" | head -1 | cut -d' ' -f2 || true)
    [ -n "$couch" ] && break
    kill -0 "$server" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.1
done
[ -n "$couch" ] || { echo "the server did not start" >&2; cat "$log" >&2; exit 1; }
echo "folio serve: CouchDB door on $couch" >&2

# 4. Each test file in a mocha of its own, as bin/test-node.sh runs them,
#    the suites that use the server only.
only_http='\.js- ?((local|http)[-:])?http'
summary="$dir/results/summary.tsv"
printf 'file\tpassed\tfailed\tpending\n' > "$summary"
for t in "${tests[@]}"; do
    report="$dir/results/test.$t.json"
    COUCH_HOST="http://admin:suite-admin-pw@$couch" \
        ./node_modules/.bin/mocha --exit --timeout "$timeout_ms" \
        --require=./tests/integration/node.setup.js \
        --reporter=json --grep="${GREP:-$only_http}" \
        "tests/integration/test.$t.js" > "$report.raw" 2>"$dir/results/test.$t.stderr" || true
    # Tests may log before the report; the report is the last JSON object.
    node -e '
      const fs = require("fs");
      const raw = fs.readFileSync(process.argv[1], "utf8");
      const at = raw.search(/^\{\s*$/m);
      const r = JSON.parse(raw.slice(at));
      const http = new RegExp(process.argv[4]);
      const pick = (l) => l.filter((x) => http.test(x.fullTitle));
      const out = {
        passes: pick(r.passes).map((x) => x.fullTitle),
        failures: pick(r.failures).map((x) => ({ title: x.fullTitle, error: x.err.message })),
        pending: pick(r.pending).map((x) => x.fullTitle),
      };
      fs.writeFileSync(process.argv[2], JSON.stringify(out, null, 1));
      console.log([process.argv[3], out.passes.length, out.failures.length, out.pending.length].join("\t"));
    ' "$report.raw" "$report" "test.$t.js" "$only_http" >> "$summary"
done
column -t "$summary"
