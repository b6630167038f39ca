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
    let mut failed = None;
    let r = db.for_each_note_ref(|note| {
        let doc = RefDoc(note);
        if doc.is_design() || since.is_some_and(|s| note.modified < s) {
            return Ok(());
        }
        if f.selects(&doc, &ctx) {
            n += 1;
            // Only the documents found are decoded in full.
            if let Err(e) = found(&note.to_note()?) {
                failed = Some(e);
                return Err(NsfError::Invalid("search stopped".into()));
            }
        }
        Ok(())
    });
    match (r, failed) {
        (_, Some(e)) => Err(e),
        (Err(e), None) => Err(e.into()),
        (Ok(()), None) => Ok(n),
    }
}
