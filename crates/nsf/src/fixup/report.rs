//! What fixup found and did, for the administrator (printed by `folio
//! fixup`, logged by automatic fixup, kept for `show stats`).

use crate::{DbInstanceId, NoteId, Unid};
use std::fmt;

/// A page that failed verification (checksum, id, or structure).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadPage {
    pub page: u32,
    pub reason: String,
}

/// A note fixup could not keep, with what is known of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LostNote {
    pub note_id: NoteId,
    /// From the UNID index, when that still names it.
    pub unid: Option<Unid>,
    pub reason: String,
}

/// An attachment whose content failed its checks; the note is kept
/// without it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LostAttachment {
    pub note_id: NoteId,
    pub unid: Unid,
    pub name: String,
    pub reason: String,
}

/// The outcome of a fixup (or of a dry run, which writes nothing).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FixupReport {
    pub path: String,
    pub dry_run: bool,
    /// Pages in the file, and how many verified.
    pub pages: u64,
    pub pages_ok: u64,
    /// Pages that failed verification (at most the first 1,000 listed;
    /// `pages_bad` counts them all).
    pub bad_pages: Vec<BadPage>,
    pub pages_bad: u64,
    /// The header could not be read: roots, title and ids were lost and
    /// notes were looked for in every page.
    pub header_lost: bool,
    /// Notes kept (documents, stubs and design notes).
    pub notes_salvaged: u64,
    /// Of those, found in leaves no tree reached any more.
    pub notes_from_orphan_pages: u64,
    pub notes_lost: Vec<LostNote>,
    pub attachments_checked: u64,
    pub attachments_lost: Vec<LostAttachment>,
    /// The indexes written afresh from the note table.
    pub indexes_rebuilt: Vec<String>,
    /// Whether the UNID and change-sequence indexes agreed with the note
    /// table before the rebuild.
    pub indexes_agreed: bool,
    /// The design catalog (view indexes) could not be read whole: the
    /// views layer checks and rebuilds its indexes after fixup.
    pub design_catalog_damaged: bool,
    pub old_instance: Option<DbInstanceId>,
    /// The new instance id (none for a dry run).
    pub new_instance: Option<DbInstanceId>,
}

impl FixupReport {
    /// Whether anything was lost (notes, attachments, the header).
    pub fn lost_anything(&self) -> bool {
        self.header_lost || !self.notes_lost.is_empty() || !self.attachments_lost.is_empty()
    }

    /// Whether the file had any problem at all.
    pub fn clean(&self) -> bool {
        self.pages_bad == 0
            && !self.lost_anything()
            && self.indexes_agreed
            && !self.design_catalog_damaged
    }
}

impl fmt::Display for FixupReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = if self.dry_run { "would be" } else { "were" };
        writeln!(
            f,
            "fixup of {}{}",
            self.path,
            if self.dry_run {
                " (dry run: nothing written)"
            } else {
                ""
            }
        )?;
        writeln!(f, "  pages: {} checked, {} bad", self.pages, self.pages_bad)?;
        for p in &self.bad_pages {
            writeln!(f, "    page {}: {}", p.page, p.reason)?;
        }
        if self.header_lost {
            writeln!(
                f,
                "  header lost: every page was searched for notes; the title is lost"
            )?;
        }
        writeln!(
            f,
            "  notes: {} kept ({} from pages no index reached), {} lost",
            self.notes_salvaged,
            self.notes_from_orphan_pages,
            self.notes_lost.len()
        )?;
        for n in &self.notes_lost {
            match n.unid {
                Some(u) => writeln!(f, "    note {} (UNID {u}): {}", n.note_id, n.reason)?,
                None => writeln!(f, "    note {}: {}", n.note_id, n.reason)?,
            }
        }
        writeln!(
            f,
            "  attachments: {} checked, {} lost",
            self.attachments_checked,
            self.attachments_lost.len()
        )?;
        for a in &self.attachments_lost {
            writeln!(
                f,
                "    {:?} of note {} (UNID {}): {}",
                a.name, a.note_id, a.unid, a.reason
            )?;
        }
        writeln!(
            f,
            "  indexes: {} ({} rebuilt from the note table)",
            if self.indexes_agreed {
                "agreed with the note table"
            } else {
                "disagreed with the note table"
            },
            self.indexes_rebuilt.join(", ")
        )?;
        if self.design_catalog_damaged {
            writeln!(
                f,
                "  view catalog damaged: view indexes are checked and rebuilt on next use"
            )?;
        }
        match (self.old_instance, self.new_instance) {
            (old, Some(new)) => writeln!(
                f,
                "  instance id: {} -> {new} (take a new backup: old backups and log records no longer apply)",
                old.map_or("unknown".to_string(), |o| o.to_string())
            )?,
            _ => writeln!(f, "  instance id: a new one {verb} given")?,
        }
        Ok(())
    }
}
