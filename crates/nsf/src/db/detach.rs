//! Removing an attachment from a document: an update that drops its
//! `$FILE:` item, so it takes the one path every update takes (a logged
//! transaction, a new sequence number; the content's pages are freed by
//! that transaction, `free_dropped_attachments`, or its reference counted
//! down by whatever store holds the content). Only the check that the
//! attachment is there is its own, made against the version the update
//! is then conditional on, so a missing name is an error naming it and
//! never a silent new version.

use super::Database;
use crate::note::ATTACHMENT_PREFIX;
use crate::{ItemUpdate, NoteMeta, NsfError, NsfResult, Unid};

/// Attempts before giving up on a document that keeps changing.
const TRIES: usize = 8;

impl Database {
    /// Removes the attachment `name` from the document `unid`: durable
    /// when it returns (I2), a failure changes nothing (I4). `based_on`
    /// makes it conditional on that sequence number (`SaveConflict` if the
    /// document moved on) unless `force`. A missing document is
    /// `NoSuchDocument` (`Deleted` for a stub), a missing attachment
    /// `NoSuchAttachment`, each changing nothing.
    pub fn remove_attachment(
        &self,
        unid: Unid,
        name: &str,
        based_on: Option<u32>,
        force: bool,
    ) -> NsfResult<NoteMeta> {
        let drop_item = || vec![ItemUpdate::Remove(format!("{ATTACHMENT_PREFIX}{name}"))];
        for _ in 0..TRIES {
            let note = self.get(unid)?;
            if !note.attachments().any(|a| a.name == name) {
                return Err(NsfError::NoSuchAttachment {
                    db: self.path().to_string(),
                    unid,
                    name: name.to_string(),
                });
            }
            let seq = match based_on {
                Some(b) if !force => b,
                _ => note.oid.seq_num,
            };
            // Conditional on the version just checked: if it changed
            // meanwhile, check again (unless the caller named a version).
            match self.update(unid, drop_item(), Some(seq), false) {
                Err(NsfError::SaveConflict { .. }) if based_on.is_none() || force => continue,
                r => return r,
            }
        }
        Err(NsfError::SaveConflict {
            unid,
            based_on: based_on.unwrap_or(0),
            current: self.get(unid)?.oid.seq_num,
        })
    }
}
