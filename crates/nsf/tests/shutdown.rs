//! Closing an engine that is still shared (`Engine::shutdown`): the
//! server closes it at shutdown whoever still holds it. The close is as
//! clean as `Engine::close` (checkpoint, nothing to redo; unlogged, no
//! fixup flag), and a holder's later writes and opens fail with
//! `EngineClosed` without touching a file, while its reads go on.

use nsf::{DbState, Engine, Item, ItemValue, NsfError};
use std::path::Path;
use std::sync::Arc;
use storage::backend::MemBackend;
use storage::Backend;

mod common;
use common::config;

fn doc(subject: &str) -> Vec<Item> {
    vec![Item {
        name: "Subject".into(),
        value: ItemValue::Text(subject.into()),
    }]
}

fn subject(engine: &Engine, unid: nsf::Unid) -> String {
    let note = engine.open_database("a.fdb").unwrap().get(unid).unwrap();
    match &note.item("Subject").unwrap().value {
        ItemValue::Text(t) => t.clone(),
        _ => panic!("Subject is not text"),
    }
}

fn file_len(disk: &MemBackend, path: &str) -> u64 {
    disk.open(Path::new(path), storage::backend::OpenMode::Existing)
        .unwrap()
        .len()
        .unwrap()
}

fn assert_closed<T>(r: nsf::NsfResult<T>, what: &str) {
    match r {
        Err(NsfError::EngineClosed) => {}
        Err(e) => panic!("{what} after shutdown: {e}"),
        Ok(_) => panic!("{what} after shutdown succeeded"),
    }
}

#[test]
fn a_shared_logged_engine_shuts_down_with_a_checkpoint_and_refuses_later_writes() {
    let disk = MemBackend::new();
    let (engine, _) = Engine::open(Arc::new(disk.clone()), config(true)).unwrap();
    let engine = Arc::new(engine);
    let db = engine.create_database("a.fdb", "").unwrap();
    let unids: Vec<_> = (0..50)
        .map(|i| db.create(doc(&format!("doc {i}"))).unwrap().unid)
        .collect();
    // A job that still holds the engine and the database.
    let held = (engine.clone(), db.clone());

    engine.shutdown().unwrap();
    assert!(engine.is_closed());
    assert_eq!(
        held.1.state(),
        DbState::Closing {
            unclean_open: false
        }
    );
    let before = file_len(&disk, "/data/a.fdb");
    assert_closed(held.1.create(doc("late")), "a create");
    assert_closed(
        held.1
            .put_attachment(unids[0], "a.bin", "", &mut &[7u8; 100_000][..]),
        "an attachment",
    );
    assert_closed(held.0.open_database("a.fdb"), "an open");
    assert_closed(held.0.create_database("b.fdb", ""), "a create database");
    assert_closed(held.0.checkpoint(), "a checkpoint");
    assert_eq!(
        file_len(&disk, "/data/a.fdb"),
        before,
        "a write after shutdown touched the file"
    );
    // Reads of what the holder has open go on.
    assert!(held.1.get(unids[7]).is_ok());
    engine.shutdown().unwrap();

    // Reopened while the job still holds the old engine: recovery starts
    // at the shutdown's checkpoint and has nothing to redo.
    let (engine, report) = Engine::open(Arc::new(disk), config(true)).unwrap();
    let report = report.unwrap();
    assert_eq!(report.committed_txns_redone, 0, "{report:?}");
    assert_eq!(report.pages_redone, 0, "{report:?}");
    for (i, u) in unids.iter().enumerate() {
        assert_eq!(subject(&engine, *u), format!("doc {i}"));
    }
    drop(held);
    engine.close().unwrap();
}

#[test]
fn a_shared_unlogged_engine_shuts_down_clean_and_refuses_later_writes() {
    let disk = MemBackend::new();
    let (engine, _) = Engine::open(Arc::new(disk.clone()), config(false)).unwrap();
    let engine = Arc::new(engine);
    let db = engine.create_database("a.fdb", "").unwrap();
    let unid = db.create(doc("kept")).unwrap().unid;
    let held = db.clone();

    engine.shutdown().unwrap();
    let before = file_len(&disk, "/data/a.fdb");
    assert_closed(held.create(doc("late")), "a create");
    assert_closed(held.delete(unid, None, false), "a delete");
    assert_eq!(file_len(&disk, "/data/a.fdb"), before);

    let (engine, _) = Engine::open(Arc::new(disk), config(false)).unwrap();
    let db = engine.open_database("a.fdb").unwrap();
    assert!(
        !db.info().unwrap().needs_fixup,
        "the shutdown was clean, yet the database needs fixup"
    );
    assert_eq!(subject(&engine, unid), "kept");
    drop((db, held));
    engine.close().unwrap();
}

/// Close hooks still write at shutdown, after the checkpointer stopped:
/// with many databases open their commits outgrow the log, and shutdown
/// checkpoints when the log asks for it instead of letting every later
/// hook wait for room and fail. Every hook's write survives the restart.
#[test]
fn close_hooks_that_outgrow_the_log_all_land() {
    const DBS: usize = 300;
    let disk = MemBackend::new();
    let mut cfg = config(true);
    if let Some(lc) = cfg.log.as_mut() {
        lc.full_wait = std::time::Duration::from_millis(50);
    }
    let (engine, _) = Engine::open(Arc::new(disk.clone()), cfg.clone()).unwrap();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut body = |n: usize| -> String {
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(b'a' + (x % 26) as u8)
            })
            .collect()
    };
    let mut expected = Vec::new();
    for i in 0..DBS {
        let path = format!("d{i}.fdb");
        let db = engine.create_database(&path, "").unwrap();
        let unid = db.create(doc("before")).unwrap().unid;
        let text = body(20_000);
        let written = text.clone();
        db.at_close(Box::new(move |db: &nsf::Database| {
            db.update(
                unid,
                vec![nsf::ItemUpdate::Set(Item {
                    name: "Subject".into(),
                    value: ItemValue::Text(written),
                })],
                None,
                false,
            )?;
            Ok(())
        }));
        expected.push((path, unid, text));
    }
    let capacity = 4u64 << 20;
    assert!(
        (DBS * 20_000) as u64 > capacity,
        "the hooks must outgrow the log"
    );
    engine.shutdown().unwrap();
    drop(engine);

    let (engine, _) = Engine::open(Arc::new(disk), cfg).unwrap();
    for (path, unid, text) in &expected {
        let note = engine.open_database(path).unwrap().get(*unid).unwrap();
        let landed = note.item("Subject").map(|i| &i.value) == Some(&ItemValue::Text(text.clone()));
        assert!(landed, "{path}: the close hook's write is missing");
    }
}
