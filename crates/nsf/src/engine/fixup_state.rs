//! What an administrator needs to know about fixup on a running engine:
//! how many databases were fixed up since it opened (automatically at the
//! open, or by `Engine::fixup`), which was last and when, how many failed
//! databases wait detached from the log (I29), and whether a new backup
//! is needed — a fixed-up database has a new instance id, so no earlier
//! backup or log record applies to it (I36) until a backup copies it.

use super::Engine;
use crate::{FixupReport, Timestamp};
use std::collections::BTreeSet;

/// Fixup as `show stats` reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FixupState {
    /// Databases fixed up since the engine opened.
    pub fixed_up: u64,
    /// The last one fixed up, and when (the engine's clock).
    pub last: Option<(String, Timestamp)>,
    /// Databases detached from the log because they failed (I29).
    pub detached: u64,
    /// Databases that refuse writes until fixed up.
    pub needing_fixup: u64,
    /// Fixed-up databases no backup has copied since: a new backup is
    /// needed for them.
    pub backup_needed: Vec<String>,
}

/// The engine's running record (in `Shared`).
#[derive(Default)]
pub(super) struct FixupLog {
    fixed_up: u64,
    last: Option<(String, Timestamp)>,
    unbacked: BTreeSet<String>,
}

impl FixupLog {
    /// The log of an engine that made `fixups` at its open.
    pub(super) fn of(fixups: &[FixupReport], now: Timestamp) -> FixupLog {
        let mut log = FixupLog::default();
        for r in fixups {
            log.fixed(r, now);
        }
        log
    }

    /// A fixup wrote a new file (a dry run does not count).
    pub(super) fn fixed(&mut self, r: &FixupReport, now: Timestamp) {
        if r.dry_run {
            return;
        }
        self.fixed_up += 1;
        self.last = Some((r.path.clone(), now));
        self.unbacked.insert(r.path.clone());
    }

    /// A backup copied `paths`.
    pub(super) fn backed_up(&mut self, paths: &[String]) {
        for p in paths {
            self.unbacked.remove(p);
        }
    }
}

impl Engine {
    /// Fixup as `show stats` reports it (module docs).
    pub fn fixup_state(&self) -> FixupState {
        let s = &*self.shared;
        let log = s.fixup_log.lock();
        FixupState {
            fixed_up: log.fixed_up,
            last: log.last.clone(),
            detached: s.detached.lock().len() as u64,
            needing_fixup: s.retired.all_needing_fixup().len() as u64,
            backup_needed: log.unbacked.iter().cloned().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(path: &str, dry_run: bool) -> FixupReport {
        FixupReport {
            path: path.into(),
            dry_run,
            ..FixupReport::default()
        }
    }

    #[test]
    fn fixups_count_until_a_backup_copies_them() {
        let mut log = FixupLog::of(&[report("a.fdb", false)], Timestamp(5));
        log.fixed(&report("b.fdb", true), Timestamp(6));
        log.fixed(&report("c.fdb", false), Timestamp(7));
        assert_eq!(log.fixed_up, 2);
        assert_eq!(log.last, Some(("c.fdb".into(), Timestamp(7))));
        log.backed_up(&["a.fdb".into(), "x.fdb".into()]);
        assert_eq!(log.unbacked.iter().collect::<Vec<_>>(), ["c.fdb"]);
    }
}
