//! The outbound queue: `mail.out.fdb`, one document per message and
//! remote domain, holding the message's bytes and where each of its
//! recipients in that domain stands (design.md I58).
//!
//! ```text
//!   OutDomain      text        the recipients' domain (lowercase)
//!   OutSender      text        the envelope sender (MAIL FROM; "" for <>)
//!   OutRecipients  text list   the envelope recipients in that domain
//!   OutState       text list   per recipient: pending | sent | failed
//!   OutReason      text list   per recipient: the peer's last answer
//!   OutStatus      text        waiting | retrying | delivered | failed
//!   OutAttempts    number      attempts so far
//!   OutNext        number      when the next is due (µs since 1970)
//!   Queued         date-time   when the router queued it
//!   ReturnTo       text        the local person a DSN goes to ("" none)
//!   MessageID      text        the deposit's, for logs
//!   DsnDue         text        "yes" once no recipient is pending, one
//!                              failed and a DSN is owed; "no" once filed
//!   DelayNotice    date-time   when the sender was told it is delayed
//!   message.eml    attachment  the message, byte for byte
//! ```
//!
//! The router queues an entry as it files a copy (I33): under a UNID
//! derived from the deposit and the domain, written only if no note of
//! that UNID is there, before the box records the recipients delivered.
//! The delivery task then reads the due entries (`(Queue)`, by
//! `OutNext`), hands each to its route and records the outcome with one
//! update of the entry ([`record`]).

use crate::message::{datetime, text, text_list, Items};
use crate::router::{derive_unid, foreign};
use crate::sysdb::{self, SystemDb};
use crate::{MailError, MailResult};
use nsf::{
    Acl, Database, Engine, ForeignAttachment, ForeignContent, Item, ItemUpdate, ItemValue,
    NsfError, Timestamp, Unid,
};
use std::sync::Arc;
use views::{ColumnDef, Row, Start, ViewDef, Views};

/// The queue database.
pub const QUEUE_PATH: &str = "mail.out.fdb";
/// Its view of entries with a recipient still pending, soonest first.
pub const QUEUE_VIEW: &str = "(Queue)";
/// The attachment holding the message.
pub const MESSAGE_NAME: &str = "message.eml";

/// Item names (see the module docs).
pub mod item {
    pub const DOMAIN: &str = "OutDomain";
    pub const SENDER: &str = "OutSender";
    pub const RECIPIENTS: &str = "OutRecipients";
    pub const STATE: &str = "OutState";
    pub const REASON: &str = "OutReason";
    pub const STATUS: &str = "OutStatus";
    pub const ATTEMPTS: &str = "OutAttempts";
    pub const NEXT: &str = "OutNext";
    pub const QUEUED: &str = "Queued";
    pub const RETURN_TO: &str = "ReturnTo";
    pub const DSN_DUE: &str = "DsnDue";
    pub const DELAY_NOTICE: &str = "DelayNotice";
}

/// Where one recipient of an entry stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutState {
    Pending,
    /// The peer answered 250 to the DATA that carried it.
    Sent,
    Failed,
}

impl OutState {
    fn as_str(&self) -> &'static str {
        match self {
            OutState::Pending => "pending",
            OutState::Sent => "sent",
            OutState::Failed => "failed",
        }
    }
}

/// One queue entry as read.
#[derive(Clone, Debug)]
pub struct Entry {
    pub unid: Unid,
    pub domain: String,
    pub sender: String,
    pub recipients: Vec<String>,
    pub states: Vec<OutState>,
    pub reasons: Vec<String>,
    pub attempts: u32,
    pub next: Timestamp,
    pub queued: Timestamp,
    pub return_to: String,
    pub message_id: String,
    /// A DSN is owed and not yet filed.
    pub dsn_due: bool,
    /// The sender has been told it is delayed.
    pub delay_noticed: bool,
}

impl Entry {
    /// The recipients still pending.
    pub fn pending(&self) -> Vec<usize> {
        (0..self.recipients.len())
            .filter(|&i| self.states[i] == OutState::Pending)
            .collect()
    }
}

/// Opens the queue, making it on first use (server administrators only).
pub fn open_queue(engine: &Engine, views: &Views) -> MailResult<Arc<Database>> {
    sysdb::open_or_create(
        engine,
        views,
        &SystemDb {
            path: QUEUE_PATH.into(),
            title: "Outbound mail".into(),
            design: queue_design,
            acl: Acl::for_creator(None),
        },
    )
}

fn queue_design() -> Vec<ViewDef> {
    let col = |spec: &str| ColumnDef::parse(spec).expect("the queue's columns parse");
    vec![ViewDef::view(
        QUEUE_VIEW,
        "SELECT OutStatus = \"waiting\" | OutStatus = \"retrying\" | DsnDue = \"yes\"",
        vec![col("Next=OutNext:asc"), col("Domain=OutDomain")],
    )]
}

/// The UNID of the entry for deposit `message` and `domain`.
pub fn entry_unid(message: Unid, domain: &str) -> Unid {
    derive_unid("out", message, &[domain.to_ascii_lowercase().as_bytes()])
}

/// What the router queues for one deposit and domain.
pub(crate) struct NewEntry<'a> {
    pub deposit: Unid,
    pub domain: &'a str,
    pub sender: &'a str,
    pub recipients: Vec<String>,
    pub return_to: &'a str,
    pub message_id: &'a str,
    /// The message's bytes: an attachment of the box document, or made.
    pub message: Message<'a>,
}

pub(crate) enum Message<'a> {
    Attachment { db: &'a Database, name: &'a str },
    Bytes(Vec<u8>),
}

/// Queues `e` unless an entry of its UNID is there (live or deleted):
/// durable when this returns (I2), and never twice (I33, I58).
pub(crate) fn enqueue(queue: &Database, e: NewEntry<'_>, now: Timestamp) -> MailResult<()> {
    let unid = entry_unid(e.deposit, e.domain);
    match queue.get_any(unid) {
        Ok(_) => return Ok(()),
        Err(NsfError::NoSuchDocument { .. }) => {}
        Err(err) => return Err(err.into()),
    }
    let n = e.recipients.len();
    let items = vec![
        text(item::DOMAIN, e.domain),
        text(item::SENDER, e.sender),
        text_list(item::RECIPIENTS, e.recipients),
        text_list(item::STATE, vec!["pending".into(); n]),
        text_list(item::REASON, vec![String::new(); n]),
        text(item::STATUS, "waiting"),
        number(item::ATTEMPTS, 0.0),
        number(item::NEXT, 0.0),
        datetime(item::QUEUED, now),
        text(item::RETURN_TO, e.return_to),
        text(crate::message::item::MESSAGE_ID, e.message_id),
    ];
    let mut note = foreign(unid, items, now);
    let content = match e.message {
        Message::Attachment { db, name } => {
            ForeignContent::Reader(Box::new(db.open_attachment(e.deposit, name)?))
        }
        Message::Bytes(b) => ForeignContent::Reader(Box::new(std::io::Cursor::new(b))),
    };
    note.attachments.push(ForeignAttachment {
        name: MESSAGE_NAME.into(),
        mime: crate::ORIGINAL_MIME_TYPE.into(),
        content,
    });
    queue.put_foreign(note)?;
    Ok(())
}

/// The entries due at `now` (at most `limit`, soonest first), and when
/// the first one not yet due is.
pub fn due(
    engine: &Engine,
    views: &Views,
    now: Timestamp,
    limit: usize,
) -> MailResult<(Vec<Entry>, Option<Timestamp>, QueueCounts)> {
    if !engine.list_databases()?.iter().any(|p| p == QUEUE_PATH) {
        return Ok((Vec::new(), None, QueueCounts::default()));
    }
    let db = open_queue(engine, views)?;
    let view = views.open(&db, QUEUE_VIEW)?;
    let mut out = Vec::new();
    let mut counts = QueueCounts::default();
    let mut next_due = None;
    let mut at = 0u64;
    loop {
        let rows = view.read(&Start::Position(at), 500, false, false)?;
        let done = rows.len() < 500;
        at += rows.len() as u64;
        for row in rows {
            let Row::Entry { unid, .. } = row else {
                continue;
            };
            let entry = match db.get(unid) {
                Ok(note) => read(&db, unid, &note.items)?,
                Err(NsfError::NoSuchDocument { .. }) => continue,
                Err(e) => return Err(e.into()),
            };
            let pending = !entry.pending().is_empty();
            match (pending, entry.attempts) {
                (false, _) => {}
                (true, 0) => counts.waiting += 1,
                (true, _) => counts.retrying += 1,
            }
            let due = entry.next <= now || (!pending && entry.dsn_due);
            if due && out.len() < limit {
                out.push(entry);
            } else if !due {
                next_due = Some(next_due.map_or(entry.next, |t: Timestamp| t.min(entry.next)));
            }
        }
        if done {
            return Ok((out, next_due, counts));
        }
    }
}

/// How many entries wait for a first attempt and for another.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueCounts {
    pub waiting: u64,
    pub retrying: u64,
}

/// Reads the message of `entry`.
pub fn message(engine: &Engine, views: &Views, entry: &Entry) -> MailResult<Vec<u8>> {
    let db = open_queue(engine, views)?;
    let mut reader = db.open_attachment(entry.unid, MESSAGE_NAME)?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut reader, &mut bytes)
        .map_err(|e| MailError::BadMessage(format!("reading the queued message: {e}")))?;
    Ok(bytes)
}

/// Records `entry` (its states, reasons, attempts and next time as the
/// caller set them) in one update, durable when this returns (I2).
pub fn record(engine: &Engine, views: &Views, entry: &Entry) -> MailResult<()> {
    let db = open_queue(engine, views)?;
    let status = if entry.states.contains(&OutState::Pending) {
        if entry.attempts == 0 {
            "waiting"
        } else {
            "retrying"
        }
    } else if entry.states.contains(&OutState::Sent) {
        "delivered"
    } else {
        "failed"
    };
    let owed = status != "waiting"
        && status != "retrying"
        && entry.states.contains(&OutState::Failed)
        && !entry.return_to.is_empty();
    let updates = vec![
        text(item::DSN_DUE, if owed { "yes" } else { "no" }),
        text_list(
            item::STATE,
            entry.states.iter().map(|s| s.as_str().into()).collect(),
        ),
        text_list(item::REASON, entry.reasons.clone()),
        text(item::STATUS, status),
        number(item::ATTEMPTS, f64::from(entry.attempts)),
        number(item::NEXT, entry.next.0 as f64),
    ];
    db.update(
        entry.unid,
        updates.into_iter().map(ItemUpdate::Set).collect(),
        None,
        true,
    )?;
    Ok(())
}

/// Notes that the sender was told `entry` is delayed (durable when this
/// returns): one notice per entry.
pub(crate) fn delay_noticed(queue: &Database, entry: &Entry, now: Timestamp) -> MailResult<()> {
    let updates = vec![ItemUpdate::Set(datetime(item::DELAY_NOTICE, now))];
    queue.update(entry.unid, updates, None, true)?;
    Ok(())
}

/// Notes that the DSN about `entry`'s failures is filed (durable when
/// this returns).
pub(crate) fn dsn_filed(queue: &Database, entry: &Entry) -> MailResult<()> {
    let updates = vec![ItemUpdate::Set(text(item::DSN_DUE, "no"))];
    queue.update(entry.unid, updates, None, true)?;
    Ok(())
}

fn number(name: &str, v: f64) -> Item {
    Item {
        name: name.into(),
        value: ItemValue::Number(v),
    }
}

fn read(db: &Database, unid: Unid, items: &[Item]) -> MailResult<Entry> {
    let r = Items(items);
    let bad = |reason: String| MailError::BadStored {
        db: db.path().to_string(),
        unid,
        reason,
    };
    let recipients = r.text_list(item::RECIPIENTS)?;
    let n = recipients.len();
    let states: Vec<OutState> = r
        .text_list(item::STATE)?
        .iter()
        .map(|s| match s.as_str() {
            "pending" => Ok(OutState::Pending),
            "sent" => Ok(OutState::Sent),
            "failed" => Ok(OutState::Failed),
            s => Err(bad(format!("{s:?} is not an outbound state"))),
        })
        .collect::<MailResult<_>>()?;
    let reasons = r.text_list(item::REASON)?;
    if states.len() != n || reasons.len() != n {
        return Err(bad("the outbound lists differ in length".into()));
    }
    let num = |name: &str| match r.get(name) {
        Some(ItemValue::Number(v)) if *v >= 0.0 => Ok(*v),
        _ => Err(bad(format!("{name} is not a number"))),
    };
    Ok(Entry {
        unid,
        domain: r.text(item::DOMAIN)?.unwrap_or_default().to_string(),
        sender: r.text(item::SENDER)?.unwrap_or_default().to_string(),
        recipients,
        states,
        reasons,
        attempts: num(item::ATTEMPTS)?.min(f64::from(u32::MAX)) as u32,
        next: Timestamp(num(item::NEXT)? as i64),
        queued: r.datetime(item::QUEUED)?.unwrap_or(Timestamp(0)),
        return_to: r.text(item::RETURN_TO)?.unwrap_or_default().to_string(),
        message_id: r
            .text(crate::message::item::MESSAGE_ID)?
            .unwrap_or_default()
            .to_string(),
        dsn_due: r.text(item::DSN_DUE)? == Some("yes"),
        delay_noticed: r.datetime(item::DELAY_NOTICE)?.is_some(),
    })
}
