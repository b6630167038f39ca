//! Deleting views and folders: the catalog entry, the index trees and the
//! design note go in one logged transaction, the pages come back to the
//! free list, the name can be defined again with a fresh index, an
//! ordinary document delete refuses the design note, and a power cut at
//! any sync point during the delete leaves the view whole or gone (gone
//! once the delete has returned).

use nsf::{Database, Engine, EngineConfig, Item, ItemValue, Note, NsfError, Seq};
use std::path::Path;
use std::sync::Arc;
use storage::backend::{CrashBackend, CrashMode, MemBackend};
use storage::Backend;
use translog::LogConfig;
use views::{ColumnDef, Row, Start, ViewConfig, ViewDef, ViewError, Views};

const DB: &str = "d.fdb";
const DOCS: usize = 600;

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

fn open(disk: Arc<dyn Backend>) -> (Engine, Views) {
    let (engine, _) = Engine::open(disk, config()).unwrap();
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

/// A view over every document, or a folder, sorted by `Key`.
fn design(name: &str, folder: bool, logged: bool) -> ViewDef {
    let cols = vec![ColumnDef::parse("K=Key:asc").unwrap()];
    let mut d = if folder {
        ViewDef::folder(name, cols)
    } else {
        ViewDef::view(name, "SELECT @All", cols)
    };
    d.logged = logged;
    d
}

/// A database of `DOCS` documents with keys k0000…, the view (or folder,
/// holding every document) built.
fn populated(engine: &Engine, views: &Views, def: &ViewDef) -> Arc<Database> {
    let db = engine.create_database(DB, "").unwrap();
    let mut unids = Vec::new();
    for i in 0..DOCS {
        let key = format!("k{i:04}");
        unids.push(db.create(vec![text("Key", &key)]).unwrap().unid);
    }
    views.create(&db, def.clone()).unwrap();
    if def.kind == views::Kind::Folder {
        views.folder_add(&db, &def.name, &unids).unwrap();
    }
    assert_eq!(keys(views, &db, &def.name).len(), DOCS);
    db
}

fn keys(views: &Views, db: &Arc<Database>, name: &str) -> Vec<String> {
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

/// Every version of the design note of `name`, live or stub.
fn design_notes(db: &Database, name: &str) -> Vec<Note> {
    db.modified_since(Seq(0), usize::MAX)
        .unwrap()
        .into_iter()
        .filter(|n| {
            n.item("$DesignType").is_some()
                && (n.deleted
                    || matches!(n.item("$Title").map(|i| &i.value),
                                Some(ItemValue::Text(t)) if t == name))
        })
        .collect()
}

fn used_pages(db: &Database) -> u64 {
    let info = db.info().unwrap();
    u64::from(info.page_count) - info.free_pages
}

fn is_gone(views: &Views, db: &Arc<Database>, name: &str) -> bool {
    let listed = views.list(db).unwrap().iter().any(|(n, _)| n == name);
    assert_eq!(
        views.names(db).unwrap().contains(&name.to_lowercase()),
        listed,
        "names and list agree on {name}"
    );
    let opened = views.open(db, name);
    match opened {
        Err(ViewError::NoSuchView { .. }) => !listed,
        Ok(_) => {
            assert!(listed, "{name} opens but is not listed");
            false
        }
        Err(e) => panic!("opening {name}: {e}"),
    }
}

#[test]
fn a_deleted_view_or_folder_is_gone_with_its_pages_and_can_be_defined_again() {
    for (folder, logged) in [(false, true), (false, false), (true, true), (true, false)] {
        let case = format!("folder {folder}, logged {logged}");
        let (engine, views) = open(Arc::new(MemBackend::new()));
        let db = engine.create_database("before.fdb", "").unwrap();
        drop(db);
        let def = design("Keys", folder, logged);
        let db = engine.create_database("sized.fdb", "").unwrap();
        for i in 0..DOCS {
            db.create(vec![text("Key", &format!("k{i:04}"))]).unwrap();
        }
        let before = used_pages(&db);
        drop(db);
        let db = populated(&engine, &views, &def);
        let with_view = used_pages(&db);
        assert!(with_view > before + 4, "{case}: the index takes pages");

        views.delete(&db, "keys").unwrap(); // names ignore case
        assert!(is_gone(&views, &db, "Keys"), "{case}");
        let notes = design_notes(&db, "Keys");
        assert_eq!(notes.len(), 1, "{case}: one design note");
        assert!(notes[0].deleted, "{case}: the design note is a stub");
        assert!(
            notes[0].item("$ViewDef").is_none(),
            "{case}: the stub keeps no definition"
        );
        db.check().unwrap();
        // Every page of the index is free again: the used pages are the
        // documents', plus the catalog's root and the stub's share.
        let after = used_pages(&db);
        assert!(
            after <= before + 3,
            "{case}: {after} pages used after the delete, {before} before the view"
        );

        // The name is free: defined again, the view has a fresh index.
        db.create(vec![text("Key", "zzz")]).unwrap();
        views.create(&db, def.clone()).unwrap();
        if folder {
            assert!(
                keys(&views, &db, "Keys").is_empty(),
                "{case}: a new folder is empty"
            );
        } else {
            let k = keys(&views, &db, "Keys");
            assert_eq!(k.len(), DOCS + 1, "{case}");
            assert_eq!(k.last().map(String::as_str), Some("zzz"), "{case}");
        }
        db.check().unwrap();
        drop(db);
        engine.close().unwrap();
    }
}

#[test]
fn deleting_an_unknown_view_says_so_and_changes_nothing() {
    let (engine, views) = open(Arc::new(MemBackend::new()));
    let db = populated(&engine, &views, &design("Keys", false, true));
    let seq = db.last_seq();
    match views.delete(&db, "Nope") {
        Err(ViewError::NoSuchView { name, .. }) => assert_eq!(name, "Nope"),
        other => panic!("expected NoSuchView, got {other:?}"),
    }
    assert_eq!(db.last_seq(), seq, "nothing was written");
    assert_eq!(keys(&views, &db, "Keys").len(), DOCS);
    views.delete(&db, "Keys").unwrap();
    assert!(matches!(
        views.delete(&db, "Keys"),
        Err(ViewError::NoSuchView { .. })
    ));
    drop(db);
    engine.close().unwrap();
}

#[test]
fn a_view_design_note_is_not_deleted_as_a_document() {
    let (engine, views) = open(Arc::new(MemBackend::new()));
    let db = populated(&engine, &views, &design("Keys", false, true));
    let note = design_notes(&db, "Keys").remove(0);
    let seq = db.last_seq();
    let e = db.delete(note.oid.unid, None, false).unwrap_err();
    assert!(
        matches!(e, NsfError::ViewDesignNote { ref name, .. } if name == "Keys"),
        "{e}"
    );
    assert!(e.to_string().contains("view delete"), "{e}");
    assert_eq!(db.last_seq(), seq, "nothing was written");
    assert_eq!(keys(&views, &db, "Keys").len(), DOCS);
    // An ordinary document is still deleted as before.
    let doc = db.create(vec![text("Key", "x")]).unwrap();
    db.delete(doc.unid, None, false).unwrap();
    drop(db);
    engine.close().unwrap();
}

#[test]
fn a_power_cut_during_a_delete_leaves_the_view_whole_or_gone() {
    for (folder, logged) in [(false, true), (false, false), (true, true)] {
        for mode in [CrashMode::DropUnsynced, CrashMode::Torn { seed: 7 }] {
            let case = format!("folder {folder}, logged {logged}, {mode:?}");
            let def = design("Keys", folder, logged);
            let (mut whole, mut gone) = (0, 0);
            for k in 1.. {
                let disk = Arc::new(CrashBackend::new());
                let (engine, views) = open(disk.clone());
                let db = populated(&engine, &views, &def);
                disk.arm_crash(disk.sync_count() + k, mode);
                let deleted = views.delete(&db, "Keys");
                // Past the delete's last sync point: the cut comes after it
                // returned, and the last round.
                let last = !disk.has_crashed();
                let image = match disk.crashed_image() {
                    Some(image) => image,
                    None => disk.crash_now(mode),
                };
                drop(views);
                drop(db);
                drop(engine);
                let (engine, views) = open(Arc::new(image));
                let db = engine.open_database(DB).unwrap();
                db.check().unwrap();
                let notes = design_notes(&db, "Keys");
                assert_eq!(notes.len(), 1, "{case}, sync point {k}");
                if is_gone(&views, &db, "Keys") {
                    assert!(notes[0].deleted, "{case}, sync point {k}: gone, note live");
                    gone += 1;
                } else {
                    assert!(
                        deleted.is_err(),
                        "{case}, sync point {k}: a delete that returned is durable"
                    );
                    assert!(!notes[0].deleted, "{case}, sync point {k}: view, no note");
                    assert_eq!(keys(&views, &db, "Keys").len(), DOCS, "{case}");
                    views.delete(&db, "Keys").unwrap();
                    whole += 1;
                }
                // Either way the name can be defined again.
                views.create(&db, def.clone()).unwrap();
                let want = if folder { 0 } else { DOCS };
                assert_eq!(keys(&views, &db, "Keys").len(), want, "{case}");
                db.check().unwrap();
                drop(db);
                engine.close().unwrap();
                if last {
                    assert!(deleted.is_ok(), "{case}");
                    break;
                }
            }
            assert!(whole > 0, "{case}: no cut came before the commit");
            assert!(gone > 0, "{case}: the delete was lost after it returned");
        }
    }
}
