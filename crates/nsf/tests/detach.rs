//! Removing an attachment (`Database::remove_attachment`): an update that
//! drops the item, durable and logged like any update; the content's
//! pages go back to the free list, or its reference in the attachment
//! store is counted down (design.md §2.9); a missing name or a stale
//! version changes nothing.

use nsf::{Engine, Item, ItemValue, NsfError};
use std::io::Read;
use std::sync::Arc;
use storage::backend::{CrashBackend, CrashMode};

mod common;
use common::config;

fn content(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 253) as u8).collect()
}

#[test]
fn an_attachment_is_removed_by_a_logged_update_and_its_content_released() {
    let disk = Arc::new(CrashBackend::new());
    let (engine, _) = Engine::open(disk.clone(), config(true)).unwrap();
    let db = engine.create_database("a.fdb", "A").unwrap();
    let unid = db
        .create(vec![Item {
            name: "Subject".into(),
            value: ItemValue::Text("with files".into()),
        }])
        .unwrap()
        .unid;
    // Big: in the attachment store; small (under 4 KiB): a blob page.
    let (big, small) = (content(200_000), content(3_000));
    db.put_attachment(unid, "big.bin", "x/y", &mut &big[..])
        .unwrap();
    db.put_attachment(unid, "small.bin", "x/y", &mut &small[..])
        .unwrap();
    let before = db.get(unid).unwrap().oid.seq_num;
    let free_before = db.info().unwrap().free_pages;

    // Refused, changing nothing: a missing name (named), a stale version.
    match db.remove_attachment(unid, "nope.bin", None, false) {
        Err(NsfError::NoSuchAttachment { name, .. }) => assert_eq!(name, "nope.bin"),
        other => panic!("expected NoSuchAttachment, got {other:?}"),
    }
    assert!(matches!(
        db.remove_attachment(unid, "big.bin", Some(before - 1), false),
        Err(NsfError::SaveConflict { .. })
    ));
    assert_eq!(db.get(unid).unwrap().oid.seq_num, before);

    assert_eq!(db.check_store_refs().unwrap().references, 1);
    let meta = db
        .remove_attachment(unid, "big.bin", Some(before), false)
        .unwrap();
    assert_eq!(meta.seq_num, before + 1);
    let refs = db.check_store_refs().unwrap();
    assert!(refs.is_ok() && refs.references == 0, "{refs:?}");
    assert_eq!(engine.sweep_attachment_store().unwrap().removed, 1);
    assert!(matches!(
        db.open_attachment(unid, "big.bin"),
        Err(NsfError::NoSuchAttachment { .. })
    ));
    let mut kept = Vec::new();
    db.open_attachment(unid, "small.bin")
        .unwrap()
        .read_to_end(&mut kept)
        .unwrap();
    assert_eq!(kept, small);
    db.remove_attachment(unid, "small.bin", None, false)
        .unwrap();
    assert!(db.info().unwrap().free_pages > free_before);

    // Durable when it returned: a power cut now keeps the removal.
    let image = disk.crash_now(CrashMode::DropUnsynced);
    let (after, _) = Engine::open(Arc::new(image), config(true)).unwrap();
    let db = after.open_database("a.fdb").unwrap();
    let note = db.get(unid).unwrap();
    let names: Vec<&str> = note.attachments().map(|a| a.name.as_str()).collect();
    assert!(names.is_empty(), "{names:?}");
    db.check().unwrap();
}
