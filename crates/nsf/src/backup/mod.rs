//! Online backup and point-in-time restore (design.md §3.6, I35, I36).
//!
//! `take` copies databases while writers go on and records the log range
//! that makes the copies consistent; `restore` puts a copy back and rolls
//! it forward with the archived and live log; `manifest` is the file that
//! ties a backup together.

mod manifest;
mod restore;
mod take;

pub(crate) use manifest::MANIFEST_FILE;
pub use manifest::{BackedUpDb, BackupManifest, BackupReport};
pub(crate) use restore::{check_until, restore_one, RestoreCtx};
pub use restore::{RestoreOptions, RestoreReport};
pub(crate) use take::{take_backup, TakeCtx};
