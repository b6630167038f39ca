//! The driver for two local database files: a [`crate::Source`] over one
//! `nsf::Database` and a [`crate::Puller`] over another, in one process.
//!
//! `body.rs` is what travels (an nsf note with its attachments as bytes)
//! and how nsf versions are replication versions; `store.rs` carries out
//! the machines' reads and writes on nsf; `side.rs` is one side of a pull
//! over one database (a machine plus its store), which network drivers
//! use too, with `net.rs` the packets' wire form; `run.rs` runs one pull
//! between two local files and reports it.

mod acl_rule;
mod body;
mod fragment;
pub mod net;
mod run;
mod side;
mod store;

pub use acl_rule::ActingFor;
pub use body::{Attachment, Content, NoteBody};
pub use run::{pull, LocalFailure, LocalOptions, LocalReport};
pub use side::{ReadCheck, Skipped, SourceSide, TargetSide, WriteCheck};
pub use store::load_histories;
