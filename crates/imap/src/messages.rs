//! Commands on the selected mailbox's messages: FETCH, STORE, SEARCH,
//! COPY / MOVE, EXPUNGE / UID EXPUNGE, CLOSE / UNSELECT, each by sequence number or
//! (UID form) by UID.
//!
//! Flags are items of the document (`mailfile.rs`), so a STORE is a
//! document update: it is logged, replicated, and seen by every other
//! session at its next NOOP or IDLE wake-up. EXPUNGE deletes the document
//! (a deletion stub, which replicates like any deletion).

use crate::fetch;
use crate::mailboxes::name_of;
use crate::qresync;
use crate::search::{self, Candidate};
use crate::seqset::resolve;
use crate::session::{flag_fetch, flags_data, nonzero, nonzero64, Session, State};
use crate::store::Transfer;
use crate::ImapError;
use imap_next::imap_types::command::{FetchModifier, StoreModifier};
use imap_next::imap_types::core::{Charset, Tag, Vec1};
use imap_next::imap_types::extensions::uidplus::{UidElement, UidSet};
use imap_next::imap_types::fetch::{
    MacroOrMessageDataItemNames, MessageDataItem, MessageDataItemName,
};
use imap_next::imap_types::flag::{Flag, StoreResponse, StoreType};
use imap_next::imap_types::mailbox::Mailbox;
use imap_next::imap_types::response::{Code, Data};
use imap_next::imap_types::search::SearchKey;
use imap_next::imap_types::sequence::SequenceSet;
use imap_next::imap_types::sequence::{SeqOrUid, Sequence};
use imap_next::imap_types::ToStatic;

pub(crate) fn fetch(
    s: &mut Session,
    tag: Tag<'static>,
    set: &SequenceSet,
    names: MacroOrMessageDataItemNames<'static>,
    uid: bool,
    modifiers: Vec<FetchModifier>,
) {
    let mut names: Vec<MessageDataItemName<'static>> = match names {
        MacroOrMessageDataItemNames::Macro(m) => m.expand().iter().map(|n| n.to_static()).collect(),
        MacroOrMessageDataItemNames::MessageDataItemNames(v) => v,
    };
    if uid && !names.contains(&MessageDataItemName::Uid) {
        names.push(MessageDataItemName::Uid);
    }
    let mut changed_since = None;
    let mut vanished = false;
    for m in modifiers {
        match m {
            FetchModifier::ChangedSince(n) => changed_since = Some(n.get()),
            FetchModifier::Vanished => vanished = true,
        }
    }
    // RFC 7162 §3.2.6: VANISHED only in a UID FETCH with CHANGEDSINCE,
    // once QRESYNC is enabled; anything else is BAD.
    if vanished {
        let why = if !s.qresync {
            Some("VANISHED needs QRESYNC enabled first (ENABLE QRESYNC)")
        } else if !uid {
            Some("VANISHED only in UID FETCH")
        } else if changed_since.is_none() {
            Some("VANISHED only with CHANGEDSINCE")
        } else {
            None
        };
        if let Some(why) = why {
            return s.bad(tag, why);
        }
    }
    // RFC 7162 §3.1.4: CHANGEDSINCE implies MODSEQ; either turns
    // CONDSTORE on.
    if changed_since.is_some() && !names.contains(&MessageDataItemName::ModSeq) {
        names.push(MessageDataItemName::ModSeq);
    }
    if names.contains(&MessageDataItemName::ModSeq) {
        s.condstore = true;
    }
    let condstore = s.condstore;
    let State::Selected(store, sel) = &mut s.state else {
        return;
    };
    let picked = match resolve(set, uid, &sel.snapshot.messages) {
        Ok(p) => p,
        Err(e) => return s.bad(tag, &e),
    };
    let mut out = Vec::with_capacity(picked.len());
    if let Some(since) = changed_since.filter(|_| vanished) {
        match qresync::vanished_earlier(store.as_ref(), sel, since, Some(set)) {
            Ok(v) => out.extend(v),
            Err(why) => return s.no(tag, None, &why),
        }
    }
    let mut failed = None;
    for i in picked {
        let meta = sel.snapshot.messages[i].clone();
        if changed_since.is_some_and(|n| meta.modseq <= n) {
            continue;
        }
        let mut got = match fetch::items(store.as_ref(), &sel.name, &meta, &names) {
            Ok(g) => g,
            Err(e) => {
                failed = Some(e.to_string());
                continue;
            }
        };
        let unseen = !meta.flags.iter().any(|f| f == "\\Seen");
        if got.sets_seen && unseen && !sel.read_only {
            let mut flags = meta.flags.clone();
            flags.push("\\Seen".into());
            if let Ok(Some(modseq)) = store.set_flags(&sel.name, meta.uid, &flags, None) {
                let now = flag_fetch(&flags);
                sel.snapshot.messages[i].flags = flags;
                sel.snapshot.messages[i].modseq = modseq;
                if condstore {
                    let m = MessageDataItem::ModSeq(nonzero64(modseq));
                    got.items
                        .retain(|it| !matches!(it, MessageDataItem::ModSeq(_)));
                    got.items.push(m);
                }
                // RFC 9051 §6.4.5: the changed flags go with the answer.
                match got
                    .items
                    .iter_mut()
                    .find(|it| matches!(it, MessageDataItem::Flags(_)))
                {
                    Some(it) => *it = MessageDataItem::Flags(now),
                    None => got.items.push(MessageDataItem::Flags(now)),
                }
            }
        }
        if let Ok(items) = Vec1::try_from(got.items) {
            out.push(Data::Fetch {
                seq: nonzero(i as u32 + 1),
                items,
            });
        }
    }
    for d in out {
        s.data(d);
    }
    match failed {
        None => s.ok(tag, None, "FETCH done"),
        Some(why) => s.no(
            tag,
            None,
            &format!("some messages could not be read: {why}"),
        ),
    }
}

pub(crate) fn store(
    s: &mut Session,
    tag: Tag<'static>,
    set: &SequenceSet,
    (kind, response, flags): (StoreType, StoreResponse, Vec<Flag<'static>>),
    uid: bool,
    modifiers: Vec<StoreModifier>,
) {
    let unchanged_since = modifiers
        .iter()
        .map(|m| match m {
            StoreModifier::UnchangedSince(n) => *n,
        })
        .next();
    if unchanged_since.is_some() {
        s.condstore = true;
    }
    let condstore = s.condstore;
    let State::Selected(store, sel) = &mut s.state else {
        return;
    };
    if sel.read_only {
        return s.no(tag, None, "the mailbox is read-only (EXAMINE)");
    }
    let picked = match resolve(set, uid, &sel.snapshot.messages) {
        Ok(p) => p,
        Err(e) => return s.bad(tag, &e),
    };
    let given: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
    let mut out = Vec::new();
    let mut failed = None;
    let mut modified = Vec::new();
    for i in picked {
        let m = &sel.snapshot.messages[i];
        let new = updated(&m.flags, &given, &kind);
        if new != m.flags {
            match store.set_flags(&sel.name, m.uid, &new, unchanged_since) {
                Ok(Some(modseq)) => {
                    sel.snapshot.messages[i].flags = new;
                    sel.snapshot.messages[i].modseq = modseq;
                }
                // Changed since the client's UNCHANGEDSINCE: left alone.
                Ok(None) => {
                    modified.push(if uid { m.uid } else { i as u32 + 1 });
                    continue;
                }
                Err(e) => {
                    failed = Some(e.to_string());
                    continue;
                }
            }
        }
        if response == StoreResponse::Answer {
            out.push(flags_data(i, &sel.snapshot.messages[i], uid, condstore));
        }
    }
    for d in out {
        s.data(d);
    }
    if let Some(why) = failed {
        return s.no(tag, None, &format!("some flags could not be stored: {why}"));
    }
    match modified_set(&modified) {
        None => s.ok(tag, None, "STORE done"),
        Some(set) => s.ok(
            tag,
            Some(Code::Modified(set)),
            "STORE done but for messages changed since UNCHANGEDSINCE",
        ),
    }
}

/// The flags after a STORE of `given` (`+FLAGS`, `-FLAGS` or `FLAGS`),
/// system flags first, each once.
fn updated(now: &[String], given: &[String], kind: &StoreType) -> Vec<String> {
    let same = |a: &String, b: &String| a.eq_ignore_ascii_case(b);
    let mut out: Vec<String> = match kind {
        StoreType::Replace => Vec::new(),
        _ => now.to_vec(),
    };
    match kind {
        StoreType::Remove => out.retain(|f| !given.iter().any(|g| same(f, g))),
        StoreType::Add | StoreType::Replace => {
            for g in given {
                if !out.iter().any(|f| same(f, g)) {
                    out.push(g.clone());
                }
            }
        }
    }
    out.sort_by_key(|f| !f.starts_with('\\'));
    out
}

pub(crate) fn search(
    s: &mut Session,
    tag: Tag<'static>,
    charset: Option<Charset<'static>>,
    criteria: Vec1<SearchKey<'static>>,
    uid: bool,
) {
    if let Some(cs) = charset {
        let name = match &cs {
            Charset::Atom(a) => a.as_ref().to_string(),
            Charset::Quoted(q) => q.as_ref().to_string(),
        };
        if !name.eq_ignore_ascii_case("UTF-8") && !name.eq_ignore_ascii_case("US-ASCII") {
            let code = Code::badcharset(vec![]);
            return s.no(tag, Some(code), "only UTF-8 and US-ASCII searches");
        }
    }
    let State::Selected(store, sel) = &s.state else {
        return;
    };
    let msgs = &sel.snapshot.messages;
    let count = msgs.len() as u32;
    let last_uid = msgs.last().map_or(0, |m| m.uid);
    let mut found = Vec::new();
    let mut failed = None;
    let mut highest = 0;
    for (i, m) in msgs.iter().enumerate() {
        let mut c = Candidate::new(store.as_ref(), &sel.name, m, i as u32 + 1, count, last_uid);
        match search::all(criteria.as_ref(), &mut c) {
            Ok(true) => {
                found.push(nonzero(if uid { m.uid } else { i as u32 + 1 }));
                highest = highest.max(m.modseq);
            }
            Ok(false) => {}
            Err(e) => failed = Some(e.to_string()),
        }
    }
    let with_modseq = criteria.as_ref().iter().any(search::uses_modseq);
    let modseq = (with_modseq && highest > 0).then(|| nonzero64(highest));
    if with_modseq {
        s.condstore = true;
    }
    s.data(Data::Search(found, modseq));
    match failed {
        None => s.ok(tag, None, "SEARCH done"),
        Some(why) => s.no(
            tag,
            None,
            &format!("some messages could not be searched: {why}"),
        ),
    }
}

/// COPY and MOVE (RFC 9051 §6.4.7, RFC 6851), by sequence number or UID.
/// The copies' UIDs go back in COPYUID (RFC 4315): in the tagged OK of a
/// COPY; for a MOVE in an untagged OK before the originals' EXPUNGEs, as
/// RFC 6851 §4.3 asks. All of it is one commit (`copy.rs`), durable
/// before any answer.
pub(crate) fn transfer(
    s: &mut Session,
    tag: Tag<'static>,
    set: &SequenceSet,
    mailbox: Mailbox<'static>,
    uid: bool,
    how: Transfer,
) {
    let to = name_of(&mailbox);
    let State::Selected(store, sel) = &s.state else {
        return;
    };
    let verb = match how {
        Transfer::Copy => "COPY",
        Transfer::Move => "MOVE",
    };
    if how == Transfer::Move && sel.read_only {
        return s.no(tag, None, "the mailbox is read-only (EXAMINE)");
    }
    let picked = match resolve(set, uid, &sel.snapshot.messages) {
        Ok(p) => p,
        Err(e) => return s.bad(tag, &e),
    };
    if picked.is_empty() {
        return s.ok(tag, None, &format!("{verb} done: no such messages"));
    }
    let uids: Vec<u32> = picked
        .iter()
        .map(|&i| sel.snapshot.messages[i].uid)
        .collect();
    let validity = sel.snapshot.uid_validity;
    let here = sel.name == to || (to == "INBOX" && sel.name.eq_ignore_ascii_case("INBOX"));
    match store.transfer(&sel.name, &uids, &to, how) {
        Ok(new) => {
            let code = Code::CopyUid {
                uid_validity: nonzero(validity),
                source: uid_set(&uids),
                destination: uid_set(&new),
            };
            match how {
                Transfer::Copy => {
                    if here {
                        s.refresh();
                    }
                    s.ok(tag, Some(code), "COPY done")
                }
                Transfer::Move => {
                    s.untagged(code, "moved");
                    s.refresh();
                    s.ok(tag, None, "MOVE done")
                }
            }
        }
        Err(e @ ImapError::NoMailbox(_)) => s.no(tag, Some(Code::TryCreate), &e.to_string()),
        Err(e) => s.no(tag, None, &format!("{verb} failed, nothing changed: {e}")),
    }
}

/// The messages a STORE UNCHANGEDSINCE left alone, for MODIFIED.
fn modified_set(numbers: &[u32]) -> Option<SequenceSet> {
    let seqs: Vec<Sequence> = numbers
        .iter()
        .map(|&n| Sequence::Single(SeqOrUid::Value(nonzero(n))))
        .collect();
    Vec1::try_from(seqs).ok().map(SequenceSet)
}

/// UIDs in the order given, for COPYUID (whose two sets pair up by
/// position).
fn uid_set(uids: &[u32]) -> UidSet {
    let elements: Vec<UidElement> = uids
        .iter()
        .map(|&u| UidElement::Single(nonzero(u)))
        .collect();
    UidSet(crate::session::vec1(elements))
}

/// EXPUNGE (every `\Deleted` message) or UID EXPUNGE (those of them in
/// `uids`); the client hears `* n EXPUNGE` for each.
pub(crate) fn expunge(s: &mut Session, tag: Tag<'static>, uids: Option<SequenceSet>) {
    match remove_deleted(s, uids.as_ref()) {
        Ok(()) => {
            s.refresh();
            s.ok(tag, None, "EXPUNGE done")
        }
        Err(why) => s.no(tag, None, &why),
    }
}

fn remove_deleted(s: &mut Session, uids: Option<&SequenceSet>) -> Result<(), String> {
    let State::Selected(store, sel) = &s.state else {
        return Ok(());
    };
    if sel.read_only {
        return Err("the mailbox is read-only (EXAMINE)".into());
    }
    let msgs = &sel.snapshot.messages;
    let in_set: Vec<usize> = match uids {
        Some(set) => resolve(set, true, msgs)?,
        None => (0..msgs.len()).collect(),
    };
    let doomed: Vec<u32> = in_set
        .into_iter()
        .map(|i| &msgs[i])
        .filter(|m| m.flags.iter().any(|f| f == "\\Deleted"))
        .map(|m| m.uid)
        .collect();
    if doomed.is_empty() {
        return Ok(());
    }
    store.expunge(&sel.name, &doomed).map_err(|e| e.to_string())
}

/// CLOSE (expunging silently) or UNSELECT: back to signed in.
pub(crate) fn close(s: &mut Session, tag: Tag<'static>, expunge: bool) {
    if expunge {
        if let Err(why) = remove_deleted(s, None) {
            if !why.contains("read-only") {
                return s.no(tag, None, &why);
            }
        }
    }
    if let State::Selected(..) = &s.state {
        if let State::Selected(store, _) = std::mem::replace(&mut s.state, State::Logout) {
            s.state = State::Authenticated(store);
        }
    }
    s.ok(
        tag,
        None,
        if expunge {
            "CLOSE done"
        } else {
            "UNSELECT done"
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn store_adds_removes_and_replaces() {
        let now = v(&["\\Seen", "work"]);
        assert_eq!(
            updated(&now, &v(&["\\Flagged"]), &StoreType::Add),
            v(&["\\Seen", "\\Flagged", "work"])
        );
        assert_eq!(
            updated(&now, &v(&["\\seen"]), &StoreType::Remove),
            v(&["work"])
        );
        assert_eq!(
            updated(&now, &v(&["\\Deleted"]), &StoreType::Replace),
            v(&["\\Deleted"])
        );
        assert_eq!(updated(&now, &v(&["\\SEEN"]), &StoreType::Add), now);
    }
}
