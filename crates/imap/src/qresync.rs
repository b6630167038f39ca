//! Quick mailbox resynchronisation (RFC 7162 QRESYNC): what a client
//! that held a mailbox at some mod-sequence must hear to hold it now,
//! without fetching what it already has.
//!
//! ```text
//!   SELECT box (QRESYNC (uidvalidity modseq [known-uids]))
//!     uidvalidity the same?  no ─▶ a plain SELECT: the client starts over
//!                            yes ─▶ * VANISHED (EARLIER) uids left since modseq
//!                                   * n FETCH (UID FLAGS MODSEQ) changed since modseq
//!   UID FETCH set items (CHANGEDSINCE modseq VANISHED)
//!                               ─▶ * VANISHED (EARLIER) uids of set left since modseq
//! ```
//!
//! What left the mailbox comes from the store ([`Mailstore::vanished_since`]:
//! on a mail file the deletion stubs, whose change sequence numbers are
//! above every one the message had, I62), less what the mailbox holds
//! now, so a VANISHED never names a message the client still sees. A
//! client that lists the UIDs it holds (known-uids) is told exactly
//! those the mailbox no longer has, whenever they left. What changed is
//! every message whose MODSEQ is above the client's: the cost on the
//! wire is the changes, not the mailbox.

use crate::seqset::{contains, of_uids};
use crate::session::{flags_data, Selected};
use crate::store::Mailstore;
use imap_next::imap_types::command::SelectParameter;
use imap_next::imap_types::response::Data;
use imap_next::imap_types::sequence::{SeqOrUid, Sequence, SequenceSet};

/// A SELECT's `QRESYNC (...)`: what the client held.
pub(crate) struct Held {
    pub uid_validity: u32,
    pub modseq: u64,
    pub known_uids: Option<SequenceSet>,
}

impl Held {
    /// The QRESYNC parameter among a SELECT's, if there is one.
    pub(crate) fn of(parameters: &[SelectParameter]) -> Option<Held> {
        parameters.iter().find_map(|p| match p {
            SelectParameter::QResync {
                uid_validity,
                mod_sequence_value,
                known_uids,
                ..
            } => Some(Held {
                uid_validity: uid_validity.get(),
                modseq: mod_sequence_value.get(),
                known_uids: known_uids.clone(),
            }),
            SelectParameter::CondStore => None,
        })
    }
}

/// `* VANISHED (EARLIER) uids`: the UIDs `within` names (all, if
/// `None`; `*` is the highest UID the mailbox could have had) that left
/// the selected mailbox after `since`; `None` if there are none.
pub(crate) fn vanished_earlier(
    store: &dyn Mailstore,
    sel: &Selected,
    since: u64,
    within: Option<&SequenceSet>,
) -> Result<Option<Data<'static>>, String> {
    let snap = &sel.snapshot;
    let candidates = store
        .vanished_since(&sel.name, since, snap.uid_next)
        .map_err(|e| e.to_string())?;
    let largest = snap.uid_next.saturating_sub(1);
    let gone: Vec<u32> = candidates
        .into_iter()
        .filter(|u| snap.messages.binary_search_by_key(u, |m| m.uid).is_err())
        .filter(|&u| within.is_none_or(|set| contains(set, u, largest)))
        .collect();
    Ok(of_uids(&gone).map(|known_uids| Data::Vanished {
        earlier: true,
        known_uids,
    }))
}

/// Every UID `set` names up to `largest` (`*` is `largest`), ascending,
/// each once: the set's ranges are merged first, so the cost is at most
/// `largest` whatever the client wrote.
fn uids_in(set: &SequenceSet, largest: u32) -> impl Iterator<Item = u32> {
    let mut ranges: Vec<(u32, u32)> = set
        .0
        .as_ref()
        .iter()
        .map(|s| {
            let v = |x: &SeqOrUid| match x {
                SeqOrUid::Value(n) => n.get(),
                SeqOrUid::Asterisk => largest,
            };
            let (a, b) = match s {
                Sequence::Single(a) => (v(a), v(a)),
                Sequence::Range(a, b) => (v(a), v(b)),
            };
            (a.min(b), a.max(b).min(largest))
        })
        .filter(|(lo, hi)| lo <= hi)
        .collect();
    ranges.sort_unstable();
    let mut merged: Vec<(u32, u32)> = Vec::new();
    for (lo, hi) in ranges {
        match merged.last_mut() {
            Some((_, end)) if lo <= end.saturating_add(1) => *end = (*end).max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    merged.into_iter().flat_map(|(lo, hi)| lo..=hi)
}

/// What a QRESYNC SELECT tells after the usual answers, when the
/// UIDVALIDITY is the client's: what vanished, then the messages changed
/// since (with UID, FLAGS and MODSEQ), both limited to the known UIDs if
/// the client gave them; what vanished then also counts every known UID
/// the mailbox does not hold, however long ago it left.
pub(crate) fn resync(
    store: &dyn Mailstore,
    sel: &Selected,
    held: &Held,
) -> Result<Vec<Data<'static>>, String> {
    let mut out = Vec::new();
    if held.uid_validity != sel.snapshot.uid_validity {
        return Ok(out);
    }
    let within = held.known_uids.as_ref();
    let largest = sel.snapshot.uid_next.saturating_sub(1);
    match within {
        None => out.extend(vanished_earlier(store, sel, held.modseq, None)?),
        Some(known) => {
            // What the client says it holds and the mailbox does not:
            // gone, whenever it went (RFC 7162 §3.2.5.2 lets a server say
            // so), which is every one that left since the client's
            // mod-sequence and holds even past a purge of stubs.
            let held_now = |u: &u32| {
                sel.snapshot
                    .messages
                    .binary_search_by_key(u, |m| m.uid)
                    .is_ok()
            };
            let gone: Vec<u32> = uids_in(known, largest).filter(|u| !held_now(u)).collect();
            if let Some(known_uids) = of_uids(&gone) {
                out.push(Data::Vanished {
                    earlier: true,
                    known_uids,
                });
            }
        }
    }
    for (i, m) in sel.snapshot.messages.iter().enumerate() {
        let known = within.is_none_or(|set| contains(set, m.uid, largest));
        if m.modseq > held.modseq && known {
            out.push(flags_data(i, m, true, true));
        }
    }
    Ok(out)
}
