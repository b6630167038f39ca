//! Sending with files over the native door (`Request::SendMailFiles`):
//! one upload stream carrying every file's bytes back to back, split
//! here into the message's attachments by their declared sizes.
//!
//! ```text
//!   Chunk* ─▶ UploadReader ─▶ Part(file 1, size₁) ─▶ attachment 1
//!                           ─▶ Part(file 2, size₂) ─▶ attachment 2 ─▶ … ─▶ End
//! ```
//!
//! The declared sizes are checked against the message's size limit (with
//! the body) before anything is stored (`mail::deposit` does, through its
//! attachments' `size`), so a message too large is refused (413) storing
//! nothing. A stream that ends before a file's declared size, or carries
//! bytes past the last one, fails that file's read: the deposit (or
//! draft) is then deleted again and the request refused (400); a deposit
//! without `Deposited` is never delivered anyway (I28). Durability as for
//! `SendMail`: answered once the message, every file and its completion
//! are durable (I28, I16).

use super::mail::mail_err;
use super::mail_send::{message_of, Stored};
use super::{Caller, Service};
use crate::{ServerError, ServerResult};
use mail::{Attachment, MailError};
use protocol::MailFile;
use std::cell::RefCell;
use std::io::{self, Read};

impl Service {
    /// Sends (or with `draft` saves) the message `json` holds with
    /// `files` attached, their bytes read from `content` (see the module
    /// docs), as `SendMail` does without files.
    pub fn send_mail_files(
        &self,
        caller: &Caller,
        json: &str,
        draft: bool,
        on_behalf_of: Option<&str>,
        files: &[MailFile],
        content: &mut dyn Read,
    ) -> ServerResult<Stored> {
        let sender = self.acting_person(caller, on_behalf_of)?;
        let msg = message_of(json)?;
        let src = RefCell::new(content);
        let mut parts: Vec<Part<'_, '_>> = files
            .iter()
            .enumerate()
            .map(|(i, f)| Part {
                src: &src,
                left: f.size,
                last: i + 1 == files.len(),
            })
            .collect();
        if files.is_empty() {
            expect_end(&mut *src.borrow_mut())
                .map_err(|e| ServerError::BadRequest(format!("the message's files: {e}")))?;
        }
        let mut attachments: Vec<Attachment<'_>> = files
            .iter()
            .zip(parts.iter_mut())
            .map(|(f, p)| Attachment {
                name: f.name.clone(),
                mime: f.mime.clone(),
                size: Some(f.size),
                content: p,
            })
            .collect();
        let _turn = self.streams.take(self.limits().attachment_streams);
        self.store_message(&sender, msg, draft, &mut attachments)
            .map_err(|e| match e {
                MailError::Nsf(nsf::NsfError::Content(e)) => {
                    ServerError::BadRequest(format!("the message's files: {e}"))
                }
                e => mail_err(e),
            })
    }
}

/// One file's bytes of the shared stream: exactly `left` more.
struct Part<'a, 'r> {
    src: &'a RefCell<&'r mut dyn Read>,
    left: u64,
    /// The last file: the stream must end with it.
    last: bool,
}

impl Read for Part<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            if self.last {
                expect_end(&mut *self.src.borrow_mut())?;
            }
            return Ok(0);
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.src.borrow_mut().read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "the upload ended {} bytes before a file's declared size",
                    self.left
                ),
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// Fails unless `src` has nothing more.
fn expect_end(src: &mut dyn Read) -> io::Result<()> {
    let mut byte = [0u8; 1];
    loop {
        match src.read(&mut byte) {
            Ok(0) => return Ok(()),
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "the upload carries more bytes than its files declare",
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}
