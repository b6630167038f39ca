//! A deposit's routing state, as its box document holds it (I32), and
//! the transitions the router makes.
//!
//! Per recipient, in the parallel lists of docs/mail.md: state, reason,
//! attempts and `DeliveryNext`, the time of the next attempt. Per
//! message: the sender's copy (`SenderCopy` pending | filed | failed,
//! with its own attempts and next time) and `DelayNotice`, when the
//! sender was told the message waits. A pending recipient with attempts
//! is *retrying*; its reason says why it waits.
//!
//! ```text
//!   pending ──copy filed, in Inbox──▶ delivered
//!      │ └─mail file cannot take it──▶ pending, attempts+1, next = now + backoff
//!      └─unknown, ambiguous, expired, NDR filed──▶ failed(reason)
//! ```
//!
//! Nothing here writes: the pass changes a `Routing` and writes
//! [`Routing::updates`] back in one update of the box document, after
//! the copies it records are durable (I33).

use super::schedule::backoff;
use crate::mailbox::{delivery_items, deposit_of, item, DeliveryState, Deposit};
use crate::message::{datetime, text};
use crate::{MailError, MailResult};
use nsf::{Database, Item, ItemUpdate, ItemValue, Note, Timestamp};
use std::time::Duration;

/// Where the sender's copy stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SenderCopy {
    Pending,
    Filed,
    Failed,
}

impl SenderCopy {
    fn as_str(self) -> &'static str {
        match self {
            SenderCopy::Pending => "pending",
            SenderCopy::Filed => "filed",
            SenderCopy::Failed => "failed",
        }
    }
}

/// One deposit and its routing state.
#[derive(Clone, Debug)]
pub(crate) struct Routing {
    pub deposit: Deposit,
    /// Per recipient: the earliest time of the next attempt.
    pub next: Vec<Timestamp>,
    pub sender_copy: SenderCopy,
    pub sender_attempts: u32,
    pub sender_next: Timestamp,
    pub delay_notice: Option<Timestamp>,
    /// Per recipient: why it waits (or failed), else "".
    pub reasons: Vec<String>,
    /// The names of the message's attachments (copied with it).
    pub attachments: Vec<String>,
    /// Who submitted it (`SubmittedBy`, RFC 6409 submission): reports
    /// go to them rather than to its `From`.
    pub submitted_by: Option<String>,
    /// The envelope sender it came with (`InboundFrom`: received or
    /// submitted by SMTP), which an outbound copy keeps.
    pub inbound_from: Option<String>,
    /// Whether the pass changed anything to write back.
    pub changed: bool,
}

impl Routing {
    /// Reads the routing state of a box document.
    pub fn read(db: &Database, note: &Note) -> MailResult<Routing> {
        let deposit = deposit_of(db, note)?;
        let bad = |reason: String| MailError::BadStored {
            db: db.path().to_string(),
            unid: note.oid.unid,
            reason,
        };
        let get = |name: &str| {
            note.items
                .iter()
                .find(|i| i.name.eq_ignore_ascii_case(name))
        };
        let n = deposit.deliveries.len();
        let next = match get(item::DELIVERY_NEXT).map(|i| &i.value) {
            None => vec![Timestamp(0); n],
            Some(ItemValue::NumberList(l)) if l.len() == n => {
                l.iter().map(|&v| Timestamp(v as i64)).collect()
            }
            Some(_) => return Err(bad(format!("{} must be {n} numbers", item::DELIVERY_NEXT))),
        };
        let sender_copy = match get(item::SENDER_COPY).map(|i| &i.value) {
            None => SenderCopy::Filed, // deposited before the router filed one
            Some(ItemValue::Text(t)) if t == "pending" => SenderCopy::Pending,
            Some(ItemValue::Text(t)) if t == "filed" => SenderCopy::Filed,
            Some(ItemValue::Text(t)) if t == "failed" => SenderCopy::Failed,
            Some(v) => return Err(bad(format!("SenderCopy {v:?} is not a state"))),
        };
        let number = |name: &str| match get(name).map(|i| &i.value) {
            None => Ok(0.0),
            Some(ItemValue::Number(v)) if *v >= 0.0 => Ok(*v),
            Some(v) => Err(bad(format!("{name} {v:?} is not a count or time"))),
        };
        let reasons = match get(item::DELIVERY_REASON).map(|i| &i.value) {
            Some(ItemValue::TextList(l)) if l.len() == n => l.clone(),
            Some(ItemValue::Text(t)) if n == 1 => vec![t.clone()],
            _ => vec![String::new(); n],
        };
        let delay_notice = match get(item::DELAY_NOTICE).map(|i| &i.value) {
            None => None,
            Some(ItemValue::DateTime(t)) => Some(*t),
            Some(v) => return Err(bad(format!("DelayNotice {v:?} is not a time"))),
        };
        Ok(Routing {
            deposit,
            next,
            sender_copy,
            sender_attempts: number(item::SENDER_COPY_ATTEMPTS)?.min(f64::from(u32::MAX)) as u32,
            sender_next: Timestamp(number(item::SENDER_COPY_NEXT)? as i64),
            delay_notice,
            reasons,
            attachments: note.attachments().map(|a| a.name.clone()).collect(),
            submitted_by: match get(item::SUBMITTED_BY).map(|i| &i.value) {
                Some(ItemValue::Text(t)) => Some(t.clone()),
                _ => None,
            },
            inbound_from: match get(item::INBOUND_FROM).map(|i| &i.value) {
                Some(ItemValue::Text(t)) => Some(t.clone()),
                _ => None,
            },
            changed: false,
        })
    }

    /// When the message was deposited (its `Deposited`; the router reads
    /// only complete deposits, so it is there).
    pub fn deposited(&self) -> Timestamp {
        self.deposit.deposited.unwrap_or(Timestamp(0))
    }

    /// How long the message has waited at `now`.
    pub fn waited(&self, now: Timestamp) -> Duration {
        Duration::from_micros(now.0.saturating_sub(self.deposited().0).max(0) as u64)
    }

    /// Recipients still pending whose next attempt is due at `now`.
    pub fn due(&self, now: Timestamp) -> impl Iterator<Item = usize> + '_ {
        (0..self.deposit.deliveries.len()).filter(move |&i| {
            self.deposit.deliveries[i].state == DeliveryState::Pending && self.next[i] <= now
        })
    }

    /// Whether the sender's copy is pending and due at `now`.
    pub fn sender_due(&self, now: Timestamp) -> bool {
        self.sender_copy == SenderCopy::Pending && self.sender_next <= now
    }

    /// Recipient `i`'s copy is filed and in the Inbox.
    pub fn delivered(&mut self, i: usize) {
        let d = &mut self.deposit.deliveries[i];
        d.state = DeliveryState::Delivered;
        d.attempts = d.attempts.saturating_add(1);
        self.reasons[i] = String::new();
        self.changed = true;
    }

    /// Recipient `i` could not be delivered now: try again after the
    /// backoff for its attempt count.
    pub fn retry(&mut self, i: usize, reason: String, now: Timestamp) {
        let d = &mut self.deposit.deliveries[i];
        d.attempts = d.attempts.saturating_add(1);
        self.next[i] = after(now, backoff(d.attempts));
        self.reasons[i] = reason;
        self.changed = true;
    }

    /// Recipient `i` is given up (its NDR is filed).
    pub fn failed(&mut self, i: usize, reason: String) {
        let d = &mut self.deposit.deliveries[i];
        d.attempts = d.attempts.saturating_add(1);
        d.state = DeliveryState::Failed {
            reason: reason.clone(),
        };
        self.reasons[i] = reason;
        self.changed = true;
    }

    /// The last reason recipient `i` waits, if it is retrying.
    pub fn waiting_reason(&self, i: usize) -> Option<&str> {
        let d = &self.deposit.deliveries[i];
        match (&d.state, self.reasons.get(i)) {
            (DeliveryState::Pending, Some(r)) if d.attempts > 0 => Some(r.as_str()),
            _ => None,
        }
    }

    /// The sender's copy: filed, or waits, or (expired) given up.
    pub fn sender_filed(&mut self) {
        self.sender_copy = SenderCopy::Filed;
        self.changed = true;
    }

    pub fn sender_retry(&mut self, now: Timestamp) {
        self.sender_attempts = self.sender_attempts.saturating_add(1);
        self.sender_next = after(now, backoff(self.sender_attempts));
        self.changed = true;
    }

    pub fn sender_failed(&mut self) {
        self.sender_copy = SenderCopy::Failed;
        self.changed = true;
    }

    /// The items that record this state in the box document.
    pub fn updates(&self) -> Vec<ItemUpdate> {
        let mut items = delivery_items(&self.deposit.deliveries);
        // The reason list also says why a pending recipient waits.
        if let Some(reasons) = items.iter_mut().find(|i| i.name == item::DELIVERY_REASON) {
            reasons.value = ItemValue::TextList(self.reasons.clone());
        }
        items.push(Item {
            name: item::DELIVERY_NEXT.into(),
            value: ItemValue::NumberList(self.next.iter().map(|t| t.0 as f64).collect()),
        });
        items.push(text(item::SENDER_COPY, self.sender_copy.as_str()));
        items.push(Item {
            name: item::SENDER_COPY_ATTEMPTS.into(),
            value: ItemValue::Number(f64::from(self.sender_attempts)),
        });
        items.push(Item {
            name: item::SENDER_COPY_NEXT.into(),
            value: ItemValue::Number(self.sender_next.0 as f64),
        });
        items.extend(self.delay_notice.map(|t| datetime(item::DELAY_NOTICE, t)));
        items.into_iter().map(ItemUpdate::Set).collect()
    }
}

/// `now` plus `d`, saturating.
fn after(now: Timestamp, d: Duration) -> Timestamp {
    Timestamp(
        now.0
            .saturating_add(i64::try_from(d.as_micros()).unwrap_or(i64::MAX)),
    )
}
