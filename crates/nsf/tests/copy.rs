//! A non-replica copy (`Engine::copy_database`): a new replica id, the
//! same documents (UNIDs, originator ids, items, attachment content) and
//! the same ACL; no stubs; the source untouched; bad requests change
//! nothing.

use nsf::{AccessLevel, Acl, AclEntry, Engine, Item, ItemValue, NsfError};
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Arc;
use storage::backend::MemBackend;

mod common;
use common::config;

fn doc(subject: &str) -> Vec<Item> {
    vec![Item {
        name: "Subject".into(),
        value: ItemValue::Text(subject.into()),
    }]
}

/// UNID → (sequence, Subject) of every document.
fn documents(engine: &Engine, path: &str) -> BTreeMap<nsf::Unid, (u32, String)> {
    let db = engine.open_database(path).unwrap();
    let mut out = BTreeMap::new();
    db.for_each_note(|n| {
        if let Some(ItemValue::Text(t)) = n.item("Subject").map(|i| &i.value) {
            out.insert(n.oid.unid, (n.oid.seq_num, t.clone()));
        }
        Ok(())
    })
    .unwrap();
    out
}

#[test]
fn a_copy_has_the_same_documents_and_acl_under_a_new_replica_id() {
    let disk = MemBackend::new();
    let (engine, _) = Engine::open(Arc::new(disk), config(true)).unwrap();
    let src = engine.create_database("src.fdb", "Source").unwrap();
    let mut acl = Acl::for_creator(Some("admin"));
    acl.entries.push(AclEntry::new("bob", AccessLevel::Editor));
    src.set_acl(&acl).unwrap();
    let mut unids = Vec::new();
    for i in 0..150 {
        unids.push(src.create(doc(&format!("doc {i}"))).unwrap().unid);
    }
    src.update(
        unids[3],
        doc("edited")
            .into_iter()
            .map(nsf::ItemUpdate::Set)
            .collect(),
        None,
        false,
    )
    .unwrap();
    src.delete(unids[4], None, false).unwrap();
    let content: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    src.put_attachment(
        unids[5],
        "data.bin",
        "application/x-test",
        &mut &content[..],
    )
    .unwrap();

    let report = engine.copy_database("src.fdb", "dir/dst.fdb").unwrap();
    assert_eq!(report.documents, 149);
    assert_eq!((report.attachments, report.attachment_bytes), (1, 300_000));

    let dst = engine.open_database("dir/dst.fdb").unwrap();
    let (si, di) = (src.info().unwrap(), dst.info().unwrap());
    assert_ne!(si.replica_id, di.replica_id);
    assert_ne!(si.instance_id, di.instance_id);
    assert_eq!(di.title, "Source");
    assert_eq!(
        documents(&engine, "dir/dst.fdb"),
        documents(&engine, "src.fdb")
    );
    assert_eq!(
        documents(&engine, "dir/dst.fdb")[&unids[3]],
        (2, "edited".to_string())
    );
    assert!(matches!(
        dst.get_any(unids[4]),
        Err(NsfError::NoSuchDocument { .. })
    ));
    let mut copied = Vec::new();
    dst.open_attachment(unids[5], "data.bin")
        .unwrap()
        .read_to_end(&mut copied)
        .unwrap();
    assert_eq!(copied, content);
    assert_eq!(
        dst.acl().unwrap().unwrap().access(Some("bob")).level(),
        AccessLevel::Editor
    );
    // The ACL note is the copy's own (its UNID follows the replica id).
    assert_ne!(dst.acl_unid(), src.acl_unid());

    // Refused, changing nothing: an existing target, a missing source.
    assert!(matches!(
        engine.copy_database("src.fdb", "dir/dst.fdb"),
        Err(NsfError::DatabaseExists(_))
    ));
    assert!(matches!(
        engine.copy_database("nope.fdb", "other.fdb"),
        Err(NsfError::NoSuchDatabase(_))
    ));
    assert_eq!(engine.list_databases().unwrap(), ["dir/dst.fdb", "src.fdb"]);
}
