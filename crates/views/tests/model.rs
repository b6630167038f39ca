//! Views against a model that recomputes each view from scratch, under
//! random creates, updates, deletes, folder changes, index updates and
//! rebuilds, clean reopens and crashes (the engine dropped without
//! closing, as kill -9 leaves it).

use nsf::{Engine, EngineConfig, Item, ItemUpdate, ItemValue, NoteId, Unid};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use storage::backend::MemBackend;
use storage::Backend;
use translog::LogConfig;
use views::{ColumnDef, Row, Start, ViewConfig, ViewDef, Views};

const KEYS: [&str; 6] = ["apple", "Apple", "banana", "b", "cherry", ""];
const DB: &str = "v.fdb";

#[derive(Debug, Clone)]
enum Op {
    Create(usize, u8, u8),
    Update(usize, usize, u8, u8),
    Delete(usize),
    FolderAdd(usize),
    FolderRemove(usize),
    UpdateViews,
    Rebuild(bool),
    Reopen,
    Crash,
    Checkpoint,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0..KEYS.len(), 0u8..8, any::<u8>()).prop_map(|(k, t, c)| Op::Create(k, t, c)),
        4 => (any::<usize>(), 0..KEYS.len(), 0u8..8, any::<u8>()).prop_map(|(i, k, t, c)| Op::Update(i, k, t, c)),
        2 => any::<usize>().prop_map(Op::Delete),
        2 => any::<usize>().prop_map(Op::FolderAdd),
        1 => any::<usize>().prop_map(Op::FolderRemove),
        1 => Just(Op::UpdateViews),
        1 => any::<bool>().prop_map(Op::Rebuild),
        1 => Just(Op::Reopen),
        1 => Just(Op::Crash),
        1 => Just(Op::Checkpoint),
    ]
}

#[derive(Clone, Debug)]
struct Doc {
    id: NoteId,
    key: String,
    tag: u8,
    cats: Vec<String>,
}

fn cats_of(c: u8) -> Vec<String> {
    (0..c % 3)
        .map(|i| format!("c{}", (c >> (2 * i)) % 3))
        .collect()
}

fn items(d: &Doc) -> Vec<Item> {
    vec![
        Item {
            name: "Key".into(),
            value: ItemValue::Text(d.key.clone()),
        },
        Item {
            name: "Tag".into(),
            value: ItemValue::Number(f64::from(d.tag)),
        },
        Item {
            name: "Cats".into(),
            value: ItemValue::TextList(d.cats.clone()),
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

fn open(disk: &MemBackend) -> (Engine, Views) {
    let (engine, _) = Engine::open(Arc::new(disk.clone()), config()).unwrap();
    let vc = ViewConfig {
        rebuild_dir: "/tmp-sort".into(),
        rebuild_memory: 1 << 20,
    };
    let views = Views::new(engine.backend(), vc);
    (engine, views)
}

fn col(s: &str) -> ColumnDef {
    ColumnDef::parse(s).unwrap()
}

/// The designs under test: each logged and unlogged.
fn designs() -> Vec<ViewDef> {
    let mut out = Vec::new();
    for logged in [true, false] {
        let sfx = if logged { "L" } else { "U" };
        let mut v = ViewDef::view(
            &format!("ByKey{sfx}"),
            "SELECT Tag >= 3",
            vec![col("K=Key:asc"), col("T=Tag:desc"), col("C=Cats")],
        );
        v.logged = logged;
        out.push(v);
        let mut c = ViewDef::view(
            &format!("ByCat{sfx}"),
            "SELECT @All",
            vec![col("Cat=Cats:cat"), col("K=Key")],
        );
        c.logged = logged;
        out.push(c);
        let mut f = ViewDef::folder(&format!("Folder{sfx}"), vec![col("K=Key:desc")]);
        f.logged = logged;
        out.push(f);
    }
    out
}

/// What a view must show: (unid, first column) in order.
fn expected(
    name: &str,
    docs: &BTreeMap<Unid, Doc>,
    folder: &BTreeMap<Unid, ()>,
) -> Vec<(Unid, String)> {
    let mut rows: Vec<(Vec<u8>, Unid, String)> = Vec::new();
    for (u, d) in docs {
        let k = d.key.to_lowercase();
        if name.starts_with("ByKey") && d.tag >= 3 {
            let mut sort = k.clone().into_bytes();
            sort.push(0);
            sort.push(255 - d.tag);
            sort.extend_from_slice(&d.id.0.to_be_bytes());
            rows.push((sort, *u, d.key.clone()));
        } else if name.starts_with("ByCat") {
            let mut cats = d.cats.clone();
            cats.sort();
            cats.dedup();
            if cats.is_empty() {
                // An empty list sorts before any text.
                rows.push((d.id.0.to_be_bytes().to_vec(), *u, String::new()));
            }
            for c in cats {
                let mut sort = vec![1];
                sort.extend_from_slice(c.as_bytes());
                sort.extend_from_slice(&d.id.0.to_be_bytes());
                rows.push((sort, *u, c));
            }
        } else if name.starts_with("Folder") && folder.contains_key(u) {
            // Descending by key, then ascending note id.
            let mut sort: Vec<u8> = k.bytes().map(|b| !b).collect();
            sort.push(0xFF);
            sort.extend_from_slice(&d.id.0.to_be_bytes());
            rows.push((sort, *u, d.key.clone()));
        }
    }
    rows.sort();
    rows.into_iter().map(|(_, u, k)| (u, k)).collect()
}

fn first_col(r: &Row) -> Option<(Unid, String)> {
    match r {
        Row::Entry { unid, columns, .. } => {
            let c = match &columns[0] {
                views::Value::Text(l) => l.first().cloned().unwrap_or_default(),
                other => format!("{other:?}"),
            };
            Some((*unid, c))
        }
        Row::Category { .. } => None,
    }
}

/// `built`: every index has been built once, so a logged index must never
/// need a rebuild again — not even after a crash.
fn verify(
    engine: &Engine,
    views: &Views,
    docs: &BTreeMap<Unid, Doc>,
    folder: &BTreeMap<Unid, ()>,
    built: bool,
) {
    let db = engine.open_database(DB).unwrap();
    for d in designs() {
        let coll = views.open(&db, &d.name).unwrap();
        if built && d.logged {
            assert_eq!(coll.rebuilt, None, "logged view {} was rebuilt", d.name);
        }
        let want = expected(&d.name, docs, folder);
        let rows = coll
            .read(&Start::Position(0), usize::MAX, false, false)
            .unwrap();
        let got: Vec<(Unid, String)> = rows.iter().filter_map(first_col).collect();
        assert_eq!(got, want, "view {}", d.name);
        assert_eq!(
            coll.count().unwrap(),
            want.len() as u64,
            "count of {}",
            d.name
        );
        // Backward reads give the same rows reversed.
        let back = coll
            .read(
                &Start::Position(want.len().saturating_sub(1) as u64),
                usize::MAX,
                true,
                false,
            )
            .unwrap();
        let mut back: Vec<(Unid, String)> = back.iter().filter_map(first_col).collect();
        back.reverse();
        if !want.is_empty() {
            assert_eq!(back, want, "backward read of {}", d.name);
        }
        // Positions and keys agree with the model.
        for (i, (u, _)) in want.iter().enumerate() {
            if !d.name.starts_with("ByCat") {
                assert_eq!(
                    coll.position(*u).unwrap(),
                    Some(i as u64),
                    "position in {}",
                    d.name
                );
            }
        }
        if d.name.starts_with("ByKey") {
            for k in KEYS {
                let n = want
                    .iter()
                    .filter(|(_, c)| c.to_lowercase() == k.to_lowercase())
                    .count();
                let found = coll.find(k, false).unwrap();
                assert_eq!(found.map_or(0, |f| f.count), n as u64, "find {k:?}");
            }
        }
        if d.name.starts_with("ByCat") {
            // Category rows carry the number of entries under them.
            let rows = coll
                .read(&Start::Position(0), usize::MAX, false, true)
                .unwrap();
            let mut i = 0;
            while i < rows.len() {
                if let Row::Category { count, .. } = &rows[i] {
                    let n = rows[i + 1..]
                        .iter()
                        .take_while(|r| matches!(r, Row::Entry { .. }))
                        .count();
                    assert_eq!(*count, n as u64);
                }
                i += 1;
            }
        }
    }
    db.check().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]
    #[test]
    fn views_match_a_model_across_reopens_and_crashes(ops in proptest::collection::vec(op(), 1..80)) {
        let disk = MemBackend::new();
        let (mut engine, mut views) = open(&disk);
        let db = engine.create_database(DB, "views").unwrap();
        for d in designs() {
            views.create(&db, d).unwrap();
        }
        drop(db);
        let mut docs: BTreeMap<Unid, Doc> = BTreeMap::new();
        let mut folder: BTreeMap<Unid, ()> = BTreeMap::new();
        let mut built = false;
        for op in ops {
            let db = engine.open_database(DB).unwrap();
            let live: Vec<Unid> = docs.keys().copied().collect();
            let pick = |i: usize| live[i % live.len()];
            match op {
                Op::Create(k, t, c) => {
                    let mut d = Doc { id: NoteId(0), key: KEYS[k].into(), tag: t, cats: cats_of(c) };
                    let m = db.create(items(&d)).unwrap();
                    d.id = m.note_id;
                    docs.insert(m.unid, d);
                }
                Op::Update(i, k, t, c) if !live.is_empty() => {
                    let u = pick(i);
                    let d = docs.get_mut(&u).unwrap();
                    d.key = KEYS[k].into();
                    d.tag = t;
                    d.cats = cats_of(c);
                    let upd = items(d).into_iter().map(ItemUpdate::Set).collect();
                    db.update(u, upd, None, false).unwrap();
                }
                Op::Delete(i) if !live.is_empty() => {
                    let u = pick(i);
                    db.delete(u, None, false).unwrap();
                    docs.remove(&u);
                    folder.remove(&u);
                }
                Op::FolderAdd(i) if !live.is_empty() => {
                    let u = pick(i);
                    for sfx in ["L", "U"] {
                        views.folder_add(&db, &format!("Folder{sfx}"), &[u]).unwrap();
                    }
                    folder.insert(u, ());
                }
                Op::FolderRemove(i) if !live.is_empty() => {
                    let u = pick(i);
                    for sfx in ["L", "U"] {
                        views.folder_remove(&db, &format!("Folder{sfx}"), &[u]).unwrap();
                    }
                    folder.remove(&u);
                }
                Op::UpdateViews => {
                    for d in designs() {
                        views.update(&db, &d.name).unwrap();
                    }
                }
                Op::Rebuild(logged) => {
                    for d in designs().into_iter().filter(|d| d.logged == logged) {
                        views.rebuild(&db, &d.name).unwrap();
                    }
                    built |= logged;
                }
                Op::Reopen => {
                    drop(db);
                    engine.close().unwrap();
                    (engine, views) = open(&disk);
                    verify(&engine, &views, &docs, &folder, built);
                    built = true;
                    continue;
                }
                Op::Crash => {
                    drop(db);
                    drop(views);
                    drop(engine);
                    (engine, views) = open(&disk);
                    verify(&engine, &views, &docs, &folder, built);
                    built = true;
                    continue;
                }
                Op::Checkpoint => {
                    engine.checkpoint().unwrap();
                }
                _ => {}
            }
        }
        verify(&engine, &views, &docs, &folder, built);
        engine.close().unwrap();
    }
}

#[test]
fn a_rebuild_that_spills_to_temporary_files_matches_incremental_updates() {
    let disk = MemBackend::new();
    let (engine, _) = Engine::open(Arc::new(disk.clone()), config()).unwrap();
    let views = Views::new(
        engine.backend(),
        ViewConfig {
            rebuild_dir: "/sort".into(),
            rebuild_memory: 64 << 10,
        },
    );
    let db = engine.create_database(DB, "").unwrap();
    for d in designs().into_iter().filter(|d| d.name.starts_with("By")) {
        views.create(&db, d).unwrap();
    }
    for d in designs().into_iter().filter(|d| d.name.starts_with("By")) {
        views.update(&db, &d.name).unwrap(); // built while empty
    }
    for i in 0..3000u32 {
        let d = Doc {
            id: NoteId(0),
            key: format!("{}{}", KEYS[i as usize % KEYS.len()], i % 97),
            tag: (i % 8) as u8,
            cats: cats_of(i as u8),
        };
        db.create(items(&d)).unwrap();
        if i % 500 == 0 {
            engine.checkpoint().unwrap(); // no background checkpointer here
        }
    }
    for d in designs().into_iter().filter(|d| d.name.starts_with("By")) {
        let read = |views: &Views| {
            views
                .open(&db, &d.name)
                .unwrap()
                .read(&Start::Position(0), usize::MAX, false, true)
                .unwrap()
        };
        let incremental = read(&views);
        assert!(incremental.len() > 1000, "{}", incremental.len());
        let r = views.rebuild(&db, &d.name).unwrap();
        assert!(r.sort_runs > 0, "the sort spilled: {r:?}");
        assert_eq!(read(&views), incremental, "view {}", d.name);
    }
    let left = disk.read_dir(Path::new("/sort")).unwrap_or_default();
    assert!(left.is_empty(), "temporary files left behind: {left:?}");
    db.check().unwrap();
    drop(db);
    engine.close().unwrap();
}
