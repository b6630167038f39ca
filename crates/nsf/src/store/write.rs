//! Storing an attachment's content as an object (design.md §2.9, I37):
//! streamed into a temporary file while its SHA-256 and crc32c are
//! computed, compressed or not as the trial on its first chunk decided,
//! synced, then published under its hash — or dropped, when the object is
//! already there (a dedup hit).
//!
//! Why the trial looks at the first chunk only: the content is a stream
//! that may be far larger than memory, and the writer reads its first
//! chunk anyway to tell small attachments (kept in blob pages) from large
//! ones. Compressing that chunk costs a few milliseconds and predicts the
//! rest well for the files attachments are made of (text, documents,
//! already-compressed media).

use super::content::{AttachmentCompression, ContentHash, StoredContent, StoredForm};
use super::object::{ObjectHeader, HEADER_LEN};
use super::registry::{AttachStore, Pin};
use crate::attach::read_full;
use crate::{NsfError, NsfResult};
use sha2::{Digest, Sha256};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use storage::backend::write_all_at;
use storage::{FileHandle, OpenMode};

/// zstd level of the trial on the first chunk, whatever level the store
/// writes at (`attachment_compression_level`): fast, and content that
/// saves a tenth at level 3 saves at least as much at higher levels
/// (a little less at 1 and 2).
const TRIAL_LEVEL: i32 = 3;
/// Bytes read from the source at a time.
const CHUNK: usize = 1 << 20;
/// Bytes buffered before a write to the temporary file.
const WRITE_BUF: usize = 1 << 20;

/// Content stored and pinned, ready to be referenced by a commit.
pub(crate) struct Staged {
    pub content: StoredContent,
    /// Original size and crc32c.
    pub size: u64,
    pub crc32c: u32,
    /// Holds the object until the referencing commit is durable or failed.
    pub pin: Pin,
}

/// Keeps the stored form compressed only if it saves at least 10%.
fn worth_compressing(original: usize, compressed: usize) -> bool {
    compressed * 10 <= original * 9
}

/// Decides the stored form from the first chunk (see the module docs).
fn choose_form(compression: AttachmentCompression, first: &[u8]) -> StoredForm {
    if compression == AttachmentCompression::Off {
        return StoredForm::Raw;
    }
    match zstd::bulk::compress(first, TRIAL_LEVEL) {
        Ok(c) if worth_compressing(first.len(), c.len()) => StoredForm::Zstd,
        _ => StoredForm::Raw,
    }
}

/// Stores the content `first` followed by the rest of `rest` for database
/// `db`; the first chunk is at least [`super::STORE_MIN`] bytes or the
/// whole content.
pub(crate) fn stage(
    store: &Arc<AttachStore>,
    db: &str,
    first: &[u8],
    rest: &mut dyn Read,
) -> NsfResult<Staged> {
    store.check_writable()?;
    let form = choose_form(store.compression, first);
    let tmp = store
        .tmp_dir()
        .join(format!("{:016x}.part", rand::random::<u64>()));
    store.tmp_started(&tmp);
    let staged = write_and_publish(store, db, &tmp, form, first, rest);
    store.tmp_done(&tmp);
    staged
}

fn write_and_publish(
    store: &Arc<AttachStore>,
    db: &str,
    tmp: &Path,
    form: StoredForm,
    first: &[u8],
    rest: &mut dyn Read,
) -> NsfResult<Staged> {
    let file = store
        .backend
        .open(tmp, OpenMode::CreateNew)
        .map_err(|e| store.fail(tmp, "creating", e))?;
    let written = write_object(store, tmp, file, form, first, rest);
    let (header, _file) = match written {
        Ok(w) => w,
        Err(e) => {
            // Best effort: a leftover goes at the next sweep.
            let _ = store.backend.remove_file(tmp);
            return Err(e);
        }
    };
    published(store, db, tmp, header)
}

/// Publishes the synced object at `tmp` (I37), counts it, and says what
/// the item references: the existing object on a dedup hit.
pub(super) fn published(
    store: &Arc<AttachStore>,
    db: &str,
    tmp: &Path,
    header: ObjectHeader,
) -> NsfResult<Staged> {
    let (pin, existing) = store.publish(tmp, header.hash, db)?;
    store.stats.staged(existing.is_some());
    let header = match existing {
        Some(h) => h,
        None => {
            store.stats.object(header.stored_size, header.size, true);
            header
        }
    };
    Ok(Staged::of(header, pin))
}

impl Staged {
    /// The object `header` describes, pinned by `pin`.
    pub(super) fn of(header: ObjectHeader, pin: Pin) -> Staged {
        Staged {
            content: StoredContent {
                hash: header.hash,
                form: header.form,
                stored_size: header.stored_size,
            },
            size: header.size,
            crc32c: header.crc32c,
            pin,
        }
    }
}

/// Streams the content into `file` in `form`, then its header, and syncs.
fn write_object(
    store: &AttachStore,
    tmp: &Path,
    file: Arc<dyn FileHandle>,
    form: StoredForm,
    first: &[u8],
    rest: &mut dyn Read,
) -> NsfResult<(ObjectHeader, Arc<dyn FileHandle>)> {
    let sink = FileSink {
        file: file.clone(),
        path: tmp.to_path_buf(),
        at: HEADER_LEN as u64,
        buf: Vec::with_capacity(WRITE_BUF),
        crc: 0,
    };
    let mut original = Original::default();
    let failed = |e: io::Error| store.fail(tmp, "writing", e);
    let sink = match form {
        StoredForm::Raw => {
            let mut sink = sink;
            feed(&mut original, &mut sink, first, rest, &failed)?;
            sink
        }
        StoredForm::Zstd => {
            let mut enc = zstd::stream::write::Encoder::new(sink, store.level.get())
                .map_err(|e| store.fail(tmp, "starting compression of", e))?;
            feed(&mut original, &mut enc, first, rest, &failed)?;
            enc.finish().map_err(|e| store.fail(tmp, "writing", e))?
        }
    };
    let (stored_size, stored_crc) = sink.finish().map_err(|e| store.fail(tmp, "writing", e))?;
    let header = ObjectHeader {
        form,
        size: original.size,
        stored_size,
        stored_crc,
        crc32c: original.crc,
        hash: ContentHash(original.sha.finalize().into()),
    };
    write_all_at(file.as_ref(), &header.encode(), 0).map_err(|e| store.fail(tmp, "writing", e))?;
    // I37: the object is durable before it is published.
    file.sync_data()
        .map_err(|e| store.fail(tmp, "syncing", e))?;
    Ok((header, file))
}

#[derive(Default)]
struct Original {
    sha: Sha256,
    crc: u32,
    size: u64,
}

/// Passes the content to `out`, hashing it on the way. A failing source
/// is `NsfError::Content`; a failing sink is a store failure.
fn feed(
    orig: &mut Original,
    out: &mut dyn Write,
    first: &[u8],
    rest: &mut dyn Read,
    failed: &dyn Fn(io::Error) -> NsfError,
) -> NsfResult<()> {
    let mut take = |bytes: &[u8], out: &mut dyn Write| -> NsfResult<()> {
        orig.sha.update(bytes);
        orig.crc = crc32c::crc32c_append(orig.crc, bytes);
        orig.size += bytes.len() as u64;
        out.write_all(bytes).map_err(failed)
    };
    take(first, out)?;
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let n = read_full(rest, &mut chunk).map_err(NsfError::Content)?;
        if n == 0 {
            return Ok(());
        }
        take(&chunk[..n], out)?;
    }
}

/// Writes the stored bytes after the header, in large writes, keeping
/// their crc32c.
struct FileSink {
    file: Arc<dyn FileHandle>,
    path: PathBuf,
    at: u64,
    buf: Vec<u8>,
    crc: u32,
}

impl FileSink {
    fn drain(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        write_all_at(self.file.as_ref(), &self.buf, self.at)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.path.display())))?;
        self.at += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    /// Stored size and crc32c, everything written.
    fn finish(mut self) -> io::Result<(u64, u32)> {
        self.drain()?;
        Ok((self.at - HEADER_LEN as u64, self.crc))
    }
}

impl Write for FileSink {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.crc = crc32c::crc32c_append(self.crc, b);
        self.buf.extend_from_slice(b);
        if self.buf.len() >= WRITE_BUF {
            self.drain()?;
        }
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.drain()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compression_is_kept_only_when_it_saves_a_tenth() {
        assert!(worth_compressing(1000, 900));
        assert!(!worth_compressing(1000, 901));
        let text = b"the quick brown fox jumps over the lazy dog. ".repeat(200);
        assert_eq!(
            choose_form(AttachmentCompression::Auto, &text),
            StoredForm::Zstd
        );
        assert_eq!(
            choose_form(AttachmentCompression::Off, &text),
            StoredForm::Raw
        );
        let noise: Vec<u8> = (0..8192).map(|_| rand::random::<u8>()).collect();
        assert_eq!(
            choose_form(AttachmentCompression::Auto, &noise),
            StoredForm::Raw
        );
    }
}
