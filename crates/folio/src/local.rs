//! The embedded store: the data directory opened by this process, with
//! the server's own [`Service`] run in-process.
//!
//! Whoever can open a data directory's files can change them anyway, so
//! an embedded command runs as a server administrator: every database,
//! every document. It still goes through `Service`, the code every
//! networked request goes through, so what a command does (the ACL a new
//! database gets, the checks on a new ACL, the documents the change feed
//! shows, how a view is opened and read) cannot differ from what it does
//! against a server. The administrator here has no name: a database
//! created embedded has an ACL naming no Manager (only server
//! administrators reach it until `acl set` names someone), where one
//! created over the network names the user who created it.
//!
//! The operations on the files themselves (`db check`, `view list`,
//! `view rebuild`, `log info`) are here only; `show stats` is a server's.
//!
//! The mail user commands (`mail create-user`, `list-users`,
//! `remove-user`) go through the service like every other; `mail send`
//! calls the `mail` crate on the same engine and views. With no
//! signed-in user, `mail send` sends as the person `--from` names.
//! `remove-user --delete-file` deletes the mail file as a server does
//! (`Engine::delete_database`, I42).

use crate::datadir;
use crate::error::{FolioError, FolioResult};
use crate::store::{
    Changes, Doc, FolderChange, JsonObject, RemovedUser, Sent, Store, ViewPage, ViewSummary,
    ViewUpdate,
};
use mail::{Attachment, Directory, MailConfig, Message, NewPerson, Person};
use nsf::{Acl, CheckReport, Database, Unid};
use protocol::{
    Cursor, DatabaseInfo, DatabaseSummary, DocRef, Found, NoteMeta, ReadFlags, Start, Statistic,
    Timestamp,
};
use server::auth::UserStore;
use server::stats::Stats;
use server::{Caller, Service};
use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;
use storage::backend::MemBackend;
use views::{RebuildReport, ViewDef};

/// A data directory, locked and open, behind the server's `Service`.
pub struct LocalStore {
    service: Service,
    caller: Caller,
    mail: MailConfig,
    /// Held until the engine is closed: the directory is this process's.
    lock: File,
}

impl LocalStore {
    /// Locks and opens `data_dir` (creating it if needed) with the
    /// settings from `config` or `<data>/folio.toml`; requests are held to
    /// the server's limits from the same settings.
    pub fn open(data_dir: &Path, config: Option<&Path>) -> FolioResult<LocalStore> {
        let file = crate::config::load(data_dir, config).map_err(FolioError::Settings)?;
        let limits = file.limits().map_err(FolioError::Settings)?;
        let mail = file.mail_config().map_err(FolioError::Settings)?;
        let settings = datadir::settings_of(&file, data_dir)?;
        // Nobody signs in to an embedded store, so it needs no users: an
        // empty store in memory, leaving `users.json` alone.
        let users = UserStore::open(Arc::new(MemBackend::new()), data_dir)?;
        let (engine, views, lock) = datadir::open(data_dir, settings)?.into_parts();
        let service = Service::new(
            Arc::new(engine),
            Arc::new(views),
            Arc::new(users),
            Arc::new(Stats::new()),
            limits,
        );
        Ok(LocalStore {
            service,
            caller: Caller {
                user: None,
                admin: true,
            },
            mail,
            lock,
        })
    }

    /// Closes the engine (its databases' close hooks mark unlogged view
    /// indexes clean; then flush and checkpoint), then releases the
    /// directory.
    pub fn close(self) -> FolioResult<()> {
        let LocalStore { service, lock, .. } = self;
        let engine = service.engine().clone();
        drop(service);
        let closed = engine.shutdown().map_err(FolioError::from);
        drop(engine);
        drop(lock);
        closed
    }

    fn directory(&self) -> FolioResult<Directory<'_>> {
        Ok(Directory::open(
            self.service.engine(),
            self.service.views(),
        )?)
    }

    /// The engine, for commands that work on databases directly
    /// (replication, `replcli.rs`).
    pub fn engine(&self) -> &Arc<nsf::Engine> {
        self.service.engine()
    }

    /// The database at `path`, opened as every command opens it.
    pub fn database(&self, path: &str) -> FolioResult<Arc<Database>> {
        self.open_db(path)
    }

    /// The view indexes, for commands that file documents in folders
    /// directly (the mail workload's prefill, `mailload/setup.rs`).
    pub fn views(&self) -> &views::Views {
        self.service.views()
    }

    fn open_db(&self, path: &str) -> FolioResult<Arc<Database>> {
        Ok(self.service.open_database(&self.caller, path)?.0)
    }
}

fn wire(unid: Unid) -> protocol::Unid {
    protocol::Unid(unid.0)
}

impl Store for LocalStore {
    fn create_database(&self, path: &str, title: &str) -> FolioResult<DatabaseInfo> {
        Ok(self.service.create_database(&self.caller, path, title)?)
    }

    fn list_databases(&self) -> FolioResult<Vec<DatabaseSummary>> {
        Ok(self.service.list_databases(&self.caller, None)?)
    }

    fn database_info(&self, path: &str) -> FolioResult<DatabaseInfo> {
        Ok(self.service.database_info(&self.caller, path)?)
    }

    fn copy_database(&self, src: &str, dst: &str, replica: bool) -> FolioResult<server::Copied> {
        Ok(self
            .service
            .copy_database(&self.caller, src, dst, replica)?)
    }

    fn delete_database(&self, path: &str) -> FolioResult<()> {
        Ok(self.service.delete_database(&self.caller, path)?)
    }

    fn check_database(&self, path: &str) -> FolioResult<CheckReport> {
        Ok(self.open_db(path)?.check()?)
    }

    fn fixup_database(&self, path: &str, dry_run: bool) -> FolioResult<nsf::FixupReport> {
        // The directory is locked by this process (no server runs on it),
        // and the engine claims the path while it works (I18).
        Ok(self.service.fixup_database(path, dry_run)?)
    }

    fn compact_database(
        &self,
        path: &str,
        copy: bool,
        dry_run: bool,
    ) -> FolioResult<protocol::CompactSummary> {
        Ok(self.service.compact(&self.caller, path, copy, dry_run)?)
    }

    fn create_document(&self, path: &str, items: &JsonObject) -> FolioResult<NoteMeta> {
        let db = self.open_db(path)?;
        // Through the server's own parse, so its size limit holds here too.
        let json = serde_json::Value::Object(items.clone()).to_string();
        let doc = self.service.parse_document(json.as_bytes())?;
        Ok(self.service.create_document(&self.caller, &db, &doc)?)
    }

    fn read_document(&self, path: &str, unid: Unid) -> FolioResult<Doc> {
        let db = self.open_db(path)?;
        let d = self
            .service
            .read_document(&self.caller, &db, DocRef::Unid(wire(unid)))?;
        Doc::from_protocol(d)
    }

    fn update_document(
        &self,
        path: &str,
        unid: Unid,
        based_on: Option<u32>,
        force: bool,
        changes: &JsonObject,
    ) -> FolioResult<NoteMeta> {
        let db = self.open_db(path)?;
        let json = serde_json::Value::Object(changes.clone()).to_string();
        let doc = self.service.parse_document(json.as_bytes())?;
        Ok(self
            .service
            .update_document(&self.caller, &db, wire(unid), based_on, force, &doc)?)
    }

    fn delete_document(
        &self,
        path: &str,
        unid: Unid,
        based_on: Option<u32>,
    ) -> FolioResult<NoteMeta> {
        let db = self.open_db(path)?;
        Ok(self
            .service
            .delete_document(&self.caller, &db, wire(unid), based_on, false)?)
    }

    fn changes(&self, path: &str, since: Cursor, limit: u32) -> FolioResult<Changes> {
        let db = self.open_db(path)?;
        Changes::from_protocol(
            self.service
                .modified_since(&self.caller, &db, since, limit)?,
        )
    }

    fn delete_attachment(
        &self,
        path: &str,
        unid: Unid,
        name: &str,
        based_on: Option<u32>,
    ) -> FolioResult<NoteMeta> {
        let db = self.open_db(path)?;
        Ok(self
            .service
            .remove_attachment(&self.caller, &db, wire(unid), name, based_on)?)
    }

    fn put_attachment(
        &self,
        path: &str,
        unid: Unid,
        name: &str,
        mime: &str,
        size: Option<u64>,
        content: &mut dyn Read,
    ) -> FolioResult<u64> {
        let db = self.open_db(path)?;
        Ok(self
            .service
            .put_attachment(&self.caller, &db, wire(unid), name, mime, size, content)?)
    }

    fn get_attachment(
        &self,
        path: &str,
        unid: Unid,
        name: &str,
        out: &mut dyn Write,
    ) -> FolioResult<u64> {
        let db = self.open_db(path)?;
        let mut content = self
            .service
            .open_attachment(&self.caller, &db, wire(unid), name)?;
        std::io::copy(&mut content, out)
            .map_err(|e| FolioError::io(format!("copying attachment {name:?}"), e))
    }

    fn create_view(&self, path: &str, def: &ViewDef) -> FolioResult<()> {
        let db = self.open_db(path)?;
        Ok(self.service.create_view(&self.caller, &db, def.clone())?)
    }

    fn delete_view(&self, path: &str, name: &str) -> FolioResult<()> {
        let db = self.open_db(path)?;
        Ok(self.service.delete_view(&self.caller, &db, name)?)
    }

    fn list_views(&self, path: &str) -> FolioResult<Vec<ViewSummary>> {
        let db = self.open_db(path)?;
        Ok(self
            .service
            .views()
            .list(&db)?
            .into_iter()
            .map(|(name, kind)| ViewSummary { name, kind })
            .collect())
    }

    fn read_view(
        &self,
        path: &str,
        name: &str,
        start: &Start,
        count: u32,
        flags: ReadFlags,
    ) -> FolioResult<ViewPage> {
        let db = self.open_db(path)?;
        let opened = self.service.open_collection(&self.caller, &db, name)?;
        let (rows, total) =
            self.service
                .read_entries(&self.caller, &db, name, start, count, flags)?;
        Ok(ViewPage {
            titles: opened.titles,
            rows,
            total,
        })
    }

    fn find_in_view(
        &self,
        path: &str,
        name: &str,
        key: &str,
        prefix: bool,
    ) -> FolioResult<Option<Found>> {
        let db = self.open_db(path)?;
        self.service.open_collection(&self.caller, &db, name)?;
        Ok(self
            .service
            .find_by_key(&self.caller, &db, name, key, prefix)?)
    }

    fn update_view(&self, path: &str, name: &str) -> FolioResult<ViewUpdate> {
        let db = self.open_db(path)?;
        self.service.open_collection(&self.caller, &db, name)?;
        let (last_seq, notes_seen) = self.service.update_collection(&self.caller, &db, name)?;
        Ok(ViewUpdate {
            notes_seen,
            last_seq,
        })
    }

    fn rebuild_view(&self, path: &str, name: &str) -> FolioResult<RebuildReport> {
        let db = self.open_db(path)?;
        Ok(self.service.views().rebuild(&db, name)?)
    }

    fn change_folder(
        &self,
        path: &str,
        folder: &str,
        unids: &[Unid],
        change: FolderChange,
    ) -> FolioResult<()> {
        let db = self.open_db(path)?;
        let unids: Vec<protocol::Unid> = unids.iter().copied().map(wire).collect();
        Ok(self
            .service
            .folder_change(&self.caller, &db, folder, &unids, change)?)
    }

    fn search(
        &self,
        path: &str,
        formula: &str,
        since: Option<Timestamp>,
        hit: &mut dyn FnMut(Doc) -> FolioResult<()>,
    ) -> FolioResult<u64> {
        let db = self.open_db(path)?;
        // The service stops at the first error `emit` returns; the
        // command's own error is kept to be returned as it is.
        let mut stopped = None;
        let found = self.service.search(&self.caller, &db, formula, since, |d| {
            Doc::from_protocol(d).and_then(&mut *hit).map_err(|e| {
                let msg = e.to_string();
                stopped = Some(e);
                server::ServerError::Internal(msg)
            })
        });
        match (found, stopped) {
            (_, Some(e)) => Err(e),
            (found, None) => Ok(found?),
        }
    }

    fn acl(&self, path: &str) -> FolioResult<Acl> {
        let json = self.service.get_acl(&self.caller, path)?;
        Ok(Acl::parse_json(&json)?)
    }

    fn set_acl(&self, path: &str, acl: &Acl) -> FolioResult<()> {
        Ok(self.service.set_acl(&self.caller, path, &acl.to_json())?)
    }

    fn create_mail_user(&self, new: &NewPerson) -> FolioResult<Person> {
        Ok(self.service.create_mail_user(&self.caller, new)?)
    }

    fn list_mail_users(&self) -> FolioResult<Vec<Person>> {
        Ok(self.service.list_mail_users(&self.caller)?)
    }

    fn remove_mail_user(&self, name: &str, delete_file: bool) -> FolioResult<RemovedUser> {
        Ok(self
            .service
            .remove_mail_user(&self.caller, name, delete_file)?)
    }

    fn send_mail(
        &self,
        sender: Option<&str>,
        msg: Message,
        files: &mut [Attachment<'_>],
        draft: bool,
    ) -> FolioResult<Sent> {
        let sender = sender.ok_or_else(|| {
            FolioError::Usage("mail send needs --from NAME: embedded, nobody is signed in".into())
        })?;
        let person = self.directory()?.person(sender)?;
        let (engine, views) = (self.service.engine(), self.service.views());
        Ok(if draft {
            Sent::Draft(mail::save_draft(
                engine, views, &self.mail, &person, msg, files,
            )?)
        } else {
            Sent::Deposited(mail::deposit(
                engine, views, &self.mail, &person, msg, files,
            )?)
        })
    }

    fn meeting(
        &self,
        acting: Option<&str>,
        op: protocol::MeetingRequest,
    ) -> FolioResult<protocol::MeetingAnswer> {
        let acting = acting.ok_or_else(|| {
            FolioError::Usage(
                "mail meeting needs --from NAME: embedded, nobody is signed in".into(),
            )
        })?;
        Ok(self.service.meeting_op(&self.caller, op, Some(acting))?)
    }

    fn statistics(&self) -> FolioResult<Vec<Statistic>> {
        Err(FolioError::NeedsServer {
            command: "show stats",
        })
    }

    fn archive(&self, to: Option<&std::path::Path>) -> FolioResult<protocol::ArchiveSummary> {
        let to = to
            .map(|d| std::path::absolute(d).map_err(|e| FolioError::io(d.display().to_string(), e)))
            .transpose()?;
        let to = to.as_ref().map(|d| d.to_string_lossy());
        Ok(self.service.archive(&self.caller, to.as_deref())?)
    }

    fn backup(
        &self,
        dest: &std::path::Path,
        dbs: &[String],
    ) -> FolioResult<protocol::BackupSummary> {
        let dest =
            std::path::absolute(dest).map_err(|e| FolioError::io(dest.display().to_string(), e))?;
        Ok(self
            .service
            .backup(&self.caller, &dest.to_string_lossy(), dbs)?)
    }

    fn restore(
        &self,
        backup: &std::path::Path,
        opts: &nsf::RestoreOptions,
    ) -> FolioResult<Vec<nsf::RestoreReport>> {
        // The directory is locked by this process (no server runs on it),
        // and the engine claims each target path while it works (I18).
        Ok(self.service.engine().restore(backup, opts)?)
    }

    fn log_info(&self) -> FolioResult<translog::LogInfo> {
        self.service.engine().log_info().ok_or_else(|| {
            FolioError::Settings(
                "the transaction log is disabled (translog.enabled = false)".into(),
            )
        })
    }
}
