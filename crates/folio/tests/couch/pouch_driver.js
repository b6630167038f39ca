// A PouchDB database in memory, driven one JSON command per line on
// stdin, one JSON answer per line on stdout (crates/folio/tests/couch.rs).
// argv: the remote database's URL, user, password.
//
// Commands: pull, push, sync (PouchDB's replicator against the remote),
// put {doc}, bulk {docs}, get {id, opts}, remove {id, rev}, all, info,
// remote {url} (the same remote database at a new address),
// push_tracked (a push that reports the revisions each acknowledged
// batch wrote, also when it fails), tree (every document's winner with
// _conflicts and its leaves with _revisions, deleted ones included).
// An error is answered {"error": name, "status": n, "message": text}.
'use strict';
const PouchDB = require('pouchdb');
PouchDB.plugin(require('pouchdb-adapter-memory'));
const readline = require('readline');

const [url, user, password] = process.argv.slice(2);
const local = new PouchDB('local-' + process.pid, { adapter: 'memory' });
function open(at) {
  return new PouchDB(at, {
    auth: user ? { username: user, password } : undefined,
    skip_setup: true,
  });
}
let remote = open(url);

function report(r) {
  return {
    ok: r.ok,
    status: r.status,
    docs_read: r.docs_read,
    docs_written: r.docs_written,
    doc_write_failures: r.doc_write_failures,
    errors: (r.errors || []).map(String),
  };
}

async function run(cmd) {
  switch (cmd.op) {
    case 'pull':
      return report(await local.replicate.from(remote, { batch_size: cmd.batch_size || 100 }));
    case 'push':
      return report(await local.replicate.to(remote, { batch_size: cmd.batch_size || 100 }));
    case 'sync': {
      const r = await local.sync(remote);
      return { pull: report(r.pull), push: report(r.push) };
    }
    case 'push_tracked': {
      const written = [];
      try {
        const r = await local.replicate
          .to(remote, { batch_size: cmd.batch_size || 10, retry: false })
          .on('change', (info) => {
            for (const d of info.docs) written.push([d._id, d._rev]);
          });
        return { ok: r.ok, written, report: report(r) };
      } catch (e) {
        return { ok: false, written, error: String(e && (e.message || e)) };
      }
    }
    case 'remote':
      remote = open(cmd.url);
      return { ok: true };
    case 'put':
      return await local.put(cmd.doc);
    case 'bulk':
      return await local.bulkDocs(cmd.docs);
    case 'get':
      return await local.get(cmd.id, cmd.opts || {});
    case 'remove':
      return await local.remove(cmd.id, cmd.rev);
    case 'all':
      return (await local.allDocs({ include_docs: true, conflicts: true })).rows.map((r) => r.doc);
    case 'info':
      return await local.info();
    case 'tree': {
      const ids = (await local.changes({ since: 0 })).results.map((r) => r.id).sort();
      const out = [];
      for (const id of ids) {
        const winner = await local.get(id, { conflicts: true }).catch((e) => ({ missing: e.status }));
        const leaves = await local.get(id, { open_revs: 'all', revs: true });
        out.push({ id, winner, leaves: leaves.map((l) => l.ok) });
      }
      return out;
    }
    default:
      throw new Error('unknown op ' + cmd.op);
  }
}

const lines = readline.createInterface({ input: process.stdin });
let queue = Promise.resolve();
lines.on('line', (line) => {
  queue = queue.then(async () => {
    let answer;
    try {
      answer = await run(JSON.parse(line));
    } catch (e) {
      answer = { error: e.name || 'error', status: e.status, message: e.message || String(e) };
    }
    process.stdout.write(JSON.stringify(answer === undefined ? null : answer) + '\n');
  });
});
lines.on('close', () => queue.then(() => process.exit(0)));
