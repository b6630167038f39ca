//! Engine statistics the server reports in `show stats`: writer-lock
//! waits across databases and the open-database count.

use nsf::{Engine, EngineConfig, Item, ItemValue};
use std::path::Path;
use std::sync::Arc;
use storage::backend::MemBackend;
use translog::LogConfig;

fn open() -> Engine {
    let mut cfg = EngineConfig::new("/data");
    cfg.buffer_pool_size = 4 << 20;
    cfg.background = false;
    let mut lc = LogConfig::new(Path::new("/data/translog"));
    lc.extent_size = 256 << 10;
    lc.max_size = 4 << 20;
    cfg.log = Some(lc);
    Engine::open(Arc::new(MemBackend::new()), cfg).unwrap().0
}

fn text(name: &str, v: &str) -> Item {
    Item {
        name: name.into(),
        value: ItemValue::Text(v.into()),
    }
}

#[test]
fn lock_waits_are_counted_engine_wide() {
    let engine = open();
    let a = engine.create_database("a.fdb", "").unwrap();
    let b = engine.create_database("b.fdb", "").unwrap();
    assert_eq!(engine.open_databases(), 2);
    for i in 0..10 {
        a.create(vec![text("N", &i.to_string())]).unwrap();
    }
    b.create(vec![text("N", "b")]).unwrap();
    let s = engine.lock_stats();
    assert_eq!(
        (s.writes, s.waits, s.wait_micros),
        (11, 0, 0),
        "one writer never waits"
    );
    std::thread::scope(|s| {
        for t in 0..8 {
            let a = a.clone();
            s.spawn(move || {
                for i in 0..100 {
                    a.create(vec![text("N", &format!("{t}/{i}"))]).unwrap();
                }
            });
        }
    });
    let s = engine.lock_stats();
    assert_eq!(s.writes, 811);
    assert!(s.waits > 0 && s.waits <= 800, "{s:?}");
    assert!(s.wait_micros > 0, "{s:?}");
    drop((a, b));
    engine.close().unwrap();
}
