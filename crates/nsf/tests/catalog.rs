//! The catalog (I20): listing opens no database, and after any crash it
//! neither hides a database that exists nor shows one to a caller its ACL
//! does not admit.

mod common;

use nsf::{AccessLevel, Acl, AclEntry, Engine, EngineConfig, Listed};
use std::path::Path;
use std::sync::Arc;
use storage::backend::{CrashBackend, CrashMode, MemBackend};
use storage::Backend;

fn config() -> EngineConfig {
    let mut cfg = common::config(true);
    cfg.max_open_databases = 4;
    cfg
}

fn acl(bob: bool) -> Acl {
    let mut a = Acl::for_creator(Some("admin"));
    if bob {
        a.entries.push(AclEntry::new("bob", AccessLevel::Reader));
    }
    a
}

fn listed(engine: &Engine, user: Option<&str>) -> Vec<Listed> {
    engine.list_databases_where(None, |a| user.is_none() || a.admits(user).unwrap_or(false))
}

fn paths(l: Vec<Listed>) -> Vec<String> {
    l.into_iter().map(|l| l.path).collect()
}

/// What the database's own list says: the truth the catalog summarises.
fn bob_may(engine: &Engine, path: &str) -> bool {
    let db = engine.open_database(path).unwrap();
    match db.acl().unwrap() {
        Some(a) => a.access(Some("bob")).level() > AccessLevel::NoAccess,
        None => false,
    }
}

#[test]
fn a_database_created_but_not_recorded_is_listed_after_a_power_cut() {
    let disk = Arc::new(CrashBackend::new());
    let (engine, _) = Engine::open(disk.clone(), config()).unwrap();
    engine.create_database("x/alpha.fdb", "Alpha").unwrap();
    // The file is durable (I9); its catalog record was not waited for.
    let image = disk.crash_now(CrashMode::DropUnsynced);
    let (after, _) = Engine::open(Arc::new(image.snapshot()), config()).unwrap();
    assert_eq!(
        listed(&after, None),
        vec![Listed {
            path: "x/alpha.fdb".into(),
            title: "Alpha".into()
        }]
    );
    // Nor does a catalog removed by hand lose anything.
    image.remove_file(Path::new("/data/catalog")).unwrap();
    let (after, _) = Engine::open(Arc::new(image), config()).unwrap();
    assert_eq!(paths(listed(&after, None)), ["x/alpha.fdb"]);
}

/// An ACL change cut by a power failure at every sync point it makes, and
/// after it was acknowledged: the listing for bob always says what the
/// database's own list says (whether the change survived or not).
#[test]
fn an_acl_change_cut_at_every_sync_point_is_listed_as_it_stands() {
    for mode in [
        CrashMode::DropUnsynced,
        CrashMode::KeepUnsynced,
        CrashMode::Torn { seed: 7 },
    ] {
        for n in 0.. {
            let disk = Arc::new(CrashBackend::new());
            let (engine, _) = Engine::open(disk.clone(), config()).unwrap();
            engine
                .create_database("a.fdb", "A")
                .unwrap()
                .set_acl(&acl(false))
                .unwrap();
            engine.close().unwrap();
            // The catalog is durable now, and knows a.fdb bob-less.
            let (engine, _) = Engine::open(disk.clone(), config()).unwrap();
            let db = engine.open_database("a.fdb").unwrap();
            disk.arm_crash(disk.sync_count() + n, mode);
            let acked = db.set_acl(&acl(true)).is_ok();
            let image = match disk.crashed_image() {
                Some(image) => image,
                None => disk.crash_now(mode),
            };
            let (after, _) = Engine::open(Arc::new(image), config()).unwrap();
            // Listed first: opening the database would correct the entry.
            let shown = paths(listed(&after, Some("bob"))) == ["a.fdb"];
            let truth = bob_may(&after, "a.fdb");
            assert!(
                truth || !acked,
                "{mode:?} at {n}: an acknowledged ACL was lost"
            );
            assert_eq!(shown, truth, "{mode:?}, crash at sync point {n}");
            if !disk.has_crashed() {
                break;
            }
        }
    }
}

/// Listing 40 databases with a limit of 4 opens none of them, for the
/// administrator and for a user alike.
#[test]
fn listing_opens_no_database() {
    let disk = MemBackend::new();
    let (engine, _) = Engine::open(Arc::new(disk.clone()), config()).unwrap();
    for i in 0..40 {
        let db = engine
            .create_database(&format!("f{}/db{i:02}.fdb", i % 3), &format!("title {i}"))
            .unwrap();
        db.set_acl(&acl(i % 4 == 0)).unwrap();
        if i % 10 == 9 {
            engine.checkpoint().unwrap();
        }
    }
    engine.close().unwrap();
    let (engine, _) = Engine::open(Arc::new(disk), config()).unwrap();
    assert_eq!(
        engine.cache_stats().opened,
        0,
        "a known catalog reads nothing"
    );
    let all = listed(&engine, None);
    assert_eq!(all.len(), 40);
    assert!(all.contains(&Listed {
        path: "f1/db07.fdb".into(),
        title: "title 7".into()
    }));
    let bob = paths(listed(&engine, Some("Bob")));
    let want: Vec<String> = (0..40)
        .filter(|i| i % 4 == 0)
        .map(|i| format!("f{}/db{i:02}.fdb", i % 3))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(bob, want);
    assert!(paths(listed(&engine, Some("carol"))).is_empty());
    let in_f2 = engine.list_databases_where(Some("f2/"), |_| true);
    assert_eq!(in_f2.len(), 13);
    assert_eq!(engine.cache_stats().opened, 0, "listing opened nothing");
    engine.close().unwrap();
}

/// A catalog damaged in the middle is not trusted: every database is read
/// again, and the listing is whole and right.
#[test]
fn a_damaged_catalog_is_rebuilt_from_the_databases() {
    let disk = MemBackend::new();
    let (engine, _) = Engine::open(Arc::new(disk.clone()), config()).unwrap();
    for i in 0..6 {
        let db = engine.create_database(&format!("d{i}.fdb"), "").unwrap();
        db.set_acl(&acl(i % 2 == 0)).unwrap();
    }
    engine.close().unwrap();
    let file = Path::new("/data/catalog");
    let mut bytes = disk.file_bytes(file).unwrap();
    let mid = bytes.len() / 3;
    bytes[mid] ^= 0x5A;
    disk.set_file_bytes(file, bytes);
    let (engine, _) = Engine::open(Arc::new(disk), config()).unwrap();
    assert_eq!(listed(&engine, None).len(), 6);
    assert_eq!(
        paths(listed(&engine, Some("bob"))),
        ["d0.fdb", "d2.fdb", "d4.fdb"]
    );
    engine.close().unwrap();
}
