//! Sending: a message is deposited in a mail box, where the router (a
//! later phase) finds it and delivers it, recipient by recipient.
//!
//! There are `mail.boxes` = N mail boxes (default 4), databases at the
//! root of the data directory: `mail.box.fdb` when N is 1, else
//! `mail1.box.fdb` … `mailN.box.fdb` (database paths end in `.fdb`, so
//! Domino's `mail.box` gets the extension). A message goes to box
//! `fnv1a(message id) mod N`: message ids are random, so deposits spread
//! evenly and no box is a hot spot, and the choice needs no shared state
//! (a round robin would be one more thing every sender contends on).
//! Changing N changes only where new messages go; the router drains every
//! box there is.
//!
//! A deposited message is the message's items plus its delivery state,
//! one entry per recipient in parallel lists (docs/mail.md):
//!
//! ```text
//!   Recipients        text list     To, Cc and Bcc, each once (compared as names are)
//!   DeliveryState     text list     pending | delivered | failed
//!   DeliveryReason    text list     why it failed ("" otherwise)
//!   DeliveryAttempts  number list   attempts so far
//!   Deposited         date-time     present once the message is complete
//! ```
//!
//! Everything the router needs to deliver each recipient exactly once is
//! in logged data: it will mark a recipient delivered in the same box
//! document after filing the copy, and recognise a copy it filed before a
//! crash by its `MessageID`.
//!
//! `Deposited` is the commit point of a deposit (I28). A message without
//! attachments is one commit carrying it. A message with attachments
//! needs more (an attachment is stored against an existing document), so
//! the document is created without it, each attachment stored, and
//! `Deposited` added last: a crash meanwhile leaves a document the router
//! ignores (and may clear away), never a message delivered without its
//! attachments. Every step is durable when it returns (I2), so a deposit
//! is durable, and will be delivered, once [`deposit`] returns.
//!
//! The sender is a directory [`Person`], found by whoever calls: the
//! server from the signed-in user, the embedded command line from
//! `--from`. `From` is set from it and a `From` naming anyone else is
//! refused (`Person::sign`). A mail box's ACL admits only server
//! administrators, so nobody deposits around this check. Mail received
//! from outside, which has no directory sender, comes in through
//! `inbound.rs` instead, and is marked as such.

use crate::attach::{self, Attachment};
use crate::directory::Person;
use crate::message::{datetime, text, text_list, Address, Items, Message, MessageId};
use crate::sysdb::{self, SystemDb};
use crate::{MailConfig, MailError, MailResult};
use nsf::{Acl, Database, DbPath, Engine, Item, ItemUpdate, ItemValue, Timestamp, Unid};
use std::collections::HashSet;
use std::sync::Arc;
use views::{ColumnDef, ViewDef, Views};

/// The view of a mail box listing deposited messages with a recipient
/// still pending, oldest first.
pub const PENDING_VIEW: &str = "(Pending)";

/// Item names of the delivery state (see the module docs).
pub mod item {
    pub const RECIPIENTS: &str = "Recipients";
    pub const DELIVERY_STATE: &str = "DeliveryState";
    pub const DELIVERY_REASON: &str = "DeliveryReason";
    pub const DELIVERY_ATTEMPTS: &str = "DeliveryAttempts";
    pub const DEPOSITED: &str = "Deposited";
    /// On a message received from outside (SMTP): the envelope sender,
    /// `""` for the null path of a bounce (`inbound.rs`).
    pub const INBOUND_FROM: &str = "InboundFrom";
    /// On a message submitted by a signed-in person (RFC 6409): their
    /// full name; the router's reports about it go to them.
    pub const SUBMITTED_BY: &str = "SubmittedBy";
    /// Per recipient: when the router tries again (µs since the epoch;
    /// 0 = at once). Absent until a first attempt failed.
    pub const DELIVERY_NEXT: &str = "DeliveryNext";
    /// The sender's copy in Sent: `pending`, `filed` or `failed`.
    pub const SENDER_COPY: &str = "SenderCopy";
    /// Attempts at the sender's copy so far, and when the next is due.
    pub const SENDER_COPY_ATTEMPTS: &str = "SenderCopyAttempts";
    pub const SENDER_COPY_NEXT: &str = "SenderCopyNext";
    /// When the delay notice went to the sender; absent before.
    pub const DELAY_NOTICE: &str = "DelayNotice";
}

/// Where one recipient's copy stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeliveryState {
    /// Not yet filed.
    Pending,
    /// Filed in the recipient's mail file.
    Delivered,
    /// Given up on (unknown recipient, ...): the sender gets a report.
    Failed { reason: String },
}

impl DeliveryState {
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            DeliveryState::Pending => "pending",
            DeliveryState::Delivered => "delivered",
            DeliveryState::Failed { .. } => "failed",
        }
    }
}

/// One recipient of a deposited message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub recipient: Address,
    pub state: DeliveryState,
    pub attempts: u32,
}

/// A deposited message as its mail box holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct Deposit {
    pub unid: Unid,
    pub message: Message,
    pub deliveries: Vec<Delivery>,
    /// `None`: the deposit never completed (see the module docs).
    pub deposited: Option<Timestamp>,
}

/// Where a deposit went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DepositId {
    pub mail_box: DbPath,
    pub unid: Unid,
    pub message_id: MessageId,
}

/// The path of box `index` (0-based) of `count`.
pub fn box_path(index: u32, count: u32) -> DbPath {
    let name = match count {
        1 => "mail.box.fdb".to_string(),
        _ => format!("mail{}.box.fdb", index + 1),
    };
    DbPath::parse(&name).expect("mail box names are canonical database paths")
}

/// The box a message goes to (see the module docs).
pub fn box_for(id: &MessageId, count: u32) -> DbPath {
    box_path(
        (fnv1a(id.as_str().as_bytes()) % u64::from(count.max(1))) as u32,
        count.max(1),
    )
}

/// FNV-1a, 64 bits: a fixed, well-spread hash (std's is not promised to
/// stay the same between releases).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Opens a mail box, making it on first use (design: [`PENDING_VIEW`];
/// ACL: server administrators only).
pub fn open_box(engine: &Engine, views: &Views, path: &DbPath) -> MailResult<Arc<Database>> {
    sysdb::open_or_create(
        engine,
        views,
        &SystemDb {
            path: path.to_string(),
            title: "Mail box".into(),
            design: box_design,
            acl: Acl::for_creator(None),
        },
    )
}

fn box_design() -> Vec<ViewDef> {
    let col = |spec: &str| ColumnDef::parse(spec).expect("the mail box's columns parse");
    vec![ViewDef::view(
        PENDING_VIEW,
        "SELECT @IsAvailable(Deposited) & (DeliveryState = \"pending\" | SenderCopy = \"pending\")",
        vec![col("Deposited=Deposited:asc"), col("MessageID=MessageID")],
    )]
}

/// Deposits `msg` from `sender` with `files` attached, for delivery to
/// every recipient (see the module docs for the box, the items, the
/// commit point and the sender rule). Refused before anything is stored:
/// no recipient, a forged From, anything over a limit that can be known
/// beforehand. Durable when this returns.
pub fn deposit(
    engine: &Engine,
    views: &Views,
    config: &MailConfig,
    sender: &Person,
    mut msg: Message,
    files: &mut [Attachment<'_>],
) -> MailResult<DepositId> {
    sender.sign(&mut msg)?;
    // Trace lines are the SMTP server's to write (`inbound.rs`).
    msg.header_mut().received.clear();
    msg.header_mut().original_mime = None;
    msg.validate_for_sending()?;
    let deliveries = pending(msg.header().recipients());
    // The sender's copy is filed in Sent by the router (a message from
    // outside, `inbound.rs`, has no local sender and so no such item).
    let extra = vec![text(item::SENDER_COPY, "pending")];
    commit(engine, views, config, msg, deliveries, extra, files, None)
}

/// Stores a checked message with its delivery state (`deliveries`, at
/// least one) and `extra` items, following I28; durable when this
/// returns. `deposit` and `inbound::deposit_inbound` differ only in
/// where the sender and the recipients come from. `original` is a
/// received message's bytes, stored as the attachment its header's
/// `original_mime` names; it is not counted against the message's size
/// limit (the SMTP session's own limit bounded it, and its parts would
/// otherwise count twice).
#[allow(clippy::too_many_arguments)]
pub(crate) fn commit(
    engine: &Engine,
    views: &Views,
    config: &MailConfig,
    mut msg: Message,
    deliveries: Vec<Delivery>,
    extra: Vec<Item>,
    files: &mut [Attachment<'_>],
    original: Option<&[u8]>,
) -> MailResult<DepositId> {
    let now = Timestamp::now();
    msg.header_mut().posted = Some(now);
    let body = msg.header().body.len();
    attach::check(body, files, config.max_message_bytes())?;
    let message_id = msg.header().message_id.clone();
    let mail_box = box_for(&message_id, config.boxes());
    let db = open_box(engine, views, &mail_box)?;
    let mut state = delivery_items(&deliveries);
    state.extend(extra);
    state.push(datetime(item::DEPOSITED, now));
    let original = match (original, msg.header().original_mime.clone()) {
        (Some(bytes), Some(name)) => Some((name, bytes)),
        _ => None,
    };
    let unid =
        if files.is_empty() && original.is_none() {
            // I28: the message and its `Deposited` in one commit.
            let mut items = msg.to_items();
            items.extend(state);
            db.create(items)?.unid
        } else {
            let unid = db.create(msg.to_items())?.unid;
            let stored = attach::store(&db, unid, files, body, config.max_message_bytes())
                .and_then(|()| match &original {
                    Some((name, bytes)) => db
                        .put_attachment(unid, name, ORIGINAL_MIME_TYPE, &mut &bytes[..])
                        .map(drop)
                        .map_err(MailError::from),
                    None => Ok(()),
                });
            if let Err(e) = stored {
                // Best effort: without `Deposited` the router ignores it anyway.
                let _ = db.delete(unid, None, true);
                return Err(e);
            }
            // I28: `Deposited` only once every attachment is durable.
            let updates = state.into_iter().map(ItemUpdate::Set).collect();
            db.update(unid, updates, None, true)?;
            unid
        };
    Ok(DepositId {
        mail_box,
        unid,
        message_id,
    })
}

/// The content type of the attachment holding a received message.
pub const ORIGINAL_MIME_TYPE: &str = "message/rfc822";

/// Every one of `recipients` once (compared as names are), pending.
pub(crate) fn pending<'a>(recipients: impl Iterator<Item = &'a Address>) -> Vec<Delivery> {
    let mut seen = HashSet::new();
    recipients
        .filter(|a| seen.insert(a.lookup_key()))
        .map(|a| Delivery {
            recipient: a.clone(),
            state: DeliveryState::Pending,
            attempts: 0,
        })
        .collect()
}

pub(crate) fn delivery_items(d: &[Delivery]) -> Vec<Item> {
    let reason = |s: &DeliveryState| match s {
        DeliveryState::Failed { reason } => reason.clone(),
        _ => String::new(),
    };
    vec![
        text_list(
            item::RECIPIENTS,
            d.iter().map(|d| d.recipient.to_string()).collect(),
        ),
        text_list(
            item::DELIVERY_STATE,
            d.iter().map(|d| d.state.as_str().to_string()).collect(),
        ),
        text_list(
            item::DELIVERY_REASON,
            d.iter().map(|d| reason(&d.state)).collect(),
        ),
        Item {
            name: item::DELIVERY_ATTEMPTS.into(),
            value: ItemValue::NumberList(d.iter().map(|d| f64::from(d.attempts)).collect()),
        },
    ]
}

/// Reads a mail box document back: the message and each recipient's
/// state. A document whose items do not make one is `BadStored`.
pub fn read_deposit(db: &Database, unid: Unid) -> MailResult<Deposit> {
    deposit_of(db, &db.get(unid)?)
}

/// [`read_deposit`] for a note already read.
pub(crate) fn deposit_of(db: &Database, note: &nsf::Note) -> MailResult<Deposit> {
    let unid = note.oid.unid;
    let read = || -> MailResult<Deposit> {
        let r = Items(&note.items);
        Ok(Deposit {
            unid,
            message: Message::from_items(&note.items)?,
            deliveries: deliveries(&r)?,
            deposited: r.datetime(item::DEPOSITED)?,
        })
    };
    read().map_err(|e| match e {
        MailError::BadMessage(reason) => MailError::BadStored {
            db: db.path().to_string(),
            unid,
            reason,
        },
        e => e,
    })
}

fn deliveries(r: &Items<'_>) -> MailResult<Vec<Delivery>> {
    let recipients = r.text_list(item::RECIPIENTS)?;
    let states = r.text_list(item::DELIVERY_STATE)?;
    let reasons = r.text_list(item::DELIVERY_REASON)?;
    let attempts = match r.get(item::DELIVERY_ATTEMPTS) {
        None => Vec::new(),
        Some(ItemValue::NumberList(l)) => l.clone(),
        Some(ItemValue::Number(n)) => vec![*n],
        Some(_) => return Err(bad("DeliveryAttempts must be numbers")),
    };
    let n = recipients.len();
    if [states.len(), reasons.len(), attempts.len()] != [n; 3] {
        return Err(bad(&format!(
            "the delivery lists differ in length ({n} recipients, {} states, {} reasons, {} attempt counts)",
            states.len(),
            reasons.len(),
            attempts.len()
        )));
    }
    (0..n)
        .map(|i| {
            let state = match states[i].as_str() {
                "pending" => DeliveryState::Pending,
                "delivered" => DeliveryState::Delivered,
                "failed" => DeliveryState::Failed {
                    reason: reasons[i].clone(),
                },
                s => return Err(bad(&format!("{s:?} is not a delivery state"))),
            };
            let a = attempts[i];
            if !(a >= 0.0 && a <= f64::from(u32::MAX) && a.fract() == 0.0) {
                return Err(bad(&format!("{a} is not an attempt count")));
            }
            Ok(Delivery {
                recipient: Address::parse(&recipients[i])
                    .map_err(|e| bad(&format!("Recipients: {e}")))?,
                state,
                attempts: a as u32,
            })
        })
        .collect()
}

fn bad(reason: &str) -> MailError {
    MailError::BadMessage(reason.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::directory::{Directory, NewPerson};
    use crate::message::{Header, Memo};
    use crate::sysdb::testing;
    use crate::{create_user, MailConfig};
    use views::{Row, Start};

    fn memo(to: &[&str], cc: &[&str], bcc: &[&str]) -> Message {
        let list = |l: &[&str]| l.iter().map(|a| Address::parse(a).unwrap()).collect();
        let mut h = Header::new("Status", "All well.");
        h.send_to = list(to);
        h.copy_to = list(cc);
        h.blind_copy_to = list(bcc);
        Message::Memo(Memo { header: h })
    }

    fn alice(engine: &Engine, views: &Views) -> Person {
        let dir = Directory::open(engine, views).unwrap();
        let new = NewPerson {
            name: "Alice".into(),
            ..NewPerson::default()
        };
        create_user(engine, views, &dir, &new).unwrap()
    }

    #[test]
    fn box_names_follow_the_count() {
        assert_eq!(box_path(0, 1).as_str(), "mail.box.fdb");
        assert_eq!(box_path(0, 4).as_str(), "mail1.box.fdb");
        assert_eq!(box_path(3, 4).as_str(), "mail4.box.fdb");
        let id = MessageId::parse("<x@y>").unwrap();
        assert_eq!(
            box_for(&id, 4),
            box_for(&id, 4),
            "the same id, the same box"
        );
    }

    #[test]
    fn messages_spread_over_every_box() {
        let mut counts = [0u32; 4];
        for _ in 0..4_000 {
            let p = box_for(&MessageId::new(), 4);
            let n: usize = p.as_str()[4..5].parse().unwrap();
            counts[n - 1] += 1;
        }
        // 1,000 expected each; 800 is more than six standard deviations off.
        assert!(counts.iter().all(|&c| c > 800), "{counts:?}");
    }

    #[test]
    fn a_deposit_holds_the_message_and_a_pending_state_per_recipient() {
        let (engine, views) = testing::engine();
        let alice = alice(&engine, &views);
        let config = MailConfig::default();
        let msg = memo(&["bob", "Carol <carol>"], &["BOB", "dan"], &["erin"]);
        let id = deposit(&engine, &views, &config, &alice, msg.clone(), &mut []).unwrap();
        assert_eq!(id.mail_box, box_for(&id.message_id, 4));
        let db = engine.open_database(id.mail_box.as_str()).unwrap();
        let d = read_deposit(&db, id.unid).unwrap();
        let recipients: Vec<String> = d
            .deliveries
            .iter()
            .map(|d| d.recipient.to_string())
            .collect();
        assert_eq!(recipients, ["bob", "Carol <carol>", "dan", "erin"]);
        assert!(d
            .deliveries
            .iter()
            .all(|d| d.state == DeliveryState::Pending && d.attempts == 0));
        assert!(d.deposited.is_some());
        let h = d.message.header();
        assert_eq!(h.from.as_ref().unwrap().to_string(), "Alice");
        assert_eq!(h.posted, d.deposited);
        assert_eq!(h.message_id, id.message_id);
        assert_eq!(
            h.blind_copy_to,
            msg.header().blind_copy_to,
            "the router needs Bcc"
        );
        // The box admits only server administrators; the router's view
        // lists the message.
        assert_eq!(db.acl().unwrap().unwrap(), Acl::for_creator(None));
        let pending = views.open(&db, PENDING_VIEW).unwrap();
        let rows = pending.read(&Start::Position(0), 10, false, false).unwrap();
        assert!(matches!(&rows[..], [Row::Entry { unid, .. }] if *unid == id.unid));
    }

    #[test]
    fn one_box_is_mail_box() {
        let (engine, views) = testing::engine();
        let alice = alice(&engine, &views);
        let config = MailConfig::new(1, 1 << 20).unwrap();
        let id = deposit(
            &engine,
            &views,
            &config,
            &alice,
            memo(&["bob"], &[], &[]),
            &mut [],
        )
        .unwrap();
        assert_eq!(id.mail_box.as_str(), "mail.box.fdb");
    }

    #[test]
    fn attachments_arrive_before_the_deposit_completes() {
        let (engine, views) = testing::engine();
        let alice = alice(&engine, &views);
        let (mut a, mut b): (&[u8], &[u8]) = (b"first file", b"second");
        let mut files = [
            Attachment {
                name: "a.txt".into(),
                mime: "text/plain".into(),
                size: Some(10),
                content: &mut a,
            },
            Attachment {
                name: "b.bin".into(),
                mime: "application/octet-stream".into(),
                size: None,
                content: &mut b,
            },
        ];
        let config = MailConfig::default();
        let msg = memo(&["bob"], &[], &[]);
        let id = deposit(&engine, &views, &config, &alice, msg, &mut files).unwrap();
        let db = engine.open_database(id.mail_box.as_str()).unwrap();
        let note = db.get(id.unid).unwrap();
        let sizes: Vec<u64> = note.attachments().map(|a| a.size).collect();
        assert_eq!(sizes, [10, 6]);
        let d = read_deposit(&db, id.unid).unwrap();
        assert!(d.deposited.is_some());
        assert_eq!(d.deliveries.len(), 1);
    }

    #[test]
    fn what_cannot_be_sent_is_refused_and_leaves_no_trace() {
        let (engine, views) = testing::engine();
        let alice = alice(&engine, &views);
        let config = MailConfig::new(1, 1 << 10).unwrap();
        let refused = |msg: Message, files: &mut [Attachment<'_>]| {
            deposit(&engine, &views, &config, &alice, msg, files).unwrap_err()
        };
        assert!(matches!(
            refused(memo(&[], &[], &[]), &mut []),
            MailError::BadMessage(r) if r.contains("recipient")
        ));
        let mut forged = memo(&["bob"], &[], &[]);
        forged.header_mut().from = Some(Address::parse("Bob").unwrap());
        assert!(matches!(
            refused(forged, &mut []),
            MailError::ForgedSender { claimed, sender } if claimed == "Bob" && sender == "Alice"
        ));
        // Declared too large: refused before anything is stored.
        let mut big: &[u8] = &[0; 2048];
        let mut files = [Attachment {
            name: "big".into(),
            mime: "application/octet-stream".into(),
            size: Some(2048),
            content: &mut big,
        }];
        assert!(matches!(
            refused(memo(&["bob"], &[], &[]), &mut files),
            MailError::TooLarge { size, limit: 1024, .. } if size > 1024
        ));
        // Found too large as it streams: the partial deposit is removed.
        let mut big: &[u8] = &[0; 2048];
        let mut files = [Attachment {
            name: "big".into(),
            mime: "application/octet-stream".into(),
            size: None,
            content: &mut big,
        }];
        assert!(matches!(
            refused(memo(&["bob"], &[], &[]), &mut files),
            MailError::TooLarge { limit: 1024, .. }
        ));
        let (mut a, mut b): (&[u8], &[u8]) = (b"1", b"2");
        let mut twins = [
            Attachment {
                name: "x".into(),
                mime: "text/plain".into(),
                size: None,
                content: &mut a,
            },
            Attachment {
                name: "X".into(),
                mime: "text/plain".into(),
                size: None,
                content: &mut b,
            },
        ];
        assert!(matches!(
            refused(memo(&["bob"], &[], &[]), &mut twins),
            MailError::BadMessage(r) if r.contains("two attachments")
        ));
        // The only box used holds no live document.
        let db = engine.open_database("mail.box.fdb").unwrap();
        let mut live = 0;
        db.for_each_note(|n| {
            if !n.deleted && !views::is_design_note(&n) && n.oid.unid != db.acl_unid() {
                live += 1;
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(live, 0);
    }

    #[test]
    fn damaged_delivery_state_is_named() {
        let (engine, views) = testing::engine();
        let alice = alice(&engine, &views);
        let config = MailConfig::new(1, 1 << 20).unwrap();
        let id = deposit(
            &engine,
            &views,
            &config,
            &alice,
            memo(&["bob", "carol"], &[], &[]),
            &mut [],
        )
        .unwrap();
        let db = engine.open_database(id.mail_box.as_str()).unwrap();
        let set = |item: Item| {
            db.update(id.unid, vec![ItemUpdate::Set(item)], None, true)
                .unwrap();
        };
        set(text_list(item::DELIVERY_STATE, vec!["pending".into()]));
        assert!(matches!(
            read_deposit(&db, id.unid),
            Err(MailError::BadStored { reason, .. }) if reason.contains("differ in length")
        ));
        set(text_list(
            item::DELIVERY_STATE,
            vec!["pending".into(), "lost".into()],
        ));
        assert!(matches!(
            read_deposit(&db, id.unid),
            Err(MailError::BadStored { reason, .. }) if reason.contains("\"lost\"")
        ));
        set(text_list(
            item::DELIVERY_STATE,
            vec!["failed".into(), "delivered".into()],
        ));
        set(text_list(
            item::DELIVERY_REASON,
            vec!["unknown recipient".into(), "".into()],
        ));
        let d = read_deposit(&db, id.unid).unwrap();
        assert_eq!(
            d.deliveries[0].state,
            DeliveryState::Failed {
                reason: "unknown recipient".into()
            }
        );
        assert_eq!(d.deliveries[1].state, DeliveryState::Delivered);
    }
}
