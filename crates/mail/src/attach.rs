//! Files sent with a message: checked before anything is stored, then
//! streamed into the message's document within the message's size limit.
//!
//! An attachment is stored by its own commit after the document's
//! (`Database::put_attachment` needs the document), so a message with
//! attachments takes several commits; the callers decide what marks it
//! complete (a mail box's `Deposited` item, see `mailbox.rs`). A file
//! that turns out larger than declared, or than what is left of the
//! limit, fails as it streams: the content is counted as it is read.

use crate::{MailError, MailResult};
use nsf::{Database, Unid};
use std::collections::HashSet;
use std::io::{self, Read};

/// Most attachments of one message.
pub const MAX_ATTACHMENTS: usize = 100;

/// A file to send with a message.
pub struct Attachment<'a> {
    /// Its name in the message (1 to 200 bytes, no `/`, `\` or control
    /// characters; unique ignoring case).
    pub name: String,
    pub mime: String,
    /// Its size, when known beforehand: a file over the limit is then
    /// refused before anything is stored.
    pub size: Option<u64>,
    pub content: &'a mut dyn Read,
}

/// Refuses what can be known to be wrong before storing: too many files,
/// two with one name, declared sizes that with the body exceed `limit`.
pub(crate) fn check(body_bytes: usize, files: &[Attachment<'_>], limit: u64) -> MailResult<()> {
    if files.len() > MAX_ATTACHMENTS {
        return Err(MailError::TooLarge {
            what: "the attachment list".into(),
            size: files.len() as u64,
            limit: MAX_ATTACHMENTS as u64,
            unit: "files".into(),
        });
    }
    let mut names = HashSet::new();
    for f in files {
        if !names.insert(f.name.to_lowercase()) {
            return Err(MailError::BadMessage(format!(
                "two attachments are named {:?} (names ignore case)",
                f.name
            )));
        }
    }
    let declared = files.iter().filter_map(|f| f.size).sum::<u64>() + body_bytes as u64;
    if declared > limit {
        return Err(too_large(declared, limit));
    }
    Ok(())
}

/// Streams every file into document `unid` of `db`; with the body's
/// `body_bytes`, at most `limit` bytes in all.
pub(crate) fn store(
    db: &Database,
    unid: Unid,
    files: &mut [Attachment<'_>],
    body_bytes: usize,
    limit: u64,
) -> MailResult<()> {
    let mut used = body_bytes as u64;
    for f in files.iter_mut() {
        let mut counted = Counted {
            inner: &mut *f.content,
            read: 0,
            room: limit.saturating_sub(used),
        };
        let stored = db.put_attachment(unid, &f.name, &f.mime, &mut counted);
        if counted.read > counted.room {
            return Err(too_large(used + counted.read, limit));
        }
        used += stored?.size;
    }
    Ok(())
}

fn too_large(size: u64, limit: u64) -> MailError {
    MailError::TooLarge {
        what: "the message (body and attachments)".into(),
        size,
        limit,
        unit: "bytes".into(),
    }
}

/// Counts what is read and fails once it passes `room`.
struct Counted<'a> {
    inner: &'a mut dyn Read,
    read: u64,
    room: u64,
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        if self.read > self.room {
            return Err(io::Error::other("the message is over its size limit"));
        }
        Ok(n)
    }
}
