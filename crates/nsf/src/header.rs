//! The database file header (page 0).
//!
//! Page 0 holds the file's identity and the roots of everything else, so a
//! database is found from one page read. It is an ordinary page: changed by
//! transactions, logged like any other page, flushed by the flusher. Layout
//! of the page body (little-endian, offsets from the start of the body):
//!
//! ```text
//!   0  magic "FOLIODB\0"      8  format version u32   12 page size u32
//!  16  replica id u64        24  instance id u64     32 created i64 (µs)
//!  40  page count u32        44  free-list head u32  48 free count u64
//!  56  note root u32         60  unid root u32       64 seq root u32
//!  68  design root u32    72  replication root u32  76 store ref root u32
//!  80  reserved roots 2×u32
//!  88  next note id u32
//!  92  last seq u64
//! 100  flags u32            104  title len u16      106 title utf8 (≤ 256)
//! ```

use crate::{DbInstanceId, NsfError, NsfResult, ReplicaId, Seq, Timestamp};
use storage::freelist::FreeList;
use storage::page::{get_u16, get_u32, get_u64, put_u16, put_u32, put_u64};
use storage::{PageBuf, PageId, PageKind, PAGE_SIZE};

pub(crate) const MAGIC: &[u8; 8] = b"FOLIODB\0";
pub(crate) const FORMAT_VERSION: u32 = 1;
pub const MAX_TITLE: usize = 256;

/// Header flag: written in unlogged mode and not yet closed cleanly (I12).
pub(crate) const FLAG_UNLOGGED_OPEN: u32 = 1;

/// Decoded page 0.
#[derive(Clone, Debug, PartialEq)]
pub struct DbHeader {
    pub replica_id: ReplicaId,
    pub instance_id: DbInstanceId,
    pub created: Timestamp,
    pub page_count: u32,
    pub free: FreeList,
    pub note_root: PageId,
    pub unid_root: PageId,
    pub seq_root: PageId,
    /// Root of the design catalog (view index states), or page 0 if the
    /// database has no views yet. Owned by the `views` crate.
    pub design_root: PageId,
    /// Root of the replication tree (revisions and histories,
    /// `lineage.rs`), or page 0 until something is first stored in it.
    /// Files from before it have 0 here (the bytes were reserved, zero).
    pub repl_root: PageId,
    /// Root of the store reference tree (design.md §2.9, I38), or page 0
    /// until the database first references the attachment store.
    pub store_root: PageId,
    pub next_note_id: u32,
    pub last_seq: Seq,
    pub flags: u32,
    pub title: String,
}

impl DbHeader {
    pub(crate) fn encode(&self) -> PageBuf {
        let mut p = PageBuf::new(PageKind::Header);
        let b = p.body_mut();
        b[0..8].copy_from_slice(MAGIC);
        put_u32(b, 8, FORMAT_VERSION);
        put_u32(b, 12, PAGE_SIZE as u32);
        put_u64(b, 16, self.replica_id.0);
        put_u64(b, 24, self.instance_id.0);
        put_u64(b, 32, self.created.0 as u64);
        put_u32(b, 40, self.page_count);
        put_u32(b, 44, self.free.head.0);
        put_u64(b, 48, self.free.count);
        put_u32(b, 56, self.note_root.0);
        put_u32(b, 60, self.unid_root.0);
        put_u32(b, 64, self.seq_root.0);
        put_u32(b, 68, self.design_root.0);
        put_u32(b, 72, self.repl_root.0);
        put_u32(b, 76, self.store_root.0);
        put_u32(b, 88, self.next_note_id);
        put_u64(b, 92, self.last_seq.0);
        put_u32(b, 100, self.flags);
        let t = self.title.as_bytes();
        put_u16(b, 104, t.len() as u16);
        b[106..106 + t.len()].copy_from_slice(t);
        p
    }

    /// Decodes page 0; `path` names the file in errors.
    pub(crate) fn decode(p: &PageBuf, path: &str) -> NsfResult<DbHeader> {
        let not_db = |reason: String| NsfError::NotADatabase {
            path: path.to_string(),
            reason,
        };
        let b = p.body();
        if p.kind() != Some(PageKind::Header) || &b[0..8] != MAGIC {
            return Err(not_db("bad magic number".into()));
        }
        let version = get_u32(b, 8);
        if version != FORMAT_VERSION {
            return Err(not_db(format!(
                "format version {version} (this server reads version {FORMAT_VERSION})"
            )));
        }
        if get_u32(b, 12) as usize != PAGE_SIZE {
            return Err(not_db(format!("page size {}", get_u32(b, 12))));
        }
        let tlen = get_u16(b, 104) as usize;
        if tlen > MAX_TITLE {
            return Err(not_db(format!("title length {tlen}")));
        }
        let title = std::str::from_utf8(&b[106..106 + tlen])
            .map_err(|_| not_db("title is not UTF-8".into()))?
            .to_string();
        Ok(DbHeader {
            replica_id: ReplicaId(get_u64(b, 16)),
            instance_id: DbInstanceId(get_u64(b, 24)),
            created: Timestamp(get_u64(b, 32) as i64),
            page_count: get_u32(b, 40),
            free: FreeList {
                head: PageId(get_u32(b, 44)),
                count: get_u64(b, 48),
            },
            note_root: PageId(get_u32(b, 56)),
            unid_root: PageId(get_u32(b, 60)),
            seq_root: PageId(get_u32(b, 64)),
            design_root: PageId(get_u32(b, 68)),
            repl_root: PageId(get_u32(b, 72)),
            store_root: PageId(get_u32(b, 76)),
            next_note_id: get_u32(b, 88),
            last_seq: Seq(get_u64(b, 92)),
            flags: get_u32(b, 100),
            title,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_rejects_foreign_pages() {
        let h = DbHeader {
            replica_id: ReplicaId(7),
            instance_id: DbInstanceId(9),
            created: Timestamp(5),
            page_count: 4,
            free: FreeList {
                head: PageId(3),
                count: 2,
            },
            note_root: PageId(1),
            unid_root: PageId(2),
            seq_root: PageId(3),
            design_root: PageId(6),
            repl_root: PageId(8),
            store_root: PageId(12),
            next_note_id: 10,
            last_seq: Seq(11),
            flags: 0,
            title: "Mail — ünïcode".into(),
        };
        assert_eq!(DbHeader::decode(&h.encode(), "x").unwrap(), h);
        let e = DbHeader::decode(&PageBuf::new(PageKind::Overflow), "x.fdb").unwrap_err();
        assert!(
            e.to_string().contains("x.fdb is not a Folio database"),
            "{e}"
        );
    }
}
