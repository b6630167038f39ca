//! The document store against a `BTreeMap` model, with random clean
//! reopenings and crashes (the engine dropped without closing, as a kill
//! would leave it), checking documents, stubs, change order and the
//! database's own consistency check after each.

use nsf::{Engine, EngineConfig, Item, ItemUpdate, ItemValue, Seq, Unid};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use storage::backend::MemBackend;
use translog::LogConfig;

#[derive(Debug, Clone)]
enum Op {
    Create(u8, usize),
    Update(usize, u8, usize),
    Delete(usize),
    Reopen,
    Crash,
    Checkpoint,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<u8>(), 0usize..20_000).prop_map(|(t, n)| Op::Create(t, n)),
        4 => (any::<usize>(), any::<u8>(), 0usize..20_000).prop_map(|(i, t, n)| Op::Update(i, t, n)),
        2 => any::<usize>().prop_map(Op::Delete),
        1 => Just(Op::Reopen),
        1 => Just(Op::Crash),
        1 => Just(Op::Checkpoint),
    ]
}

fn items(tag: u8, n: usize) -> Vec<Item> {
    vec![
        Item {
            name: "Tag".into(),
            value: ItemValue::Number(f64::from(tag)),
        },
        Item {
            name: "Body".into(),
            value: ItemValue::Text("b".repeat(n)),
        },
        Item {
            name: "List".into(),
            value: ItemValue::TextList(vec![tag.to_string(); (tag % 5) as usize]),
        },
    ]
}

fn config() -> EngineConfig {
    let mut cfg = EngineConfig::new("/data");
    cfg.buffer_pool_size = 1 << 20;
    cfg.background = false;
    let mut lc = LogConfig::new(Path::new("/data/translog"));
    lc.extent_size = 128 << 10;
    lc.max_size = 8 << 20;
    cfg.log = Some(lc);
    cfg
}

fn verify(engine: &Engine, model: &BTreeMap<Unid, Option<Vec<Item>>>) {
    let db = engine.open_database("m.fdb").unwrap();
    db.check().unwrap();
    for (u, want) in model {
        match want {
            Some(items) => assert_eq!(&db.get(*u).unwrap().items, items),
            None => assert!(db.get_any(*u).unwrap().deleted),
        }
    }
    let mut live = 0;
    db.for_each_note(|n| {
        assert!(matches!(model.get(&n.oid.unid), Some(Some(_))));
        live += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!(live, model.values().filter(|v| v.is_some()).count());
    let changes = db.modified_since(Seq(0), usize::MAX).unwrap();
    assert_eq!(changes.len(), model.len());
    assert!(changes
        .windows(2)
        .all(|w| w[0].change_seq < w[1].change_seq));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn store_matches_model_across_reopens_and_crashes(ops in proptest::collection::vec(op(), 1..120)) {
        let disk = MemBackend::new();
        let (mut engine, _) = Engine::open(Arc::new(disk.clone()), config()).unwrap();
        engine.create_database("m.fdb", "model").unwrap();
        let mut model: BTreeMap<Unid, Option<Vec<Item>>> = BTreeMap::new();
        for op in ops {
            let live: Vec<Unid> = model.iter().filter(|(_, v)| v.is_some()).map(|(u, _)| *u).collect();
            match op {
                Op::Create(t, n) => {
                    let u = engine.open_database("m.fdb").unwrap().create(items(t, n)).unwrap().unid;
                    model.insert(u, Some(items(t, n)));
                }
                Op::Update(i, t, n) if !live.is_empty() => {
                    let u = live[i % live.len()];
                    let upd = items(t, n).into_iter().map(ItemUpdate::Set).collect();
                    engine.open_database("m.fdb").unwrap().update(u, upd, None, false).unwrap();
                    model.insert(u, Some(items(t, n)));
                }
                Op::Delete(i) if !live.is_empty() => {
                    let u = live[i % live.len()];
                    engine.open_database("m.fdb").unwrap().delete(u, None, false).unwrap();
                    model.insert(u, None);
                }
                Op::Reopen => {
                    engine.close().unwrap();
                    engine = Engine::open(Arc::new(disk.clone()), config()).unwrap().0;
                    verify(&engine, &model);
                }
                Op::Crash => {
                    drop(engine);
                    engine = Engine::open(Arc::new(disk.clone()), config()).unwrap().0;
                    verify(&engine, &model);
                }
                Op::Checkpoint => {
                    engine.checkpoint().unwrap();
                }
                _ => {}
            }
        }
        verify(&engine, &model);
        engine.close().unwrap();
    }
}

#[test]
fn stale_update_is_a_save_conflict_unless_forced() {
    let (engine, _) = Engine::open(Arc::new(MemBackend::new()), config()).unwrap();
    let db = engine.create_database("c.fdb", "").unwrap();
    let m = db.create(items(1, 10)).unwrap();
    let set = |t| {
        items(t, 5)
            .into_iter()
            .map(ItemUpdate::Set)
            .collect::<Vec<_>>()
    };
    let m2 = db.update(m.unid, set(2), Some(m.seq_num), false).unwrap();
    assert_eq!(m2.seq_num, 2);
    let e = db
        .update(m.unid, set(3), Some(m.seq_num), false)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("save conflict") && e.contains("sequence 1") && e.contains("sequence 2"),
        "{e}"
    );
    assert_eq!(
        db.get(m.unid).unwrap().items,
        items(2, 5),
        "a conflict changes nothing"
    );
    db.update(m.unid, set(3), Some(m.seq_num), true).unwrap();
    assert_eq!(db.get(m.unid).unwrap().items, items(3, 5));
    let e = db
        .create(vec![Item {
            name: "$bad".into(),
            value: ItemValue::Text("x".into()),
        }])
        .unwrap_err();
    assert!(e.to_string().contains("$bad"), "{e}");
    assert_eq!(
        db.info().unwrap().note_count,
        1,
        "a rejected create changes nothing"
    );
    engine.close().unwrap();
}

#[test]
fn concurrent_writers_on_one_database_each_get_their_own_result() {
    let disk = MemBackend::new();
    let (engine, _) = Engine::open(Arc::new(disk.clone()), config()).unwrap();
    let db = engine.create_database("c.fdb", "").unwrap();
    let per_thread: Vec<Vec<(Unid, u8)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..16u8)
            .map(|t| {
                let db = db.clone();
                s.spawn(move || {
                    let mut mine = Vec::new();
                    for i in 0..60u8 {
                        let m = db.create(items(t, usize::from(i) * 10)).unwrap();
                        assert_eq!(
                            db.get(m.unid).unwrap().items,
                            items(t, usize::from(i) * 10),
                            "a writer reads its own create"
                        );
                        let upd = items(t.wrapping_add(100), 7)
                            .into_iter()
                            .map(ItemUpdate::Set)
                            .collect();
                        let m2 = db.update(m.unid, upd, Some(m.seq_num), false).unwrap();
                        assert_eq!((m2.unid, m2.seq_num), (m.unid, 2));
                        mine.push((m.unid, t));
                    }
                    mine
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    drop(db);
    drop(engine);
    let (engine, _) = Engine::open(Arc::new(disk), config()).unwrap();
    let db = engine.open_database("c.fdb").unwrap();
    assert_eq!(db.check().unwrap().notes, 16 * 60);
    for (u, t) in per_thread.into_iter().flatten() {
        assert_eq!(db.get(u).unwrap().items, items(t.wrapping_add(100), 7));
    }
    engine.close().unwrap();
}
