//! Every operation the server offers, in one place, with its access rules.
//!
//! The native protocol driver and the HTTP API are two doors into the same
//! rooms: both authenticate a [`Caller`] and then call the blocking
//! methods here on a worker thread. Keeping the operations (and their ACL
//! checks, Reader/Author filtering and error mapping) in one type means a
//! rule is written once and holds on every path, and the two front ends
//! stay thin translators of bytes.
//!
//! Access rules (docs/http.md "Access control" lists them for users):
//!
//! * a database's ACL decides what a named or anonymous caller may do;
//!   a database without an ACL grants nothing to anyone but server
//!   administrators, who have full access everywhere;
//! * a document with a `$Readers` item is invisible to callers not named
//!   in it (or in `$Authors`): it is "not found", in reads, changes,
//!   searches and views alike — a view shows such a caller its rows,
//!   total, category rows and counts, positions and finds as if the
//!   document did not exist — so its existence does not leak;
//! * an Author edits only documents whose `$Authors` names them; a
//!   document an Author creates names its creator in `$Authors`;
//! * the check and the write it guards must see the same document: writes
//!   are made conditional on the sequence number that was checked and
//!   retried if another edit slipped in between.
//!
//! Document writes also come in a form that does not wait
//! ([`Service::write_then`] with a [`DocWrite`]): the checks and the write
//! run on the caller's thread — a connection task — and the answer is
//! handed to a callback once the commit is durable, from the log's writer
//! thread. No worker thread is woken or put to sleep for a commit (see
//! docs/design.md, "Commit protocol").

use crate::auth::UserStore;
use crate::stats::Stats;
use crate::{ServerError, ServerResult};
use nsf::{
    items_from_json, note_to_json, Access, AccessLevel, Acl, AttachmentReader, Database, Engine,
    Item, ItemUpdate, ItemValue, Note, NsfError, Seq, Timestamp,
};
use protocol::{
    Cursor, DatabaseInfo, DatabaseSummary, DocRef, Document, Found, NoteId, NoteMeta, ReadFlags,
    Row, Start, Unid, Value,
};
use std::io::Read;
use std::sync::Arc;
use views::{ViewError, Views};

/// Where the outcome of a document write goes: called once, never on a
/// thread that may block for long, and it must not block either.
pub type WriteDone = Box<dyn FnOnce(ServerResult<NoteMeta>) + Send>;

/// A document write, for [`Service::write_then`].
#[derive(Debug)]
pub enum DocWrite {
    Create {
        json: String,
    },
    Update {
        unid: Unid,
        based_on: Option<u32>,
        force: bool,
        json: String,
    },
    Delete {
        unid: Unid,
        based_on: Option<u32>,
        force: bool,
    },
}

/// Runs `db`'s queued writes once the connection tasks that are ready
/// now have had their turn: the task yields once first, so every request
/// read in the same wake-up is queued and they commit as one transaction.
/// Outside a runtime, at once.
/// A busy queue is run in bounded turns with a yield between them, so the
/// task never keeps its worker from the connections it serves.
fn run_queue_soon(db: Arc<Database>) {
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => drop(rt.spawn(async move {
            loop {
                tokio::task::yield_now().await;
                if !db.run_queued() {
                    break;
                }
            }
        })),
        Err(_) => while db.run_queued() {},
    }
}

/// A document write that passed its checks: what the engine is to do,
/// with the version it is conditional on.
enum Checked {
    Create(Vec<Item>),
    Update(nsf::Unid, Vec<ItemUpdate>, (Option<u32>, bool)),
    Delete(nsf::Unid, (Option<u32>, bool)),
}

impl DocWrite {
    /// Whether [`Service::write_then`] can run it without waiting: always
    /// for a create; for an update or delete when no check-and-retry
    /// loop is needed (an administrator's write, or one conditional on a
    /// sequence number the caller gave).
    pub fn runs_inline(&self, caller: &Caller) -> bool {
        match self {
            DocWrite::Create { .. } => true,
            DocWrite::Update {
                based_on, force, ..
            }
            | DocWrite::Delete {
                based_on, force, ..
            } => caller.admin || (based_on.is_some() && !force),
        }
    }
}

/// Who is asking, once authenticated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The server user's name; `None` for anonymous callers.
    pub user: Option<String>,
    /// Server administrators have full access to every database.
    pub admin: bool,
}

impl Caller {
    /// A caller who gave no credentials.
    pub fn anonymous() -> Caller {
        Caller {
            user: None,
            admin: false,
        }
    }

    /// A named server user.
    pub fn user(name: &str, admin: bool) -> Caller {
        Caller {
            user: Some(name.to_string()),
            admin,
        }
    }
}

/// Limits on what one request may carry.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Largest document JSON accepted, in bytes.
    pub max_document_bytes: usize,
    /// Largest attachment accepted, in bytes.
    pub max_attachment_bytes: u64,
    /// Most rows one read of entries returns.
    pub max_page_rows: u32,
    /// Most documents one `ModifiedSince` answer carries.
    pub max_changes: u32,
    /// Attachment uploads written to disk at once (0: no limit). More
    /// wait their turn: a few streams already fill the disk, and every
    /// megabyte in flight is one a small commit's log fsync waits behind.
    pub attachment_streams: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_document_bytes: 8 << 20,
            max_attachment_bytes: 2 << 30,
            max_page_rows: 10_000,
            max_changes: 1_000,
            attachment_streams: 0,
        }
    }
}

/// The engine behind a door (see the module docs).
pub struct Service {
    engine: Arc<Engine>,
    views: Arc<Views>,
    users: Arc<UserStore>,
    stats: Arc<Stats>,
    limits: Limits,
    streams: Turns,
}

/// A counting semaphore for blocking worker threads.
#[derive(Default)]
struct Turns {
    busy: parking_lot::Mutex<usize>,
    freed: parking_lot::Condvar,
}

impl Turns {
    /// Waits until fewer than `max` holders (0: never waits).
    fn take(&self, max: usize) -> Option<TurnGuard<'_>> {
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

struct TurnGuard<'a>(&'a Turns);

impl Drop for TurnGuard<'_> {
    fn drop(&mut self) {
        *self.0.busy.lock() -= 1;
        self.0.freed.notify_one();
    }
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
    /// A service over an open engine.
    pub fn new(
        engine: Arc<Engine>,
        views: Arc<Views>,
        users: Arc<UserStore>,
        stats: Arc<Stats>,
        limits: Limits,
    ) -> Service {
        Service {
            engine,
            views,
            users,
            stats,
            limits,
            streams: Turns::default(),
        }
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The views layer.
    pub fn views(&self) -> &Arc<Views> {
        &self.views
    }

    /// The statistics.
    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    // ------------------------------------------------------- authentication

    /// Checks a user's password, or an API or session token given in its
    /// place (tokens start with `folio_`).
    pub fn authenticate(&self, user: &str, secret: &str) -> ServerResult<Caller> {
        let u = if secret.starts_with("folio_") {
            let u = self.users.verify_token(secret)?;
            if !user.is_empty() && u.name.to_lowercase() != user.to_lowercase() {
                return Err(ServerError::Unauthenticated(
                    "wrong user name or password".into(),
                ));
            }
            u
        } else {
            self.users.verify_password(user, secret)?
        };
        Ok(Caller::user(&u.name, u.admin))
    }

    /// Checks a bearer token.
    pub fn authenticate_token(&self, token: &str) -> ServerResult<Caller> {
        let u = self.users.verify_token(token)?;
        Ok(Caller::user(&u.name, u.admin))
    }

    /// Issues a session token for HTTP clients (the password is checked
    /// once, by the user store that issues the token).
    pub fn login(&self, user: &str, password: &str) -> ServerResult<(Caller, String)> {
        let token = self.users.login(user, password)?;
        let caller = self.authenticate_token(&token)?;
        Ok((caller, token))
    }

    /// What `caller` may do in `db`.
    pub fn access(&self, caller: &Caller, db: &Database) -> ServerResult<Access> {
        if caller.admin {
            return Ok(Access::full());
        }
        let acl = db.acl().map_err(nsf_err)?;
        Ok(match acl {
            Some(acl) => acl.access(caller.user.as_deref()),
            None => Acl::for_creator(None).access(caller.user.as_deref()),
        })
    }

    // ------------------------------------------------------------ databases

    /// Creates a database; its creator becomes its Manager. Only server
    /// administrators create databases.
    pub fn create_database(
        &self,
        caller: &Caller,
        path: &str,
        title: &str,
    ) -> ServerResult<DatabaseInfo> {
        if !caller.admin {
            return Err(ServerError::Forbidden(
                "only server administrators may create databases".into(),
            ));
        }
        let db = self.engine.create_database(path, title).map_err(nsf_err)?;
        db.set_acl(&Acl::for_creator(caller.user.as_deref()))
            .map_err(nsf_err)?;
        database_info(&db)
    }

    /// Databases under `folder` the caller has any access to, from the
    /// catalog: listing opens no database, however many there are, and a
    /// caller learns of no database its ACL does not admit (design.md
    /// I20). A database without a usable list admits only administrators,
    /// as [`Service::access`] does.
    pub fn list_databases(
        &self,
        caller: &Caller,
        folder: Option<&str>,
    ) -> ServerResult<Vec<DatabaseSummary>> {
        let user = caller.user.as_deref();
        let listed = self.engine.list_databases_where(folder, |audience| {
            caller.admin || audience.admits(user).unwrap_or(false)
        });
        Ok(listed
            .into_iter()
            .map(|l| DatabaseSummary {
                path: l.path,
                title: l.title,
            })
            .collect())
    }

    /// Opens a database the caller has some access to.
    pub fn open_database(
        &self,
        caller: &Caller,
        path: &str,
    ) -> ServerResult<(Arc<Database>, DatabaseInfo)> {
        let (db, _) = self.reach(caller, path)?;
        let info = database_info(&db)?;
        Ok((db, info))
    }

    /// The database at `path` and the caller's access, if the caller may
    /// see it at all. A database the caller may not see and one that does
    /// not exist get the same answer, so nobody can probe which databases
    /// exist: 401 for an anonymous caller, 404 for a signed-in one (a path
    /// that is not canonical is refused as such either way, since that
    /// says nothing about what exists). Administrators get the real error.
    fn reach(&self, caller: &Caller, path: &str) -> ServerResult<(Arc<Database>, Access)> {
        let opened = self.engine.open_database(path);
        if caller.admin {
            let db = opened.map_err(nsf_err)?;
            return Ok((db, Access::full()));
        }
        let db = match opened {
            Ok(db) => db,
            Err(e @ NsfError::BadPath { .. }) => return Err(nsf_err(e)),
            Err(e) => {
                tracing::debug!(db = path, error = %e, "open refused as unseen");
                return Err(unseen(caller, path));
            }
        };
        match self.access(caller, &db) {
            Ok(a) if a.level() > AccessLevel::NoAccess => Ok((db, a)),
            _ => Err(unseen(caller, path)),
        }
    }

    /// A database's description.
    pub fn database_info(&self, caller: &Caller, path: &str) -> ServerResult<DatabaseInfo> {
        self.open_database(caller, path).map(|(_, info)| info)
    }

    // ------------------------------------------------------------ documents

    /// Creates a document from a JSON object.
    pub fn create_document(
        &self,
        caller: &Caller,
        db: &Database,
        json: &str,
    ) -> ServerResult<NoteMeta> {
        let access = self.access(caller, db)?;
        if !access.can_create() {
            return Err(forbidden(caller, "may not create documents in", db));
        }
        let mut items = new_items(&self.parse_json(json)?)?;
        if access.level() == AccessLevel::Author {
            name_author(&mut items, caller);
        }
        db.create(items).map(meta).map_err(nsf_err)
    }

    /// Runs a document write without waiting for its commit: the checks
    /// run here and `done` gets the outcome once the write is durable.
    /// For a write that [`DocWrite::runs_inline`] refuses, or a database
    /// in unlogged mode (whose commit syncs the file on the committing
    /// thread), the blocking form runs on the runtime's blocking pool
    /// instead (or here, outside a runtime).
    pub fn write_then(
        self: &Arc<Self>,
        caller: &Caller,
        db: &Arc<Database>,
        write: DocWrite,
        done: WriteDone,
    ) {
        if !write.runs_inline(caller) || !db.is_logged() {
            let (s, caller, db) = (self.clone(), caller.clone(), db.clone());
            let blocking = move || done(s.write_blocking(&caller, &db, write));
            match tokio::runtime::Handle::try_current() {
                Ok(rt) => drop(rt.spawn_blocking(blocking)),
                Err(_) => blocking(),
            }
            return;
        }
        let write = match self.checked(caller, db, write) {
            Ok(w) => w,
            Err(e) => return done(Err(e)),
        };
        let done = move |r: nsf::NsfResult<nsf::NoteMeta>| done(r.map(meta).map_err(nsf_err));
        let lead = match write {
            Checked::Create(items) => db.create_then(items, done),
            Checked::Update(unid, updates, version) => db.update_then(unid, updates, version, done),
            Checked::Delete(unid, version) => db.delete_then(unid, version, done),
        };
        if lead {
            run_queue_soon(db.clone());
        }
    }

    /// The blocking form of [`Self::write_then`]'s writes.
    fn write_blocking(
        &self,
        caller: &Caller,
        db: &Database,
        write: DocWrite,
    ) -> ServerResult<NoteMeta> {
        match write {
            DocWrite::Create { json } => self.create_document(caller, db, &json),
            DocWrite::Update {
                unid,
                based_on,
                force,
                json,
            } => self.update_document(caller, db, unid, based_on, force, &json),
            DocWrite::Delete {
                unid,
                based_on,
                force,
            } => self.delete_document(caller, db, unid, based_on, force),
        }
    }

    /// Checks `write` as `caller` and turns it into the engine's write.
    fn checked(&self, caller: &Caller, db: &Database, write: DocWrite) -> ServerResult<Checked> {
        let access = self.access(caller, db)?;
        Ok(match write {
            DocWrite::Create { json } => {
                if !access.can_create() {
                    return Err(forbidden(caller, "may not create documents in", db));
                }
                let mut items = new_items(&self.parse_json(&json)?)?;
                if access.level() == AccessLevel::Author {
                    name_author(&mut items, caller);
                }
                Checked::Create(items)
            }
            DocWrite::Update {
                unid,
                based_on,
                force,
                json,
            } => {
                let updates =
                    items_from_json(&self.parse_json(&json)?).map_err(|e| bad(e.to_string()))?;
                let version = self.checked_version(caller, &access, db, unid, based_on, "edit")?;
                Checked::Update(
                    nsf::Unid(unid.0),
                    updates,
                    version.unwrap_or((based_on, force)),
                )
            }
            DocWrite::Delete {
                unid,
                based_on,
                force,
            } => {
                let version =
                    self.checked_version(caller, &access, db, unid, based_on, "delete")?;
                Checked::Delete(nsf::Unid(unid.0), version.unwrap_or((based_on, force)))
            }
        })
    }

    /// For a caller who is not an administrator: checks that the document
    /// may be edited (or deleted) and returns the version the write must
    /// be conditional on (I17: the one checked, or the caller's own).
    /// Administrators write as asked (`None`).
    fn checked_version(
        &self,
        caller: &Caller,
        access: &Access,
        db: &Database,
        unid: Unid,
        based_on: Option<u32>,
        what: &str,
    ) -> ServerResult<Option<(Option<u32>, bool)>> {
        if caller.admin {
            return Ok(None);
        }
        let note = db.get(nsf::Unid(unid.0)).map_err(nsf_err)?;
        if !access.can_read(&note) {
            return Err(hidden(db, &note));
        }
        let allowed = match what {
            "delete" => access.can_delete(&note),
            _ => access.can_edit(&note),
        };
        if !allowed {
            return Err(forbidden(
                caller,
                &format!("may not {what} document {} in", note.oid.unid),
                db,
            ));
        }
        Ok(Some((Some(based_on.unwrap_or(note.oid.seq_num)), false)))
    }

    /// Reads a document (or, by note id, a deletion stub).
    pub fn read_document(
        &self,
        caller: &Caller,
        db: &Database,
        doc: DocRef,
    ) -> ServerResult<Document> {
        let access = self.access(caller, db)?;
        if access.level() < AccessLevel::Reader {
            return Err(denied(caller, db.path()));
        }
        let note = match doc {
            DocRef::Unid(u) => db.get(nsf::Unid(u.0)).map_err(nsf_err)?,
            DocRef::NoteId(id) => db
                .get_by_id(nsf::NoteId(id.0))
                .map_err(nsf_err)?
                .ok_or_else(|| ServerError::NotFound(format!("no document {}", id.0)))?,
        };
        if !access.can_read(&note) {
            return Err(hidden(db, &note));
        }
        Ok(document(&note))
    }

    /// Updates a document's items; `based_on` makes it conditional.
    pub fn update_document(
        &self,
        caller: &Caller,
        db: &Database,
        unid: Unid,
        based_on: Option<u32>,
        force: bool,
        json: &str,
    ) -> ServerResult<NoteMeta> {
        let updates = items_from_json(&self.parse_json(json)?).map_err(|e| bad(e.to_string()))?;
        self.checked_write(
            caller,
            db,
            unid,
            based_on,
            force,
            WriteRule::Edit,
            |seq, f| db.update(nsf::Unid(unid.0), updates.clone(), seq, f),
        )
    }

    /// Deletes a document, leaving a deletion stub.
    pub fn delete_document(
        &self,
        caller: &Caller,
        db: &Database,
        unid: Unid,
        based_on: Option<u32>,
        force: bool,
    ) -> ServerResult<NoteMeta> {
        self.checked_write(
            caller,
            db,
            unid,
            based_on,
            force,
            WriteRule::Delete,
            |seq, f| db.delete(nsf::Unid(unid.0), seq, f),
        )
    }

    /// Runs `write` on a document the caller may edit (or delete), made
    /// conditional on the version that was checked (I17, module docs).
    #[allow(clippy::too_many_arguments)]
    fn checked_write(
        &self,
        caller: &Caller,
        db: &Database,
        unid: Unid,
        based_on: Option<u32>,
        force: bool,
        what: WriteRule,
        write: impl Fn(Option<u32>, bool) -> nsf::NsfResult<nsf::NoteMeta>,
    ) -> ServerResult<NoteMeta> {
        let access = self.access(caller, db)?;
        if caller.admin {
            return write(based_on, force).map(meta).map_err(nsf_err);
        }
        for _ in 0..8 {
            let note = db.get(nsf::Unid(unid.0)).map_err(nsf_err)?;
            if !access.can_read(&note) {
                return Err(hidden(db, &note));
            }
            let allowed = match what {
                WriteRule::Edit => access.can_edit(&note),
                WriteRule::Delete => access.can_delete(&note),
            };
            if !allowed {
                return Err(forbidden(
                    caller,
                    &format!("may not {} document {} in", what.verb(), note.oid.unid),
                    db,
                ));
            }
            let current = note.oid.seq_num;
            let seq = match based_on {
                Some(b) if !force => b,
                _ => current,
            };
            match write(Some(seq), false) {
                Err(NsfError::SaveConflict { .. }) if (based_on.is_none() || force) => continue,
                r => return r.map(meta).map_err(nsf_err),
            }
        }
        Err(ServerError::SaveConflict(format!(
            "document {} kept changing while it was being saved; try again",
            nsf::Unid(unid.0)
        )))
    }

    /// The documents and stubs changed after `since` that the caller may
    /// see, oldest first, with the cursor to continue from.
    pub fn modified_since(
        &self,
        caller: &Caller,
        db: &Database,
        since: Cursor,
        limit: u32,
    ) -> ServerResult<(Vec<Document>, Cursor, bool)> {
        let access = self.access(caller, db)?;
        if access.level() < AccessLevel::Reader {
            return Err(denied(caller, db.path()));
        }
        let limit = limit.clamp(1, self.limits.max_changes) as usize;
        let notes = db.modified_since(Seq(since.0), limit).map_err(nsf_err)?;
        let more = notes.len() == limit;
        let next = notes.last().map_or(since, |n| Cursor(n.change_seq.0));
        let docs = notes
            .iter()
            .filter(|n| access.can_read(n) && !views::is_design_note(n))
            .map(document)
            .collect();
        Ok((docs, next, more))
    }

    // ---------------------------------------------------------- attachments

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
            if !access.can_read(&note) {
                return Err(hidden(db, &note));
            }
            if !access.can_edit(&note) {
                return Err(forbidden(
                    caller,
                    &format!("may not edit document {} in", note.oid.unid),
                    db,
                ));
            }
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

    // ------------------------------------------------------------ views

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

    /// Creates a view or folder from its JSON definition (Designer access).
    pub fn create_view(&self, caller: &Caller, db: &Arc<Database>, json: &str) -> ServerResult<()> {
        let access = self.access(caller, db)?;
        if !access.can_design() {
            return Err(forbidden(
                caller,
                "needs Designer access to create views in",
                db,
            ));
        }
        let def: views::ViewDef = serde_json::from_value(self.parse_json(json)?)
            .map_err(|e| bad(format!("bad view definition: {e}")))?;
        self.views.create(db, def).map_err(view_err)
    }

    /// Adds or removes documents from a folder (Author access and above,
    /// documents the caller can read).
    pub fn folder_change(
        &self,
        caller: &Caller,
        db: &Arc<Database>,
        folder: &str,
        unids: &[Unid],
        add: bool,
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
        let r = if add {
            self.views.folder_add(db, folder, &unids)
        } else {
            self.views.folder_remove(db, folder, &unids)
        };
        r.map_err(view_err)
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

    // ---------------------------------------------------- access control

    /// A database's ACL as JSON (Manager access).
    pub fn get_acl(&self, caller: &Caller, path: &str) -> ServerResult<String> {
        let (db, _) = self.reach(caller, path)?;
        self.require_manager(caller, &db)?;
        let acl = db
            .acl()
            .map_err(nsf_err)?
            .unwrap_or_else(|| Acl::for_creator(None));
        Ok(acl.to_json())
    }

    /// Replaces a database's ACL (Manager access). An ACL must keep at
    /// least one Manager, or no one could ever change it again.
    pub fn set_acl(&self, caller: &Caller, path: &str, json: &str) -> ServerResult<()> {
        let (db, _) = self.reach(caller, path)?;
        self.require_manager(caller, &db)?;
        let acl = Acl::parse_json(json).map_err(|e| bad(e.to_string()))?;
        if !acl.entries.iter().any(|e| e.level == AccessLevel::Manager) {
            return Err(bad(
                "an access-control list needs at least one entry with Manager access".into(),
            ));
        }
        db.set_acl(&acl).map_err(nsf_err)?;
        Ok(())
    }

    /// The caller's level and roles in a database.
    pub fn my_access(
        &self,
        caller: &Caller,
        path: &str,
    ) -> ServerResult<(Option<String>, String, Vec<String>)> {
        let (_, a) = self.reach(caller, path)?;
        Ok((
            caller.user.clone(),
            a.level().as_str().to_string(),
            a.roles().to_vec(),
        ))
    }

    /// Server statistics (for named callers; anonymous ones see nothing).
    pub fn statistics(&self, caller: &Caller) -> ServerResult<Vec<protocol::Statistic>> {
        if caller.user.is_none() && !caller.admin {
            return Err(ServerError::Unauthenticated(
                "statistics are for signed-in users".into(),
            ));
        }
        Ok(self.stats.snapshot(&self.engine))
    }

    // -------------------------------------------------------------- helpers

    fn require(&self, caller: &Caller, db: &Database, level: AccessLevel) -> ServerResult<Access> {
        let a = self.access(caller, db)?;
        if a.level() < level {
            return Err(denied(caller, db.path()));
        }
        Ok(a)
    }

    fn require_manager(&self, caller: &Caller, db: &Database) -> ServerResult<()> {
        if !self.access(caller, db)?.can_manage() {
            return Err(forbidden(caller, "needs Manager access for this in", db));
        }
        Ok(())
    }

    fn readable(&self, access: &Access, db: &Database, id: nsf::NoteId) -> ServerResult<bool> {
        Ok(db
            .get_by_id(id)
            .map_err(nsf_err)?
            .is_some_and(|n| access.can_read(&n)))
    }

    fn parse_json(&self, json: &str) -> ServerResult<serde_json::Value> {
        if json.len() > self.limits.max_document_bytes {
            return Err(ServerError::TooLarge(format!(
                "document of {} bytes is above the limit of {} bytes",
                json.len(),
                self.limits.max_document_bytes
            )));
        }
        serde_json::from_str(json).map_err(|e| bad(format!("malformed JSON document: {e}")))
    }
}

/// The write a [`Service::checked_write`] guards: each has its own rule.
#[derive(Clone, Copy, Debug)]
enum WriteRule {
    Edit,
    Delete,
}

impl WriteRule {
    fn verb(self) -> &'static str {
        match self {
            WriteRule::Edit => "edit",
            WriteRule::Delete => "delete",
        }
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

/// Items of a new document: `null` values make no sense there.
fn new_items(json: &serde_json::Value) -> ServerResult<Vec<Item>> {
    items_from_json(json)
        .map_err(|e| bad(e.to_string()))?
        .into_iter()
        .map(|u| match u {
            ItemUpdate::Set(item) => Ok(item),
            ItemUpdate::Remove(name) => Err(bad(format!(
                "item {name:?} is null; a new document cannot remove items"
            ))),
        })
        .collect()
}

/// An Author can edit only documents naming them in `$Authors`: a
/// document an Author creates names its creator, or they could never
/// edit it again.
fn name_author(items: &mut Vec<Item>, caller: &Caller) {
    let Some(user) = &caller.user else { return };
    match items
        .iter_mut()
        .find(|i| i.name.eq_ignore_ascii_case("$Authors"))
    {
        Some(i) => match &mut i.value {
            ItemValue::TextList(l) if !l.iter().any(|n| n.eq_ignore_ascii_case(user)) => {
                l.push(user.clone())
            }
            ItemValue::Text(t) if !t.eq_ignore_ascii_case(user) => {
                i.value = ItemValue::TextList(vec![t.clone(), user.clone()])
            }
            _ => {}
        },
        None => items.push(Item {
            name: "$Authors".into(),
            value: ItemValue::TextList(vec![user.clone()]),
        }),
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

fn who(caller: &Caller) -> String {
    match &caller.user {
        Some(u) => format!("user {u:?}"),
        None => "an anonymous caller".into(),
    }
}

/// The one answer for a database the caller may not see, whether or not
/// it exists (no text or status tells the two apart).
fn unseen(caller: &Caller, path: &str) -> ServerError {
    match &caller.user {
        None => ServerError::Unauthenticated(format!("{path}: sign in to open this database")),
        Some(u) => ServerError::NotFound(format!(
            "{path}: no such database, or user {u:?} may not open it"
        )),
    }
}

fn denied(caller: &Caller, path: &str) -> ServerError {
    match &caller.user {
        None => {
            ServerError::Unauthenticated(format!("{path} does not allow anonymous access; sign in"))
        }
        Some(u) => ServerError::Forbidden(format!("user {u:?} has no access to {path}")),
    }
}

/// "`who` `what` `db`": an operation the ACL does not allow.
fn forbidden(caller: &Caller, what: &str, db: &Database) -> ServerError {
    ServerError::Forbidden(format!("{} {what} {}", who(caller), db.path()))
}

/// A document the caller may not read is reported as missing.
fn hidden(db: &Database, note: &Note) -> ServerError {
    ServerError::NotFound(format!("{}: no document {}", db.path(), note.oid.unid))
}

fn bad(msg: String) -> ServerError {
    ServerError::BadRequest(msg)
}

/// Maps the document layer's errors onto the server's.
pub(crate) fn nsf_err(e: NsfError) -> ServerError {
    use NsfError as E;
    let msg = e.to_string();
    match e {
        E::NoSuchDatabase(_)
        | E::NoSuchDocument { .. }
        | E::Deleted { .. }
        | E::NoSuchAttachment { .. } => ServerError::NotFound(msg),
        E::SaveConflict { .. } | E::DatabaseExists(_) => ServerError::SaveConflict(msg),
        E::LogFull => ServerError::Busy(msg),
        E::Codec(nsf::CodecError::TooLarge { .. })
        | E::Codec(nsf::CodecError::TooManyItems { .. }) => ServerError::TooLarge(msg),
        E::Json(nsf::JsonError::Invalid(nsf::CodecError::TooLarge { .. })) => {
            ServerError::TooLarge(msg)
        }
        E::BadPath { .. }
        | E::SameFile { .. }
        | E::Codec(_)
        | E::Json(_)
        | E::Invalid(_)
        | E::Setting { .. } => ServerError::BadRequest(msg),
        _ => ServerError::Internal(msg),
    }
}

/// Maps the views layer's errors onto the server's.
pub(crate) fn view_err(e: ViewError) -> ServerError {
    match e {
        ViewError::Nsf(e) => nsf_err(e),
        e @ ViewError::NoSuchView { .. } => ServerError::NotFound(e.to_string()),
        e @ (ViewError::Formula { .. }
        | ViewError::NotAFolder { .. }
        | ViewError::BadDefinition(_)
        | ViewError::NotSorted { .. }
        | ViewError::ViewExists { .. }) => ServerError::BadRequest(e.to_string()),
        e => ServerError::Internal(e.to_string()),
    }
}

fn meta(m: nsf::NoteMeta) -> NoteMeta {
    NoteMeta {
        note_id: NoteId(m.note_id.0),
        unid: Unid(m.unid.0),
        seq_num: m.seq_num,
        change: Cursor(m.change_seq.0),
    }
}

/// A note as the protocol carries it.
pub fn document(n: &Note) -> Document {
    Document {
        meta: NoteMeta {
            note_id: NoteId(n.note_id.0),
            unid: Unid(n.oid.unid.0),
            seq_num: n.oid.seq_num,
            change: Cursor(n.change_seq.0),
        },
        deleted: n.deleted,
        json: if n.deleted {
            "{}".into()
        } else {
            note_to_json(n).to_string()
        },
    }
}

fn database_info(db: &Database) -> ServerResult<DatabaseInfo> {
    let i = db.info().map_err(nsf_err)?;
    Ok(DatabaseInfo {
        path: i.path,
        title: i.title,
        replica_id: i.replica_id.0,
        instance_id: i.instance_id.0,
        created: protocol::Timestamp(i.created.0),
        note_count: i.note_count,
        file_size: i.file_size,
        sequence: Cursor(i.sequence),
        needs_fixup: i.needs_fixup,
    })
}

fn wire_row(row: views::Row) -> Row {
    match row {
        views::Row::Entry {
            position,
            note_id,
            unid,
            columns,
        } => Row::Entry {
            position,
            note_id: NoteId(note_id.0),
            unid: Unid(unid.0),
            columns: columns.into_iter().map(wire_value).collect(),
        },
        views::Row::Category { category, count } => Row::Category {
            value: wire_value(category),
            count,
        },
    }
}

fn wire_value(v: views::Value) -> Value {
    match v {
        views::Value::Text(l) => Value::Text(l),
        views::Value::Number(l) => Value::Number(l),
        views::Value::DateTime(l) => {
            Value::DateTime(l.into_iter().map(protocol::Timestamp).collect())
        }
        views::Value::Error(e) => Value::Error(e),
    }
}
