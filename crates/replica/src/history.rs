//! Replication histories: how far this database has seen each peer.
//!
//! A target keeps one entry per source instance and selection: "every
//! change of that file up to `seen_upto` that the selection picks is
//! written here, as of `at`". The next session asks only for changes after
//! it, which is what makes a rerun cost what changed rather than what
//! exists. The entry is data the driver stores durably with the database
//! (outside its change sequence: saving it must not itself be a change,
//! or every rerun would find one), and it moves only after the writes it
//! covers are durable (I26).
//!
//! An entry is used only for the peer instance and the selection it was
//! made with: another instance numbers its changes afresh, and another
//! selection may have skipped documents this one wants. A source whose
//! last change is below the entry's `seen_upto` is some other life of the
//! file (restored without a new instance id); the entry is ignored. Falling
//! back to 0 is always safe: documents already held are recognised by
//! version and not sent again, only their summaries are.

use crate::ids::Peer;
use crate::wire;
use nsf::{Seq, Timestamp};
use serde::{Deserialize, Serialize};

/// One history entry, as a target keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    /// The source database (replica and instance).
    pub peer: Peer,
    /// The selection formula the entry was made with (`None`: all).
    pub selection: Option<String>,
    /// Every selected change of the peer up to here is written.
    #[serde(with = "wire::seq")]
    pub seen_upto: Seq,
    /// When that checkpoint was reached.
    #[serde(with = "wire::timestamp")]
    pub at: Timestamp,
}

/// Where a session with `peer` starts, given the entries held: the
/// matching entry's `seen_upto`, or 0.
pub fn resume_point(
    entries: &[History],
    peer: Peer,
    selection: Option<&str>,
    peer_high: Seq,
) -> Seq {
    entries
        .iter()
        .find(|h| h.peer == peer && h.selection.as_deref() == selection)
        .map(|h| h.seen_upto)
        .filter(|seen| *seen <= peer_high)
        .unwrap_or(Seq(0))
}

/// Records `entry` in `entries`, replacing the entry for the same peer
/// and selection. (A driver's helper for keeping the list.)
pub fn record(entries: &mut Vec<History>, entry: History) {
    match entries
        .iter_mut()
        .find(|h| h.peer == entry.peer && h.selection == entry.selection)
    {
        Some(h) => *h = entry,
        None => entries.push(entry),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsf::{DbInstanceId, ReplicaId};

    fn peer(instance: u64) -> Peer {
        Peer {
            replica: ReplicaId(1),
            instance: DbInstanceId(instance),
        }
    }

    fn entry(instance: u64, selection: Option<&str>, seen: u64) -> History {
        History {
            peer: peer(instance),
            selection: selection.map(str::to_owned),
            seen_upto: Seq(seen),
            at: Timestamp(0),
        }
    }

    #[test]
    fn an_entry_counts_only_for_its_instance_and_selection() {
        let entries = vec![entry(1, None, 10), entry(1, Some("SELECT A"), 4)];
        assert_eq!(resume_point(&entries, peer(1), None, Seq(20)), Seq(10));
        assert_eq!(
            resume_point(&entries, peer(1), Some("SELECT A"), Seq(20)),
            Seq(4)
        );
        assert_eq!(
            resume_point(&entries, peer(1), Some("SELECT B"), Seq(20)),
            Seq(0)
        );
        assert_eq!(resume_point(&entries, peer(2), None, Seq(20)), Seq(0));
    }

    #[test]
    fn an_entry_past_the_peers_end_is_ignored() {
        let entries = vec![entry(1, None, 10)];
        assert_eq!(resume_point(&entries, peer(1), None, Seq(9)), Seq(0));
    }

    #[test]
    fn recording_replaces_the_matching_entry() {
        let mut entries = vec![entry(1, None, 10), entry(2, None, 3)];
        record(&mut entries, entry(1, None, 12));
        record(&mut entries, entry(1, Some("S"), 1));
        assert_eq!(
            entries,
            vec![
                entry(1, None, 12),
                entry(2, None, 3),
                entry(1, Some("S"), 1)
            ]
        );
    }
}
