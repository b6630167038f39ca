//! Test support: an in-memory model database with replication's write
//! semantics, a connection with scripted faults, and a runner that drives
//! sessions between model replicas. For this crate's tests and for the
//! drivers' tests above it (feature `testkit`).

mod model;
mod net;
mod run;

pub use model::{Body, Doc, ModelDb, ModelVersion, MAX_REVISIONS};
pub use net::{Faults, Sent};
pub use run::{Cluster, RunResult, Spec, IDLE_TIMEOUT, MODEL_REPLICA};
