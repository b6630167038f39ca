#!/usr/bin/env bash
# Installs PouchDB for Node into a project-local directory (default
# target/pouchdb), for the CouchDB-door tests (crates/folio/tests/couch.rs)
# and by hand (scripts/couch/sync.js). The tests run this on first miss.
#   pouchdb                 the database and its HTTP adapter and replicator
#   pouchdb-adapter-memory  an in-memory local database (no files)
# Versions are pinned so every run tests the same client.
set -euo pipefail
dir="${1:-$(cd "$(dirname "$0")/.." && pwd)/target/pouchdb}"
mkdir -p "$dir"
cd "$dir"
if [ -f node_modules/pouchdb/package.json ] && [ -f node_modules/pouchdb-adapter-memory/package.json ]; then
    exit 0
fi
command -v node >/dev/null || { echo "node is not installed" >&2; exit 1; }
command -v npm >/dev/null || { echo "npm is not installed" >&2; exit 1; }
[ -f package.json ] || echo '{"name":"folio-couch-tests","private":true}' > package.json
npm install --no-audit --no-fund --loglevel=error pouchdb@9.0.0 pouchdb-adapter-memory@9.0.0 >&2
node -e 'require("pouchdb"); require("pouchdb-adapter-memory"); console.log("pouchdb ready")' >&2
