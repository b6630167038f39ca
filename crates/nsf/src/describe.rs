//! Looking inside a database file without opening it: the database half of
//! `folio dump db` and `folio dump page`.
//!
//! Opening a database goes through the engine (the log, the pool, the
//! open-database cache) and may write (recovery, the unlogged flag, I12),
//! so a dump never does: it opens the file through the storage backend,
//! reads pages directly (`storage::describe::FilePages`, each verified),
//! and decodes them with the code that owns each format — the header
//! (`header.rs`), trees (`storage::btree`), notes (`records.rs`), blob
//! pages (`attach.rs`'s layout) — so there is no second decoder to drift
//! from the first. A file a server has open can be dumped: what is read
//! is what the flusher has written, which may be behind the log.
//!
//! A damaged header is `NotADatabase`; a damaged tree or note is
//! `Storage(Corrupt { page })` naming the page; pages that do not verify
//! are listed by the census rather than failing the dump.

use crate::header::DbHeader;
use crate::records::decode_note_value;
use crate::{NsfError, NsfResult, BLOB_DATA};
use std::ops::Bound;
use std::path::Path;
use storage::btree::{self, TreeStats};
use storage::describe::{census, describe_page, Census, FilePages, PageDescription};
use storage::page::{get_u32, get_u64};
use storage::{Backend, OpenMode, PageId, PageKind, PageStore, StorageError};

/// What `describe_db` found.
#[derive(Clone, Debug, PartialEq)]
pub struct DbDump {
    pub header: DbHeader,
    /// Every page of the file by kind, and those that do not verify.
    pub census: Census,
    /// The trees reached from the header: name, root and what a full
    /// invariant check of each found.
    pub trees: Vec<(&'static str, PageId, TreeStats)>,
    /// Pages on the free list, walked (trunks included).
    pub free_pages: u64,
    pub notes: NotesSummary,
}

/// The note table, summarised.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NotesSummary {
    /// Live notes, design notes included.
    pub documents: u64,
    pub stubs: u64,
    /// Live notes with a `$DesignType` item (views, folders, the ACL).
    pub design_notes: u64,
    pub attachments: u64,
    pub attachment_bytes: u64,
    /// Notes stored in overflow chains (design.md §2.2).
    pub overflow_notes: u64,
}

/// One page, with what the database layer knows of its kind.
#[derive(Clone, Debug, PartialEq)]
pub struct DbPageDump {
    pub page: PageDescription,
    /// Page 0, decoded.
    pub header: Option<DbHeader>,
    /// A blob page: (blob id, index in the blob, bytes used).
    pub blob: Option<(u64, u32, u32)>,
}

fn open(backend: &dyn Backend, path: &Path) -> NsfResult<FilePages> {
    let name = path.display().to_string();
    let f = backend
        .open(path, OpenMode::Existing)
        .map_err(|source| NsfError::Io {
            path: name.clone(),
            source,
        })?;
    Ok(FilePages::new(f, name)?)
}

fn header_of(pages: &FilePages) -> NsfResult<DbHeader> {
    let name = pages.name().to_string();
    if pages.page_count() == 0 {
        return Err(NsfError::NotADatabase {
            path: name,
            reason: "the file holds no whole page".into(),
        });
    }
    let page0 = pages.read(PageId(0)).map_err(|e| NsfError::NotADatabase {
        path: name.clone(),
        reason: format!("header page: {e}"),
    })?;
    DbHeader::decode(&page0, &name)
}

/// Describes the database file at `path` (see the module docs): header,
/// pages by kind, trees, free list and notes.
pub fn describe_db(backend: &dyn Backend, path: &Path) -> NsfResult<DbDump> {
    let pages = open(backend, path)?;
    let header = header_of(&pages)?;
    let census = census(&pages)?;
    let mut trees = vec![
        ("note table", header.note_root),
        ("UNID index", header.unid_root),
        ("change-sequence index", header.seq_root),
    ];
    if !header.design_root.is_none() {
        trees.push(("design catalog", header.design_root));
    }
    let trees = trees
        .into_iter()
        .map(|(name, root)| Ok((name, root, btree::check(&pages, root)?)))
        .collect::<NsfResult<Vec<_>>>()?;
    let free_pages = header.free.pages(&pages)?.len() as u64;
    let notes = notes_summary(&pages, header.note_root)?;
    Ok(DbDump {
        header,
        census,
        trees,
        free_pages,
        notes,
    })
}

fn notes_summary(pages: &FilePages, root: PageId) -> NsfResult<NotesSummary> {
    let mut s = NotesSummary::default();
    for kv in btree::range(pages, root, Bound::Unbounded, Bound::Unbounded) {
        let (key, value) = kv?;
        let at = |why: String| {
            let id = key.as_slice().try_into().map_or(0, u32::from_be_bytes);
            StorageError::corrupt(pages.name(), root, format!("note {id}: {why}"))
        };
        let note = decode_note_value(pages, &value).map_err(|e| match e {
            NsfError::Codec(c) => at(c.to_string()).into(),
            other => other,
        })?;
        if value.first() == Some(&1) {
            s.overflow_notes += 1;
        }
        if note.deleted {
            s.stubs += 1;
            continue;
        }
        s.documents += 1;
        if note.item("$DesignType").is_some() {
            s.design_notes += 1;
        }
        for a in note.attachments() {
            s.attachments += 1;
            s.attachment_bytes += a.size;
        }
    }
    Ok(s)
}

/// Describes page `page` of the database file at `path`. A page past the
/// end of the file is `Storage(Invalid)` naming the file's size; a page
/// that does not verify is described with its problem.
pub fn describe_db_page(backend: &dyn Backend, path: &Path, page: PageId) -> NsfResult<DbPageDump> {
    let pages = open(backend, path)?;
    let raw = pages.read_raw(page)?;
    let d = describe_page(&pages, page, &raw)?;
    let verified = d.problem.is_none();
    let header = match (verified, d.kind) {
        (true, Some(PageKind::Header)) => Some(DbHeader::decode(&raw, pages.name())?),
        _ => None,
    };
    let blob = match (verified, d.kind) {
        (true, Some(PageKind::Blob)) => {
            let b = raw.body();
            let used = get_u32(b, 12);
            if used as usize > BLOB_DATA {
                return Err(StorageError::corrupt(
                    pages.name(),
                    page,
                    format!("blob page claims {used} bytes used (byte 36 of the page)"),
                )
                .into());
            }
            Some((get_u64(b, 0), get_u32(b, 8), used))
        }
        _ => None,
    };
    Ok(DbPageDump {
        page: d,
        header,
        blob,
    })
}
