//! A database instance's lifecycle as one enum, with its transitions.
//!
//! What an instance does with a write depends on where it is in its life:
//! open, refused from the start (recovery could not bring it back),
//! failed (a write or sync of its file failed, I11), or closing (the
//! engine was shut down). Each transition is one function here, pure (it
//! takes the state and returns the next), so the whole table is in one
//! place and tested without a file; `DbCore` applies them, and wakes
//! whoever waits on the database when it leaves `Open`.
//!
//! ```text
//!   open ──▶ Open ──I/O failure──▶ Failed
//!     │        └──engine shutdown──▶ Closing ──I/O failure──▶ Failed
//!     └────▶ Refused (recovery failed)
//!   any state ──`Engine::delete_database`──▶ Deleted (final, I42)
//! ```
//!
//! A database found written unlogged and not closed cleanly (I12) is
//! still open for writes; every state keeps that fact (`unclean_open`),
//! so its indexes are never trusted (views rebuild them) whatever
//! happens to the instance later, and a clean close never clears a flag
//! that only fixup may clear.

use std::fmt;

/// What kind of event a [`Reason`] records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReasonKind {
    /// Restart recovery could not apply this database's log records.
    Recovery,
    /// A write or fdatasync of the file failed (by a commit, an
    /// attachment, or the flusher), I11.
    Io,
    /// The database was retired (failed, or not recoverable) and waits
    /// for fixup (I29).
    NeedsFixup,
}

/// Why a database refuses writes: the kind of event and the text shown
/// to an administrator (the `reason` of `NsfError::DatabaseFailed`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reason {
    pub kind: ReasonKind,
    pub text: String,
}

impl Reason {
    /// Restart recovery failed for the file (`why` is what recovery said).
    pub fn recovery(why: &str) -> Reason {
        Reason {
            kind: ReasonKind::Recovery,
            text: format!("restart recovery could not apply its log records: {why}"),
        }
    }

    /// The database waits for fixup (I29); `why` is what retired it.
    pub fn needs_fixup(why: &str) -> Reason {
        Reason {
            kind: ReasonKind::NeedsFixup,
            text: format!(
                "needs fixup (run `folio fixup`, or restart with translog.auto_fixup on): {why}"
            ),
        }
    }

    /// A write or sync failed; `text` says which and how.
    pub fn io(text: String) -> Reason {
        Reason {
            kind: ReasonKind::Io,
            text,
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Where a database instance is in its life (design.md §5, "database
/// lifecycle"). `unclean_open`: the file was found written unlogged and
/// not closed cleanly when this instance opened it (I12).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DbState {
    /// Reads and writes.
    Open { unclean_open: bool },
    /// Writes refused from the open on, until the file is repaired and
    /// reopened; reads see what the file holds.
    Refused { reason: Reason, unclean_open: bool },
    /// Writes refused since a write or sync of the file failed (I11),
    /// until reopened; reads continue. The first failure is kept.
    Failed { reason: Reason, unclean_open: bool },
    /// The engine was shut down: writes refused (`EngineClosed`), reads
    /// continue, waiters are woken.
    Closing { unclean_open: bool },
    /// The database was deleted (I42): reads and writes of every handle
    /// still held refuse with `DatabaseDeleted`; nothing leaves it.
    Deleted,
}

impl DbState {
    /// The state an instance starts in: refused if recovery could not
    /// bring the file back, else open.
    pub(crate) fn opened(unclean_open: bool, refused: Option<Reason>) -> DbState {
        match refused {
            Some(reason) => DbState::Refused {
                reason,
                unclean_open,
            },
            None => DbState::Open { unclean_open },
        }
    }

    /// An I/O failure of the file (I11): `Open` and `Closing` become
    /// `Failed`; a state that already refuses writes keeps its reason
    /// (the first failure is the one to report).
    pub(crate) fn failed(self, reason: Reason) -> DbState {
        match self {
            DbState::Open { unclean_open } | DbState::Closing { unclean_open } => DbState::Failed {
                reason,
                unclean_open,
            },
            refusing => refusing,
        }
    }

    /// The engine was shut down: `Open` becomes `Closing`; a state that
    /// already refuses writes stays (its reason is still the truth).
    pub(crate) fn closing(self) -> DbState {
        match self {
            DbState::Open { unclean_open } => DbState::Closing { unclean_open },
            other => other,
        }
    }

    /// The database was deleted (I42): every state becomes `Deleted`, and
    /// it stays so (no later failure or shutdown changes it).
    pub(crate) fn deleted(self) -> DbState {
        DbState::Deleted
    }

    /// Whether the file was found written unlogged and not closed cleanly
    /// when this instance opened it (I12): its indexes cannot be trusted.
    pub fn unclean_open(&self) -> bool {
        match self {
            DbState::Open { unclean_open }
            | DbState::Refused { unclean_open, .. }
            | DbState::Failed { unclean_open, .. }
            | DbState::Closing { unclean_open } => *unclean_open,
            DbState::Deleted => false,
        }
    }

    /// Why writes are refused, for `Refused` and `Failed`.
    pub fn refusal(&self) -> Option<&Reason> {
        match self {
            DbState::Refused { reason, .. } | DbState::Failed { reason, .. } => Some(reason),
            DbState::Open { .. } | DbState::Closing { .. } | DbState::Deleted => None,
        }
    }

    /// Whether a clean close may clear the unlogged-open flag (I12): the
    /// instance found the file clean and no write of it failed.
    pub(crate) fn may_clear_unlogged_flag(&self) -> bool {
        matches!(
            self,
            DbState::Open {
                unclean_open: false
            } | DbState::Closing {
                unclean_open: false
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(t: &str) -> Reason {
        Reason::io(t.into())
    }

    #[test]
    fn every_transition_of_the_table() {
        let open = DbState::opened(false, None);
        assert_eq!(
            open,
            DbState::Open {
                unclean_open: false
            }
        );
        let refused = DbState::opened(true, Some(Reason::recovery("page 3 invalid")));
        assert_eq!(
            refused.refusal().map(|r| r.text.as_str()),
            Some("restart recovery could not apply its log records: page 3 invalid")
        );
        assert_eq!(refused.clone().failed(io("write: EIO")), refused);
        assert_eq!(refused.clone().closing(), refused);

        let failed = open.clone().failed(io("write: EIO"));
        assert_eq!(
            failed,
            DbState::Failed {
                reason: io("write: EIO"),
                unclean_open: false
            }
        );
        assert_eq!(
            failed.clone().failed(io("fdatasync: EIO")),
            failed,
            "first kept"
        );
        assert_eq!(failed.clone().closing(), failed);

        let closing = open.closing();
        assert_eq!(
            closing,
            DbState::Closing {
                unclean_open: false
            }
        );
        assert!(matches!(closing.failed(io("x")), DbState::Failed { .. }));
    }

    #[test]
    fn deleted_is_final() {
        let deleted = DbState::opened(true, None).deleted();
        assert_eq!(deleted, DbState::Deleted);
        assert_eq!(deleted.clone().failed(io("write: EIO")), DbState::Deleted);
        assert_eq!(deleted.clone().closing(), DbState::Deleted);
        assert!(!deleted.may_clear_unlogged_flag());
        assert!(deleted.refusal().is_none());
        let failed = DbState::opened(false, None).failed(io("x"));
        assert_eq!(failed.deleted(), DbState::Deleted);
    }

    #[test]
    fn an_unclean_open_is_remembered_in_every_state() {
        let open = DbState::opened(true, None);
        assert!(open.unclean_open());
        assert!(!open.may_clear_unlogged_flag());
        assert!(open.clone().closing().unclean_open());
        assert!(open.failed(io("x")).unclean_open());
        assert!(DbState::opened(false, None).may_clear_unlogged_flag());
        assert!(DbState::opened(false, None)
            .closing()
            .may_clear_unlogged_flag());
        assert!(!DbState::opened(false, None)
            .failed(io("x"))
            .may_clear_unlogged_flag());
    }
}
