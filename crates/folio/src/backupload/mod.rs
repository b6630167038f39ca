//! `folio load backup`: the backup, restore and fixup targets of
//! docs/benchmarks.md measured side by side in one run, embedded, on the
//! real file system.
//!
//! ```text
//!  fill --backup-mib of databases ─▶ probe the disk (sequential write +
//!  fdatasync, read) over a file of the same size ─▶ commit workload
//!  (--clients) alone, then during an online backup ─▶ --log-mib of log
//!  into one database, a marker commit, T, a marker commit ─▶ restore
//!  it twice (to the backup's end: the copy; to the latest: copy + roll
//!  forward) and once to T ─▶ fill and fix up --fixup-mib
//! ```
//!
//! * `run.rs`: the arguments and the phases, `result.json`;
//! * `fill.rs`: databases of a given size, archiving as the log fills;
//! * `disk.rs`: the disk's own sequential bandwidth, and page-cache
//!   eviction so reads come from the disk;
//! * `report.rs`: `report.html`, the figures beside their targets.

mod disk;
mod fill;
mod report;
mod run;

pub use run::{run, BackupArgs};
