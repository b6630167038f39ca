//! The router: delivers what senders deposited in the mail boxes, each
//! recipient exactly once across crashes (design.md §12, I32, I33).
//!
//! Synchronous over nsf and views, with no sleep or poll of its own and
//! no thread that outlives a pass (a pass delivers into several mail
//! files at once on scoped threads, `workers.rs`): whoever drives it (the server's `router` task) calls
//! [`Router::pass`] when a mail box changed or the earliest retry is due,
//! and the pass says when that is.
//!
//! ```text
//!   pending.rs   the (Pending) rows of every box → routing states, due work
//!   state.rs     a deposit's routing state in its box document, transitions
//!   schedule.rs  the settings and the backoff schedule
//!   batch.rs     one mail file's copies: one batch of foreign writes, Inbox
//!   notices.rs   deterministic ids; the sender's copy, NDRs, delay notices
//!   stats.rs     what `show stats` reports of the router
//!   listing.rs   the queue as an administrator reads it (read-only)
//!   workers.rs   many mail files delivered into at once, bounded
//!   pass.rs      one pass: take fairly, resolve, deliver, notify, record
//! ```

mod batch;
mod listing;
mod notices;
mod pass;
mod pending;
mod schedule;
mod state;
mod stats;
mod workers;

pub use listing::{queue_listing, QueueListing, QueuedMessage, QueuedRecipient};
pub use notices::copy_unid;
pub(crate) use notices::{derive as derive_unid, foreign};
pub use pass::{Pass, Router};
pub use schedule::{backoff, RouterConfig, BACKOFF};
pub use stats::{RouterStats, StatsSnapshot};
