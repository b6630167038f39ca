//! Looking inside a database file without trusting it: the storage half of
//! `folio dump`.
//!
//! A dump tool is pointed at files that may be damaged, so nothing here
//! assumes a page is what its header says. [`FilePages`] reads pages
//! straight from a [`FileHandle`] (opened read-only by the caller, never
//! through the buffer pool, so a dump changes nothing and needs no engine),
//! [`describe_page`] reports a page's common header, whether it verifies,
//! and what the layouts this crate owns (B+tree nodes, overflow links,
//! free-list trunks) say about its body, and [`census`] counts every page
//! of a file by kind. The database layer adds what it owns (the header
//! page, blob pages) on top; the CLI only prints.
//!
//! Every length read from a page is checked against the page before it is
//! used: a damaged body is `StorageError::Corrupt` naming the page and the
//! body offset, never a panic (`describe_tests` feeds random bytes).

use crate::btree::{self, NodeSummary};
use crate::freelist::TRUNK_CAPACITY;
use crate::overflow::OVERFLOW_DATA;
use crate::page::{get_u32, PAGE_HEADER};
use crate::{
    FileHandle, Lsn, PageBuf, PageId, PageKind, PageStore, StorageError, StorageResult, PAGE_SIZE,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Pages of one file read directly, each verified (checksum, id, kind):
/// a [`PageStore`] for walking trees of a file no engine has open.
pub struct FilePages {
    handle: Arc<dyn FileHandle>,
    name: String,
    pages: u32,
}

impl FilePages {
    /// `name` names the file in errors. The file's length fixes how many
    /// pages there are; a trailing partial page is ignored.
    pub fn new(handle: Arc<dyn FileHandle>, name: impl Into<String>) -> StorageResult<FilePages> {
        let name = name.into();
        let len = handle.len().map_err(|e| StorageError::io(&name, e))?;
        let pages = u32::try_from(len / PAGE_SIZE as u64).map_err(|_| {
            StorageError::Invalid(format!("{name}: {len} bytes is too large for a database"))
        })?;
        Ok(FilePages {
            handle,
            name,
            pages,
        })
    }

    /// Whole pages in the file.
    pub fn page_count(&self) -> u32 {
        self.pages
    }

    /// A page as stored, unverified. A page past the end of the file is
    /// `Invalid` naming the file's size in pages.
    pub fn read_raw(&self, id: PageId) -> StorageResult<PageBuf> {
        if id.0 >= self.pages {
            return Err(StorageError::Invalid(format!(
                "{}: {id} is past the end of the file ({} pages)",
                self.name, self.pages
            )));
        }
        let mut page = PageBuf::zeroed();
        crate::backend::read_exact_at(self.handle.as_ref(), page.bytes_mut(), id.offset())
            .map_err(|e| StorageError::io(&self.name, e))?;
        Ok(page)
    }
}

impl PageStore for FilePages {
    fn read(&self, id: PageId) -> StorageResult<Arc<PageBuf>> {
        let page = self.read_raw(id).map_err(|e| match e {
            StorageError::Invalid(reason) => StorageError::corrupt(&self.name, id, reason),
            other => other,
        })?;
        page.verify(&self.name, id)?;
        Ok(Arc::new(page))
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// What one page is, as far as this layer can tell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageDescription {
    /// Where the page was read from.
    pub id: PageId,
    /// Byte 4 as stored, and the kind it names if it names one.
    pub kind_byte: u8,
    pub kind: Option<PageKind>,
    pub flags: u8,
    /// The id stamped in the page (differs from `id` for a misplaced write).
    pub stored_id: PageId,
    pub lsn: Lsn,
    /// Why the page does not verify (never written, checksum, misplaced,
    /// unknown kind); its body is then not decoded.
    pub problem: Option<String>,
    pub content: PageContent,
}

/// The body of a verified page, for the layouts this crate owns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PageContent {
    /// Not decoded: the page does not verify.
    Unverified,
    /// A B+tree node (leaf or internal).
    Node(NodeSummary),
    Overflow {
        next: PageId,
        used: u32,
    },
    FreeTrunk {
        next: PageId,
        count: u32,
    },
    /// A page on the free list: its content is meaningless.
    Free,
    /// A kind the layer above owns (the header, blob pages).
    Owned,
}

/// Describes `page`, read at `id` of the file `s` names. A page that fails
/// verification is described (with `problem`), not an error; a verified
/// page whose body contradicts its layout is `Corrupt` naming the page and
/// where in the body.
pub fn describe_page(
    s: &impl PageStore,
    id: PageId,
    page: &PageBuf,
) -> StorageResult<PageDescription> {
    let b = page.bytes();
    let problem = page.verify(s.name(), id).err().map(|e| match e {
        StorageError::Corrupt { reason, .. } => reason,
        other => other.to_string(),
    });
    let content = match (problem.is_some(), page.kind()) {
        (true, _) | (false, None) => PageContent::Unverified,
        (false, Some(kind)) => describe_body(s, id, page, kind)?,
    };
    Ok(PageDescription {
        id,
        kind_byte: b[4],
        kind: page.kind(),
        flags: page.flags(),
        stored_id: page.id(),
        lsn: page.lsn(),
        problem,
        content,
    })
}

fn describe_body(
    s: &impl PageStore,
    id: PageId,
    page: &PageBuf,
    kind: PageKind,
) -> StorageResult<PageContent> {
    let body = page.body();
    let at = |off: usize, why: String| {
        StorageError::corrupt(
            s.name(),
            id,
            format!("{why} (byte {} of the page)", PAGE_HEADER + off),
        )
    };
    Ok(match kind {
        PageKind::BTreeLeaf | PageKind::BTreeInternal => {
            PageContent::Node(btree::describe_node(s, id, page)?)
        }
        PageKind::Overflow => {
            let used = get_u32(body, 4);
            if used as usize > OVERFLOW_DATA {
                return Err(at(4, format!("overflow page claims {used} bytes used")));
            }
            PageContent::Overflow {
                next: PageId(get_u32(body, 0)),
                used,
            }
        }
        PageKind::FreeTrunk => {
            let count = get_u32(body, 4);
            if count as usize > TRUNK_CAPACITY {
                return Err(at(4, format!("free-list trunk lists {count} pages")));
            }
            PageContent::FreeTrunk {
                next: PageId(get_u32(body, 0)),
                count,
            }
        }
        PageKind::Free => PageContent::Free,
        PageKind::Header | PageKind::Blob => PageContent::Owned,
    })
}

/// Every page of a file counted by kind, and the pages that do not verify.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Census {
    pub pages: u64,
    /// Verified pages by kind name (`PageKind`'s debug name).
    pub by_kind: BTreeMap<String, u64>,
    /// All-zero pages: reserved or allocated and never written.
    pub unwritten: u64,
    /// Pages that fail verification, with the reason.
    pub bad: Vec<(PageId, String)>,
}

/// Reads every page of the file once and counts them.
pub fn census(pages: &FilePages) -> StorageResult<Census> {
    let mut c = Census {
        pages: u64::from(pages.page_count()),
        ..Census::default()
    };
    for n in 0..pages.page_count() {
        let id = PageId(n);
        let page = pages.read_raw(id)?;
        if page.bytes().iter().all(|b| *b == 0) {
            c.unwritten += 1;
            continue;
        }
        match (page.verify(pages.name(), id), page.kind()) {
            (Ok(()), Some(kind)) => *c.by_kind.entry(format!("{kind:?}")).or_default() += 1,
            (Err(StorageError::Corrupt { reason, .. }), _) => c.bad.push((id, reason)),
            (Err(e), _) => return Err(e),
            (Ok(()), None) => c.bad.push((id, "unknown page kind".into())),
        }
    }
    Ok(c)
}

#[cfg(test)]
mod describe_tests {
    use super::*;
    use crate::backend::{write_all_at, Backend, MemBackend};
    use crate::OpenMode;
    use proptest::prelude::*;
    use std::path::Path;

    fn file_with(pages: &[PageBuf]) -> FilePages {
        let m = MemBackend::new();
        m.create_dir_all(Path::new("/d")).unwrap();
        let f = m.open(Path::new("/d/f.fdb"), OpenMode::CreateNew).unwrap();
        for (i, p) in pages.iter().enumerate() {
            write_all_at(f.as_ref(), p.bytes(), (i * PAGE_SIZE) as u64).unwrap();
        }
        FilePages::new(f, "f.fdb").unwrap()
    }

    fn sealed(kind: PageKind, id: u32, body: impl FnOnce(&mut [u8])) -> PageBuf {
        let mut p = PageBuf::new(kind);
        body(p.body_mut());
        p.seal(PageId(id), Lsn(7));
        p
    }

    #[test]
    fn pages_are_described_and_counted_by_kind() {
        let trunk = sealed(PageKind::FreeTrunk, 1, |b| {
            b[4] = 2;
        });
        let over = sealed(PageKind::Overflow, 2, |b| {
            b[0] = 9;
            b[4] = 100;
        });
        let mut torn = sealed(PageKind::Overflow, 3, |_| {});
        torn.bytes_mut()[500] ^= 1;
        let f = file_with(&[PageBuf::zeroed(), trunk, over, torn]);
        let d = describe_page(&f, PageId(2), &f.read_raw(PageId(2)).unwrap()).unwrap();
        assert_eq!(
            (d.kind, d.lsn, d.problem, d.content),
            (
                Some(PageKind::Overflow),
                Lsn(7),
                None,
                PageContent::Overflow {
                    next: PageId(9),
                    used: 100
                }
            )
        );
        let bad = describe_page(&f, PageId(3), &f.read_raw(PageId(3)).unwrap()).unwrap();
        assert_eq!(bad.problem.as_deref(), Some("checksum mismatch"));
        assert_eq!(bad.content, PageContent::Unverified);
        let c = census(&f).unwrap();
        assert_eq!((c.pages, c.unwritten), (4, 1));
        assert_eq!(c.by_kind.get("FreeTrunk"), Some(&1));
        assert_eq!(c.bad, vec![(PageId(3), "checksum mismatch".to_string())]);
        let past = f.read_raw(PageId(4)).unwrap_err().to_string();
        assert!(
            past.contains("page 4 is past the end of the file (4 pages)"),
            "{past}"
        );
    }

    #[test]
    fn a_verified_page_with_an_impossible_body_names_the_page_and_byte() {
        let p = sealed(PageKind::FreeTrunk, 1, |b| {
            b[4..8].copy_from_slice(&u32::MAX.to_le_bytes())
        });
        let f = file_with(&[PageBuf::zeroed(), p]);
        let e = describe_page(&f, PageId(1), &f.read_raw(PageId(1)).unwrap()).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("page 1") && msg.contains("byte 28"), "{msg}");
    }

    proptest! {
        /// Random bodies under a valid seal (so every layout decoder runs
        /// on garbage) never panic: each is described or a `Corrupt` error.
        #[test]
        fn random_pages_never_panic(kind in 1u8..=8, body in proptest::collection::vec(any::<u8>(), 0..PAGE_SIZE - PAGE_HEADER), small in any::<bool>()) {
            let mut p = PageBuf::zeroed();
            p.bytes_mut()[4] = kind;
            let n = if small { body.len().min(64) } else { body.len() };
            p.body_mut()[..n].copy_from_slice(&body[..n]);
            p.seal(PageId(1), Lsn(1));
            let f = file_with(&[PageBuf::zeroed(), p.clone()]);
            match describe_page(&f, PageId(1), &p) {
                Ok(_) => {}
                Err(StorageError::Corrupt { page, .. }) => prop_assert_eq!(page, PageId(1)),
                Err(e) => prop_assert!(false, "unexpected error {e}"),
            }
        }
    }
}
