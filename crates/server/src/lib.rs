//! The Folio server: it puts the engine (`nsf`, `views`) on the network.
//!
//! ```text
//!   native.rs  tokio connection tasks driving protocol::ServerConnection ─┐
//!   http/      axum routes, a file per resource (JSON, streaming) ────────┤
//!                                                                         ▼
//!   service/   one Service: every operation, with authentication, ACL checks
//!              and Reader/Author filtering, run on the worker pool; a file
//!              per resource (databases, documents, attachments, views, admin)
//!   auth.rs    server users (argon2 hashes) and tokens
//!   tls.rs     rustls configuration, self-signed certificates
//!   smtp/      inbound SMTP and submission: listeners, connection driver
//!              of mail::smtp::Session, deposits into mail boxes
//!   outbound/  outbound mail: the task handing the queue to its routes,
//!              the SMTP client
//!   imap/      IMAP: listener, connection driver of imap::Session,
//!              sign-in with the server's users into their mail file
//!   stats.rs   per-operation response-time histograms and counters
//!   metrics.rs those figures in the Prometheus text format (`GET /metrics`)
//!   history.rs the last hour of them, a sample a second (`GET /_stats/history`)
//!   host.rs    the Host: engine, views, users, stats and background tasks,
//!              built once, closed once (checkpoint whoever holds the engine)
//!   tasks.rs   background tasks: lifecycle, registry, start/stop order
//!   router_task.rs  the mail router as a task, woken by mail box commits
//!   run.rs     runtime, listeners, task start and stop, graceful shutdown
//!
//!   connection lifetime (limits, timeouts, shutdown):
//!   listener.rs    lifecycle (serving, draining, cut), accept, connection limit
//!   guard.rs       sockets with read deadlines and write-stall limits
//!   http_conn.rs   HTTP connections: phases, header/idle/body timeouts
//!   descriptors.rs descriptor limit raised, connection limits fitted under it
//! ```
//!
//! This crate sits on `nsf`, `views`, `mail` and `protocol`; only the
//! `folio` binary sits on it.

pub mod auth;
mod descriptors;
mod error;
mod guard;
pub mod history;
mod host;
pub mod http;
mod http_conn;
pub mod imap;
pub mod json;
mod listener;
pub mod metrics;
pub mod native;
mod outbound;
mod router_task;
mod run;
pub mod service;
pub mod smtp;
pub mod stats;
mod stats_fixup;
pub mod tasks;
pub mod tls;
mod upload;

pub use descriptors::engine_descriptors;
pub use error::{Busy, ServerError, ServerResult};
pub use host::Host;
pub use listener::Lifecycle;
pub use outbound::OutboundTask;
pub use router_task::RouterTask;
pub use run::{run, Bound, ServerSettings};
pub use service::{Caller, Copied, Limits, Service};
pub use tasks::{Task, TaskContext, TaskError, TaskResult, TaskState};
