//! A server killed (SIGKILL) while `folio backup --server` copies its
//! databases under writes, or just after it finished, (design.md §3.6, I35, I49), end to end against
//! the real binary: after restart every acknowledged document and
//! attachment is there; the interrupted backup either restores all of it
//! or `folio restore` refuses it in one line naming the missing manifest;
//! and a rerun of the backup, into the same directory or a fresh one,
//! restores everything.

mod common;

use common::{ok, users_dir, Server, ADMIN_PW};
use protocol::{DocRef, Unid};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const DBS: [&str; 2] = ["a.fdb", "b.fdb"];

/// A document a client had acknowledged, and its attachment if that was
/// acknowledged too.
#[derive(Clone, Debug)]
struct Acked {
    db: &'static str,
    unid: Unid,
    n: u64,
    file: Option<Vec<u8>>,
}

fn doc(n: u64) -> String {
    format!(r#"{{"N": {n}, "Body": "{}"}}"#, "y".repeat(3000))
}

/// Attachment content: 64 KiB, incompressible, distinct per `n` modulo 8
/// (so the store deduplicates some).
fn file(n: u64) -> Vec<u8> {
    let mut x = (n % 8 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..65_536)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Writes document `n` (with an attachment every 4th) to `path`; `None`
/// once the server is gone.
fn write_one(c: &client::blocking::Client, path: &'static str, n: u64) -> Option<Acked> {
    let (db, _) = c.open_database(path).ok()?;
    let unid = c.create_document(db, &doc(n)).ok()?.unid;
    let mut acked = Acked {
        db: path,
        unid,
        n,
        file: None,
    };
    if n.is_multiple_of(4) {
        let f = file(n);
        if c.put_attachment(db, unid, "f.bin", "application/octet-stream", None, &f[..])
            .is_ok()
        {
            acked.file = Some(f);
        }
    }
    Some(acked)
}

/// Every document in `acked` of database `db` is in `path` (the live
/// database or a restored copy of it), with its attachment.
fn check(srv: &Server, acked: &[Acked], db: &str, path: &str, what: &str) {
    let c = srv.admin();
    let (h, _) = c.open_database(path).unwrap();
    for a in acked.iter().filter(|a| a.db == db) {
        let d = c
            .read_document(h, DocRef::Unid(a.unid))
            .unwrap_or_else(|e| panic!("{what}: {path} lost N={} of {db}: {e}", a.n));
        let v: serde_json::Value = serde_json::from_str(&d.json).unwrap();
        assert_eq!(v["N"].as_f64(), Some(a.n as f64), "{what}: {path}");
        if let Some(f) = &a.file {
            let mut got = Vec::new();
            c.get_attachment(h, a.unid, "f.bin", &mut got)
                .unwrap_or_else(|e| panic!("{what}: {path} N={}: attachment: {e}", a.n));
            assert!(&got == f, "{what}: {path} N={}: attachment differs", a.n);
        }
    }
}

/// `folio backup DEST --server …` as a child process, run to its end.
fn backup_over(srv: &Server, dest: &Path) -> std::thread::JoinHandle<Output> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_folio"));
    cmd.args(["--server", &srv.native, "--user", "admin", "backup"])
        .arg(dest)
        .env("FOLIO_PASSWORD", ADMIN_PW)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    std::thread::spawn(move || cmd.output().unwrap())
}

/// Restores each database of the backup `dest` beside the live one
/// (embedded, server stopped): the restore's outputs, in `DBS` order.
fn restore_beside(data: &Path, dest: &Path, tag: &str) -> Vec<(Output, String)> {
    DBS.iter()
        .map(|db| {
            let to = format!("{tag}-{db}");
            let args = ["restore", dest.to_str().unwrap(), "--db", db, "--to", &to];
            (common::folio(data, &args, ""), to)
        })
        .collect()
}

/// Restores `dest` (which must be whole) and checks the copies hold
/// everything acknowledged.
fn restore_and_check(data: &Path, dest: &Path, tag: &str, acked: &[Acked]) {
    let restored = restore_beside(data, dest, tag);
    for (o, _) in &restored {
        assert!(
            o.status.success(),
            "{tag}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let srv = Server::start(data);
    for (db, (_, to)) in DBS.iter().zip(&restored) {
        check(&srv, acked, db, to, tag);
    }
    assert!(srv.stop().success());
}

#[test]
fn a_server_killed_during_an_online_backup_loses_nothing_and_never_restores_less() {
    let data = users_dir(&[]);
    std::fs::write(
        data.path().join("folio.toml"),
        "[translog]\nstyle = \"archive\"\nextent_size = 262144\nmax_size = 134217728\n",
    )
    .unwrap();
    let backups = tempfile::tempdir().unwrap();
    let mut acked = Vec::new();
    {
        let srv = Server::start(data.path());
        let admin = srv.admin();
        for db in DBS {
            admin.create_database(db, "").unwrap();
            acked.extend((0..300).map(|n| write_one(&admin, db, n).unwrap()));
        }
        assert!(srv.stop().success());
    }
    for round in 0..4u64 {
        let tag = format!("round{round}");
        let srv = Server::start(data.path());
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = DBS
            .into_iter()
            .map(|db| {
                let (c, stop) = (srv.admin(), stop.clone());
                std::thread::spawn(move || {
                    let mut done = Vec::new();
                    for n in (1_000 * (round + 1))..(1_000 * (round + 2)) {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        match write_one(&c, db, n) {
                            Some(a) => done.push(a),
                            None => break,
                        }
                    }
                    done
                })
            })
            .collect();
        let dest = backups.path().join(&tag);
        let backup = backup_over(&srv, &dest);
        let reported = if round < 3 {
            // Somewhere in the backup (or after it): the moment does not
            // matter, the outcome must be one of the two allowed.
            std::thread::sleep(Duration::from_millis(15 * (round + 1)));
            srv.kill();
            backup.join().unwrap().status.success()
        } else {
            // Killed under writes just after the backup finished.
            let done = backup.join().unwrap().status.success();
            srv.kill();
            assert!(done, "{tag}: the backup failed");
            done
        };
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            acked.extend(w.join().unwrap());
        }

        let srv = Server::start(data.path());
        for db in DBS {
            check(&srv, &acked, db, db, &tag);
        }
        assert!(srv.stop().success());

        let restored = restore_beside(data.path(), &dest, &tag);
        let whole = restored.iter().all(|(o, _)| o.status.success());
        eprintln!("{tag}: backup reported done: {reported}; restorable: {whole}");
        if whole {
            let srv = Server::start(data.path());
            for (db, (_, to)) in DBS.iter().zip(&restored) {
                check(&srv, &acked, db, to, &tag);
            }
            assert!(srv.stop().success());
        } else {
            assert!(!reported, "{tag}: a backup reported done is refused");
            for (o, _) in &restored {
                let err = String::from_utf8_lossy(&o.stderr);
                assert!(!o.status.success(), "{tag}: half a backup restored");
                assert_eq!(err.trim_end().lines().count(), 1, "{tag}: {err}");
                assert!(err.contains("manifest.json"), "{tag}: {err}");
            }
            // Rerun into the same directory, over the partial copy.
            let srv = Server::start(data.path());
            let o = srv.cli(&["backup", dest.to_str().unwrap()], "");
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            assert!(srv.stop().success());
            restore_and_check(data.path(), &dest, &format!("{tag}-rerun"), &acked);
        }
        // A rerun into a fresh directory restores everything too.
        let fresh = backups.path().join(format!("{tag}-fresh"));
        let srv = Server::start(data.path());
        let o = srv.cli(&["backup", fresh.to_str().unwrap()], "");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(srv.stop().success());
        restore_and_check(data.path(), &fresh, &format!("{tag}-fresh"), &acked);
    }
    // The live databases still pass their checks.
    for db in DBS {
        ok(data.path(), &["db", "check", db], "");
    }
}
