//! Outbound delivery: mail for domains this server does not serve goes
//! to a durable queue (`mail.out.fdb`), from which the server's
//! `outbound` task hands it over SMTP to a per-domain route or the
//! smarthost, once per recipient domain across crashes (design.md I58).
//!
//! ```text
//!   config.rs   mail.domains, mail.smarthost, [[mail.route]]
//!   queue.rs    the queue: one entry per message and domain, its bytes,
//!               per-recipient state; enqueue (by the router), due, record
//!   attempt.rs  what an attempt's answers change; the retry schedule
//!   dsn.rs      the RFC 3464 reports to the local sender: failed, delayed
//! ```
//!
//! The network side (the SMTP client, STARTTLS, the task's loop) is the
//! server's: this crate does no I/O but the databases'.

mod attempt;
mod config;
mod dsn;
mod queue;

pub use attempt::{apply, one_line, Outcome};
pub use config::{OutboundConfig, Route};
pub use dsn::{build as build_dsn, file_delay_notice, file_dsn, Report};
pub use queue::{
    due, entry_unid, message, open_queue, record, Entry, OutState, QueueCounts, QUEUE_PATH,
    QUEUE_VIEW,
};
pub(crate) use queue::{enqueue, Message as QueuedMessage, NewEntry};
