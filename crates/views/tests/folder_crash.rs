//! A folder whose unlogged index a crash left behind is changed before
//! anyone reads it (as the mail router adds to an Inbox right after a
//! restart): the index must be rebuilt from the logged membership first,
//! not changed in place over pages the crash lost (I14).

mod common;

use nsf::{Engine, Item, ItemValue, Unid};
use std::sync::Arc;
use storage::backend::{CrashBackend, CrashMode};
use storage::Backend;
use views::{ColumnDef, Row, Start, ViewDef, Views};

fn open(backend: Arc<dyn Backend>) -> (Engine, Views) {
    common::open_logged(backend, |cfg| cfg.background = false)
}

fn doc(engine: &Engine, key: &str) -> Unid {
    let db = engine.open_database("f.fdb").unwrap();
    db.create(vec![Item {
        name: "Key".into(),
        value: ItemValue::Text(key.into()),
    }])
    .unwrap()
    .unid
}

fn members(views: &Views, engine: &Engine) -> Vec<Unid> {
    let db = engine.open_database("f.fdb").unwrap();
    let c = views.open(&db, "F").unwrap();
    let mut out: Vec<Unid> = c
        .read(&Start::Position(0), 100, false, false)
        .unwrap()
        .into_iter()
        .filter_map(|r| match r {
            Row::Entry { unid, .. } => Some(unid),
            _ => None,
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_folder_left_by_a_crash_is_rebuilt_before_it_is_changed() {
    let disk = Arc::new(CrashBackend::new());
    let (engine, views) = open(disk.clone());
    let db = engine.create_database("f.fdb", "").unwrap();
    let mut def = ViewDef::folder("F", vec![ColumnDef::parse("K=Key:asc").unwrap()]);
    def.logged = false;
    views.create(&db, def).unwrap();
    let a = doc(&engine, "a");
    let b = doc(&engine, "b");
    let c = doc(&engine, "c");
    views.folder_add(&db, "F", &[a, b]).unwrap();
    assert_eq!(members(&views, &engine).len(), 2);
    // Power cut: the unlogged index pages written since the last
    // checkpoint are lost; the membership is logged.
    let image = disk.crash_now(CrashMode::DropUnsynced);
    drop((db, views, engine));

    let (engine, views) = open(Arc::new(image));
    let db = engine.open_database("f.fdb").unwrap();
    views.folder_add(&db, "F", &[c]).unwrap();
    views.folder_remove(&db, "F", &[a]).unwrap();
    let mut want = vec![b, c];
    want.sort();
    assert_eq!(members(&views, &engine), want);
    drop(db);
    engine.close().unwrap();
}
