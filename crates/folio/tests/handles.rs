//! End to end: the real `folio serve` with a small open-database cache,
//! and 20,000 native handles held open at once, one per database (the
//! mail server's case: every connected user holds a mail file open). A
//! handle does not pin its instance (design.md I54): the server's
//! descriptors stay within what `max_open_databases` allows, not what
//! the handles number, and every handle still reads and writes its
//! database afterwards, the cache opening it again when it had closed it.

mod common;

use common::{Server, ADMIN_PW};
use nsf::{Engine, EngineConfig, Item, ItemValue};
use protocol::DocRef;
use std::sync::Arc;

const LIMIT: usize = 64;
const DATABASES: usize = 20_000;
/// Two connections: one may hold at most 10,000 handles.
const PER_CONNECTION: usize = DATABASES / 2;

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

fn name(i: usize) -> String {
    format!("h/{:02}/d{i:05}.fdb", i % 97)
}

#[test]
fn twenty_thousand_handles_hold_no_more_descriptors_than_the_cache_allows() {
    let tmp = tempfile::tempdir().unwrap();
    let backend = Arc::new(storage::backend::FsBackend);
    let store = server::auth::UserStore::open(backend.clone(), tmp.path()).unwrap();
    store.add_user("admin", ADMIN_PW, true).unwrap();
    std::fs::write(
        tmp.path().join("folio.toml"),
        format!("max_open_databases = {LIMIT}\nflush_interval_secs = 0.2\n"),
    )
    .unwrap();
    // The databases are made embedded (the server is not running yet),
    // each with one document, N = i.
    let mut unids = Vec::with_capacity(DATABASES);
    {
        let mut cfg = EngineConfig::new(tmp.path());
        cfg.max_open_databases = LIMIT;
        let (engine, _) = Engine::open(backend, cfg).unwrap();
        for i in 0..DATABASES {
            let db = engine.create_database(&name(i), "").unwrap();
            let doc = vec![Item {
                name: "N".into(),
                value: ItemValue::Number(i as f64),
            }];
            unids.push(db.create(doc).unwrap().unid);
        }
        engine.close().unwrap();
    }

    let srv = Server::start(tmp.path());
    let pid = srv.pid();
    let idle = open_fds(pid);
    let clients = [srv.admin(), srv.admin()];
    let mut handles = Vec::with_capacity(DATABASES);
    let mut most = 0;
    for i in 0..DATABASES {
        let (h, info) = clients[i / PER_CONNECTION].open_database(&name(i)).unwrap();
        assert_eq!(info.path, name(i));
        handles.push(h);
        if i % 500 == 0 {
            most = most.max(open_fds(pid));
        }
    }
    most = most.max(open_fds(pid));
    // The cache holds at most four times its limit plus a batch or two
    // (I19: an open whose pass found too few to close leaves the next
    // batch to the closer), the two connections' sockets, the requests
    // in flight and the server's own files come on top: bounded by the
    // setting, whatever the handles number (a run measured 273 over idle
    // for a limit of 64).
    let allowed = idle + 4 * LIMIT + 2 * (LIMIT / 16) + 16;
    assert!(
        most <= allowed,
        "{most} descriptors with {DATABASES} handles held (idle {idle}, allowed {allowed})"
    );

    // Every handle still reaches its database: the first ones were closed
    // by the cache long ago and open again.
    for i in (0..DATABASES).step_by(997).chain([0, DATABASES - 1]) {
        let c = &clients[i / PER_CONNECTION];
        let d = c
            .read_document(handles[i], DocRef::Unid(protocol::Unid(unids[i].0)))
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&d.json).unwrap();
        assert_eq!(v["N"], serde_json::json!(i as f64), "{}", name(i));
    }
    // A write through a handle whose instance was closed is queued after
    // the reopen, and is there when read back through a fresh handle.
    let written = clients[0]
        .create_document(handles[1], r#"{"N": -1}"#)
        .unwrap();
    let fresh = srv.admin();
    let (h, _) = fresh.open_database(&name(1)).unwrap();
    let d = fresh.read_document(h, DocRef::Unid(written.unid)).unwrap();
    assert!(d.json.contains("-1"), "{}", d.json);
    assert!(
        open_fds(pid) <= allowed + 1,
        "descriptors after the reads: {}",
        open_fds(pid)
    );
}
