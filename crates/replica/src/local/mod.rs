//! The driver for two local database files: a [`crate::Source`] over one
//! `nsf::Database` and a [`crate::Puller`] over another, in one process.
//!
//! `body.rs` is what travels (an nsf note with its attachments as bytes)
//! and how nsf versions are replication versions; `store.rs` carries out
//! the machines' reads and writes on nsf; `run.rs` runs one pull and
//! reports it.

mod body;
mod run;
mod store;

pub use body::NoteBody;
pub use run::{pull, LocalFailure, LocalOptions, LocalReport};
