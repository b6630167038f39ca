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

/// I26, checked from outside: for every history entry `target` keeps for
/// `source` (without a selection), every document of the source changed
/// at or before the checkpoint is held by the target at that version or a
/// higher one.
pub fn assert_history_covered(target: &ModelDb, source: &ModelDb) {
    for h in target
        .histories()
        .iter()
        .filter(|h| h.peer == source.peer() && h.selection.is_none())
    {
        for (unid, doc) in source.docs() {
            let Some(change) = source.change_of(unid) else {
                continue;
            };
            if change <= h.seen_upto {
                let held = target.doc(unid).map(|d| d.version);
                assert!(
                    held >= Some(doc.version),
                    "history at {:?} claims {unid} (change {change:?}) but the target holds {held:?}",
                    h.seen_upto
                );
            }
        }
    }
}

/// How many of `source`'s documents `target` does not hold at the same
/// version: what a resumed session must send, and all it may send.
pub fn missing(target: &ModelDb, source: &ModelDb) -> u64 {
    source
        .docs()
        .iter()
        .filter(|(u, d)| target.doc(**u).map(|t| t.version) != Some(d.version))
        .count() as u64
}
