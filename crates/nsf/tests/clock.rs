//! Identity times come from the engine's clock (design.md I22): notes
//! written under a `ManualClock` carry exactly the times it was set to,
//! and a clock set back never gives an edit a sequence time earlier than
//! the version it follows.

use nsf::{Engine, Item, ItemUpdate, ItemValue, ManualClock, Timestamp};
use std::sync::Arc;
use std::time::Duration;
use storage::backend::MemBackend;

mod common;

fn text(name: &str, v: &str) -> Item {
    Item {
        name: name.into(),
        value: ItemValue::Text(v.into()),
    }
}

const T1: Timestamp = Timestamp(1_700_000_000_000_000);
const T2: Timestamp = Timestamp(1_800_000_000_000_000);

#[test]
fn notes_carry_exactly_the_times_the_clock_was_set_to() {
    for logged in [true, false] {
        let clock = Arc::new(ManualClock::new(T1));
        let mut cfg = common::config(logged);
        cfg.clock = clock.clone();
        let (engine, _) = Engine::open(Arc::new(MemBackend::new()), cfg).unwrap();
        let db = engine.create_database("c.fdb", "").unwrap();
        assert_eq!(db.info().unwrap().created, T1);

        let a = db.create(vec![text("Subject", "a")]).unwrap();
        clock.set(T2);
        let b = db.create(vec![text("Subject", "b")]).unwrap();
        let (a, b) = (db.get(a.unid).unwrap(), db.get(b.unid).unwrap());
        for (note, t) in [(&a, T1), (&b, T2)] {
            assert_eq!(note.oid.seq_time, t, "logged: {logged}");
            assert_eq!(
                (note.created, note.modified, note.added),
                (t, t, t),
                "logged: {logged}"
            );
        }

        clock.advance(Duration::from_secs(60));
        let t3 = Timestamp(T2.0 + 60_000_000);
        let u = db
            .update(
                a.oid.unid,
                vec![ItemUpdate::Set(text("Subject", "a2"))],
                None,
                false,
            )
            .unwrap();
        let a2 = db.get(u.unid).unwrap();
        assert_eq!((a2.oid.seq_num, a2.oid.seq_time, a2.modified), (2, t3, t3));
        assert_eq!(
            (a2.created, a2.added),
            (T1, T1),
            "an edit keeps its creation"
        );

        drop(db);
        engine.close().unwrap();
    }
}

#[test]
fn a_clock_set_back_never_makes_a_sequence_time_earlier() {
    let clock = Arc::new(ManualClock::new(T2));
    let mut cfg = common::config(true);
    cfg.clock = clock.clone();
    let (engine, _) = Engine::open(Arc::new(MemBackend::new()), cfg).unwrap();
    let db = engine.create_database("back.fdb", "").unwrap();
    let unid = db.create(vec![text("Subject", "v1")]).unwrap().unid;
    clock.set(T1);
    db.update(
        unid,
        vec![ItemUpdate::Set(text("Subject", "v2"))],
        None,
        false,
    )
    .unwrap();
    let n = db.get(unid).unwrap();
    assert_eq!(n.oid.seq_num, 2);
    assert_eq!(n.oid.seq_time, T2, "not the clock's earlier time");
    db.delete(unid, None, false).unwrap();
    let stub = db.get_any(unid).unwrap();
    assert_eq!((stub.oid.seq_num, stub.oid.seq_time), (3, T2));
    drop(db);
    engine.close().unwrap();
}
