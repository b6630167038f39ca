//! Sequence sets over a snapshot. A set names sequence numbers or UIDs;
//! `*` is the last message. Membership is tested message by message, so
//! `1:4294967295` costs what the mailbox holds, never what the set spans.

use crate::store::MessageMeta;
use imap_next::imap_types::sequence::{SeqOrUid, Sequence, SequenceSet};

/// The indexes (0-based positions) of `messages` that `set` names, in
/// order. Sequence numbers past the end are an error (RFC 9051 §6.4.4:
/// BAD); UIDs that are not there are simply not matched.
pub(crate) fn resolve(
    set: &SequenceSet,
    uid: bool,
    messages: &[MessageMeta],
) -> Result<Vec<usize>, String> {
    let largest = if uid {
        messages.last().map_or(0, |m| m.uid)
    } else {
        messages.len() as u32
    };
    let ranges: Vec<(u32, u32)> = set.0.as_ref().iter().map(|s| range(s, largest)).collect();
    if !uid {
        // A set with `*` names the end wherever it is; only an explicit
        // number past the end is an error.
        let explicit = |s: &&Sequence| match s {
            Sequence::Single(a) => *a != SeqOrUid::Asterisk,
            Sequence::Range(a, b) => *a != SeqOrUid::Asterisk && *b != SeqOrUid::Asterisk,
        };
        let beyond = set
            .0
            .as_ref()
            .iter()
            .filter(explicit)
            .map(|s| range(s, largest).1)
            .find(|hi| *hi > largest);
        if let Some(hi) = beyond {
            return Err(format!(
                "no message {hi}: the mailbox has {largest} message{}",
                if largest == 1 { "" } else { "s" }
            ));
        }
    }
    Ok(messages
        .iter()
        .enumerate()
        .filter(|(i, m)| {
            let v = if uid { m.uid } else { *i as u32 + 1 };
            ranges.iter().any(|&(lo, hi)| lo <= v && v <= hi)
        })
        .map(|(i, _)| i)
        .collect())
}

/// Whether `set` names `value`, with `*` as `largest` (SEARCH's
/// sequence-set and UID keys).
pub(crate) fn contains(set: &SequenceSet, value: u32, largest: u32) -> bool {
    set.0.as_ref().iter().any(|s| {
        let (lo, hi) = range(s, largest);
        lo <= value && value <= hi
    })
}

/// UIDs (ascending, each once) as a sequence set of runs, `3:5,9`;
/// `None` if there are none. A run covers consecutive numbers only, so
/// the set names exactly these UIDs.
pub(crate) fn of_uids(uids: &[u32]) -> Option<SequenceSet> {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for &u in uids.iter().filter(|&&u| u > 0) {
        match runs.last_mut() {
            Some((_, hi)) if u == *hi + 1 => *hi = u,
            Some((_, hi)) if u <= *hi => {}
            _ => runs.push((u, u)),
        }
    }
    let value = |n: u32| SeqOrUid::Value(std::num::NonZeroU32::new(n).expect("not 0"));
    let seqs: Vec<Sequence> = runs
        .into_iter()
        .map(|(lo, hi)| match lo == hi {
            true => Sequence::Single(value(lo)),
            false => Sequence::Range(value(lo), value(hi)),
        })
        .collect();
    imap_next::imap_types::core::Vec1::try_from(seqs)
        .ok()
        .map(SequenceSet)
}

/// One element as an inclusive range, `*` as `largest`, ends in order.
fn range(s: &Sequence, largest: u32) -> (u32, u32) {
    let v = |x: &SeqOrUid| match x {
        SeqOrUid::Value(n) => n.get(),
        SeqOrUid::Asterisk => largest,
    };
    match s {
        Sequence::Single(a) => (v(a), v(a)),
        Sequence::Range(a, b) => (v(a).min(v(b)), v(a).max(v(b))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(uids: &[u32]) -> Vec<MessageMeta> {
        uids.iter()
            .map(|&uid| MessageMeta {
                uid,
                flags: vec![],
                internal_date: 0,
                size: 1,
                modseq: 1,
            })
            .collect()
    }

    fn set(s: &str) -> SequenceSet {
        SequenceSet::try_from(s).unwrap()
    }

    #[test]
    fn sequence_numbers_and_uids() {
        let m = msgs(&[3, 7, 20]);
        assert_eq!(resolve(&set("1:*"), false, &m).unwrap(), [0, 1, 2]);
        assert_eq!(resolve(&set("2"), false, &m).unwrap(), [1]);
        assert!(resolve(&set("4"), false, &m).is_err());
        assert_eq!(resolve(&set("7:*"), true, &m).unwrap(), [1, 2]);
        assert_eq!(resolve(&set("1:4294967295"), true, &m).unwrap(), [0, 1, 2]);
        // n:* with n past the last UID still names the last message.
        assert_eq!(resolve(&set("50:*"), true, &m).unwrap(), [2]);
        assert!(resolve(&set("4:6"), true, &m).unwrap().is_empty());
        assert!(resolve(&set("1:*"), false, &[]).unwrap().is_empty());
    }

    #[test]
    fn uids_as_runs() {
        let text = |u: &[u32]| {
            of_uids(u).map(|s| {
                s.0.as_ref()
                    .iter()
                    .map(|x| {
                        let (lo, hi) = range(x, 0);
                        if lo == hi {
                            lo.to_string()
                        } else {
                            format!("{lo}:{hi}")
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            })
        };
        assert_eq!(text(&[]), None);
        assert_eq!(text(&[3, 4, 5, 9]).as_deref(), Some("3:5,9"));
        assert_eq!(text(&[1, 3, 5]).as_deref(), Some("1,3,5"));
        assert_eq!(text(&[0, 2, 2, 3]).as_deref(), Some("2:3"));
    }
}
