//! Compact keeps every view and folder (design.md §2.10): a logged index's
//! trees are moved like any tree, an unlogged one with pages in the tail
//! is dropped and rebuilt on next use, a folder's membership (always
//! logged) is moved; in place and by copy.

use nsf::{Engine, EngineConfig, Item, ItemValue, Unid};
use std::path::Path;
use std::sync::Arc;
use storage::backend::MemBackend;
use translog::LogConfig;
use views::{ColumnDef, Row, Start, ViewConfig, ViewDef, Views};

const DB: &str = "v.fdb";
const DOCS: usize = 600;

fn open() -> (Engine, Views) {
    let mut cfg = EngineConfig::new("/data");
    cfg.buffer_pool_size = 4 << 20;
    cfg.background = false;
    let mut lc = LogConfig::new(Path::new("/data/translog"));
    lc.extent_size = 1 << 20;
    lc.max_size = 64 << 20;
    cfg.log = Some(lc);
    let (engine, _) = Engine::open(Arc::new(MemBackend::new()), cfg).unwrap();
    let vc = ViewConfig {
        rebuild_dir: "/tmp-sort".into(),
        rebuild_memory: 1 << 20,
    };
    let views = Views::new(engine.backend(), vc);
    (engine, views)
}

fn text(name: &str, v: &str) -> Item {
    Item {
        name: name.into(),
        value: ItemValue::Text(v.into()),
    }
}

fn def(name: &str, folder: bool, logged: bool) -> ViewDef {
    let cols = vec![ColumnDef::parse("K=Key:asc").unwrap()];
    let mut d = if folder {
        ViewDef::folder(name, cols)
    } else {
        ViewDef::view(name, "SELECT @All", cols)
    };
    d.logged = logged;
    d
}

fn keys(views: &Views, db: &Arc<nsf::Database>, name: &str) -> Vec<String> {
    let coll = views.open(db, name).unwrap();
    coll.read(&Start::Position(0), usize::MAX, false, false)
        .unwrap()
        .iter()
        .filter_map(|r| match r {
            Row::Entry { columns, .. } => match &columns[0] {
                views::Value::Text(l) => l.first().cloned(),
                _ => None,
            },
            Row::Category { .. } => None,
        })
        .collect()
}

#[test]
fn views_and_folders_survive_both_styles() {
    let (engine, views) = open();
    let db = engine.create_database(DB, "").unwrap();
    let unids: Vec<Unid> = (0..DOCS)
        .map(|i| {
            let key = format!("k{i:04}");
            db.create(vec![text("Key", &key), text("Pad", &"x".repeat(2500))])
                .unwrap()
                .unid
        })
        .collect();
    views.create(&db, def("logged", false, true)).unwrap();
    views.create(&db, def("unlogged", false, false)).unwrap();
    views.create(&db, def("folder", true, false)).unwrap();
    let even: Vec<Unid> = unids.iter().step_by(2).copied().collect();
    views.folder_add(&db, "folder", &even).unwrap();
    for name in ["logged", "unlogged"] {
        assert_eq!(keys(&views, &db, name).len(), DOCS);
    }
    for (i, u) in unids.iter().enumerate() {
        if i % 4 == 3 {
            db.delete(*u, None, false).unwrap();
        }
    }
    let want: Vec<String> = (0..DOCS)
        .filter(|i| i % 4 != 3)
        .map(|i| format!("k{i:04}"))
        .collect();
    let want_folder: Vec<String> = (0..DOCS).step_by(2).map(|i| format!("k{i:04}")).collect();
    let check = |db: &Arc<nsf::Database>| {
        assert_eq!(keys(&views, db, "logged"), want);
        assert_eq!(keys(&views, db, "unlogged"), want);
        assert_eq!(keys(&views, db, "folder"), want_folder);
        assert_eq!(db.check().unwrap().leaked_pages, 0);
    };
    check(&db);

    let r = engine.compact(DB, false, false).unwrap();
    assert!(r.truncated && r.pages_moved > 0, "{r:?}");
    check(&db);

    drop(db);
    let r = engine.compact(DB, true, false).unwrap();
    assert_ne!(r.instance_after, r.instance_before);
    let db = engine.open_database(DB).unwrap();
    check(&db);
}
