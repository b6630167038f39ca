//! Views as callers not named in `$Readers` see them, against a model:
//! the same views built in a database holding only the documents that
//! caller may read. Totals, category rows and counts, positions, pages
//! read from any position in either direction, finds and document
//! positions must be exactly the model's, after random creates, edits
//! (readers added, changed, removed), deletes, folder changes, index
//! updates, rebuilds and crashes.

use nsf::{
    Access, AccessLevel, Acl, AclEntry, Database, Engine, EngineConfig, Item, ItemUpdate,
    ItemValue, Unid,
};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use storage::backend::MemBackend;
use translog::LogConfig;
use views::{ColumnDef, Row, Start, ViewConfig, ViewDef, Views};

const KEYS: [&str; 4] = ["apple", "banana", "b", ""];
const DB: &str = "r.fdb";
/// Names a document's access items draw from.
const NAMES: [&str; 5] = ["ann", "BOB", "[Team]", "*", "cy"];

#[derive(Clone, Debug)]
struct Doc {
    key: String,
    cats: Vec<String>,
    readers: Option<Vec<String>>,
    authors: Option<Vec<String>>,
}

fn names() -> impl Strategy<Value = Option<Vec<String>>> {
    prop_oneof![
        3 => Just(None),
        4 => proptest::collection::vec(0..NAMES.len(), 0..3)
            .prop_map(|l| Some(l.into_iter().map(|i| NAMES[i].to_string()).collect())),
        // More names than a restricted record keeps: decided from the note.
        1 => any::<bool>().prop_map(|bob| {
            let mut l: Vec<String> = (0..120).map(|i| format!("someone-else-{i}")).collect();
            if bob {
                l.push("bob".into());
            }
            Some(l)
        }),
    ]
}

fn doc() -> impl Strategy<Value = Doc> {
    (0..KEYS.len(), 0u8..9, names(), names()).prop_map(|(k, c, readers, authors)| Doc {
        key: KEYS[k].into(),
        cats: (0..c % 3).map(|i| format!("c{}", (c >> i) % 3)).collect(),
        readers,
        authors,
    })
}

#[derive(Clone, Debug)]
enum Op {
    Create(Doc),
    Update(usize, Doc),
    Delete(usize),
    FolderAdd(usize),
    FolderRemove(usize),
    UpdateViews,
    Rebuild(bool),
    Crash,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => doc().prop_map(Op::Create),
        3 => (any::<usize>(), doc()).prop_map(|(i, d)| Op::Update(i, d)),
        1 => any::<usize>().prop_map(Op::Delete),
        2 => any::<usize>().prop_map(Op::FolderAdd),
        1 => any::<usize>().prop_map(Op::FolderRemove),
        1 => Just(Op::UpdateViews),
        1 => any::<bool>().prop_map(Op::Rebuild),
        1 => Just(Op::Crash),
    ]
}

fn items(d: &Doc) -> Vec<Item> {
    let mut v = vec![
        Item {
            name: "Key".into(),
            value: ItemValue::Text(d.key.clone()),
        },
        Item {
            name: "Cats".into(),
            value: ItemValue::TextList(d.cats.clone()),
        },
    ];
    for (name, l) in [("$Readers", &d.readers), ("$Authors", &d.authors)] {
        if let Some(l) = l {
            v.push(Item {
                name: name.into(),
                value: ItemValue::TextList(l.clone()),
            });
        }
    }
    v
}

/// Every item, with the access items removed when the document has none.
fn updates(d: &Doc) -> Vec<ItemUpdate> {
    let mut u: Vec<ItemUpdate> = items(d).into_iter().map(ItemUpdate::Set).collect();
    for (name, l) in [("$Readers", &d.readers), ("$Authors", &d.authors)] {
        if l.is_none() {
            u.push(ItemUpdate::Remove(name.into()));
        }
    }
    u
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
            "SELECT @All",
            vec![col("K=Key:asc"), col("C=Cats")],
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

/// The callers: named in some documents' items, by name or role, or in
/// none; and one not subject to `$Readers` at all.
fn callers() -> Vec<(&'static str, Access)> {
    let mut acl = Acl::for_creator(Some("boss"));
    acl.default = AccessLevel::Reader;
    acl.roles = vec!["Team".into()];
    acl.entries.push(AclEntry {
        roles: vec!["Team".into()],
        ..AclEntry::new("bob", AccessLevel::Reader)
    });
    acl.entries.push(AclEntry::new("ann", AccessLevel::Author));
    vec![
        ("bob", acl.access(Some("bob"))),
        ("ann", acl.access(Some("ann"))),
        ("zed", acl.access(Some("zed"))),
        ("boss", acl.access(Some("boss"))),
        ("admin", Access::full()),
    ]
}

/// A row as a caller can compare it across databases: the UNID mapped
/// into the model database's, no note id.
#[derive(Debug, PartialEq)]
enum Seen {
    Category(String, u64),
    Entry(u64, Unid, String),
}

fn seen(rows: Vec<Row>, map: &BTreeMap<Unid, Unid>) -> Vec<Seen> {
    rows.into_iter()
        .map(|r| match r {
            Row::Category { category, count } => Seen::Category(format!("{category:?}"), count),
            Row::Entry {
                position,
                unid,
                columns,
                ..
            } => {
                let u: Unid = unid;
                Seen::Entry(
                    position,
                    map.get(&u).copied().unwrap_or(u),
                    format!("{columns:?}"),
                )
            }
        })
        .collect()
}

/// Builds, in a database of its own, the views as they must look to a
/// caller who may read only `readable`: those documents alone, created in
/// the same order (so ties in collation fall the same way). Returns the
/// database and the map from the real UNIDs to the model's.
fn model(
    engine: &Engine,
    views: &Views,
    name: &str,
    real: &Database,
    readable: &[(Unid, Doc)],
    folder: &BTreeMap<Unid, ()>,
) -> (Arc<Database>, BTreeMap<Unid, Unid>) {
    let path = format!("model-{name}.fdb");
    let m = engine.create_database(&path, "model").unwrap();
    let mut ordered: Vec<_> = readable
        .iter()
        .map(|(u, d)| (real.get(*u).unwrap().note_id, *u, d))
        .collect();
    ordered.sort_by_key(|(id, _, _)| *id);
    let mut map = BTreeMap::new();
    let mut members = Vec::new();
    for (_, u, d) in ordered {
        let created = m.create(items(d)).unwrap();
        map.insert(u, created.unid);
        if folder.contains_key(&u) {
            members.push(created.unid);
        }
    }
    for d in designs() {
        let folder = d.name.starts_with("Folder");
        let name = d.name.clone();
        views.create(&m, d).unwrap();
        if folder {
            views.folder_add(&m, &name, &members).unwrap();
        }
    }
    (m, map)
}

fn verify(
    engine: &Engine,
    views: &Views,
    docs: &BTreeMap<Unid, Doc>,
    folder: &BTreeMap<Unid, ()>,
    round: usize,
) {
    let db = engine.open_database(DB).unwrap();
    for (who, access) in callers() {
        let readable: Vec<(Unid, Doc)> = docs
            .iter()
            .filter(|(u, _)| access.can_read(&db.get(**u).unwrap()))
            .map(|(u, d)| (*u, d.clone()))
            .collect();
        let (mdb, map) = model(
            engine,
            views,
            &format!("{who}-{round}"),
            &db,
            &readable,
            folder,
        );
        for d in designs() {
            let real = views.open(&db, &d.name).unwrap().seen_by(access.clone());
            let want = views.open(&mdb, &d.name).unwrap();
            let ctx = format!("{who} in {}", d.name);
            let n = want.count().unwrap();
            assert_eq!(real.count().unwrap(), n, "total: {ctx}");
            let all = |c: &views::Collection<'_>, categories| {
                c.read(&Start::Position(0), usize::MAX, false, categories)
                    .unwrap()
            };
            for categories in [false, true] {
                assert_eq!(
                    seen(all(&real, categories), &map),
                    seen(all(&want, categories), &map),
                    "all rows (categories {categories}): {ctx}"
                );
            }
            // Pages from every position, both ways: the caller's positions
            // page consistently, with no gaps.
            for p in 0..=n {
                for backward in [false, true] {
                    let page = |c: &views::Collection<'_>| {
                        c.read(&Start::Position(p), 3, backward, true).unwrap()
                    };
                    assert_eq!(
                        seen(page(&real), &map),
                        seen(page(&want), &map),
                        "page at {p} (backward {backward}): {ctx}"
                    );
                }
            }
            if !d.name.starts_with("ByCat") {
                for k in KEYS.iter().chain(&["a", "b", "c"]) {
                    for prefix in [false, true] {
                        assert_eq!(
                            real.find(k, prefix).unwrap(),
                            want.find(k, prefix).unwrap(),
                            "find {k:?} (prefix {prefix}): {ctx}"
                        );
                        for backward in [false, true] {
                            let from = Start::Key {
                                key: k.to_string(),
                                prefix,
                            };
                            let page = |c: &views::Collection<'_>| {
                                c.read(&from, 2, backward, false).unwrap()
                            };
                            assert_eq!(
                                seen(page(&real), &map),
                                seen(page(&want), &map),
                                "read from key {k:?} (prefix {prefix}, backward {backward}): {ctx}"
                            );
                        }
                    }
                }
                for u in docs.keys() {
                    let model_pos = match map.get(u) {
                        Some(m) => want.position(*m).unwrap(),
                        None => None,
                    };
                    assert_eq!(real.position(*u).unwrap(), model_pos, "position: {ctx}");
                }
            }
            // The restricted count is the entries of documents with
            // $Readers, whoever asks.
            let everything = views.open(&db, &d.name).unwrap();
            let restricted = everything
                .read(&Start::Position(0), usize::MAX, false, false)
                .unwrap()
                .iter()
                .filter(|r| match r {
                    Row::Entry { unid, .. } => docs[unid].readers.is_some(),
                    Row::Category { .. } => false,
                })
                .count();
            assert_eq!(real.restricted().unwrap(), restricted as u64, "{ctx}");
        }
        drop(mdb);
    }
    db.check().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn callers_see_views_as_if_hidden_documents_did_not_exist(
        ops in proptest::collection::vec(op(), 1..40)
    ) {
        let disk = MemBackend::new();
        let (mut engine, mut views) = open(&disk);
        let db = engine.create_database(DB, "readers").unwrap();
        for d in designs() {
            views.create(&db, d).unwrap();
        }
        drop(db);
        let mut docs: BTreeMap<Unid, Doc> = BTreeMap::new();
        let mut folder: BTreeMap<Unid, ()> = BTreeMap::new();
        let mut rounds = 0;
        for op in ops {
            let db = engine.open_database(DB).unwrap();
            let live: Vec<Unid> = docs.keys().copied().collect();
            let pick = |i: usize| live[i % live.len()];
            match op {
                Op::Create(d) => {
                    let m = db.create(items(&d)).unwrap();
                    docs.insert(m.unid, d);
                }
                Op::Update(i, d) if !live.is_empty() => {
                    let u = pick(i);
                    db.update(u, updates(&d), None, false).unwrap();
                    docs.insert(u, d);
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
                }
                Op::Crash => {
                    drop(db);
                    drop(views);
                    drop(engine);
                    (engine, views) = open(&disk);
                    verify(&engine, &views, &docs, &folder, rounds);
                    rounds += 1;
                    continue;
                }
                _ => {}
            }
        }
        verify(&engine, &views, &docs, &folder, rounds);
        drop(views);
        engine.close().unwrap();
    }
}

/// Buffer-pool page lookups (hits and misses) so far.
fn page_reads(engine: &Engine) -> u64 {
    let s = engine.pool_stats();
    s.hits + s.misses
}

/// With nothing restricted, a caller subject to `$Readers` reads a page,
/// the total and a find in O(log n) page reads, as an administrator does;
/// one restricted entry adds a few, not a scan.
#[test]
fn an_unrestricted_view_is_read_without_a_scan() {
    let disk = MemBackend::new();
    let (engine, views) = open(&disk);
    let db = engine.create_database(DB, "big").unwrap();
    views
        .create(
            &db,
            ViewDef::view("ByKey", "SELECT @All", vec![col("K=Key:asc")]),
        )
        .unwrap();
    const N: u32 = 20_000;
    for i in 0..N {
        let d = Doc {
            key: format!("k{i:05}-{}", "x".repeat(60)),
            cats: vec![],
            readers: None,
            authors: None,
        };
        db.create(items(&d)).unwrap();
        if i % 1000 == 0 {
            engine.checkpoint().unwrap();
        }
    }
    let zed = callers().into_iter().find(|(w, _)| *w == "zed").unwrap().1;
    let cost = |what: &dyn Fn() -> Vec<Row>| {
        let before = page_reads(&engine);
        let rows = what();
        (rows, page_reads(&engine) - before)
    };
    let coll = views.open(&db, "ByKey").unwrap().seen_by(zed.clone());
    assert_eq!(coll.restricted().unwrap(), 0);
    let read_page = |c: &views::Collection<'_>| {
        assert_eq!(c.count().unwrap(), u64::from(N));
        let found = c.find("k07000", true).unwrap().unwrap();
        assert_eq!((found.position, found.count), (7000, 1));
        c.read(&Start::Position(5000), 20, false, false).unwrap()
    };
    let (rows, fast) = cost(&|| read_page(&coll));
    assert!(matches!(&rows[0], Row::Entry { position: 5000, .. }));
    let (_, scan) = cost(&|| {
        coll.read(&Start::Position(0), usize::MAX, false, false)
            .unwrap()
    });
    assert!(
        fast * 10 < scan,
        "a page, a total and a find read {fast} pages; the whole view {scan}"
    );

    let hidden = Doc {
        key: "k00100x".into(),
        cats: vec![],
        readers: Some(vec!["ann".into()]),
        authors: None,
    };
    db.create(items(&hidden)).unwrap();
    let coll = views.open(&db, "ByKey").unwrap().seen_by(zed);
    assert_eq!(coll.restricted().unwrap(), 1);
    let (rows, slow) = cost(&|| read_page(&coll));
    assert!(matches!(&rows[0], Row::Entry { position: 5000, .. }));
    eprintln!("page reads: {fast} unrestricted, {slow} with one restricted entry, {scan} for the whole view");
    assert!(
        slow < fast * 3,
        "with one restricted entry: {slow} page reads, {fast} without"
    );
    drop(coll);
    drop((views, db));
    engine.close().unwrap();
}
