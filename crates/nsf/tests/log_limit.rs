//! A transaction larger than the log accepts at all is refused at once
//! with its own error, changes nothing, and leaves the database and the
//! log as they were; it is not reported as a full log after a wait.

use nsf::{Engine, EngineConfig, Item, ItemValue, NsfError};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use storage::backend::MemBackend;
use translog::LogConfig;

fn text(name: &str, v: String) -> Item {
    Item {
        name: name.into(),
        value: ItemValue::Text(v),
    }
}

#[test]
fn a_transaction_larger_than_the_log_is_refused_at_once() {
    let mut cfg = EngineConfig::new("/data");
    cfg.buffer_pool_size = 4 << 20;
    cfg.background = false;
    let mut lc = LogConfig::new(Path::new("/data/translog"));
    lc.extent_size = 64 << 10;
    lc.max_size = 128 << 10;
    // Were the refusal a wait for space, the test would see "log full"
    // only after this long, and fail on its kind.
    lc.full_wait = Duration::from_secs(120);
    cfg.log = Some(lc);
    let engine = Engine::open(Arc::new(MemBackend::new()), cfg).unwrap().0;
    let db = engine.create_database("big.fdb", "").unwrap();
    let small = db.create(vec![text("Subject", "small".into())]).unwrap();
    let seq = db.last_seq();

    let e = db
        .create(vec![text("Body", "x".repeat(200 << 10))])
        .unwrap_err();
    let NsfError::TransactionTooLarge {
        size,
        limit,
        capacity,
    } = e
    else {
        panic!("expected TransactionTooLarge, got {e}");
    };
    assert!(size > limit && limit <= capacity, "{e}");
    let msg = e.to_string();
    assert!(msg.contains("raise translog.max_size"), "{msg}");
    assert!(
        msg.contains(&format!("transaction of {size} bytes")),
        "{msg}"
    );

    assert_eq!(db.last_seq(), seq, "nothing was written");
    db.check().unwrap();
    // The database and the log go on.
    db.get(small.unid).unwrap();
    db.create(vec![text("Subject", "after".into())]).unwrap();
    drop(db);
    engine.close().unwrap();
}
