//! The Folio server: it puts the engine (`nsf`, `views`) on the network.
//!
//! ```text
//!   native.rs  tokio connection tasks driving protocol::ServerConnection ─┐
//!   http.rs    axum routes (JSON, streaming attachments) ─────────────────┤
//!                                                                         ▼
//!   service.rs one Service: every operation, with authentication, ACL checks
//!              and Reader/Author filtering, run on the worker pool
//!   auth.rs    server users (argon2 hashes) and tokens
//!   tls.rs     rustls configuration, self-signed certificates
//!   stats.rs   per-operation response-time histograms and counters
//!   run.rs     runtime, listeners, statistics ticker, graceful shutdown
//! ```
//!
//! This crate sits on `nsf`, `views` and `protocol`; only the `folio`
//! binary sits on it.

pub mod auth;
mod error;
pub mod http;
pub mod native;
mod run;
pub mod service;
pub mod stats;
pub mod tls;
mod upload;

pub use error::{ServerError, ServerResult};
pub use run::{run, Bound, ServerSettings};
pub use service::{Caller, Limits, Service};
