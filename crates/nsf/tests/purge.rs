//! Purging deletion stubs by age on the engine's clock (a `ManualClock`):
//! only stubs older than the interval go, live documents never; the
//! trees stay consistent, the change sequence does not move, and the
//! purge is durable across a reopen.

use nsf::{Engine, Item, ItemValue, ManualClock, Seq, Timestamp};
use std::sync::Arc;
use std::time::Duration;
use storage::backend::MemBackend;

mod common;

const T0: Timestamp = Timestamp(1_700_000_000_000_000);
const DAY: i64 = 86_400_000_000;

fn text(v: &str) -> Vec<Item> {
    vec![Item {
        name: "Subject".into(),
        value: ItemValue::Text(v.into()),
    }]
}

#[test]
fn stubs_older_than_the_interval_are_purged_and_nothing_else() {
    let clock = Arc::new(ManualClock::new(T0));
    let mut cfg = common::config(true);
    cfg.clock = clock.clone();
    let backend = Arc::new(MemBackend::new());
    let (engine, _) = Engine::open(backend.clone(), cfg.clone()).unwrap();
    let db = engine.create_database("p.fdb", "").unwrap();
    let unids: Vec<_> = (0..4)
        .map(|i| db.create(text(&format!("doc {i}"))).unwrap().unid)
        .collect();
    db.delete(unids[0], None, false).unwrap();
    db.delete(unids[1], None, false).unwrap();
    clock.set(Timestamp(T0.0 + 50 * DAY));
    db.delete(unids[2], None, false).unwrap();
    let ninety = Duration::from_secs(90 * 86_400);

    assert_eq!(db.purge_stubs(ninety).unwrap(), 0, "no stub is 90 days old");
    clock.set(Timestamp(T0.0 + 91 * DAY));
    let last = db.last_seq();
    assert_eq!(db.purge_stubs(ninety).unwrap(), 2, "the two oldest stubs");
    assert_eq!(db.last_seq(), last, "a purge is not a change");
    assert!(db.get_with_revisions(unids[0]).unwrap().is_none());
    assert!(db.get_with_revisions(unids[1]).unwrap().is_none());
    let (stub, _) = db.get_with_revisions(unids[2]).unwrap().unwrap();
    assert!(stub.deleted, "a younger stub stays");
    assert!(!db.get(unids[3]).unwrap().deleted, "live documents stay");
    let changes: Vec<_> = db
        .modified_since(Seq(0), 100)
        .unwrap()
        .into_iter()
        .map(|n| n.oid.unid)
        .collect();
    assert_eq!(changes, [unids[3], unids[2]], "in change order");
    let report = db.check().unwrap();
    assert_eq!((report.notes, report.stubs), (1, 1), "{report:?}");

    // Durable: still gone after a reopen; a later purge finds the rest.
    drop(db);
    engine.close().unwrap();
    let (engine, _) = Engine::open(backend, cfg).unwrap();
    let db = engine.open_database("p.fdb").unwrap();
    assert!(db.get_with_revisions(unids[0]).unwrap().is_none());
    clock.set(Timestamp(T0.0 + 141 * DAY));
    assert_eq!(db.purge_stubs(ninety).unwrap(), 1);
    assert_eq!(db.check().unwrap().stubs, 0);
    drop(db);
    engine.close().unwrap();
}

/// A stub whose sequence time is no clock's (a CouchDB revision stored at
/// the door has one before 1979) is as old as the time it was stored:
/// its modified time. Purging by the sequence time alone removed every
/// such stub at the next start (design.md I63).
#[test]
fn a_stub_stored_with_an_ordering_time_is_aged_by_when_it_was_stored() {
    use nsf::{ForeignNote, OriginatorId, Unid};
    let clock = Arc::new(ManualClock::new(T0));
    let mut cfg = common::config(true);
    cfg.clock = clock.clone();
    let (engine, _) = Engine::open(Arc::new(MemBackend::new()), cfg).unwrap();
    let db = engine.create_database("o.fdb", "").unwrap();
    let stub = |n: u8, modified: Timestamp| ForeignNote {
        oid: OriginatorId {
            unid: Unid([n; 16]),
            seq_num: 2,
            seq_time: Timestamp(123_456),
        },
        created: modified,
        modified,
        deleted: true,
        items: Vec::new(),
        attachments: Vec::new(),
        revisions: Vec::new(),
    };
    db.put_foreign(stub(1, T0)).unwrap();
    db.put_foreign(stub(2, Timestamp(T0.0 - 100 * DAY)))
        .unwrap();
    let ninety = Duration::from_secs(90 * 86_400);
    assert_eq!(
        db.purge_stubs(ninety).unwrap(),
        1,
        "only the one stored 100 days ago"
    );
    assert!(db.get_with_revisions(Unid([1; 16])).unwrap().is_some());
    assert!(db.get_with_revisions(Unid([2; 16])).unwrap().is_none());
    clock.set(Timestamp(T0.0 + 91 * DAY));
    assert_eq!(
        db.purge_stubs(ninety).unwrap(),
        1,
        "and the other 91 days on"
    );
    drop(db);
    engine.close().unwrap();
}
