//! Attachments: streamed in and out, never held whole in memory.
//!
//! An upload is read from a `std::io::Read` the door feeds (a protocol
//! stream, an HTTP body) through a limit, so content larger than
//! `max_attachment_bytes` is refused as it passes it and nothing is
//! committed; at most `attachment_streams` uploads are written at once.

use super::access::{denied, hidden};
use super::documents::WriteRule;
use super::{Caller, Service};
use crate::error::nsf_err;
use crate::{ServerError, ServerResult};
use nsf::{AccessLevel, AttachmentReader, Database, NsfError};
use protocol::Unid;
use std::io::Read;

impl Service {
    /// Streams `content` into an attachment of a document the caller may
    /// edit. A declared `size` above the limit is refused before a byte is
    /// stored; content that turns out larger is refused when it passes it.
    #[allow(clippy::too_many_arguments)]
    pub fn put_attachment(
        &self,
        caller: &Caller,
        db: &Database,
        unid: Unid,
        name: &str,
        mime: &str,
        size: Option<u64>,
        content: &mut dyn Read,
    ) -> ServerResult<u64> {
        let max = self.limits.max_attachment_bytes;
        if let Some(n) = size.filter(|n| *n > max) {
            return Err(ServerError::TooLarge(format!(
                "attachment of {n} bytes is above the limit of {max} bytes"
            )));
        }
        let access = self.access(caller, db)?;
        if !caller.admin {
            let note = db.get(nsf::Unid(unid.0)).map_err(nsf_err)?;
            WriteRule::Edit.check(caller, &access, db, &note)?;
        }
        let _turn = self.streams.take(self.limits.attachment_streams);
        let mut limited = Limited {
            inner: content,
            left: max,
        };
        let stored = db
            .put_attachment(nsf::Unid(unid.0), name, mime, &mut limited)
            .map_err(|e| match e {
                NsfError::Content(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
                    ServerError::TooLarge(format!(
                        "attachment {name:?} is above the limit of {max} bytes"
                    ))
                }
                NsfError::Content(e) => {
                    ServerError::BadRequest(format!("attachment {name:?} not stored: {e}"))
                }
                e => nsf_err(e),
            })?;
        Ok(stored.size)
    }

    /// Removes the attachment `name` from a document the caller may edit
    /// (Editor, or Author named in its Author items; administrators
    /// always), as an update that drops it (one logged commit, durable
    /// when it returns). A missing name is 404 naming it.
    pub fn remove_attachment(
        &self,
        caller: &Caller,
        db: &Database,
        unid: Unid,
        name: &str,
        based_on: Option<u32>,
    ) -> ServerResult<protocol::NoteMeta> {
        self.checked_write(
            caller,
            db,
            unid,
            based_on,
            false,
            WriteRule::Edit,
            |seq, force| db.remove_attachment(nsf::Unid(unid.0), name, seq, force),
        )
    }

    /// Opens an attachment of a document the caller may read.
    pub fn open_attachment(
        &self,
        caller: &Caller,
        db: &Database,
        unid: Unid,
        name: &str,
    ) -> ServerResult<AttachmentReader> {
        let access = self.access(caller, db)?;
        if access.level() < AccessLevel::Reader {
            return Err(denied(caller, db.path()));
        }
        let note = db.get(nsf::Unid(unid.0)).map_err(nsf_err)?;
        if !access.can_read(&note) {
            return Err(hidden(db, &note));
        }
        db.open_attachment(nsf::Unid(unid.0), name).map_err(nsf_err)
    }
}

/// A counting semaphore for blocking worker threads.
#[derive(Default)]
pub(super) struct Turns {
    busy: parking_lot::Mutex<usize>,
    freed: parking_lot::Condvar,
}

impl Turns {
    /// Waits until fewer than `max` holders (0: never waits).
    pub(super) fn take(&self, max: usize) -> Option<TurnGuard<'_>> {
        if max == 0 {
            return None;
        }
        let mut busy = self.busy.lock();
        while *busy >= max {
            self.freed.wait(&mut busy);
        }
        *busy += 1;
        Some(TurnGuard(self))
    }
}

pub(super) struct TurnGuard<'a>(&'a Turns);

impl Drop for TurnGuard<'_> {
    fn drop(&mut self) {
        *self.0.busy.lock() -= 1;
        self.0.freed.notify_one();
    }
}

/// Wraps the content of an upload so it cannot exceed the limit.
struct Limited<'a> {
    inner: &'a mut dyn Read,
    left: u64,
}

impl Read for Limited<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n as u64 > self.left {
            return Err(std::io::Error::new(
                std::io::ErrorKind::FileTooLarge,
                "attachment above the size limit",
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}
