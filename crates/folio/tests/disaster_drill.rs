//! The disaster drill (design.md §3.6), end to end against the real
//! binary: an archive-style server under a seeded write load; an online
//! backup (`folio backup --server`); more writes; a time T; more writes;
//! the server stopped and the database file deleted (or one of its pages
//! corrupted); `folio restore --until T --to t.fdb` and `folio restore` to
//! the latest. Every document acknowledged before T is in t.fdb and none
//! sent after T; every acknowledged document is in the restored a.fdb.
//! Attachments (in the server's attachment store, design.md §2.9) are
//! put before the backup, after it (one a duplicate, one new), and one
//! is replaced after T, so t.fdb needs content only the archive keeps:
//! each restored copy reads the attachments it had at its point.

mod common;

use common::{json, ok, users_dir, Server};
use protocol::{DocRef, Unid};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A document the writer sent: its content, when it was sent and when
/// its acknowledgement came back (µs since the Unix epoch).
#[derive(Clone, Debug)]
struct Written {
    unid: Unid,
    n: u64,
    sent: i64,
    acked: i64,
}

fn now() -> i64 {
    nsf::Timestamp::now().0
}

/// A seeded writer: document `n` carries `N = n` and a body derived from
/// the seed, so a restored copy can be checked item by item.
fn body(seed: u64, n: u64) -> String {
    let mut x = seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..8)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("{x:016x}")
        })
        .collect()
}

struct Load {
    stop: Arc<AtomicBool>,
    done: Arc<Mutex<Vec<Written>>>,
    count: Arc<AtomicUsize>,
    thread: std::thread::JoinHandle<()>,
}

fn start_load(srv: &Server, seed: u64) -> Load {
    let client = srv.admin();
    let (db, _) = client.open_database("a.fdb").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(Mutex::new(Vec::new()));
    let count = Arc::new(AtomicUsize::new(0));
    let (s, d, c) = (stop.clone(), done.clone(), count.clone());
    let thread = std::thread::spawn(move || {
        let mut n = 0u64;
        while !s.load(Ordering::Relaxed) {
            let doc = format!(r#"{{"N": {n}, "Body": "{}"}}"#, body(seed, n));
            let sent = now();
            let meta = client.create_document(db, &doc).unwrap();
            let acked = now();
            d.lock().unwrap().push(Written {
                unid: meta.unid,
                n,
                sent,
                acked,
            });
            c.fetch_add(1, Ordering::Relaxed);
            n += 1;
        }
    });
    Load {
        stop,
        done,
        count,
        thread,
    }
}

/// Waits (no time limit asserted) until the writer has `more` more
/// documents acknowledged.
fn wait_for(load: &Load, more: usize) {
    let target = load.count.load(Ordering::Relaxed) + more;
    while load.count.load(Ordering::Relaxed) < target {
        std::thread::sleep(Duration::from_millis(2));
    }
}

enum Damage {
    Delete,
    CorruptPage,
}

fn damage(file: &Path, how: &Damage) {
    match how {
        Damage::Delete => std::fs::remove_file(file).unwrap(),
        Damage::CorruptPage => {
            use std::os::unix::fs::FileExt;
            let f = std::fs::OpenOptions::new().write(true).open(file).unwrap();
            let pages = f.metadata().unwrap().len() / 8192;
            assert!(pages > 3);
            // A page in the middle: its body overwritten.
            f.write_all_at(&[0xA5; 4000], (pages / 2) * 8192 + 100)
                .unwrap();
            f.sync_all().unwrap();
        }
    }
}

/// Reads every written document from `path`: those in `present` must be
/// there with their content, those in `absent` must not.
fn check(srv: &Server, seed: u64, path: &str, present: &[&Written], absent: &[&Written]) {
    let client = srv.admin();
    let (db, _) = client.open_database(path).unwrap();
    for w in present {
        let d = client
            .read_document(db, DocRef::Unid(w.unid))
            .unwrap_or_else(|e| panic!("{path}: document {} (N={}) missing: {e}", w.unid, w.n));
        let v = json(&d.json);
        assert_eq!(v["N"].as_f64(), Some(w.n as f64), "{path}: {v}");
        assert_eq!(v["Body"].as_str(), Some(body(seed, w.n).as_str()), "{path}");
    }
    for w in absent {
        assert!(
            client.read_document(db, DocRef::Unid(w.unid)).is_err(),
            "{path}: document N={} sent after T is there",
            w.n
        );
    }
}

/// Attachment content: compressible, distinct per seed, over 4 KiB.
fn file(seed: u64) -> Vec<u8> {
    (0..100_000u64)
        .map(|i| b"abcdefgh"[((i / 7 + seed * 13) % 8) as usize] ^ (seed as u8))
        .collect()
}

/// Attaches `content` under `name` to the document `unid` of a.fdb.
fn attach(srv: &Server, unid: Unid, name: &str, content: &[u8]) {
    let client = srv.admin();
    let (db, _) = client.open_database("a.fdb").unwrap();
    client
        .put_attachment(db, unid, name, "application/octet-stream", None, content)
        .unwrap();
}

/// Checks that document `unid` of `path` has attachment `name` holding
/// `content`.
fn check_attachment(srv: &Server, path: &str, unid: Unid, name: &str, content: &[u8]) {
    let client = srv.admin();
    let (db, _) = client.open_database(path).unwrap();
    let mut got = Vec::new();
    client
        .get_attachment(db, unid, name, &mut got)
        .unwrap_or_else(|e| panic!("{path}: attachment {name} of {unid}: {e}"));
    assert!(
        got == content,
        "{path}: attachment {name} of {unid} differs"
    );
}

fn drill(how: Damage, seed: u64) {
    let data = users_dir(&[]);
    std::fs::write(
        data.path().join("folio.toml"),
        "[translog]\nstyle = \"archive\"\nextent_size = 262144\nmax_size = 67108864\n",
    )
    .unwrap();
    let backup = tempfile::tempdir().unwrap();
    let dest = backup.path().join("b1");
    let srv = Server::start(data.path());
    srv.admin().create_database("a.fdb", "A").unwrap();
    let load = start_load(&srv, seed);
    wait_for(&load, 100);
    let first = load.done.lock().unwrap()[0].unid;
    attach(&srv, first, "a.bin", &file(1));
    let o = srv.cli(&["backup", dest.to_str().unwrap(), "--db", "a.fdb"], "");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary = json(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(summary["databases"], serde_json::json!(["a.fdb"]));
    wait_for(&load, 150);
    // After the backup, before T: a duplicate of a.bin and new content.
    let (x, y) = {
        let done = load.done.lock().unwrap();
        (done[done.len() - 2].unid, done[done.len() - 1].unid)
    };
    attach(&srv, x, "b.bin", &file(1));
    attach(&srv, y, "c.bin", &file(2));
    let t = now();
    wait_for(&load, 150);
    // After T: c.bin replaced, so only T's state references its content.
    attach(&srv, y, "c.bin", &file(3));
    load.stop.store(true, Ordering::Relaxed);
    load.thread.join().unwrap();
    let written = load.done.lock().unwrap().clone();
    assert!(srv.stop().success());
    // The shutdown's sweep moved c.bin's first content, which nothing
    // references any more, to the archive (archive style keeps it).
    let count = |dir: &Path| -> usize {
        std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .map(|e| std::fs::read_dir(e.path()).map_or(0, |f| f.count()))
                    .sum()
            })
            .unwrap_or(0)
    };
    let archived = data.path().join("archive/attachstore/objects");
    assert_eq!(count(&archived), 1, "one object archived");
    assert_eq!(
        count(&dest.join("attachstore/objects")),
        1,
        "a.bin's, in the backup"
    );
    assert_eq!(count(&data.path().join("attachstore/objects")), 2);

    damage(&data.path().join("a.fdb"), &how);
    let until = nsf::Timestamp(t).to_rfc3339();
    let restored = json(&ok(
        data.path(),
        &[
            "restore",
            dest.to_str().unwrap(),
            "--until",
            &until,
            "--to",
            "t.fdb",
        ],
        "",
    ));
    assert_eq!(restored[0]["path"], "t.fdb", "{restored}");
    let latest = json(&ok(data.path(), &["restore", dest.to_str().unwrap()], ""));
    assert_eq!(latest[0]["path"], "a.fdb", "{latest}");

    let before: Vec<&Written> = written.iter().filter(|w| w.acked <= t).collect();
    let after: Vec<&Written> = written.iter().filter(|w| w.sent > t).collect();
    assert!(!before.is_empty() && !after.is_empty());
    let everything: Vec<&Written> = written.iter().collect();
    let srv = Server::start(data.path());
    check(&srv, seed, "t.fdb", &before, &after);
    check(&srv, seed, "a.fdb", &everything, &[]);
    for (path, c) in [("t.fdb", file(2)), ("a.fdb", file(3))] {
        check_attachment(&srv, path, first, "a.bin", &file(1));
        check_attachment(&srv, path, x, "b.bin", &file(1));
        check_attachment(&srv, path, y, "c.bin", &c);
    }
    for r in [&restored, &latest] {
        assert_eq!(
            r[0]["attachment_objects_missing"],
            serde_json::json!([]),
            "{r}"
        );
    }
    // The restored database takes writes.
    let admin = srv.admin();
    let (db, _) = admin.open_database("a.fdb").unwrap();
    admin.create_document(db, r#"{"N": -1}"#).unwrap();
    assert!(srv.stop().success());
}

#[test]
fn drill_with_the_database_file_deleted() {
    drill(Damage::Delete, 0x5EED_0001);
}

#[test]
fn drill_with_a_page_of_the_database_corrupted() {
    drill(Damage::CorruptPage, 0x5EED_0002);
}
