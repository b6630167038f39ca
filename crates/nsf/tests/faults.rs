//! Fault injection: failed fsyncs and writes are never ignored. The log or
//! the database goes read-only with a clear error, reads continue, and
//! nothing already acknowledged is lost (design.md I11).

use nsf::{DbState, Engine, Item, ItemValue, NsfError, ReasonKind, Unid};
use std::path::Path;
use std::sync::Arc;
use storage::backend::{FaultBackend, FaultKind, FaultOp, FaultRule, MemBackend};
use storage::Backend;

mod common;
use common::config;

fn doc(i: usize) -> Vec<Item> {
    vec![
        Item {
            name: "N".into(),
            value: ItemValue::Number(i as f64),
        },
        Item {
            name: "Body".into(),
            value: ItemValue::Text("x".repeat(i * 37 % 3000)),
        },
    ]
}

fn number(engine: &Engine, db: &str, unid: Unid) -> f64 {
    let n = engine.open_database(db).unwrap().get(unid).unwrap();
    match n.item("N").unwrap().value {
        ItemValue::Number(v) => v,
        _ => panic!("N is not a number"),
    }
}

#[test]
fn failed_log_fsync_poisons_the_log_and_loses_nothing_acknowledged() {
    let disk = MemBackend::new();
    let faulty = Arc::new(FaultBackend::new(Arc::new(disk.clone())));
    let (engine, _) = Engine::open(faulty.clone(), config(true)).unwrap();
    let db = engine.create_database("a.fdb", "").unwrap();
    let acked: Vec<Unid> = (0..20).map(|i| db.create(doc(i)).unwrap().unid).collect();
    faulty.add_rule(FaultRule {
        path_contains: Some("translog".into()),
        ..FaultRule::new(FaultOp::Sync, FaultKind::Eio)
    });
    let e = db.create(doc(99)).unwrap_err();
    assert!(matches!(e, NsfError::LogFailed(_)), "{e}");
    assert!(e.to_string().contains("writes are refused"), "{e}");
    faulty.clear_rules();
    let again = db.create(doc(100)).unwrap_err();
    assert!(
        matches!(again, NsfError::LogFailed(_)),
        "sticky even after the disk recovers: {again}"
    );
    assert_eq!(number(&engine, "a.fdb", acked[3]), 3.0, "reads continue");
    drop(engine);
    let (engine, _) = Engine::open(Arc::new(disk), config(true)).unwrap();
    for (i, u) in acked.iter().enumerate() {
        assert_eq!(number(&engine, "a.fdb", *u), i as f64);
    }
    engine.open_database("a.fdb").unwrap().check().unwrap();
    engine.close().unwrap();
}

#[test]
fn failed_database_write_fails_that_database_only() {
    let disk = MemBackend::new();
    let faulty = Arc::new(FaultBackend::new(Arc::new(disk.clone())));
    let (engine, _) = Engine::open(faulty.clone(), config(true)).unwrap();
    let a = engine.create_database("a.fdb", "").unwrap();
    let b = engine.create_database("b.fdb", "").unwrap();
    let ua: Vec<Unid> = (0..10).map(|i| a.create(doc(i)).unwrap().unid).collect();
    let ub: Vec<Unid> = (0..10).map(|i| b.create(doc(i)).unwrap().unid).collect();
    faulty.add_rule(FaultRule {
        path_contains: Some("a.fdb".into()),
        sticky: true,
        ..FaultRule::new(FaultOp::Write, FaultKind::Eio)
    });
    engine.checkpoint().unwrap();
    let e = a.create(doc(50)).unwrap_err();
    assert!(
        matches!(e, NsfError::DatabaseFailed { .. }) && e.to_string().contains("a.fdb"),
        "{e}"
    );
    match a.state() {
        DbState::Failed { reason, .. } => {
            assert_eq!(reason.kind, ReasonKind::Io);
            assert!(e.to_string().contains(&reason.text), "{e} / {reason}");
        }
        other => panic!("a failed write left the database {other:?}"),
    }
    assert_eq!(
        b.state(),
        DbState::Open {
            unclean_open: false
        }
    );
    assert_eq!(
        number(&engine, "a.fdb", ua[4]),
        4.0,
        "reads of the failed database continue"
    );
    b.create(doc(51)).unwrap();
    drop(engine);
    let (engine, _) = Engine::open(Arc::new(disk), config(true)).unwrap();
    for (i, (x, y)) in ua.iter().zip(&ub).enumerate() {
        assert_eq!(
            number(&engine, "a.fdb", *x),
            i as f64,
            "redone from the log"
        );
        assert_eq!(number(&engine, "b.fdb", *y), i as f64);
    }
    engine.open_database("a.fdb").unwrap().check().unwrap();
    engine.close().unwrap();
}

/// ENOSPC while streaming an attachment's content, to the database's
/// blob pages (under 4 KiB) or to the attachment store (larger), changes
/// nothing; the store then refuses to store more until restart (I11),
/// and its half-written file is gone.
#[test]
fn enospc_while_streaming_an_attachment_changes_nothing() {
    for (len, path, nth) in [(4000, "a.fdb", 1), (3 << 20, "attachstore/tmp", 2)] {
        let disk = MemBackend::new();
        let faulty = Arc::new(FaultBackend::new(Arc::new(disk.clone())));
        let (engine, _) = Engine::open(faulty.clone(), config(true)).unwrap();
        let db = engine.create_database("a.fdb", "").unwrap();
        let u = db.create(doc(1)).unwrap().unid;
        faulty.add_rule(FaultRule {
            path_contains: Some(path.into()),
            nth,
            ..FaultRule::new(FaultOp::Write, FaultKind::Enospc)
        });
        // Incompressible, so the store writes it in several steps.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let content: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let put = |db: &nsf::Database| {
            db.put_attachment(
                u,
                "big.bin",
                "application/octet-stream",
                &mut content.as_slice(),
            )
        };
        let e = put(&db).unwrap_err();
        assert!(e.to_string().contains("No space left"), "{e}");
        let n = db.get(u).unwrap();
        assert_eq!(n.attachments().count(), 0, "no half-attached file");
        assert_eq!(n.oid.seq_num, 1, "document unchanged");
        if len >= 4096 {
            let e = put(&db).unwrap_err();
            assert!(e.to_string().contains("restart"), "{e}");
            let tmp = disk.read_dir(Path::new("/data/attachstore/tmp")).unwrap();
            assert!(tmp.is_empty(), "{tmp:?}");
        }
        drop(engine);
        let (engine, _) = Engine::open(Arc::new(disk), config(true)).unwrap();
        let db = engine.open_database("a.fdb").unwrap();
        assert_eq!(db.get(u).unwrap().attachments().count(), 0);
        db.check().unwrap();
        if len >= 4096 {
            put(&db).unwrap();
        }
        engine.close().unwrap();
    }
}

#[test]
fn short_writes_are_completed() {
    let disk = MemBackend::new();
    let faulty = Arc::new(FaultBackend::new(Arc::new(disk.clone())));
    faulty.add_rule(FaultRule {
        sticky: true,
        ..FaultRule::new(FaultOp::Write, FaultKind::ShortWrite)
    });
    let (engine, _) = Engine::open(faulty.clone(), config(true)).unwrap();
    let db = engine.create_database("a.fdb", "").unwrap();
    let u: Vec<Unid> = (0..30).map(|i| db.create(doc(i)).unwrap().unid).collect();
    engine.close().unwrap();
    let (engine, _) = Engine::open(Arc::new(disk), config(true)).unwrap();
    for (i, x) in u.iter().enumerate() {
        assert_eq!(number(&engine, "a.fdb", *x), i as f64);
    }
    engine.close().unwrap();
}

#[test]
fn unlogged_mode_forces_pages_and_flags_an_unclean_shutdown() {
    let disk = MemBackend::new();
    let (engine, _) = Engine::open(Arc::new(disk.clone()), config(false)).unwrap();
    let db = engine.create_database("a.fdb", "").unwrap();
    let u = db.create(doc(5)).unwrap().unid;
    assert!(
        !disk.exists(Path::new("/data/translog")),
        "no log in unlogged mode"
    );
    drop(db);
    drop(engine);
    let (engine, _) = Engine::open(Arc::new(disk.clone()), config(false)).unwrap();
    let db = engine.open_database("a.fdb").unwrap();
    assert_eq!(
        number(&engine, "a.fdb", u),
        5.0,
        "the commit was forced to the file"
    );
    assert!(
        db.info().unwrap().needs_fixup,
        "crash in unlogged mode is flagged"
    );
    assert_eq!(db.state(), DbState::Open { unclean_open: true });
    drop(db);
    engine.close().unwrap();
    let (engine, _) = Engine::open(Arc::new(disk), config(false)).unwrap();
    let db = engine.open_database("a.fdb").unwrap();
    let _ = db.create(doc(6)).unwrap();
    drop(db);
    engine.close().unwrap();
}

/// A page read that fails (EIO) or comes back with a flipped bit is an
/// error naming the database (and, for corruption, the page), never a
/// wrong document or a panic; the file is intact, so the next read works.
#[test]
fn failed_and_corrupted_page_reads_are_errors_never_wrong_data() {
    let disk = MemBackend::new();
    let (engine, _) = Engine::open(Arc::new(disk.clone()), config(true)).unwrap();
    let db = engine.create_database("r.fdb", "").unwrap();
    let acked: Vec<Unid> = (0..200).map(|i| db.create(doc(i)).unwrap().unid).collect();
    drop(db);
    engine.close().unwrap();
    for kind in [FaultKind::Eio, FaultKind::Corrupt] {
        let faulty = Arc::new(FaultBackend::new(Arc::new(disk.clone())));
        let (engine, _) = Engine::open(faulty.clone(), config(true)).unwrap();
        let db = engine.open_database("r.fdb").unwrap();
        faulty.add_rule(FaultRule {
            path_contains: Some("r.fdb".into()),
            ..FaultRule::new(FaultOp::Read, kind)
        });
        let e = db.get(acked[150]).unwrap_err();
        assert!(e.to_string().contains("r.fdb"), "{kind:?}: {e}");
        if kind == FaultKind::Corrupt {
            assert!(e.to_string().contains("page"), "{kind:?}: {e}");
        }
        assert_eq!(faulty.injected(), 1);
        for (i, u) in acked.iter().enumerate() {
            assert_eq!(number(&engine, "r.fdb", *u), i as f64, "{kind:?}");
        }
        drop(db);
        engine.close().unwrap();
    }
}
