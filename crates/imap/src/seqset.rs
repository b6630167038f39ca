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
}
