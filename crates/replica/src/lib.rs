//! Replication as state machines with no I/O of their own.
//!
//! Two replicas of a database (same replica id, different files) converge
//! by *pulls*: a [`Puller`] on the target side and a [`Source`] on the
//! other exchange the messages of [`msg`] over whatever carries them — a
//! pair of local files, a client and a server, two servers. Neither
//! touches a file, a socket or a clock: they are fed packets, the answers
//! to the reads and writes they ask for, and the time, and they say what
//! to do next. Drivers do the rest; tests drive them through message loss,
//! duplication, reordering, cuts and restarts without a socket or a sleep.
//! Two-way replication is a pull each way.
//!
//! ```text
//!        target database                                source database
//!   ┌──────────────────────┐                        ┌──────────────────────┐
//!   │ driver: queries,     │                        │ driver: reads changes│
//!   │ write batches (one   │                        │ and documents        │
//!   │ txn each), history   │                        │                      │
//!   └──▲────────────┬──────┘                        └──▲────────────┬──────┘
//!      │ PullAction │ answers                SourceAction │ answers  │
//!   ┌──┴────────────▼──────┐   Packet<ToSource>     ┌──┴────────────▼──────┐
//!   │ Puller               │ ─────────────────────▶ │ Source               │
//!   │ pages, wants, batches│ ◀───────────────────── │ pages, window,       │
//!   │ checkpoint (I26)     │   Packet<ToTarget>     │ smallest first       │
//!   └──────────────────────┘                        └──────────────────────┘
//! ```
//!
//! What the machines decide, and where: which documents to fetch and
//! which version wins (the conflict rule: [`decide`], [`resolve`], with
//! [`Version`]'s order), when
//! the history may move ([`history`], I26), and which conflict documents a
//! write batch makes ([`WriteBatch::apply`], I27). docs/design.md §11 is
//! the specification.
//!
//! [`local`] is the driver between two database files in one process.
//!
//! The `testkit` feature adds an in-memory model database with the same
//! write semantics, a fault-injecting network and a session runner.

#![warn(missing_docs)]

mod apply;
mod conflict;
mod error;
pub mod history;
mod ids;
pub mod local;
pub mod msg;
mod puller;
mod session;
mod source;
mod version;
mod wire;

#[cfg(feature = "testkit")]
pub mod testkit;

pub use apply::{ForeignStore, Outcome, WriteBatch, Written};
pub use conflict::{conflict_unid, decide, resolve, Applied, ConflictDoc, Decision, Held};
pub use error::ReplicaError;
pub use history::History;
pub use ids::{BatchId, ContentKey, Opening, Peer, QueryId, Role, SessionId};
pub use msg::{Envelope, ErrorCode, Failure, Packet};
pub use puller::{PullAction, PullConfig, PullPhase, PullReport, Puller};
pub use source::{Source, SourceAction, SourceConfig, SourcePhase, SourceReport};
pub use version::Version;
