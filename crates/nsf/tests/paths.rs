//! One file, one database instance (I18): the engine refuses every
//! non-canonical spelling of a database path, on create and on open, and a
//! second path to an open file (a link) is refused rather than opened as a
//! second, independent instance whose writes would overwrite the first's.

mod common;

use nsf::{Engine, EngineConfig, Item, ItemValue, NsfError};
use std::sync::Arc;
use storage::backend::{FsBackend, MemBackend};

fn subject(s: &str) -> Vec<Item> {
    vec![Item {
        name: "Subject".into(),
        value: ItemValue::Text(s.into()),
    }]
}

#[test]
fn non_canonical_spellings_are_refused_on_open_and_create() {
    let (engine, _) = Engine::open(Arc::new(MemBackend::new()), common::config(true)).unwrap();
    engine.create_database("alias/real.fdb", "real").unwrap();
    for spelling in [
        "alias//real.fdb",
        "alias/./real.fdb",
        "./alias/real.fdb",
        "alias/x/../real.fdb",
        "alias/real.fdb/",
        "/alias/real.fdb",
        "alias\\real.fdb",
        "alias/real.FDB",
        " alias/real.fdb",
    ] {
        match engine.open_database(spelling) {
            Err(NsfError::BadPath { .. }) => {}
            Err(e) => panic!("{spelling:?}: wrong error {e}"),
            Ok(_) => panic!("{spelling:?} opened a second instance of alias/real.fdb"),
        }
        assert!(
            matches!(
                engine.create_database(spelling, "twin"),
                Err(NsfError::BadPath { .. })
            ),
            "{spelling:?} was accepted by create"
        );
    }
    assert_eq!(engine.open_databases(), 1);
    assert_eq!(engine.list_databases().unwrap(), vec!["alias/real.fdb"]);
}

#[test]
fn the_log_directory_holds_no_databases() {
    let (engine, _) = Engine::open(Arc::new(MemBackend::new()), common::config(true)).unwrap();
    match engine.create_database("translog/x.fdb", "x") {
        Err(NsfError::BadPath { reason, .. }) => assert!(reason.contains("log"), "{reason}"),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a database was made in the log directory"),
    }
    assert!(matches!(
        engine.open_database("translog/x.fdb"),
        Err(NsfError::BadPath { .. })
    ));
}

/// A link made by hand inside the data directory is a second path to one
/// file: while the file is open under one name, the other is refused, and
/// documents written through the one instance are all there after reopen.
#[test]
fn a_link_to_an_open_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = || {
        let mut c = EngineConfig::new(dir.path());
        c.buffer_pool_size = 4 << 20;
        c
    };
    let (engine, _) = Engine::open(Arc::new(FsBackend), cfg()).unwrap();
    let db = engine.create_database("real/a.fdb", "a").unwrap();
    std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
    match engine.open_database("link/a.fdb") {
        Err(NsfError::SameFile { open_as, .. }) => assert_eq!(open_as, "real/a.fdb"),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a link opened a second instance of real/a.fdb"),
    }
    let mut unids = Vec::new();
    for i in 0..20 {
        unids.push(db.create(subject(&format!("doc {i}"))).unwrap().unid);
    }
    drop(db);
    engine.close().unwrap();
    let (engine, _) = Engine::open(Arc::new(FsBackend), cfg()).unwrap();
    let db = engine.open_database("real/a.fdb").unwrap();
    for u in unids {
        db.get(u).unwrap_or_else(|e| panic!("{u} lost: {e}"));
    }
}
