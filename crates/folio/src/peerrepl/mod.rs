//! Server-to-server replication run by `folio serve`: a running server
//! replicates its own databases with databases on peer servers, once on
//! request (the native `ReplicatePeer`, `folio replicate --server A
//! --peer B`) or on a schedule (`[[replication]]` in folio.toml).
//!
//! It lives in the binary because it is a client of the peer and a
//! server at once: `server` sits below `client`, so the server holds
//! only narrow hooks (`service::PeerReplicator`, `stats::StatsSource`)
//! that `task.rs` fills. `config.rs` reads the entries, `schedule.rs`
//! decides when each runs (no I/O), `state.rs` keeps its state on disk,
//! `watch.rs` waits for the commits of on-change entries, `driver.rs`
//! runs one replication, `purge.rs` purges old deletion stubs (the other
//! half of I45).

pub mod config;
pub mod driver;
pub mod purge;
pub mod schedule;
pub mod state;
pub mod task;
pub mod watch;

pub use config::{Databases, Entry, ReplicationSection};
pub use task::{install, Replicator};
