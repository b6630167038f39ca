//! The mail queue as an administrator reads it: every deposit the boxes'
//! `(Pending)` views list, oldest first, with each recipient's state,
//! attempts, next attempt and the reason it waits.
//!
//! Read-only and separate from a pass: it reads the same views and box
//! documents ([`pending::scan`]) but takes no work and writes nothing, so
//! reading the queue never delays or changes a delivery. What it shows
//! is the state the last pass recorded (I32): a recipient is *waiting*
//! before its first attempt and *retrying* after a failed one.

use super::pending::{boxes, queue, scan};
use super::state::Routing;
use crate::mailbox::DeliveryState;
use crate::MailResult;
use nsf::{Engine, Timestamp};
use views::Views;

/// One recipient of a queued message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueuedRecipient {
    pub address: String,
    /// `waiting` (no attempt yet), `retrying`, `delivered` or `failed`.
    pub state: &'static str,
    pub attempts: u32,
    /// Why it waits or failed ("" before the first attempt).
    pub reason: String,
    /// The earliest next attempt, while it waits (`None`: the next pass).
    pub next_attempt: Option<Timestamp>,
}

/// One message still in a mail box's queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueuedMessage {
    pub mail_box: String,
    pub unid: nsf::Unid,
    pub from: String,
    pub subject: String,
    pub deposited: Timestamp,
    pub recipients: Vec<QueuedRecipient>,
}

/// The queue: at most `limit` messages from each box, and per box how
/// many it lists in all (`(box, pending)`), and how many listed documents
/// did not read as deposits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueListing {
    pub messages: Vec<QueuedMessage>,
    pub boxes: Vec<(String, u64)>,
    pub damaged: usize,
}

/// Reads the queue of every mail box (see the module docs).
pub fn queue_listing(engine: &Engine, views: &Views, limit: usize) -> MailResult<QueueListing> {
    let mut out = QueueListing::default();
    for path in boxes(engine)? {
        let q = queue(engine, views, &path)?;
        out.boxes.push((path.to_string(), q.pending));
        let scanned = scan(&q, limit)?;
        out.damaged += scanned.damaged;
        out.messages
            .extend(scanned.work.iter().map(|r| message(path.as_str(), r)));
    }
    out.messages.sort_by_key(|m| m.deposited);
    Ok(out)
}

fn message(mail_box: &str, r: &Routing) -> QueuedMessage {
    let h = r.deposit.message.header();
    QueuedMessage {
        mail_box: mail_box.to_string(),
        unid: r.deposit.unid,
        from: h
            .from
            .as_ref()
            .map_or_else(String::new, |a| a.addr().to_string()),
        subject: h.subject.clone(),
        deposited: r.deposited(),
        recipients: r
            .deposit
            .deliveries
            .iter()
            .enumerate()
            .map(|(i, d)| {
                // No next time recorded yet (0): due at the next pass.
                let next = Some(r.next[i]).filter(|t| t.0 > 0);
                let (state, next) = match &d.state {
                    DeliveryState::Pending if d.attempts == 0 => ("waiting", next),
                    DeliveryState::Pending => ("retrying", next),
                    DeliveryState::Delivered => ("delivered", None),
                    DeliveryState::Failed { .. } => ("failed", None),
                };
                QueuedRecipient {
                    address: d.recipient.addr().to_string(),
                    state,
                    attempts: d.attempts,
                    reason: r.reasons.get(i).cloned().unwrap_or_default(),
                    next_attempt: next,
                }
            })
            .collect(),
    }
}
