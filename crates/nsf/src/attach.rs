//! Attachment content: streamed in and out, never held whole in memory.
//!
//! Content is written once, straight to pages reserved past the file's
//! high-water mark, in 1 MiB bulk writes that skip the OS page cache where
//! the file system allows (`FileHandle::write_bulk_at`: copying content
//! into the cache cost more CPU than anything else an upload does), and
//! fdatasynced before the transaction
//! that references it is logged (I7). It is *not* copied into the log:
//! attachment bytes would otherwise be written twice (log, then database),
//! halving the bandwidth of the workloads that matter most for large files.
//! Reserved pages are referenced by no committed state until that commit,
//! so a crash mid-stream leaves at worst unreferenced pages, never damage.
//!
//! Content that fits in one blob page (all content kept in blob pages
//! today: anything from [`crate::STORE_MIN`] up goes to the attachment
//! store) is the exception, I52: its page is written through the page
//! cache, not synced, and logged as a page of the transaction that
//! references it ([`log_small_blob`]), like any page. A backup's
//! roll-forward then brings it back (the log is what restores a change
//! made after a backup began, §3.6), and the commit saves the fdatasync
//! the synced path costs; the log carries at most one page (under 4 KiB
//! of content, a sparse image) per small attachment.
//!
//! ```text
//!   content ≤ one page:  write page (cache) ─▶ commit logs its image ─▶ flusher (I1)
//!   larger content:      write chunks (direct) ─▶ fdatasync ─▶ commit references it (I7)
//! ```
//!
//! Blob page body layout (after the common page header):
//! ```text
//!   0 blob id u64   8 index in blob u32   12 bytes used u32   16 data (8152 bytes)
//! ```
//! The blob id and index let a reader detect pages that were freed and
//! reused while it was streaming, instead of returning someone else's data.
//!
//! Write-back: with `attachment_writeback = 0` each attachment is synced
//! once, at its end, so thirty uploads finishing together can put sixty
//! megabytes in the disk's queue (in the page cache, or in the device's
//! own cache after direct writes), and every commit's log fsync waits
//! behind them. With `attachment_writeback = N` each chunk is synced as
//! it is written, by one of N engine-wide writer threads (`writeback`):
//! at most N chunks (of at most 1 MiB) are ever queued ahead of a log
//! write, while N ≥ 2 keeps the disk streaming.

use crate::dbcore::DbCore;
use crate::store::ObjectReader;
use crate::txn::Txn;
use crate::writeback::Failed;
use crate::{AttachmentRef, NsfError, NsfResult};
use std::any::Any;
use std::io::{self, Read};
use std::sync::Arc;
use storage::backend::{read_exact_at, write_all_at, AlignedBuf};
use storage::page::{
    get_u32, get_u64, init_in_place, put_u32, put_u64, seal_in_place, PAGE_BODY, PAGE_HEADER,
};
use storage::pool::{BufferPool, FileId};
use storage::{
    FileHandle, Lsn, PageBuf, PageId, PageKind, PageStore, PageStoreMut, PageWrite, PAGE_SIZE,
};

const BLOB_HDR: usize = 16;
/// Content bytes per blob page.
pub const BLOB_DATA: usize = PAGE_BODY - BLOB_HDR;
/// Pages written (and read) per I/O.
const CHUNK_PAGES: usize = 128;
const MAX_NAME: usize = 200;

pub fn validate_name(name: &str) -> NsfResult<()> {
    let bad = |why: &str| {
        Err(NsfError::Invalid(format!(
            "invalid attachment name {name:?}: {why}"
        )))
    };
    if name.is_empty() || name.len() > MAX_NAME {
        return bad("must be 1 to 200 bytes");
    }
    if name == "."
        || name == ".."
        || name
            .chars()
            .any(|c| c == '/' || c == '\\' || c.is_control())
    {
        return bad("no path separators or control characters");
    }
    Ok(())
}

/// Streams content into freshly reserved pages.
pub(crate) struct BlobWriter<'a> {
    core: &'a DbCore,
    name: String,
    mime: String,
    blob_id: u64,
    extents: Vec<(u32, u32)>,
    size: u64,
    crc: u32,
    pages: u32,
}

impl<'a> BlobWriter<'a> {
    pub fn new(core: &'a DbCore, name: &str, mime: &str) -> Self {
        BlobWriter {
            core,
            name: name.to_string(),
            mime: mime.to_string(),
            blob_id: rand::random::<u64>() | 1,
            extents: Vec::new(),
            size: 0,
            crc: 0,
            pages: 0,
        }
    }

    /// Pages reserved so far (to give back if the attachment is abandoned).
    pub fn reserved(&self) -> Vec<(u32, u32)> {
        self.extents.clone()
    }

    pub fn write_all_from(&mut self, src: &mut dyn Read) -> NsfResult<()> {
        let mut chunk = AlignedBuf::zeroed(CHUNK_PAGES * PAGE_SIZE);
        loop {
            let n =
                read_full(src, &mut chunk[..CHUNK_PAGES * BLOB_DATA]).map_err(NsfError::Content)?;
            if n == 0 {
                return Ok(());
            }
            chunk = self.write_chunk(chunk, n)?;
            if n < CHUNK_PAGES * BLOB_DATA {
                return Ok(());
            }
        }
    }

    /// Writes the `n` content bytes at the start of `chunk` as blob pages.
    ///
    /// The pages are built in place, in the buffer they are written from:
    /// each page's share of the content moves up to its place after the
    /// page and blob headers, last page first so that no content is
    /// overwritten before it has moved (page `i`'s place starts past the
    /// content of every page before it). One read into the buffer, one
    /// move, and a direct write (`write_bulk_at`): the content is copied
    /// once on its way from the source to the disk.
    fn write_chunk(&mut self, mut chunk: AlignedBuf, n: usize) -> NsfResult<AlignedBuf> {
        // I43: a stream into a deleted database stops at its next chunk.
        self.core.check_not_deleted()?;
        self.crc = crc32c::crc32c_append(self.crc, &chunk[..n]);
        self.size += n as u64;
        let npages = n.div_ceil(BLOB_DATA);
        let first = self.core.reserve_pages(npages as u32);
        match self.extents.last_mut() {
            Some((start, count)) if *start + *count == first.0 => *count += npages as u32,
            _ => self.extents.push((first.0, npages as u32)),
        }
        for i in (0..npages).rev() {
            let from = i * BLOB_DATA;
            let used = (n - from).min(BLOB_DATA);
            let at = i * PAGE_SIZE + PAGE_HEADER + BLOB_HDR;
            chunk.copy_within(from..from + used, at);
            let page = &mut chunk[i * PAGE_SIZE..(i + 1) * PAGE_SIZE];
            page[PAGE_HEADER + BLOB_HDR + used..].fill(0);
            init_in_place(page, PageKind::Blob);
            let b = &mut page[PAGE_HEADER..];
            put_u64(b, 0, self.blob_id);
            put_u32(b, 8, self.pages + i as u32);
            put_u32(b, 12, used as u32);
            seal_in_place(page, PageId(first.0 + i as u32), Lsn::ZERO);
        }
        self.pages += npages as u32;
        let (len, offset) = (npages * PAGE_SIZE, first.offset());
        let core = self.core;
        if self.fits_one_page() {
            // I52: logged by the commit that references it; not synced.
            write_all_at(core.handle.as_ref(), &chunk[..len], offset)
                .map_err(|e| core.fail("attachment write", e))?;
            return Ok(chunk);
        }
        if core.writeback.limit() == 0 {
            core.handle
                .write_bulk_at(&chunk[..len], offset)
                .map_err(|e| core.fail("attachment write", e))?;
            return Ok(chunk);
        }
        // Written and synced by a writer thread: the chunk reaches the
        // disk now, while at most `limit` chunks are queued (module docs).
        match core
            .writeback
            .write_synced(&core.handle, chunk, len, offset)
        {
            (chunk, Ok(())) => Ok(chunk),
            (_, Err(Failed::Write(e))) => Err(core.fail("attachment write", e)),
            (_, Err(Failed::Sync(e))) => Err(core.fail("attachment fdatasync", e)),
        }
    }

    /// Whether the content written so far is one page at most: then it
    /// is logged with its reference (I52), not synced (I7).
    fn fits_one_page(&self) -> bool {
        self.pages <= 1 && logged_content(self.size)
    }

    /// I7: the content is durable before anything references it (with
    /// a write-back limit every chunk was synced as it was written);
    /// content of one page is made durable by the commit's log (I52).
    pub fn finish(&self) -> NsfResult<AttachmentRef> {
        if self.core.writeback.limit() == 0 && !self.fits_one_page() {
            self.core
                .handle
                .sync_data()
                .map_err(|e| self.core.fail("attachment fdatasync", e))?;
        }
        Ok(AttachmentRef {
            name: self.name.clone(),
            mime: self.mime.clone(),
            size: self.size,
            crc32c: self.crc,
            blob_id: self.blob_id,
            extents: self.extents.clone(),
            stored: None,
        })
    }
}

/// Reads until `buf` is full or the source ends; returns how much was
/// read. Used to fill whole upload chunks here and whole download chunks
/// in the server (fewer frames, fewer wake-ups).
pub fn read_full(src: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match src.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Whether content of `size` bytes is kept in one blob page whose image
/// the referencing commit logs (I52), rather than synced unlogged (I7).
fn logged_content(size: u64) -> bool {
    size <= BLOB_DATA as u64
}

/// Stages the blob page of content that [`BlobWriter`] wrote unsynced
/// (one page, I52) as a logged page of `txn`, the transaction that makes
/// `a` referenced: its image goes to the log with the reference, so
/// restart recovery and a backup's roll-forward bring the content back
/// with the document. Nothing for content in the attachment store or in
/// synced multi-page runs (I7, I37). The page is read back (from the OS
/// cache: it was just written) and checked to be this content's.
pub(crate) fn log_small_blob(txn: &mut Txn<'_>, a: &AttachmentRef) -> NsfResult<()> {
    if a.stored.is_some() || !logged_content(a.size) {
        return Ok(());
    }
    for (first, count) in &a.extents {
        for p in *first..first + count {
            let id = PageId(p);
            let page = txn.read(id)?;
            let b = page.body();
            if page.kind() != Some(PageKind::Blob) || get_u64(b, 0) != a.blob_id {
                return Err(storage::StorageError::Corrupt {
                    file: txn.core().path.clone(),
                    page: id,
                    reason: format!(
                        "blob page of attachment {:?} does not hold its content (blob id {:016x})",
                        a.name, a.blob_id
                    ),
                }
                .into());
            }
            txn.write(id, (*page).clone());
        }
    }
    Ok(())
}

/// Returns an attachment's pages to the free list (inside a transaction).
pub(crate) fn free_blob(txn: &mut Txn<'_>, a: &AttachmentRef) -> NsfResult<()> {
    for (first, count) in &a.extents {
        for p in *first..first + count {
            txn.free(PageId(p))?;
        }
    }
    Ok(())
}

/// Streams an attachment's content from wherever it is stored: this
/// file's blob pages, or the attachment store (design.md §2.9). Either
/// way the content is checked as it streams and its crc32c at the end.
pub struct AttachmentReader {
    aref: AttachmentRef,
    source: Source,
}

enum Source {
    Pages(PageReader),
    /// The object, and the instance kept open while it is read (I19),
    /// as a page reader keeps it.
    Store {
        object: ObjectReader,
        _pin: Arc<dyn Any + Send + Sync>,
    },
}

impl AttachmentReader {
    pub(crate) fn from_pages(
        pin: Arc<dyn Any + Send + Sync>,
        handle: Arc<dyn FileHandle>,
        path: String,
        aref: AttachmentRef,
    ) -> Self {
        let pages = PageReader::new(pin, handle, path, aref.clone());
        AttachmentReader {
            aref,
            source: Source::Pages(pages),
        }
    }

    pub(crate) fn from_store(
        pin: Arc<dyn Any + Send + Sync>,
        aref: AttachmentRef,
        object: ObjectReader,
    ) -> Self {
        AttachmentReader {
            aref,
            source: Source::Store { object, _pin: pin },
        }
    }

    /// Reads blob pages the file does not hold (yet) from the buffer pool
    /// (content in the attachment store is never moved by compact).
    pub(crate) fn with_pool(mut self, pool: Arc<BufferPool>, file: FileId) -> Self {
        if let Source::Pages(p) = &mut self.source {
            p.pool = Some((pool, file));
        }
        self
    }

    pub fn attachment(&self) -> &AttachmentRef {
        &self.aref
    }
}

impl Read for AttachmentReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        match &mut self.source {
            Source::Pages(p) => p.read(out),
            Source::Store { object, .. } => object.read(out),
        }
    }
}

/// Streams an attachment's content from blob pages, verifying every page
/// and the whole content's checksum.
struct PageReader {
    /// Keeps the database instance open while its content is read (I19):
    /// the instance's own `Arc`, held but never used here.
    _pin: Arc<dyn Any + Send + Sync>,
    handle: Arc<dyn FileHandle>,
    path: String,
    aref: AttachmentRef,
    /// Next blob page index to load.
    next_page: u32,
    buf: Vec<u8>,
    pos: usize,
    crc: u32,
    delivered: u64,
    /// Where a page the file does not hold yet is found: content compact
    /// moved (a logged page, §2.10) is in the pool until it is flushed.
    pool: Option<(Arc<BufferPool>, FileId)>,
}

impl PageReader {
    fn new(
        pin: Arc<dyn Any + Send + Sync>,
        handle: Arc<dyn FileHandle>,
        path: String,
        aref: AttachmentRef,
    ) -> Self {
        PageReader {
            _pin: pin,
            handle,
            path,
            aref,
            next_page: 0,
            buf: Vec::new(),
            pos: 0,
            crc: 0,
            delivered: 0,
            pool: None,
        }
    }

    /// Blob page `id` as the pool has it, if it is this attachment's page
    /// `index` there: compact moved it and the flusher has not written it.
    fn pooled_page(&self, id: PageId, index: u32) -> Option<Arc<PageBuf>> {
        let (pool, file) = self.pool.as_ref()?;
        let page = pool.read(*file, id).ok()?;
        let b = page.body();
        (page.kind() == Some(PageKind::Blob)
            && get_u64(b, 0) == self.aref.blob_id
            && get_u32(b, 8) == index)
            .then_some(page)
    }

    /// Page id of blob page `index`, and how many pages follow it
    /// contiguously in the same extent.
    fn locate(&self, mut index: u32) -> Option<(PageId, u32)> {
        for (first, count) in &self.aref.extents {
            if index < *count {
                return Some((PageId(first + index), count - index));
            }
            index -= count;
        }
        None
    }

    fn bad(&self, page: PageId, why: &str) -> io::Error {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: attachment {:?}, {page}: {why}",
                self.path, self.aref.name
            ),
        )
    }

    fn load(&mut self) -> io::Result<()> {
        let Some((first, run)) = self.locate(self.next_page) else {
            return Ok(());
        };
        let n = run.min(CHUNK_PAGES as u32) as usize;
        let mut raw = vec![0u8; n * PAGE_SIZE];
        read_exact_at(self.handle.as_ref(), &mut raw, first.offset())?;
        self.buf.clear();
        self.pos = 0;
        for (i, bytes) in raw.chunks(PAGE_SIZE).enumerate() {
            let id = PageId(first.0 + i as u32);
            let on_disk = PageBuf::from_bytes(bytes)
                .map_err(|e| self.bad(id, &e.to_string()))
                .and_then(|page| {
                    page.verify(&self.path, id)
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
                    let b = page.body();
                    let ok = page.kind() == Some(PageKind::Blob)
                        && get_u64(b, 0) == self.aref.blob_id
                        && get_u32(b, 8) == self.next_page;
                    if !ok {
                        return Err(self.bad(
                            id,
                            "page no longer belongs to this attachment (deleted while reading?)",
                        ));
                    }
                    Ok(Arc::new(page))
                });
            let page = match on_disk {
                Ok(p) => p,
                Err(e) => self.pooled_page(id, self.next_page).ok_or(e)?,
            };
            let b = page.body();
            let used = get_u32(b, 12) as usize;
            if used > BLOB_DATA {
                return Err(self.bad(id, "bad used length"));
            }
            self.buf.extend_from_slice(&b[BLOB_HDR..BLOB_HDR + used]);
            self.next_page += 1;
        }
        Ok(())
    }
}

impl Read for PageReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.buf.len() {
            if self.delivered >= self.aref.size {
                return Ok(0);
            }
            self.load()?;
            if self.buf.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{}: attachment {:?} is shorter than recorded",
                        self.path, self.aref.name
                    ),
                ));
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        self.crc = crc32c::crc32c_append(self.crc, &out[..n]);
        self.delivered += n as u64;
        if self.delivered > self.aref.size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: attachment {:?} is longer than recorded",
                    self.path, self.aref.name
                ),
            ));
        }
        if self.delivered == self.aref.size && self.crc != self.aref.crc32c {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: attachment {:?} checksum mismatch",
                    self.path, self.aref.name
                ),
            ));
        }
        Ok(n)
    }
}
