//! Access control end to end: every level against every operation for
//! named and anonymous callers, Reader and Author items on real documents
//! (and their deletion stubs), the ACL's JSON errors, and the ACL's
//! durability across clean reopens, crashes and a simulated power cut.

use nsf::{
    items_from_json, note_to_json, Access, AccessLevel, Acl, AclEntry, AclError, Database, Engine,
    Item, ItemUpdate, ItemValue, Note, NsfError, Unid, UnknownLevel,
};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use storage::backend::{CrashBackend, CrashMode, MemBackend};
use storage::Backend;

mod common;
use common::config;

fn open(backend: Arc<dyn Backend>, logged: bool) -> Engine {
    Engine::open(backend, config(logged)).unwrap().0
}

fn text(name: &str, v: &str) -> Item {
    Item {
        name: name.into(),
        value: ItemValue::Text(v.into()),
    }
}

fn names(name: &str, v: &[&str]) -> Item {
    Item {
        name: name.into(),
        value: ItemValue::TextList(v.iter().map(|s| s.to_string()).collect()),
    }
}

/// The documents every caller is checked against.
struct Docs {
    plain: Note,
    listed: Note,
    unlisted: Note,
    by_role: Note,
    by_star: Note,
    by_authors: Note,
    authored: Note,
    authored_by_other: Note,
}

fn create(db: &Database, items: Vec<Item>) -> Note {
    let unid = db.create(items).unwrap().unid;
    db.get(unid).unwrap()
}

fn docs(db: &Database) -> Docs {
    let subject = || text("Subject", "x");
    Docs {
        plain: create(db, vec![subject()]),
        listed: create(db, vec![subject(), names("$Readers", &["someone", "USER"])]),
        unlisted: create(db, vec![subject(), names("$Readers", &["someone"])]),
        by_role: create(db, vec![subject(), names("$Readers", &["[sales]"])]),
        by_star: create(db, vec![subject(), text("$Readers", "*")]),
        by_authors: create(
            db,
            vec![
                subject(),
                names("$Readers", &["someone"]),
                names("$Authors", &[" user "]),
            ],
        ),
        authored: create(db, vec![subject(), names("$Authors", &["user"])]),
        authored_by_other: create(db, vec![subject(), names("$Authors", &["someone"])]),
    }
}

/// One row of the matrix: what a caller may do.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
struct Row {
    read_plain: bool,
    read_listed: bool,
    read_unlisted: bool,
    read_by_role: bool,
    read_by_star: bool,
    read_by_authors: bool,
    create: bool,
    edit_plain: bool,
    edit_authored: bool,
    edit_authored_by_other: bool,
    delete_plain: bool,
    delete_authored: bool,
    design: bool,
    manage: bool,
}

fn row(a: &Access, d: &Docs) -> Row {
    Row {
        read_plain: a.can_read(&d.plain),
        read_listed: a.can_read(&d.listed),
        read_unlisted: a.can_read(&d.unlisted),
        read_by_role: a.can_read(&d.by_role),
        read_by_star: a.can_read(&d.by_star),
        read_by_authors: a.can_read(&d.by_authors),
        create: a.can_create(),
        edit_plain: a.can_edit(&d.plain),
        edit_authored: a.can_edit(&d.authored),
        edit_authored_by_other: a.can_edit(&d.authored_by_other),
        delete_plain: a.can_delete(&d.plain),
        delete_authored: a.can_delete(&d.authored),
        design: a.can_design(),
        manage: a.can_manage(),
    }
}

/// Builds a row from a string of 14 flags, `1` allowed and `.` refused,
/// in the field order of [`Row`].
fn expect(flags: &str) -> Row {
    let f: Vec<bool> = flags
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| c == '1')
        .collect();
    assert_eq!(f.len(), 14, "{flags}");
    Row {
        read_plain: f[0],
        read_listed: f[1],
        read_unlisted: f[2],
        read_by_role: f[3],
        read_by_star: f[4],
        read_by_authors: f[5],
        create: f[6],
        edit_plain: f[7],
        edit_authored: f[8],
        edit_authored_by_other: f[9],
        delete_plain: f[10],
        delete_authored: f[11],
        design: f[12],
        manage: f[13],
    }
}

//                      reads: plain listed unlisted role star authors | create | edit: plain authored other | delete: plain authored | design manage
const NAMED: [(AccessLevel, &str); 7] = [
    (AccessLevel::NoAccess, "...... . ... .. .."),
    (AccessLevel::Depositor, "...... 1 ... .. .."),
    (AccessLevel::Reader, "11.111 . ... .. .."),
    (AccessLevel::Author, "11.111 1 .1. .. .."),
    (AccessLevel::Editor, "11.111 1 111 11 .."),
    (AccessLevel::Designer, "11.111 1 111 11 1."),
    (AccessLevel::Manager, "11.111 1 111 11 11"),
];

/// Anonymous callers have no name and no roles: only `*` admits them to a
/// document with readers, and no `$Authors` lists them.
const ANONYMOUS: [(AccessLevel, &str); 7] = [
    (AccessLevel::NoAccess, "...... . ... .. .."),
    (AccessLevel::Depositor, "...... 1 ... .. .."),
    (AccessLevel::Reader, "1...1. . ... .. .."),
    (AccessLevel::Author, "1...1. 1 ... .. .."),
    (AccessLevel::Editor, "1...1. 1 111 11 .."),
    (AccessLevel::Designer, "1...1. 1 111 11 1."),
    (AccessLevel::Manager, "1...1. 1 111 11 11"),
];

fn with_entry(level: AccessLevel) -> Acl {
    let mut acl = Acl::for_creator(None);
    acl.roles = vec!["Sales".into()];
    let mut e = AclEntry::new("User", level);
    e.roles = vec!["Sales".into()];
    acl.entries.push(e);
    acl
}

#[test]
fn every_level_against_every_operation() {
    let engine = open(Arc::new(MemBackend::new()), true);
    let db = engine.create_database("m.fdb", "").unwrap();
    let d = docs(&db);
    for (level, flags) in NAMED {
        let acl = with_entry(level);
        let a = acl.access(Some("user"));
        assert_eq!((a.level(), a.user()), (level, Some("user")));
        assert_eq!(a.roles(), ["Sales"]);
        assert_eq!(row(&a, &d), expect(flags), "named {level}");
        // The same level reached through `default` has no roles.
        let mut by_default = Acl::for_creator(None);
        by_default.default = level;
        let a = by_default.access(Some("user"));
        let mut want = expect(flags);
        want.read_by_role = false;
        assert_eq!(row(&a, &d), want, "default {level}");
    }
    for (level, flags) in ANONYMOUS {
        let mut acl = with_entry(AccessLevel::Manager);
        acl.anonymous = level;
        let a = acl.access(None);
        assert_eq!((a.level(), a.user(), a.roles()), (level, None, &[][..]));
        assert_eq!(row(&a, &d), expect(flags), "anonymous {level}");
    }
    let full = Access::full();
    assert_eq!(row(&full, &d), expect("111111 1 111 11 11"));
    assert_eq!(full.level(), AccessLevel::Manager);
    engine.close().unwrap();
}

#[test]
fn create_and_delete_flags_narrow_the_level() {
    let engine = open(Arc::new(MemBackend::new()), true);
    let db = engine.create_database("f.fdb", "").unwrap();
    let d = docs(&db);
    let acl = Acl::parse_json(
        r#"{"entries":[
            {"name":"dep","level":"depositor","create_documents":false},
            {"name":"user","level":"author","create_documents":false,"delete_documents":true},
            {"name":"ed","level":"editor","create_documents":false,"delete_documents":false},
            {"name":"man","level":"manager","delete_documents":false},
            {"name":"rdr","level":"reader","create_documents":true}]}"#,
    )
    .unwrap();
    let a = |n| acl.access(Some(n));
    assert!(!a("dep").can_create(), "a Depositor without the flag");
    assert!(!a("user").can_create(), "an Author without the flag");
    assert!(a("ed").can_create(), "Editors always create");
    assert!(
        a("rdr").can_create(),
        "the flag lets any level from Depositor create"
    );
    assert!(a("user").can_delete(&d.authored), "Author with the flag");
    assert!(!a("user").can_delete(&d.plain), "but only what it may edit");
    assert!(!a("ed").can_delete(&d.plain) && a("ed").can_edit(&d.plain));
    assert!(!a("man").can_delete(&d.plain) && a("man").can_manage());
    engine.close().unwrap();
}

#[test]
fn design_notes_need_designer_and_the_acl_note_needs_manager() {
    let engine = open(Arc::new(MemBackend::new()), true);
    let db = engine.create_database("d.fdb", "").unwrap();
    let view = db
        .index_write(|tx| tx.create_note(vec![text("$DesignType", "view"), text("$Title", "V")]))
        .unwrap();
    let view = db.get(view.unid).unwrap();
    db.set_acl(&Acl::for_creator(Some("boss"))).unwrap();
    let acl_note = db.get(db.acl_unid()).unwrap();
    let acl = with_entry(AccessLevel::Manager);
    for level in AccessLevel::ALL {
        let mut acl = acl.clone();
        acl.entries[0].level = level;
        let a = acl.access(Some("user"));
        assert_eq!(a.can_read(&view), level >= AccessLevel::Reader, "{level}");
        assert_eq!(a.can_edit(&view), level >= AccessLevel::Designer, "{level}");
        assert_eq!(a.can_delete(&view), level >= AccessLevel::Designer);
        assert_eq!(a.can_read(&acl_note), level == AccessLevel::Manager);
        assert_eq!(a.can_edit(&acl_note), level == AccessLevel::Manager);
    }
    assert!(Access::full().can_read(&acl_note));
    engine.close().unwrap();
}

#[test]
fn lazy_checks_agree_with_full_notes_and_stubs_keep_their_readers() {
    let engine = open(Arc::new(MemBackend::new()), true);
    let db = engine.create_database("r.fdb", "").unwrap();
    let d = docs(&db);
    db.set_acl(&with_entry(AccessLevel::Editor)).unwrap();
    let mut callers: Vec<Access> = AccessLevel::ALL
        .into_iter()
        .flat_map(|l| {
            let mut anon = with_entry(l);
            anon.anonymous = l;
            [with_entry(l).access(Some("user")), anon.access(None)]
        })
        .collect();
    callers.push(Access::full());
    let mut seen = 0;
    db.for_each_note_ref(|r| {
        let n = r.to_note().unwrap();
        for a in &callers {
            assert_eq!(a.can_read_ref(r).unwrap(), a.can_read(&n), "{a:?} {n:?}");
        }
        seen += 1;
        Ok::<_, NsfError>(())
    })
    .unwrap();
    assert_eq!(seen, 9, "eight documents and the ACL note");

    db.delete(d.unlisted.oid.unid, None, false).unwrap();
    db.delete(d.plain.oid.unid, None, false).unwrap();
    let stub = db.get_any(d.unlisted.oid.unid).unwrap();
    assert!(stub.deleted);
    assert_eq!(stub.items, vec![names("$Readers", &["someone"])]);
    let manager = with_entry(AccessLevel::Manager).access(Some("user"));
    assert!(!manager.can_read(&stub), "the stub is as restricted");
    let mut readers = with_entry(AccessLevel::Manager);
    readers.default = AccessLevel::Reader;
    assert!(readers.access(Some("someone")).can_read(&stub));
    let plain_stub = db.get_any(d.plain.oid.unid).unwrap();
    assert!(plain_stub.items.is_empty() && manager.can_read(&plain_stub));
    engine.close().unwrap();
}

#[test]
fn acl_json_errors_are_precise() {
    let err = |json: &str| match Acl::parse_json(json) {
        Err(NsfError::Acl(e)) => e,
        other => panic!("{json}: expected an ACL error, got {other:?}"),
    };
    let e = err(r#"{"entries":[{"name":"bob","level":"boss"}]}"#);
    assert_eq!(
        e,
        AclError::BadLevel {
            at: r#"entry 1 ("bob")"#.into(),
            source: UnknownLevel("boss".into()),
        }
    );
    assert_eq!(
        e.to_string(),
        r#"entry 1 ("bob"): unknown access level "boss"; the levels are manager, designer, editor, author, reader, depositor and noaccess"#
    );
    let e = err(r#"{"default":"Readers"}"#);
    assert!(
        matches!(&e, AclError::BadLevel { at, .. } if at == "default"),
        "{e}"
    );
    let e = err(r#"{"anonymous":"guest"}"#);
    assert!(
        matches!(&e, AclError::BadLevel { at, .. } if at == "anonymous"),
        "{e}"
    );
    let e = err(
        r#"{"roles":["Sales"],"entries":[{"name":"bob","level":"reader","roles":["Sales","HR"]}]}"#,
    );
    assert_eq!(
        e,
        AclError::UnknownRole {
            name: "bob".into(),
            role: "HR".into()
        }
    );
    assert_eq!(
        e.to_string(),
        r#"entry "bob" has role "HR", which the list does not define (add it to "roles")"#
    );
    let e = err(
        r#"{"entries":[{"name":"Alice","level":"reader"},{"name":"x","level":"reader"},{"name":"alice","level":"editor"}]}"#,
    );
    assert_eq!(
        e,
        AclError::DuplicateName {
            first: 1,
            entry: 3,
            name: "alice".into()
        }
    );
    assert_eq!(
        e.to_string(),
        r#"entries 1 and 3 have the same name "alice" (names ignore case)"#
    );
    let e = err(r#"{"roles":["Sales","SALES"]}"#);
    assert_eq!(
        e,
        AclError::DuplicateRole {
            role: "SALES".into()
        }
    );
    let e = err(r#"{"roles":["[Sales]"]}"#);
    assert!(matches!(e, AclError::BadRole { .. }), "{e}");
    for (name, reason) in [
        ("", "must not be empty"),
        (" bob", "spaces"),
        ("*", "mean everyone"),
        ("[Sales]", "roles"),
    ] {
        let json = json!({ "entries": [{ "name": name, "level": "reader" }] }).to_string();
        match err(&json) {
            AclError::BadName {
                entry: 1,
                reason: r,
                ..
            } => assert!(r.contains(reason), "{r}"),
            other => panic!("{name:?}: {other}"),
        }
    }
    let e = err(r#"{"entries":[{"name":"bob","level":"reader","admin":true}]}"#);
    assert!(
        matches!(&e, AclError::Json(m) if m.contains("unknown field `admin`")),
        "{e}"
    );
    assert!(matches!(err("[1,2]"), AclError::Json(_)));
    assert!(matches!(err(r#"{"default":"#), AclError::Json(_)));
    let many: Vec<_> = (0..10_001)
        .map(|i| json!({ "name": format!("u{i}"), "level": "reader" }))
        .collect();
    let e = err(&json!({ "entries": many }).to_string());
    assert_eq!(
        e,
        AclError::TooMany {
            what: "entries",
            count: 10_001,
            limit: 10_000
        }
    );
    let huge = format!(r#"{{"roles":["{}"]}}"#, "x".repeat(5 << 20));
    assert!(matches!(err(&huge), AclError::TooLarge { .. }));
}

#[test]
fn set_acl_validates_and_the_acl_note_changes_only_through_it() {
    let engine = open(Arc::new(MemBackend::new()), true);
    let db = engine.create_database("v.fdb", "").unwrap();
    assert_eq!(db.acl().unwrap(), None, "no list until one is set");
    let mut bad = Acl::for_creator(Some("alice"));
    bad.entries[0].roles = vec!["Ghost".into()];
    let e = db.set_acl(&bad).unwrap_err();
    assert!(
        matches!(e, NsfError::Acl(AclError::UnknownRole { .. })),
        "{e}"
    );
    assert_eq!(db.acl().unwrap(), None, "a refused list changes nothing");

    let first = db.set_acl(&Acl::for_creator(Some("alice"))).unwrap();
    assert_eq!(first.unid, db.acl_unid());
    assert_eq!(first.seq_num, 1);
    let acl_note = db.get(db.acl_unid()).unwrap();
    assert_eq!(
        acl_note.item("$DesignType").unwrap().value,
        ItemValue::Text("acl".into())
    );
    let e = db
        .update(
            db.acl_unid(),
            vec![ItemUpdate::Set(text("Subject", "x"))],
            None,
            false,
        )
        .unwrap_err();
    assert!(matches!(e, NsfError::AclNote { .. }), "{e}");
    let e = db.delete(db.acl_unid(), None, false).unwrap_err();
    assert!(e.to_string().contains("set_acl"), "{e}");

    let mut next = Acl::for_creator(Some("alice"));
    next.default = AccessLevel::Reader;
    let second = db.set_acl(&next).unwrap();
    assert_eq!(
        (second.unid, second.seq_num, second.note_id),
        (first.unid, 2, first.note_id)
    );
    assert_eq!(db.acl().unwrap(), Some(next), "the cache follows the write");
    assert_eq!(db.check().unwrap().notes, 1);
    engine.close().unwrap();
}

fn sample_acl() -> Acl {
    Acl::parse_json(
        r#"{"default":"reader","anonymous":"depositor","roles":["Sales","HR"],
            "entries":[{"name":"alice","level":"manager","roles":["Sales"]},
                       {"name":"bob","level":"author","roles":["HR","Sales"],"delete_documents":true}]}"#,
    )
    .unwrap()
}

#[test]
fn the_acl_survives_reopen_and_crash() {
    for logged in [true, false] {
        let disk = MemBackend::new();
        let engine = open(Arc::new(disk.clone()), logged);
        let db = engine.create_database("a.fdb", "").unwrap();
        db.set_acl(&sample_acl()).unwrap();
        let unid = db.acl_unid();
        drop(db);
        engine.close().unwrap();

        let engine = open(Arc::new(disk.clone()), logged);
        let db = engine.open_database("a.fdb").unwrap();
        assert_eq!(db.acl().unwrap(), Some(sample_acl()), "logged: {logged}");
        assert_eq!(db.acl_unid(), unid);
        let mut changed = sample_acl();
        changed.anonymous = AccessLevel::NoAccess;
        db.set_acl(&changed).unwrap();
        drop(db);
        drop(engine); // a crash: no flush, no checkpoint

        let engine = open(Arc::new(disk), logged);
        let db = engine.open_database("a.fdb").unwrap();
        assert_eq!(db.acl().unwrap(), Some(changed), "logged: {logged}");
        db.check().unwrap();
        drop(db);
        engine.close().unwrap();
    }
}

#[test]
fn the_acl_survives_a_power_cut_once_set_acl_returns() {
    let disk = Arc::new(CrashBackend::new());
    let engine = open(disk.clone(), true);
    let db = engine.create_database("p.fdb", "").unwrap();
    db.create(vec![text("Subject", "before")]).unwrap();
    db.set_acl(&sample_acl()).unwrap();
    let image = disk.crash_now(CrashMode::DropUnsynced);
    drop(db);
    drop(engine);
    let (engine, report) = Engine::open(Arc::new(image), config(true)).unwrap();
    assert!(report.unwrap().failed_databases.is_empty());
    let db = engine.open_database("p.fdb").unwrap();
    assert_eq!(db.acl().unwrap(), Some(sample_acl()));
    db.check().unwrap();
    drop(db);
    engine.close().unwrap();
}

#[test]
fn readers_see_each_acl_set_and_the_last_one_after() {
    let engine = open(Arc::new(MemBackend::new()), true);
    let db = engine.create_database("c.fdb", "").unwrap();
    let levels = [
        AccessLevel::Reader,
        AccessLevel::Author,
        AccessLevel::Editor,
    ];
    let acl_at = |i: usize| {
        let mut a = Acl::for_creator(Some("alice"));
        a.default = levels[i % levels.len()];
        a.entries
            .push(AclEntry::new(format!("u{i}"), AccessLevel::Reader));
        a
    };
    let done = AtomicBool::new(false);
    let mut reads = 0;
    db.set_acl(&acl_at(0)).unwrap();
    std::thread::scope(|s| {
        let readers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    // At least one read per reader, however the threads
                    // are scheduled; more while the writer runs.
                    let mut reads = 0;
                    loop {
                        let stop = done.load(Ordering::Acquire);
                        let acl = db.acl().unwrap().expect("set before the readers start");
                        let i: usize = acl.entries[1].name[1..].parse().unwrap();
                        assert_eq!(acl, acl_at(i), "a list that was set, whole");
                        reads += 1;
                        if stop {
                            return reads;
                        }
                    }
                })
            })
            .collect();
        for i in 1..60 {
            db.set_acl(&acl_at(i)).unwrap();
        }
        done.store(true, Ordering::Release);
        reads = readers.into_iter().map(|r| r.join().unwrap()).sum();
    });
    assert!(reads > 0);
    assert_eq!(db.acl().unwrap(), Some(acl_at(59)));
    engine.close().unwrap();
}

#[test]
fn reader_items_round_trip_through_json_and_other_dollar_keys_do_not() {
    let engine = open(Arc::new(MemBackend::new()), true);
    let db = engine.create_database("j.fdb", "").unwrap();
    let input = json!({
        "Subject": "hi",
        "$Readers": ["alice", "[Sales]"],
        "$Authors": "alice",
        "$Bogus": "skipped",
    });
    let sets = |v: &serde_json::Value| -> Vec<Item> {
        items_from_json(v)
            .unwrap()
            .into_iter()
            .map(|u| match u {
                ItemUpdate::Set(i) => i,
                ItemUpdate::Remove(n) => panic!("removal of {n}"),
            })
            .collect()
    };
    let unid: Unid = db.create(sets(&input)).unwrap().unid;
    let out = note_to_json(&db.get(unid).unwrap());
    assert_eq!(out["$Readers"], json!(["alice", "[Sales]"]));
    assert_eq!(out["$Authors"], json!("alice"));
    assert!(out.get("$Bogus").is_none());
    let mut again = sets(&out);
    again.sort_by(|a, b| a.name.cmp(&b.name));
    let mut want = sets(&input);
    want.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(again, want);

    let clear = items_from_json(&json!({ "$Readers": null })).unwrap();
    db.update(unid, clear, None, false).unwrap();
    assert!(db.get(unid).unwrap().item("$Readers").is_none());

    let e = db.create(vec![text("$Bogus", "x")]).unwrap_err();
    assert!(e.to_string().contains("reserved for the system"), "{e}");
    let e = items_from_json(&json!({ "$Readers": 3 })).unwrap_err();
    assert!(
        e.to_string().contains("must be text or a list of text"),
        "{e}"
    );
    engine.close().unwrap();
}
