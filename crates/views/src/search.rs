//! Formula search over a whole database.
//!
//! A search reads every document in note-id order, in chunks (so writers
//! are never held off for long), and hands each one the formula selects
//! to the caller as soon as it is found: results stream, nothing is
//! collected. Design notes are never found.

use crate::entries::{RefDoc, Source};
use crate::{ViewError, ViewResult};
use formula::{EvalContext, Formula};
use nsf::{Database, Note, NsfError, Timestamp};

/// Calls `found` for every document `formula` selects, optionally only
/// those modified at or after `since`; returns how many were found. A bad
/// formula is an error before anything is read.
pub fn search(
    db: &Database,
    formula: &str,
    since: Option<Timestamp>,
    mut found: impl FnMut(&Note) -> ViewResult<()>,
) -> ViewResult<u64> {
    let f = Formula::parse(formula).map_err(|error| ViewError::Formula {
        what: "search".into(),
        error,
    })?;
    let ctx = EvalContext {
        now: Timestamp::now().0,
    };
    let mut n = 0;
    db.for_each_note_ref(|note| -> ViewResult<()> {
        let doc = RefDoc(note);
        if doc.is_design() || since.is_some_and(|s| note.modified < s) {
            return Ok(());
        }
        if f.selects(&doc, &ctx) {
            n += 1;
            // Only the documents found are decoded in full.
            found(&note.to_note().map_err(NsfError::from)?)?;
        }
        Ok(())
    })?;
    Ok(n)
}
