//! Commands about mailboxes: LIST/LSUB (with RFC 6154 special-use
//! attributes), SELECT/EXAMINE, STATUS, CREATE/DELETE, APPEND.
//!
//! Names are flat: `/` is announced as the hierarchy delimiter so clients
//! can show a folder called `Projects/2026` as nested, but the store
//! keeps the whole name as one folder name. `INBOX` is the Inbox folder
//! whatever the case it is written in (RFC 9051 §5.1).

use crate::qresync;
use crate::session::{nonzero, nonzero64, Selected, Session, State};
use crate::store::{MailboxInfo, Mailstore};
use crate::ImapError;
use imap_next::imap_types::command::SelectParameter;
use imap_next::imap_types::core::{Atom, IString, QuotedChar, Tag};
use imap_next::imap_types::datetime::DateTime;
use imap_next::imap_types::extensions::binary::LiteralOrLiteral8;
use imap_next::imap_types::extensions::namespace::Namespace;
use imap_next::imap_types::flag::{Flag, FlagNameAttribute, FlagPerm};
use imap_next::imap_types::mailbox::{ListMailbox, Mailbox};
use imap_next::imap_types::response::{Code, CodeOther, Data, Status};
use imap_next::imap_types::status::{StatusDataItem, StatusDataItemName};
use std::borrow::Cow;

/// The system flags every mailbox takes.
const SYSTEM_FLAGS: [&str; 5] = ["\\Answered", "\\Flagged", "\\Deleted", "\\Seen", "\\Draft"];

/// The name a client wrote, as the store names it.
pub(crate) fn name_of(m: &Mailbox<'_>) -> String {
    match m {
        Mailbox::Inbox => "INBOX".into(),
        Mailbox::Other(o) => String::from_utf8_lossy(o.as_ref()).into_owned(),
    }
}

fn mailbox_of(name: &str) -> Option<Mailbox<'static>> {
    if name.eq_ignore_ascii_case("INBOX") {
        return Some(Mailbox::Inbox);
    }
    Mailbox::try_from(name.to_string()).ok()
}

pub(crate) fn list(
    s: &mut Session,
    tag: Tag<'static>,
    reference: Mailbox<'static>,
    pattern: ListMailbox<'static>,
    lsub: bool,
) {
    let pattern = match &pattern {
        ListMailbox::Token(t) => String::from_utf8_lossy(t.as_ref()).into_owned(),
        ListMailbox::String(st) => String::from_utf8_lossy(st.as_ref()).into_owned(),
    };
    let reference = match &reference {
        Mailbox::Inbox => "INBOX".to_string(),
        Mailbox::Other(o) => String::from_utf8_lossy(o.as_ref()).into_owned(),
    };
    let delimiter = QuotedChar::try_from('/').ok();
    if pattern.is_empty() && !lsub {
        // The hierarchy delimiter and root (RFC 9051 §6.3.9).
        if let Ok(root) = Mailbox::try_from(String::new()) {
            s.data(Data::List {
                items: vec![FlagNameAttribute::Noselect],
                delimiter,
                mailbox: root,
            });
        }
        return s.ok(tag, None, "LIST done");
    }
    let Some(store) = s.store() else { return };
    let boxes = match store.list() {
        Ok(b) => b,
        Err(e) => return s.no(tag, None, &e.to_string()),
    };
    let full = format!("{reference}{pattern}");
    for b in boxes.iter().filter(|b| matches(&full, &b.name)) {
        let Some(mailbox) = mailbox_of(&b.name) else {
            continue;
        };
        let items = attributes(b);
        let d = if lsub {
            Data::Lsub {
                items,
                delimiter,
                mailbox,
            }
        } else {
            Data::List {
                items,
                delimiter,
                mailbox,
            }
        };
        s.data(d);
    }
    s.ok(tag, None, if lsub { "LSUB done" } else { "LIST done" });
}

fn attributes(b: &MailboxInfo) -> Vec<FlagNameAttribute<'static>> {
    let mut items = vec![FlagNameAttribute::from(
        Atom::try_from("HasNoChildren").expect("atom"),
    )];
    if let Some(u) = b.special {
        items.push(FlagNameAttribute::from(
            Atom::try_from(u.attribute()).expect("atom"),
        ));
    }
    items
}

/// Does `name` match a LIST pattern: `*` anything, `%` anything but the
/// delimiter; `INBOX` in any case.
pub(crate) fn matches(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let inbox = name == "INBOX";
    glob(&p, &n, inbox)
}

fn glob(p: &[char], n: &[char], fold: bool) -> bool {
    match p.first() {
        None => n.is_empty(),
        Some('*') => (0..=n.len()).any(|i| glob(&p[1..], &n[i..], fold)),
        Some('%') => (0..=n.len())
            .take_while(|&i| i == 0 || n[i - 1] != '/')
            .any(|i| glob(&p[1..], &n[i..], fold)),
        Some(c) => match n.first() {
            Some(d) if c == d || (fold && c.eq_ignore_ascii_case(d)) => {
                glob(&p[1..], &n[1..], fold)
            }
            _ => false,
        },
    }
}

pub(crate) fn select(
    s: &mut Session,
    tag: Tag<'static>,
    mailbox: Mailbox<'static>,
    read_only: bool,
    parameters: Vec<SelectParameter>,
) {
    let name = name_of(&mailbox);
    for p in &parameters {
        match p {
            SelectParameter::CondStore => s.condstore = true,
            // RFC 7162 §3.2.5: BAD unless the client enabled it.
            SelectParameter::QResync { .. } if !s.qresync => {
                return s.bad(tag, "QRESYNC must be enabled first (ENABLE QRESYNC)")
            }
            SelectParameter::QResync { .. } => {}
        }
    }
    let held = qresync::Held::of(&parameters);
    // Selecting leaves the selected mailbox first, even if it fails.
    let store = match std::mem::replace(&mut s.state, State::Logout) {
        State::Authenticated(st) => st,
        State::Selected(st, _) => {
            // RFC 7162 §3.2.11: what follows is about the new mailbox.
            s.untagged(Code::Closed, "the previous mailbox is closed");
            st
        }
        other => {
            s.state = other;
            return s.bad(tag, "sign in first");
        }
    };
    let snapshot = store.snapshot(&name);
    let snapshot = match snapshot {
        Ok(sn) => sn,
        Err(e) => {
            s.state = State::Authenticated(store);
            return s.no(tag, None, &e.to_string());
        }
    };
    let flags: Vec<Flag<'static>> = SYSTEM_FLAGS
        .iter()
        .filter_map(|f| Flag::try_from(*f).ok())
        .collect();
    s.data(Data::Flags(flags.clone()));
    s.data(Data::Exists(snapshot.messages.len() as u32));
    s.data(Data::Recent(0));
    if let Some(i) = snapshot
        .messages
        .iter()
        .position(|m| !m.flags.iter().any(|f| f == "\\Seen"))
    {
        s.untagged(Code::Unseen(nonzero(i as u32 + 1)), "first unseen");
    }
    let mut perm: Vec<FlagPerm<'static>> = flags.into_iter().map(FlagPerm::Flag).collect();
    perm.push(FlagPerm::Asterisk);
    s.untagged(Code::PermanentFlags(perm), "flags are kept");
    s.untagged(
        Code::UidValidity(nonzero(snapshot.uid_validity)),
        "UIDs valid",
    );
    s.untagged(Code::UidNext(nonzero(snapshot.uid_next)), "next UID");
    s.untagged(
        Code::HighestModSeq(nonzero64(snapshot.highest_modseq)),
        "highest mod-sequence",
    );
    let (code, text) = if read_only {
        (Code::ReadOnly, "EXAMINE done")
    } else {
        (Code::ReadWrite, "SELECT done")
    };
    let sel = Selected {
        name,
        read_only,
        snapshot,
    };
    let resynced = held.map(|h| qresync::resync(store.as_ref(), &sel, &h));
    s.state = State::Selected(store, sel);
    match resynced {
        Some(Err(why)) => {
            return s.no(
                tag,
                None,
                &format!("the mailbox could not be resynchronised: {why}"),
            )
        }
        Some(Ok(data)) => data.into_iter().for_each(|d| s.data(d)),
        None => {}
    }
    s.ok(tag, Some(code), text);
}

pub(crate) fn status(
    s: &mut Session,
    tag: Tag<'static>,
    mailbox: Mailbox<'static>,
    names: &[StatusDataItemName],
) {
    let Some(store) = s.store() else { return };
    let snapshot = match store.snapshot(&name_of(&mailbox)) {
        Ok(sn) => sn,
        Err(e) => return s.no(tag, None, &e.to_string()),
    };
    let m = &snapshot.messages;
    let count = |flag: &str| {
        m.iter()
            .filter(|x| x.flags.iter().any(|f| f == flag))
            .count() as u32
    };
    let items: Vec<StatusDataItem> = names
        .iter()
        .filter_map(|n| match n {
            StatusDataItemName::Messages => Some(StatusDataItem::Messages(m.len() as u32)),
            StatusDataItemName::Recent => Some(StatusDataItem::Recent(0)),
            StatusDataItemName::UidNext => {
                Some(StatusDataItem::UidNext(nonzero(snapshot.uid_next)))
            }
            StatusDataItemName::UidValidity => {
                Some(StatusDataItem::UidValidity(nonzero(snapshot.uid_validity)))
            }
            StatusDataItemName::Unseen => {
                Some(StatusDataItem::Unseen(m.len() as u32 - count("\\Seen")))
            }
            StatusDataItemName::Deleted => Some(StatusDataItem::Deleted(count("\\Deleted"))),
            StatusDataItemName::HighestModSeq => {
                Some(StatusDataItem::HighestModSeq(snapshot.highest_modseq))
            }
            _ => None,
        })
        .collect();
    s.data(Data::Status {
        mailbox,
        items: Cow::Owned(items),
    });
    s.ok(tag, None, "STATUS done");
}

pub(crate) fn create(s: &mut Session, tag: Tag<'static>, mailbox: Mailbox<'static>) {
    let name = name_of(&mailbox);
    let name = name.trim_end_matches('/');
    let Some(store) = s.store() else { return };
    match store.create(name) {
        Ok(()) => s.ok(tag, None, "CREATE done"),
        Err(e) => s.no(tag, None, &e.to_string()),
    }
}

pub(crate) fn delete(s: &mut Session, tag: Tag<'static>, mailbox: Mailbox<'static>) {
    let name = name_of(&mailbox);
    if let State::Selected(_, sel) = &s.state {
        if sel.name == name {
            return s.no(tag, None, "close the mailbox before deleting it");
        }
    }
    let Some(store) = s.store() else { return };
    match store.delete(&name) {
        Ok(()) => s.ok(tag, None, "DELETE done"),
        Err(e) => s.no(tag, None, &e.to_string()),
    }
}

/// RENAME (RFC 9051 §6.3.6) of a user folder, with the folders below
/// it. The Inbox and the template's views are refused (renaming INBOX,
/// which RFC 9051 defines as moving its messages, is not offered).
pub(crate) fn rename(
    s: &mut Session,
    tag: Tag<'static>,
    from: Mailbox<'static>,
    to: Mailbox<'static>,
) {
    let (from, to) = (name_of(&from), name_of(&to));
    let to = to.trim_end_matches('/').to_string();
    if from == "INBOX" {
        return s.no(tag, Some(code("CANNOT")), "INBOX cannot be renamed here");
    }
    let Some(store) = s.store() else { return };
    match store.rename(&from, &to) {
        Ok(()) => {
            // The selected mailbox keeps being selected under its new name.
            if let State::Selected(_, sel) = &mut s.state {
                if sel.name == from {
                    sel.name = to;
                } else if let Some(rest) = sel.name.strip_prefix(&format!("{from}/")) {
                    sel.name = format!("{to}/{rest}");
                }
            }
            s.ok(tag, None, "RENAME done")
        }
        Err(e @ ImapError::MailboxExists(_)) => {
            s.no(tag, Some(code("ALREADYEXISTS")), &e.to_string())
        }
        Err(e @ ImapError::NoMailbox(_)) => s.no(tag, Some(code("NONEXISTENT")), &e.to_string()),
        Err(e) => s.no(tag, Some(code("CANNOT")), &e.to_string()),
    }
}

/// A response code of RFC 5530 that imap-types has no variant for.
pub(crate) fn code(atom: &'static str) -> Code<'static> {
    Code::Other(CodeOther::unvalidated(atom.as_bytes()))
}

/// NAMESPACE (RFC 2342): one personal namespace, the empty prefix with
/// `/` as delimiter; no other users' or shared ones yet.
pub(crate) fn namespace(s: &mut Session, tag: Tag<'static>) {
    let personal = Namespace {
        prefix: IString::try_from("").expect("an empty quoted string"),
        delimiter: QuotedChar::try_from('/').ok(),
        extensions: Vec::new(),
    };
    s.data(Data::Namespace {
        personal: vec![personal],
        other: Vec::new(),
        shared: Vec::new(),
    });
    s.ok(tag, None, "NAMESPACE done");
}

pub(crate) fn append(
    s: &mut Session,
    tag: Tag<'static>,
    mailbox: Mailbox<'static>,
    flags: Vec<Flag<'static>>,
    date: Option<DateTime>,
    message: LiteralOrLiteral8<'static>,
) {
    let name = name_of(&mailbox);
    let date = date.map(|d| d.as_ref().timestamp_micros());
    let bytes: &[u8] = match &message {
        LiteralOrLiteral8::Literal(l) => l.data(),
        LiteralOrLiteral8::Literal8(l) => l.data.as_ref(),
    };
    let flags: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
    let Some(store) = s.store() else { return };
    let appended = store
        .append(&name, &flags, date, bytes)
        .and_then(|uid| store.snapshot(&name).map(|sn| (uid, sn.uid_validity)));
    match appended {
        Ok((uid, validity)) => {
            let selected_here = matches!(&s.state, State::Selected(_, sel) if sel.name == name);
            if selected_here {
                s.refresh();
            }
            let code = Code::AppendUid {
                uid_validity: nonzero(validity),
                uid: nonzero(uid),
            };
            s.ok(tag, Some(code), "APPEND done")
        }
        Err(e @ ImapError::NoMailbox(_)) => s.no(tag, Some(Code::TryCreate), &e.to_string()),
        Err(e) => s.no(tag, None, &e.to_string()),
    }
}

impl Session {
    /// The signed-in user's store.
    pub(crate) fn store(&self) -> Option<&dyn Mailstore> {
        match &self.state {
            State::Authenticated(st) | State::Selected(st, _) => Some(st.as_ref()),
            _ => None,
        }
    }

    /// `* OK [code] text`.
    pub(crate) fn untagged(&mut self, code: Code<'static>, text: &str) {
        let st = Status::ok(None, Some(code), crate::session::clean(text)).expect("text");
        self.enqueue_status(st);
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn list_patterns() {
        assert!(matches("*", "INBOX"));
        assert!(matches("inbox", "INBOX"));
        assert!(matches("%", "Sent"));
        assert!(!matches("%", "Projects/2026"));
        assert!(matches("Projects/%", "Projects/2026"));
        assert!(matches("*", "Projects/2026"));
        assert!(!matches("Sent", "sent"), "only INBOX ignores case");
    }
}
