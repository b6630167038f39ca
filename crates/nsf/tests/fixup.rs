//! Fixup on corrupted copies (design.md §2.8, I29): each page kind is
//! corrupted in turn; the report says what was lost, the database is
//! usable afterwards with a new instance id, and every document that was
//! not on a damaged page is still there. Plus: a crash during the swap
//! leaves the old file or the new one; automatic fixup at restart; a
//! failed database does not hold the log back.

use nsf::{DbState, Engine, FixupReport, Item, ItemValue, ReasonKind, Unid};
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use storage::backend::{
    read_exact_at, read_file, write_all_at, CrashBackend, CrashMode, FaultBackend, FaultKind,
    FaultOp, FaultRule, MemBackend,
};
use storage::page::{get_u32, get_u64};
use storage::{Backend, OpenMode, PAGE_SIZE};

mod common;
use common::config;

const DOCS: usize = 300;
const BODY: usize = 24; // page header bytes before the body

fn doc(i: usize) -> Vec<Item> {
    vec![
        Item {
            name: "N".into(),
            value: ItemValue::Number(i as f64),
        },
        Item {
            name: "Body".into(),
            value: ItemValue::Text(format!("{i}-").repeat(40)),
        },
    ]
}

/// A database of `DOCS` documents, one with an attachment small enough
/// for a blob page (larger ones go to the attachment store).
fn build(be: Arc<dyn Backend>) -> Vec<(Unid, usize)> {
    let (engine, _) = Engine::open(be, config(true)).unwrap();
    let db = engine.create_database("a.fdb", "Title").unwrap();
    let docs: Vec<(Unid, usize)> = (0..DOCS)
        .map(|i| (db.create(doc(i)).unwrap().unid, i))
        .collect();
    let content = vec![7u8; 4_000];
    db.put_attachment(
        docs[0].0,
        "a.bin",
        "application/octet-stream",
        &mut &content[..],
    )
    .unwrap();
    drop(db);
    engine.close().unwrap();
    docs
}

fn page(be: &dyn Backend, id: u32) -> Vec<u8> {
    let f = be
        .open(Path::new("/data/a.fdb"), OpenMode::Existing)
        .unwrap();
    let mut buf = vec![0u8; PAGE_SIZE];
    read_exact_at(f.as_ref(), &mut buf, id as u64 * PAGE_SIZE as u64).unwrap();
    buf
}

fn corrupt(be: &dyn Backend, id: u32) {
    let f = be
        .open(Path::new("/data/a.fdb"), OpenMode::Existing)
        .unwrap();
    write_all_at(
        f.as_ref(),
        b"garbage garbage garbage",
        id as u64 * PAGE_SIZE as u64 + 4000,
    )
    .unwrap();
    f.sync_data().unwrap();
}

/// Roots from the header: note table, UNID index, seq index.
fn roots(be: &dyn Backend) -> [u32; 3] {
    let h = page(be, 0);
    [
        get_u32(&h, BODY + 56),
        get_u32(&h, BODY + 60),
        get_u32(&h, BODY + 64),
    ]
}

fn instance(be: &dyn Backend) -> u64 {
    get_u64(&page(be, 0), BODY + 24)
}

fn first_page_of_kind(be: &dyn Backend, kind: u8) -> u32 {
    let len = be
        .open(Path::new("/data/a.fdb"), OpenMode::Existing)
        .unwrap()
        .len()
        .unwrap();
    (1..(len / PAGE_SIZE as u64) as u32)
        .find(|&p| page(be, p)[4] == kind)
        .expect("a page of that kind")
}

/// Every document is readable with its content, or reported lost; the
/// database checks clean and takes writes.
fn verify(engine: &Engine, docs: &[(Unid, usize)], report: &FixupReport) -> usize {
    let lost: HashSet<Unid> = report.notes_lost.iter().filter_map(|l| l.unid).collect();
    let db = engine.open_database("a.fdb").unwrap();
    let mut readable = 0;
    for (u, i) in docs {
        match db.get(*u) {
            Ok(n) => {
                assert_eq!(n.item("N").unwrap().value, ItemValue::Number(*i as f64));
                readable += 1;
            }
            Err(e) => assert!(
                lost.contains(u),
                "document {i} neither readable nor reported lost: {e}"
            ),
        }
    }
    db.check().unwrap();
    let u = db.create(doc(9999)).unwrap().unid;
    assert!(db.get(u).is_ok());
    assert_eq!(
        db.state(),
        DbState::Open {
            unclean_open: false
        }
    );
    readable
}

/// Corrupts `target` of a fresh database, runs a dry run (nothing
/// changes) and a fixup, checks the outcome; returns the report and how
/// many documents are readable.
fn case(target: impl Fn(&dyn Backend) -> u32) -> (FixupReport, usize) {
    let disk = MemBackend::new();
    let be: Arc<dyn Backend> = Arc::new(disk.clone());
    let docs = build(be.clone());
    let old = instance(&disk);
    let bad = target(&disk);
    corrupt(&disk, bad);
    let before = read_file(&disk, Path::new("/data/a.fdb")).unwrap();
    let (engine, _) = Engine::open(be.clone(), config(true)).unwrap();
    let dry = engine.fixup("a.fdb", true).unwrap();
    assert!(dry.dry_run && dry.new_instance.is_none());
    assert_eq!(
        read_file(&disk, Path::new("/data/a.fdb")).unwrap(),
        before,
        "a dry run writes nothing"
    );
    let report = engine.fixup("a.fdb", false).unwrap();
    assert!(report.pages_bad >= 1, "{report}");
    assert!(report.bad_pages.iter().any(|p| p.page == bad), "{report}");
    let new = instance(&disk);
    assert_ne!(new, old, "a new instance id");
    assert_eq!(report.new_instance.map(|i| i.0), Some(new));
    let readable = verify(&engine, &docs, &report);
    let text = report.to_string();
    assert!(text.contains("new backup"), "{text}");
    engine.close().unwrap();
    // And it stays so across a restart.
    let (engine, _) = Engine::open(be, config(true)).unwrap();
    verify(&engine, &docs, &report);
    engine.close().unwrap();
    (report, readable)
}

#[test]
fn header_page() {
    let (r, readable) = case(|_| 0);
    assert!(r.header_lost && r.lost_anything(), "{r}");
    assert_eq!(readable, DOCS, "every note is found in the leaves: {r}");
}

#[test]
fn note_table_interior_page() {
    let (r, readable) = case(|be| roots(be)[0]);
    assert!(r.notes_from_orphan_pages > 0, "{r}");
    assert_eq!(
        readable, DOCS,
        "leaves under a lost interior page are searched: {r}"
    );
}

#[test]
fn note_table_leaf_page() {
    let (r, readable) = case(|be| {
        let root = page(be, roots(be)[0]);
        get_u32(&root, BODY + 4) // the leftmost child
    });
    assert_eq!(readable + r.notes_lost.len(), DOCS, "{r}");
    assert!(
        r.notes_lost.iter().all(|l| l.unid.is_some()),
        "lost notes are named: {r}"
    );
}

#[test]
fn unid_index_page() {
    let (r, readable) = case(|be| roots(be)[1]);
    assert!(!r.indexes_agreed && !r.lost_anything(), "{r}");
    assert_eq!(readable, DOCS);
}

#[test]
fn seq_index_page() {
    let (r, readable) = case(|be| roots(be)[2]);
    assert!(!r.indexes_agreed && !r.lost_anything(), "{r}");
    assert_eq!(readable, DOCS);
}

#[test]
fn attachment_page() {
    let (r, readable) = case(|be| first_page_of_kind(be, 6));
    assert_eq!(r.attachments_lost.len(), 1, "{r}");
    assert_eq!(r.attachments_lost[0].name, "a.bin");
    assert_eq!(readable, DOCS, "the note is kept without its attachment");
}

#[test]
fn a_clean_database_loses_nothing() {
    let disk = MemBackend::new();
    let be: Arc<dyn Backend> = Arc::new(disk.clone());
    let docs = build(be.clone());
    let (engine, _) = Engine::open(be, config(true)).unwrap();
    let r = engine.fixup("a.fdb", false).unwrap();
    assert!(r.clean(), "{r}");
    assert_eq!(verify(&engine, &docs, &r), DOCS);
    let db = engine.open_database("a.fdb").unwrap();
    let mut content = Vec::new();
    std::io::copy(
        &mut db.open_attachment(docs[0].0, "a.bin").unwrap(),
        &mut content,
    )
    .unwrap();
    assert_eq!(content, vec![7u8; 4_000]);
    assert_eq!(db.info().unwrap().title, "Title");
    drop(db);
    engine.close().unwrap();
}

#[test]
fn an_open_database_is_not_fixed_up_under_its_users() {
    let disk = MemBackend::new();
    let be: Arc<dyn Backend> = Arc::new(disk.clone());
    build(be.clone());
    let (engine, _) = Engine::open(be, config(true)).unwrap();
    let db = engine.open_database("a.fdb").unwrap();
    let e = engine.fixup("a.fdb", false).unwrap_err();
    assert!(e.to_string().contains("open"), "{e}");
    drop(db);
    engine.close().unwrap();
}

#[test]
fn a_crash_during_fixup_leaves_the_old_file_or_the_new_one() {
    let mut saw_old = false;
    let mut saw_new = false;
    for k in 1.. {
        let crash = Arc::new(CrashBackend::new());
        let docs = build(crash.clone());
        corrupt(crash.as_ref(), roots(crash.as_ref())[1]);
        let old_bytes = read_file(crash.as_ref(), Path::new("/data/a.fdb")).unwrap();
        let old = instance(crash.as_ref());
        let (engine, _) = Engine::open(crash.clone(), config(true)).unwrap();
        crash.arm_crash(crash.sync_count() + k, CrashMode::DropUnsynced);
        let outcome = engine.fixup("a.fdb", false);
        drop(engine);
        let Some(image) = crash.crashed_image() else {
            assert!(outcome.is_ok(), "no crash: the fixup completed");
            break;
        };
        let bytes = read_file(&image, Path::new("/data/a.fdb")).unwrap();
        if bytes == old_bytes {
            saw_old = true;
        } else {
            assert_ne!(
                instance(&image),
                old,
                "not the old file: must be the new one"
            );
            saw_new = true;
        }
        // Whichever it is, the next start repairs or keeps it and every
        // document is there (an interrupted fixup is finished by
        // automatic fixup).
        let (engine, _) = Engine::open(Arc::new(image), config(true)).unwrap();
        if engine.fixups().is_empty() {
            // The crash came before the fixup was recorded: the old,
            // damaged file is as it was, and a fixup now repairs it.
            engine.fixup("a.fdb", false).unwrap();
        }
        let db = engine.open_database("a.fdb").unwrap();
        for (u, i) in &docs {
            assert_eq!(
                db.get(*u).unwrap().item("N").unwrap().value,
                ItemValue::Number(*i as f64)
            );
        }
        db.create(doc(1)).unwrap();
        drop(db);
        engine.close().unwrap();
    }
    assert!(
        saw_old && saw_new,
        "crashes both before and after the swap were tried"
    );
}

/// A database whose file cannot be written during restart recovery is
/// unrecoverable; automatic fixup repairs it at that start.
fn unrecoverable(auto_fixup: bool) -> (MemBackend, Vec<(Unid, usize)>, Engine) {
    let disk = MemBackend::new();
    let (engine, _) = Engine::open(Arc::new(disk.clone()), config(true)).unwrap();
    let db = engine.create_database("a.fdb", "").unwrap();
    let docs: Vec<(Unid, usize)> = (0..20)
        .map(|i| (db.create(doc(i)).unwrap().unid, i))
        .collect();
    engine.checkpoint().unwrap();
    db.create(doc(100)).unwrap(); // only in the log
    drop(db);
    drop(engine); // a crash: no clean close
    let faulty = Arc::new(FaultBackend::new(Arc::new(disk.clone())));
    faulty.add_rule(FaultRule {
        path_contains: Some("a.fdb".into()),
        ..FaultRule::new(FaultOp::Write, FaultKind::Eio)
    });
    let mut cfg = config(true);
    cfg.auto_fixup = auto_fixup;
    let (engine, report) = Engine::open(faulty, cfg).unwrap();
    assert_eq!(report.unwrap().failed_databases.len(), 1);
    (disk, docs, engine)
}

#[test]
fn automatic_fixup_at_restart() {
    let (_disk, docs, engine) = unrecoverable(true);
    assert_eq!(engine.fixups().len(), 1, "fixed up at open");
    assert!(engine.fixups()[0].new_instance.is_some());
    assert!(engine.needing_fixup().is_empty());
    let db = engine.open_database("a.fdb").unwrap();
    assert_eq!(
        db.state(),
        DbState::Open {
            unclean_open: false
        }
    );
    for (u, i) in &docs {
        assert_eq!(
            db.get(*u).unwrap().item("N").unwrap().value,
            ItemValue::Number(*i as f64)
        );
    }
    db.create(doc(5)).unwrap();
    drop(db);
    engine.close().unwrap();
}

#[test]
fn without_automatic_fixup_it_stays_refused_across_restarts() {
    let (disk, _docs, engine) = unrecoverable(false);
    assert!(engine.fixups().is_empty());
    let check = |engine: &Engine| {
        let db = engine.open_database("a.fdb").unwrap();
        match db.state() {
            DbState::Refused { reason, .. } => {
                assert_eq!(reason.kind, ReasonKind::NeedsFixup);
                assert!(reason.text.contains("fixup"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        let e = db.create(doc(1)).unwrap_err();
        assert!(e.to_string().contains("needs fixup"), "{e}");
    };
    check(&engine);
    engine.close().unwrap();
    let mut cfg = config(true);
    cfg.auto_fixup = false;
    let (engine, _) = Engine::open(Arc::new(disk.clone()), cfg).unwrap();
    check(&engine);
    let r = engine.fixup("a.fdb", false).unwrap();
    assert!(r.new_instance.is_some());
    assert!(engine.needing_fixup().is_empty());
    engine
        .open_database("a.fdb")
        .unwrap()
        .create(doc(2))
        .unwrap();
    engine.close().unwrap();
}

#[test]
fn a_failed_database_does_not_hold_the_log_back() {
    let disk = MemBackend::new();
    let faulty = Arc::new(FaultBackend::new(Arc::new(disk.clone())));
    let (engine, _) = Engine::open(faulty.clone(), config(true)).unwrap();
    let a = engine.create_database("a.fdb", "").unwrap();
    let b = engine.create_database("b.fdb", "").unwrap();
    for i in 0..10 {
        a.create(doc(i)).unwrap();
    }
    faulty.add_rule(FaultRule {
        path_contains: Some("a.fdb".into()),
        sticky: true,
        ..FaultRule::new(FaultOp::Write, FaultKind::Eio)
    });
    engine.checkpoint().unwrap();
    assert!(matches!(a.state(), DbState::Failed { .. }));
    let capacity = engine.log_info().unwrap().capacity;
    let start = engine.log_info().unwrap().end_lsn.0;
    let mut i = 0;
    while engine.log_info().unwrap().end_lsn.0 - start < 2 * capacity {
        b.create(doc(i))
            .unwrap_or_else(|e| panic!("write {i} to the healthy database: {e}"));
        i += 1;
        if i % 20 == 0 {
            engine.checkpoint().unwrap();
        }
    }
    assert_eq!(engine.needing_fixup().len(), 1, "retired: needs fixup");
    drop((a, b));
    drop(engine);
    // Restart (a crash): the failed database's records are never applied
    // (I29); automatic fixup gives it a new instance.
    let (engine, report) = Engine::open(Arc::new(disk), config(true)).unwrap();
    assert!(report.unwrap().failed_databases.is_empty());
    assert_eq!(engine.fixups().len(), 1);
    engine
        .open_database("a.fdb")
        .unwrap()
        .create(doc(1))
        .unwrap();
    engine.open_database("b.fdb").unwrap().check().unwrap();
    engine.close().unwrap();
}

/// The replication tree (revisions and histories, I30) lies outside the
/// rebuilt trees: a fixup after a damaged index keeps it as it was, so the
/// next replication is still incremental and edits keep their ancestry.
#[test]
fn fixup_keeps_a_whole_replication_tree() {
    let disk = MemBackend::new();
    let be: Arc<dyn Backend> = Arc::new(disk.clone());
    let docs = build(be.clone());
    let (engine, _) = Engine::open(be.clone(), config(true)).unwrap();
    let db = engine.open_database("a.fdb").unwrap();
    db.put_replication_history(b"peer", b"seen 42").unwrap();
    db.update(
        docs[1].0,
        doc(1).into_iter().map(nsf::ItemUpdate::Set).collect(),
        None,
        false,
    )
    .unwrap();
    let revisions = db.revisions(docs[1].0).unwrap();
    assert_eq!(revisions.len(), 1, "an update records the replaced version");
    drop(db);
    engine.close().unwrap();
    corrupt(be.as_ref(), roots(be.as_ref())[2]);
    let (engine, _) = Engine::open(be, config(true)).unwrap();
    let r = engine.fixup("a.fdb", false).unwrap();
    assert!(!r.indexes_agreed && !r.lost_anything(), "{r}");
    let db = engine.open_database("a.fdb").unwrap();
    assert_eq!(
        db.replication_histories().unwrap(),
        vec![(b"peer".to_vec(), b"seen 42".to_vec())]
    );
    assert_eq!(db.revisions(docs[1].0).unwrap(), revisions);
    drop(db);
    engine.close().unwrap();
}
