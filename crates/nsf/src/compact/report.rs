//! What a compact did (or, for a dry run, would do), the same for every
//! door (CLI embedded and `--server`, HTTP).

use serde::{Deserialize, Serialize};

/// The outcome of one compact.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactReport {
    pub path: String,
    /// "in-place" or "copy".
    pub style: String,
    pub dry_run: bool,
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub pages_before: u32,
    pub pages_after: u32,
    /// Free-list pages before (what compact can give back).
    pub free_pages_before: u64,
    /// Pages neither referenced nor free: leaked by interrupted commits.
    pub leaked_pages: u64,
    /// Pages moved down from the tail.
    pub pages_moved: u64,
    /// Logged move steps.
    pub steps: u64,
    /// Unlogged view indexes dropped to be rebuilt on next use (their
    /// pages lay in the tail, §2.10).
    pub views_reset: u64,
    /// Whether the file was cut (false: writers grew it meanwhile, or the
    /// log could not be checkpointed past the seal; run again).
    pub truncated: bool,
    pub instance_before: u64,
    pub instance_after: u64,
    /// Copy style: notes and attachments the rewrite could not read and
    /// dropped (fixup's report says which, §2.8); 0 in place.
    pub notes_lost: u64,
    pub attachments_lost: u64,
}
