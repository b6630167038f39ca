//! The `folio` binary's library: command-line interface, configuration,
//! the load tools and the crash-test workload. Kept as a library so the
//! end-to-end tests drive exactly the code the binary runs.

pub mod backupcli;
pub mod backupload;
pub mod bigview;
pub mod cli;
pub mod commands;
pub mod compactload;
pub mod config;
pub mod crashtest;
pub mod datadir;
pub mod dbsload;
pub mod docsload;
pub mod dumpcli;
pub mod error;
pub mod load;
pub mod local;
pub mod mailcli;
pub mod mailload;
pub mod meetingcli;
pub mod output;
pub mod peerrepl;
pub mod progress;
pub mod remote;
pub mod replcli;
pub mod replload;
pub mod replnet;
pub mod replprogress;
pub mod replspec;
pub mod report;
pub mod store;
pub mod usercli;
pub mod viewcli;

pub use error::{FolioError, FolioResult};
