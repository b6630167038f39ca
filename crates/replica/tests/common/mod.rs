//! Helpers shared by the replication tests.
#![allow(dead_code)]

use nsf::Unid;
use replica::msg::ToTarget;
use replica::testkit::{Body, Cluster, ModelDb, Sent};

/// The UNID of test document `i`.
pub fn unid(i: u32) -> Unid {
    let mut bytes = [0u8; 16];
    bytes[..4].copy_from_slice(&i.to_be_bytes());
    bytes[15] = 0xD0;
    Unid(bytes)
}

/// Creates documents `0..n` in `db`, document `i` with a `Subject` item,
/// a `Form` item (`Memo` for even `i`, `Note` otherwise) and, for every
/// third, an attachment of `i` bytes.
pub fn fill(db: &mut ModelDb, n: u32) {
    for i in 0..n {
        db.edit(unid(i), |b| {
            b.items.insert("Subject".into(), format!("document {i}"));
            let form = if i % 2 == 0 { "Memo" } else { "Note" };
            b.items.insert("Form".into(), form.into());
            if i % 3 == 0 {
                b.attachments
                    .insert("file.bin".into(), vec![i as u8; i as usize]);
            }
        });
    }
}

/// Sets `Subject` of document `i` in `db`.
pub fn set_subject(db: &mut ModelDb, i: u32, subject: &str) {
    db.edit(unid(i), |b: &mut Body| {
        b.items.insert("Subject".into(), subject.into());
    });
}

/// The documents sent in a session, in order.
pub fn notes_sent(trace: &[Sent<replica::testkit::ModelVersion, Body>]) -> Vec<Unid> {
    trace
        .iter()
        .filter_map(|m| match m {
            Sent::ToTarget(ToTarget::Note(n)) => Some(n.unid),
            _ => None,
        })
        .collect()
}

/// Asserts every replica of the cluster holds the same documents.
pub fn assert_converged(cluster: &Cluster) {
    let first = cluster.dbs[0].docs();
    for (i, db) in cluster.dbs.iter().enumerate().skip(1) {
        assert_eq!(db.docs(), first, "replica {i} differs from replica 0");
    }
}
