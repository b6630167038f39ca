//! `folio load mail`: the mail-user workload (WORKLOADS.md "mail"),
//! modelled on the classic server's mail benchmark.
//!
//! ```text
//!   args.rs     the options, and which apply to which mode
//!   content.rs  bodies, attachments and the messages users send
//!   setup.rs    users, mail files and prefilled documents; the server
//!   limits.rs   descriptors for a server with every mail file open
//!   script.rs   the seven steps of one user as a state machine (no I/O)
//!   driver.rs   many users over few connections on a tokio runtime
//!   measure.rs  the server's and the driver's CPU, bytes written and
//!               the server's statistics (/proc, getrusage)
//!   device.rs   the data directory's block device and its bytes written
//!   sweep.rs    --sweep: runs grouped per arm, each arm's capacity
//!   report.rs   result.json and report.html
//!   run.rs      one run, --compare-logging, --view-logging and --sweep
//!               (with --compare-logging: both arms per count)
//!   viewlog.rs  --view-logging: every Inbox made a logged folder
//! ```

mod args;
mod content;
mod device;
mod driver;
mod limits;
pub(crate) mod measure;
mod report;
mod run;
mod script;
mod setup;
mod sweep;
mod viewlog;

pub use args::MailArgs;
pub use run::run;
