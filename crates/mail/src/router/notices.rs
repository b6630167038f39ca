//! What the router writes into mail files, each under a UNID derived from
//! what it is a copy of, so that writing it again finds it there (I33):
//!
//! ```text
//!   recipient's copy   H("copy", message UNID, recipient's mail file)
//!   sender's copy      H("sent", message UNID, sender's mail file)
//!   NDR                H("ndr",  message UNID, the failed recipients' indexes)
//!   delay notice       H("delay", message UNID)
//! ```
//!
//! `H` is the first 16 bytes of SHA-256 over `folio-router-1`, the kind
//! and the parts, each length-prefixed; a mail file path is compared as
//! paths are (lowercase). A copy is the message without `BlindCopyTo`,
//! with `DeliveredDate`; the sender's copy is the message as sent (so it
//! shows in Sent); a notice is a Memo from `Mail Router` to the sender,
//! delivered (so it shows in the Inbox).

use crate::message::{datetime, item, Address, Header, Memo, Message};
use nsf::{DbPath, ForeignNote, Item, OriginatorId, Timestamp, Unid};
use sha2::{Digest, Sha256};

/// Who notices come from.
const ROUTER_NAME: &str = "Mail Router";

pub(crate) fn derive(kind: &str, message: Unid, parts: &[&[u8]]) -> Unid {
    let mut h = Sha256::new();
    for p in [b"folio-router-1".as_slice(), kind.as_bytes(), &message.0]
        .into_iter()
        .chain(parts.iter().copied())
    {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    let digest = h.finalize();
    let mut u = [0u8; 16];
    u.copy_from_slice(&digest[..16]);
    Unid(u)
}

fn path_key(p: &DbPath) -> Vec<u8> {
    p.as_str().to_lowercase().into_bytes()
}

/// The UNID of the copy of message `message` (its box document's UNID)
/// delivered into `mail_file`.
pub fn copy_unid(message: Unid, mail_file: &DbPath) -> Unid {
    derive("copy", message, &[&path_key(mail_file)])
}

pub(crate) fn sent_unid(message: Unid, mail_file: &DbPath) -> Unid {
    derive("sent", message, &[&path_key(mail_file)])
}

pub(crate) fn ndr_unid(message: Unid, failed: &[usize]) -> Unid {
    let list: Vec<u8> = failed
        .iter()
        .flat_map(|&i| (i as u64).to_le_bytes())
        .collect();
    derive("ndr", message, &[&list])
}

pub(crate) fn delay_unid(message: Unid) -> Unid {
    derive("delay", message, &[])
}

/// A recipient's copy of `msg`.
pub(crate) fn copy_items(msg: &Message, now: Timestamp) -> Vec<Item> {
    let mut items: Vec<Item> = msg
        .to_items()
        .into_iter()
        .filter(|i| i.name != item::BLIND_COPY_TO)
        .collect();
    items.push(datetime(item::DELIVERED_DATE, now));
    items
}

/// The sender's copy of `msg`.
pub(crate) fn sent_items(msg: &Message) -> Vec<Item> {
    msg.to_items()
}

/// A non-delivery report to `sender` for the recipients of `msg` in
/// `failed` (address, reason).
pub(crate) fn ndr_items(
    msg: &Message,
    sender: &Address,
    failed: &[(String, String)],
    now: Timestamp,
) -> Vec<Item> {
    let mut body = String::from("Your message could not be delivered to:\n\n");
    for (to, why) in failed {
        body.push_str(&format!("- {to}: {why}\n"));
    }
    notice(msg, sender, "Delivery failure", body, now)
}

/// A delay notice to `sender`: `waiting` (address, reason) have not had
/// `msg` yet.
pub(crate) fn delay_items(
    msg: &Message,
    sender: &Address,
    waiting: &[(String, String)],
    hours: u64,
    now: Timestamp,
) -> Vec<Item> {
    let mut body =
        format!("Your message has waited {hours} hours and is not yet delivered to:\n\n");
    for (to, why) in waiting {
        body.push_str(&format!("- {to}: {why}\n"));
    }
    body.push_str("\nThe router keeps trying; you will hear again if it gives up.\n");
    notice(msg, sender, "Delivery delayed", body, now)
}

fn notice(
    msg: &Message,
    sender: &Address,
    what: &str,
    mut body: String,
    now: Timestamp,
) -> Vec<Item> {
    let h = msg.header();
    body.push_str(&format!(
        "\nSubject: {}\nMessage-ID: {}\n",
        h.subject,
        h.message_id.as_str()
    ));
    let subject = clip(&format!("{what}: {}", h.subject), crate::MAX_SUBJECT_BYTES);
    body = clip(&body, crate::MAX_BODY_BYTES);
    let mut header = Header::new(&subject, &body);
    header.from = Address::parse(ROUTER_NAME).ok();
    header.send_to = vec![sender.clone()];
    header.posted = Some(now);
    let mut items = Message::Memo(Memo { header }).to_items();
    items.push(datetime(item::DELIVERED_DATE, now));
    items
}

/// `s` cut to at most `max` bytes at a character boundary.
fn clip(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// A new note with `unid` and `items`, made now, to write with
/// `put_foreign` (its first version: sequence number 1).
pub(crate) fn foreign(unid: Unid, items: Vec<Item>, now: Timestamp) -> ForeignNote {
    ForeignNote {
        oid: OriginatorId {
            unid,
            seq_num: 1,
            seq_time: now,
        },
        created: now,
        modified: now,
        deleted: false,
        items,
        attachments: Vec::new(),
        revisions: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_differ_by_kind_and_file() {
        let m = Unid([7; 16]);
        let a = DbPath::parse("mail/a.fdb").unwrap();
        let b = DbPath::parse("mail/b.fdb").unwrap();
        assert_eq!(copy_unid(m, &a), copy_unid(m, &a));
        assert_ne!(copy_unid(m, &a), copy_unid(m, &b));
        assert_ne!(copy_unid(m, &a), sent_unid(m, &a));
        assert_ne!(copy_unid(m, &a), copy_unid(Unid([8; 16]), &a));
        assert_ne!(ndr_unid(m, &[0]), ndr_unid(m, &[0, 1]));
        assert_ne!(delay_unid(m), ndr_unid(m, &[]));
    }

    #[test]
    fn clipping_keeps_whole_characters() {
        assert_eq!(clip("héllo", 2), "h");
        assert_eq!(clip("abc", 10), "abc");
    }
}
