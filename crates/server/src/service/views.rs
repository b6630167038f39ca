//! Views and folders: open, read a page, find by key, bring up to date,
//! create, delete, change a folder's documents, and formula searches.
//!
//! A caller sees a view as if the documents it may not read did not
//! exist: the index leaves them out as of its last update, and while the
//! database has changed since, each row's document is checked again
//! ([`recheck_rows`]).

use super::access::{bad, forbidden, hidden};
use super::wire::{document, wire_row};
use super::{Caller, Service};
use crate::error::{nsf_err, view_err};
use crate::ServerResult;
use nsf::{Access, AccessLevel, Database, Timestamp};
use protocol::{Document, Found, ReadFlags, Row, Start, Unid};
use std::sync::Arc;
use views::{ViewDef, ViewError};

/// Adding documents to a folder or taking them out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FolderChange {
    /// Put the documents in the folder.
    Add,
    /// Take them out.
    Remove,
}

/// An open collection: what a later page read needs.
#[derive(Clone, Debug)]
pub struct CollectionInfo {
    /// Column titles.
    pub titles: Vec<String>,
    /// Whether the first column is a category.
    pub categorized: bool,
    /// Document entries.
    pub count: u64,
    /// The change sequence the index reflects.
    pub seq: u64,
}

impl Service {
    /// Opens a view or folder, bringing its index up to date as its
    /// refresh option says.
    pub fn open_collection(
        &self,
        caller: &Caller,
        db: &Arc<Database>,
        name: &str,
    ) -> ServerResult<CollectionInfo> {
        let access = self.require(caller, db, AccessLevel::Reader)?;
        let c = self.views.open(db, name).map_err(view_err)?.seen_by(access);
        Ok(CollectionInfo {
            titles: c.titles(),
            categorized: c
                .definition()
                .columns
                .first()
                .is_some_and(|c| c.categorized),
            count: c.count().map_err(view_err)?,
            seq: c.seq,
        })
    }

    /// Reads a page of rows as the caller sees the view: entries of
    /// documents it may not read are not there (nor in positions,
    /// category rows or the total).
    pub fn read_entries(
        &self,
        caller: &Caller,
        db: &Arc<Database>,
        name: &str,
        start: &Start,
        count: u32,
        flags: ReadFlags,
    ) -> ServerResult<(Vec<Row>, Option<u64>)> {
        let access = self.require(caller, db, AccessLevel::Reader)?;
        let c = self.open_seen_by(db, name, &access)?;
        let recheck = recheck_rows(db, &c, &access);
        let want = count.min(self.limits.max_page_rows) as usize;
        let mut start = match start {
            Start::Position(p) => views::Start::Position(*p),
            Start::Key { key, prefix } => views::Start::Key {
                key: key.clone(),
                prefix: *prefix,
            },
        };
        let mut rows = Vec::with_capacity(want);
        let mut docs = 0;
        // Rows left out by the recheck leave holes; read on until the
        // page is full.
        loop {
            let page = c
                .read(&start, want - docs, flags.backward, flags.categories)
                .map_err(view_err)?;
            let (mut read, mut last) = (0, None);
            for row in page {
                if let views::Row::Entry {
                    position, note_id, ..
                } = &row
                {
                    read += 1;
                    last = Some(*position);
                    if recheck && !self.readable(&access, db, *note_id)? {
                        continue;
                    }
                    docs += 1;
                }
                rows.push(wire_row(row));
            }
            let Some(last) = last else { break };
            if docs >= want || read < want - docs || !recheck {
                break;
            }
            start = match flags.backward {
                false => views::Start::Position(last + 1),
                true if last == 0 => break,
                true => views::Start::Position(last - 1),
            };
        }
        let total = if flags.count {
            Some(c.count().map_err(view_err)?)
        } else {
            None
        };
        Ok((rows, total))
    }

    /// Where the entries with `key` start and how many there are, as the
    /// caller sees the view.
    pub fn find_by_key(
        &self,
        caller: &Caller,
        db: &Arc<Database>,
        name: &str,
        key: &str,
        prefix: bool,
    ) -> ServerResult<Option<Found>> {
        let access = self.require(caller, db, AccessLevel::Reader)?;
        let c = self.open_seen_by(db, name, &access)?;
        let Some(found) = c.find(key, prefix).map_err(view_err)? else {
            return Ok(None);
        };
        if !recheck_rows(db, &c, &access) {
            return Ok(Some(Found {
                position: found.position,
                count: found.count,
            }));
        }
        let rows = c
            .read(
                &views::Start::Position(found.position),
                found.count as usize,
                false,
                false,
            )
            .map_err(view_err)?;
        let mut first = None;
        let mut n = 0;
        for row in rows {
            if let views::Row::Entry {
                position, note_id, ..
            } = row
            {
                if self.readable(&access, db, note_id)? {
                    first.get_or_insert(position);
                    n += 1;
                }
            }
        }
        Ok(first.map(|position| Found { position, count: n }))
    }

    /// A view's index as it stands, as `access` sees it.
    fn open_seen_by<'v>(
        &'v self,
        db: &Arc<Database>,
        name: &str,
        access: &Access,
    ) -> ServerResult<views::Collection<'v>> {
        let c = self.views.open_as_is(db, name).map_err(view_err)?;
        Ok(c.seen_by(access.clone()))
    }

    /// Applies the database's changes to a view's index.
    pub fn update_collection(
        &self,
        caller: &Caller,
        db: &Arc<Database>,
        name: &str,
    ) -> ServerResult<(u64, u64)> {
        self.require(caller, db, AccessLevel::Reader)?;
        let r = self.views.update(db, name).map_err(view_err)?;
        Ok((r.last_seq, r.notes_seen))
    }

    /// Rebuilds a view's or folder's index from scratch (Designer
    /// access; a folder keeps its members). The report's counts cover
    /// every document, so they are given only to callers who see every
    /// document (`None` for the others).
    pub fn rebuild_view(
        &self,
        caller: &Caller,
        db: &Arc<Database>,
        name: &str,
    ) -> ServerResult<(f64, Option<views::RebuildReport>)> {
        let access = self.access(caller, db)?;
        if !access.can_design() {
            return Err(forbidden(
                caller,
                "needs Designer access to rebuild views in",
                db,
            ));
        }
        let r = self.views.rebuild(db, name).map_err(view_err)?;
        Ok((r.seconds, access.sees_every_document().then_some(r)))
    }

    /// The database's views and folders, by name (Reader access: whoever
    /// may read a view may know it is there).
    pub fn list_collections(
        &self,
        caller: &Caller,
        db: &Arc<Database>,
    ) -> ServerResult<Vec<(String, views::Kind)>> {
        self.require(caller, db, AccessLevel::Reader)?;
        let mut list = self.views.list(db).map_err(view_err)?;
        list.sort_by_key(|(name, _)| name.to_lowercase());
        Ok(list)
    }

    /// Creates a view or folder from its JSON definition (Designer access).
    pub fn create_view(
        &self,
        caller: &Caller,
        db: &Arc<Database>,
        def: ViewDef,
    ) -> ServerResult<()> {
        let access = self.access(caller, db)?;
        if !access.can_design() {
            return Err(forbidden(
                caller,
                "needs Designer access to create views in",
                db,
            ));
        }
        self.views.create(db, def).map_err(view_err)
    }

    /// Deletes a view or folder, its index and its design note (Designer
    /// access). Durable when it returns (I2); an unknown name is 404.
    pub fn delete_view(&self, caller: &Caller, db: &Arc<Database>, name: &str) -> ServerResult<()> {
        let access = self.access(caller, db)?;
        if !access.can_design() {
            return Err(forbidden(
                caller,
                "needs Designer access to delete views in",
                db,
            ));
        }
        self.views.delete(db, name).map_err(view_err)
    }

    /// Parses a view or folder definition's JSON text (at most
    /// `max_document_bytes`), once, where it comes in.
    pub fn parse_view(&self, json: &[u8]) -> ServerResult<ViewDef> {
        self.check_size("view definition", json.len())?;
        serde_json::from_slice(json).map_err(|e| bad(format!("bad view definition: {e}")))
    }

    /// Adds or removes documents from a folder (Author access and above,
    /// documents the caller can read).
    pub fn folder_change(
        &self,
        caller: &Caller,
        db: &Arc<Database>,
        folder: &str,
        unids: &[Unid],
        change: FolderChange,
    ) -> ServerResult<()> {
        let access = self.require(caller, db, AccessLevel::Author)?;
        let unids: Vec<nsf::Unid> = unids.iter().map(|u| nsf::Unid(u.0)).collect();
        if !caller.admin {
            for u in &unids {
                let note = db.get(*u).map_err(nsf_err)?;
                if !access.can_read(&note) {
                    return Err(hidden(db, &note));
                }
            }
        }
        match change {
            FolderChange::Add => self.views.folder_add(db, folder, &unids),
            FolderChange::Remove => self.views.folder_remove(db, folder, &unids),
        }
        .map_err(view_err)
    }

    /// A formula search; `emit` receives each readable hit as it is found.
    pub fn search(
        &self,
        caller: &Caller,
        db: &Database,
        formula: &str,
        since: Option<protocol::Timestamp>,
        mut emit: impl FnMut(Document) -> ServerResult<()>,
    ) -> ServerResult<u64> {
        let access = self.require(caller, db, AccessLevel::Reader)?;
        let mut found = 0;
        let mut stopped = None;
        let r = views::search(db, formula, since.map(|t| Timestamp(t.0)), |note| {
            if !access.can_read(note) {
                return Ok(());
            }
            found += 1;
            emit(document(note)).map_err(|e| {
                stopped = Some(e);
                ViewError::Output(std::io::Error::other("the client went away"))
            })
        });
        if let Some(e) = stopped {
            return Err(e);
        }
        r.map_err(view_err)?;
        Ok(found)
    }
}

/// Whether rows must also be checked against the documents as they are
/// now. A view's index holds who may read each entry as of its last
/// update, and a collection leaves out what that says the caller may not
/// read; while the database has changed since, a document may have
/// gained or changed `$Readers`, so each row's document is read and the
/// rows the caller may no longer read are left out too (their places in
/// positions and counts stay until the index is updated).
fn recheck_rows(db: &Database, c: &views::Collection<'_>, access: &Access) -> bool {
    !access.sees_every_document() && db.last_seq().0 > c.seq
}
