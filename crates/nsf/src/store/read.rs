//! Reading an object back: its header checked against the item that
//! references it, its stored bytes decompressed on the fly, and the
//! original's length and crc32c checked at the end, as blob pages are
//! (design.md §2.5, §2.9). Never held whole in memory.

use super::content::{StoredContent, StoredForm};
use super::object::{ObjectHeader, HEADER_LEN};
use super::registry::AttachStore;
use std::io::{self, BufReader, Read};
use std::sync::Arc;
use storage::backend::read_exact_at;
use storage::{FileHandle, OpenMode};

/// Streams a stored attachment's original bytes.
pub struct ObjectReader {
    inner: Box<dyn Read + Send>,
    what: String,
    size: u64,
    crc32c: u32,
    delivered: u64,
    crc: u32,
}

fn bad(what: &str, why: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("{what}: {why}"))
}

impl ObjectReader {
    /// Opens the object `content` names; `size` and `crc32c` are the
    /// original's as the item records them; `what` names the attachment
    /// in errors.
    pub(crate) fn open(
        store: &AttachStore,
        content: &StoredContent,
        (size, crc32c): (u64, u32),
        what: String,
    ) -> io::Result<ObjectReader> {
        let path = store.object_path(&content.hash);
        let file = store.backend.open(&path, OpenMode::Existing).map_err(|e| {
            bad(
                &what,
                format_args!("object {} cannot be opened: {e}", content.hash),
            )
        })?;
        let header = read_header(file.as_ref()).map_err(|e| bad(&what, e))?;
        if !header.matches(content, size, crc32c) {
            return Err(bad(
                &what,
                format_args!("object {} does not match the attachment item", content.hash),
            ));
        }
        let raw = StoredBytes {
            file,
            at: HEADER_LEN as u64,
            end: HEADER_LEN as u64 + header.stored_size,
        };
        let inner: Box<dyn Read + Send> = match header.form {
            StoredForm::Raw => Box::new(raw),
            StoredForm::Zstd => Box::new(
                zstd::stream::read::Decoder::with_buffer(BufReader::with_capacity(1 << 20, raw))
                    .map_err(|e| bad(&what, e))?,
            ),
        };
        Ok(ObjectReader {
            inner,
            what,
            size,
            crc32c,
            delivered: 0,
            crc: 0,
        })
    }
}

/// Reads and decodes an object's header.
pub(crate) fn read_header(file: &dyn FileHandle) -> Result<ObjectHeader, String> {
    let mut b = [0u8; HEADER_LEN];
    read_exact_at(file, &mut b, 0).map_err(|e| format!("object header unreadable: {e}"))?;
    ObjectHeader::decode(&b)
}

impl Read for ObjectReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(out).map_err(|e| bad(&self.what, e))?;
        self.crc = crc32c::crc32c_append(self.crc, &out[..n]);
        self.delivered += n as u64;
        if self.delivered > self.size {
            return Err(bad(&self.what, "longer than recorded"));
        }
        if n == 0 && self.delivered < self.size {
            return Err(bad(&self.what, "shorter than recorded"));
        }
        if n > 0 && self.delivered == self.size && self.crc != self.crc32c {
            return Err(bad(&self.what, "checksum mismatch"));
        }
        Ok(n)
    }
}

/// The stored bytes of an object, read positionally.
struct StoredBytes {
    file: Arc<dyn FileHandle>,
    at: u64,
    end: u64,
}

impl Read for StoredBytes {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let want = out.len().min((self.end - self.at) as usize);
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut out[..want], self.at)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "object shorter than its header says",
            ));
        }
        self.at += n as u64;
        Ok(n)
    }
}
