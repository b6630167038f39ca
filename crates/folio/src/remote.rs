//! The networked store (`--server HOST:PORT`): a running server, through
//! the blocking client library over the native protocol.
//!
//! A script written against a data directory works against a server by
//! adding `--server` (and `--user`, with the password in
//! `FOLIO_PASSWORD`): the commands are the same code (`store.rs`), and
//! the server answers through the same `Service` the embedded store runs
//! in-process. The server's refusals come back as error codes and become
//! the same [`FolioError`] variants, with the same messages, as embedded.
//! What needs the data directory's files (`db check`, `view list`, `view
//! rebuild`, `log info`) says so instead of guessing, and so does `mail
//! send`, which the server does not offer yet. The mail user commands
//! (`create-user`, `list-users`, `remove-user`) run on the server as the
//! signed-in user, who must be a server administrator; `remove-user
//! --delete-file` is refused there (a running engine cannot delete a
//! database it may have open) and changes nothing.

use crate::cli::Args;
use crate::error::{FolioError, FolioResult};
use crate::store::{
    Changes, Doc, FolderChange, JsonObject, RemovedUser, Sent, Store, ViewPage, ViewSummary,
    ViewUpdate,
};
use client::blocking::Client;
use client::{ClientOptions, DbHandle, TlsOptions};
use nsf::{Acl, CheckReport, Unid};
use protocol::{
    Cursor, DatabaseInfo, DatabaseSummary, DocRef, Found, NoteMeta, ReadFlags, Start, Statistic,
    Timestamp,
};
use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{Read, Write};
use views::{RebuildReport, ViewDef};

/// The environment variable holding the password for `--user`.
pub const PASSWORD_ENV: &str = "FOLIO_PASSWORD";

/// Where and as whom to connect: the global options, resolved once so
/// load threads can open connections of their own.
#[derive(Clone, Debug)]
pub struct Endpoint {
    pub addr: String,
    /// User name and password (or API token).
    pub credentials: Option<(String, String)>,
    pub tls_ca: Option<std::path::PathBuf>,
    /// Network compression (`--compression`; auto when not given).
    pub compression: client::NetCompression,
}

impl Endpoint {
    /// The endpoint the global options name for `server`.
    pub fn from_args(args: &Args, server: &str) -> FolioResult<Endpoint> {
        let credentials = match &args.user {
            Some(user) => {
                let password = std::env::var(PASSWORD_ENV).map_err(|_| {
                    FolioError::Usage(format!(
                        "--user {user}: set the password (or an API token) in {PASSWORD_ENV}"
                    ))
                })?;
                Some((user.clone(), password))
            }
            None => None,
        };
        Ok(Endpoint {
            addr: server.to_string(),
            credentials,
            tls_ca: args.tls_ca.clone(),
            compression: args.compression.unwrap_or_default(),
        })
    }

    /// Opens one connection as `client_name`. A server that refuses the
    /// sign-in answers like any refusal; one that cannot be reached is
    /// named.
    pub fn connect(&self, client_name: &str) -> FolioResult<Client> {
        Client::connect(self.options(client_name)).map_err(|e| match e {
            e @ client::ClientError::Server { .. } => FolioError::from(e),
            source => FolioError::Connect {
                addr: self.addr.clone(),
                source,
            },
        })
    }

    /// The client options for one connection as `client_name`.
    pub fn options(&self, client_name: &str) -> ClientOptions {
        let mut opts = ClientOptions::new(self.addr.as_str()).with_compression(self.compression);
        opts.client_name = client_name.into();
        if let Some((user, password)) = &self.credentials {
            opts = opts.with_credentials(user, password);
        }
        if let Some(ca) = &self.tls_ca {
            opts = opts.with_tls(TlsOptions {
                ca_cert: ca.clone(),
                server_name: None,
            });
        }
        opts
    }
}

/// Creates a view or folder on the server from its definition.
pub fn create_view(c: &Client, db: DbHandle, def: &ViewDef) -> FolioResult<()> {
    let json = serde_json::to_string(def)
        .map_err(|e| FolioError::Internal(format!("view definition: {e}")))?;
    match c.request(client::Request::CreateView { db, json })? {
        client::Response::Done => Ok(()),
        other => Err(FolioError::Internal(format!(
            "unexpected answer to CreateView: {other:?}"
        ))),
    }
}

/// A server, signed in to once for the command.
pub struct RemoteStore {
    client: Client,
    /// Databases opened so far on this connection.
    handles: RefCell<HashMap<String, DbHandle>>,
}

impl RemoteStore {
    /// Connects as the global options say.
    pub fn connect(args: &Args, server: &str) -> FolioResult<RemoteStore> {
        let client = Endpoint::from_args(args, server)?.connect("folio-cli")?;
        Ok(RemoteStore {
            client,
            handles: RefCell::new(HashMap::new()),
        })
    }

    /// The handle of the database at `path`, opened on first use.
    fn open(&self, path: &str) -> FolioResult<DbHandle> {
        if let Some(h) = self.handles.borrow().get(path) {
            return Ok(*h);
        }
        let (h, _) = self.client.open_database(path)?;
        self.handles.borrow_mut().insert(path.to_string(), h);
        Ok(h)
    }

    /// Opens a view on the server (which refreshes its index as its
    /// refresh option says).
    fn open_view(&self, path: &str, name: &str) -> FolioResult<client::CollectionInfo> {
        let h = self.open(path)?;
        Ok(self.client.open_collection(h, name)?)
    }
}

fn wire(unid: Unid) -> protocol::Unid {
    protocol::Unid(unid.0)
}

/// A person as the server described one.
fn person(u: client::MailUser) -> FolioResult<mail::Person> {
    let mail_file = nsf::DbPath::parse(&u.mail_file).map_err(|e| {
        FolioError::Internal(format!(
            "the server named {:?}'s mail file {:?}: {e}",
            u.full_name, u.mail_file
        ))
    })?;
    Ok(mail::Person {
        unid: Unid(u.unid.0),
        full_name: u.full_name,
        short_name: u.short_name,
        aliases: u.aliases,
        mail_file,
        server_user: u.server_user,
    })
}

fn json_text(items: &JsonObject) -> String {
    serde_json::Value::Object(items.clone()).to_string()
}

impl Store for RemoteStore {
    fn create_database(&self, path: &str, title: &str) -> FolioResult<DatabaseInfo> {
        Ok(self.client.create_database(path, title)?)
    }

    fn list_databases(&self) -> FolioResult<Vec<DatabaseSummary>> {
        Ok(self.client.list_databases(None)?)
    }

    fn database_info(&self, path: &str) -> FolioResult<DatabaseInfo> {
        Ok(self.client.database_info(path)?)
    }

    fn copy_database(&self, src: &str, dst: &str, replica: bool) -> FolioResult<server::Copied> {
        let c = self.client.copy_database(src, dst, replica)?;
        Ok(server::Copied {
            info: c.info,
            documents: c.documents,
            views: c.views,
        })
    }

    fn delete_database(&self, path: &str) -> FolioResult<()> {
        Ok(self.client.delete_database(path)?)
    }

    fn check_database(&self, _path: &str) -> FolioResult<CheckReport> {
        Err(FolioError::NeedsDataDirectory {
            command: "db check",
        })
    }

    fn fixup_database(&self, _path: &str, _dry_run: bool) -> FolioResult<nsf::FixupReport> {
        Err(FolioError::NeedsDataDirectory { command: "fixup" })
    }

    fn compact_database(
        &self,
        path: &str,
        copy: bool,
        dry_run: bool,
    ) -> FolioResult<protocol::CompactSummary> {
        Ok(self.client.compact(path, copy, dry_run)?)
    }

    fn create_document(&self, path: &str, items: &JsonObject) -> FolioResult<NoteMeta> {
        let h = self.open(path)?;
        Ok(self.client.create_document(h, &json_text(items))?)
    }

    fn read_document(&self, path: &str, unid: Unid) -> FolioResult<Doc> {
        let h = self.open(path)?;
        Doc::from_protocol(self.client.read_document(h, DocRef::Unid(wire(unid)))?)
    }

    fn update_document(
        &self,
        path: &str,
        unid: Unid,
        based_on: Option<u32>,
        force: bool,
        changes: &JsonObject,
    ) -> FolioResult<NoteMeta> {
        let h = self.open(path)?;
        Ok(self
            .client
            .update_document(h, wire(unid), based_on, force, &json_text(changes))?)
    }

    fn delete_document(
        &self,
        path: &str,
        unid: Unid,
        based_on: Option<u32>,
    ) -> FolioResult<NoteMeta> {
        let h = self.open(path)?;
        Ok(self
            .client
            .delete_document(h, wire(unid), based_on, false)?)
    }

    fn changes(&self, path: &str, since: Cursor, limit: u32) -> FolioResult<Changes> {
        let h = self.open(path)?;
        Changes::from_protocol(self.client.modified_since(h, since, limit)?)
    }

    fn delete_attachment(
        &self,
        path: &str,
        unid: Unid,
        name: &str,
        based_on: Option<u32>,
    ) -> FolioResult<NoteMeta> {
        let h = self.open(path)?;
        Ok(self
            .client
            .delete_attachment(h, wire(unid), name, based_on)?)
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
        let h = self.open(path)?;
        Ok(self
            .client
            .put_attachment(h, wire(unid), name, mime, size, content)?)
    }

    fn get_attachment(
        &self,
        path: &str,
        unid: Unid,
        name: &str,
        out: &mut dyn Write,
    ) -> FolioResult<u64> {
        let h = self.open(path)?;
        Ok(self.client.get_attachment(h, wire(unid), name, out)?.size)
    }

    fn create_view(&self, path: &str, def: &ViewDef) -> FolioResult<()> {
        create_view(&self.client, self.open(path)?, def)
    }

    fn delete_view(&self, path: &str, name: &str) -> FolioResult<()> {
        Ok(self.client.delete_view(self.open(path)?, name)?)
    }

    fn list_views(&self, _path: &str) -> FolioResult<Vec<ViewSummary>> {
        Err(FolioError::NeedsDataDirectory {
            command: "view list",
        })
    }

    fn read_view(
        &self,
        path: &str,
        name: &str,
        start: &Start,
        count: u32,
        flags: ReadFlags,
    ) -> FolioResult<ViewPage> {
        let opened = self.open_view(path, name)?;
        let (rows, total) =
            self.client
                .read_entries(opened.collection, start.clone(), count, flags)?;
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
        let opened = self.open_view(path, name)?;
        Ok(self.client.find_by_key(opened.collection, key, prefix)?)
    }

    fn update_view(&self, path: &str, name: &str) -> FolioResult<ViewUpdate> {
        let opened = self.open_view(path, name)?;
        let u = self.client.update_collection(opened.collection)?;
        Ok(ViewUpdate {
            notes_seen: u.changed,
            last_seq: u.seq,
        })
    }

    fn rebuild_view(&self, _path: &str, _name: &str) -> FolioResult<RebuildReport> {
        Err(FolioError::NeedsDataDirectory {
            command: "view rebuild",
        })
    }

    fn change_folder(
        &self,
        path: &str,
        folder: &str,
        unids: &[Unid],
        change: FolderChange,
    ) -> FolioResult<()> {
        let h = self.open(path)?;
        let unids: Vec<protocol::Unid> = unids.iter().copied().map(wire).collect();
        let changed = match change {
            FolderChange::Add => self.client.folder_add(h, folder, &unids),
            FolderChange::Remove => self.client.folder_remove(h, folder, &unids),
        };
        Ok(changed?)
    }

    fn search(
        &self,
        path: &str,
        formula: &str,
        since: Option<Timestamp>,
        hit: &mut dyn FnMut(Doc) -> FolioResult<()>,
    ) -> FolioResult<u64> {
        let h = self.open(path)?;
        let mut hits = self.client.search_hits(h, formula, since)?;
        for d in hits.by_ref() {
            hit(Doc::from_protocol(d?)?)?;
        }
        hits.found().ok_or_else(|| {
            FolioError::Internal("the search ended without saying how many it found".into())
        })
    }

    fn acl(&self, path: &str) -> FolioResult<Acl> {
        Ok(Acl::parse_json(&self.client.get_acl(path)?)?)
    }

    fn set_acl(&self, path: &str, acl: &Acl) -> FolioResult<()> {
        Ok(self.client.set_acl(path, &acl.to_json())?)
    }

    fn create_mail_user(&self, new: &mail::NewPerson) -> FolioResult<mail::Person> {
        let user =
            self.client
                .create_mail_user(&new.name, &new.aliases, new.server_user.as_deref())?;
        person(user)
    }

    fn list_mail_users(&self) -> FolioResult<Vec<mail::Person>> {
        self.client
            .list_mail_users()?
            .into_iter()
            .map(person)
            .collect()
    }

    fn remove_mail_user(&self, name: &str, delete_file: bool) -> FolioResult<RemovedUser> {
        let (user, file) = self.client.remove_mail_user(name, delete_file)?;
        Ok(RemovedUser {
            person: person(user)?,
            file,
        })
    }

    fn send_mail(
        &self,
        sender: Option<&str>,
        msg: mail::Message,
        files: &mut [mail::Attachment<'_>],
        draft: bool,
    ) -> FolioResult<Sent> {
        let json = nsf::items_to_json(&msg.to_items()).to_string();
        if files.is_empty() {
            return sent_of(self.client.send_mail(&json, draft, sender)?);
        }
        let mut declared = Vec::with_capacity(files.len());
        for f in files.iter() {
            let size = f.size.ok_or_else(|| {
                FolioError::Internal(format!("attachment {:?} has no known size", f.name))
            })?;
            declared.push(protocol::MailFile {
                name: f.name.clone(),
                mime: f.mime.clone(),
                size,
            });
        }
        let content = Concat {
            files,
            at: 0,
            left: declared.first().map_or(0, |f| f.size),
        };
        sent_of(
            self.client
                .send_mail_files(&json, draft, sender, declared, content)?,
        )
    }

    fn meeting(
        &self,
        acting: Option<&str>,
        op: protocol::MeetingRequest,
    ) -> FolioResult<protocol::MeetingAnswer> {
        Ok(self.client.meeting(op, acting)?)
    }

    fn statistics(&self) -> FolioResult<Vec<Statistic>> {
        Ok(self.client.statistics()?)
    }

    fn archive(&self, to: Option<&std::path::Path>) -> FolioResult<protocol::ArchiveSummary> {
        let to = to.map(|d| d.to_string_lossy().into_owned());
        Ok(self.client.archive(to.as_deref())?)
    }

    fn backup(
        &self,
        dest: &std::path::Path,
        dbs: &[String],
    ) -> FolioResult<protocol::BackupSummary> {
        Ok(self.client.backup(&dest.to_string_lossy(), dbs)?)
    }

    fn restore(
        &self,
        _backup: &std::path::Path,
        _opts: &nsf::RestoreOptions,
    ) -> FolioResult<Vec<nsf::RestoreReport>> {
        Err(FolioError::NeedsDataDirectory { command: "restore" })
    }

    fn log_info(&self) -> FolioResult<translog::LogInfo> {
        Err(FolioError::NeedsDataDirectory {
            command: "log info",
        })
    }
}

/// The files of a send read back to back, each no further than its
/// declared size (a file that shrank since makes the server refuse the
/// message: its upload ends short).
struct Concat<'f, 'a> {
    files: &'f mut [mail::Attachment<'a>],
    at: usize,
    left: u64,
}

impl Read for Concat<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at < self.files.len() {
            if self.left > 0 {
                let want = buf
                    .len()
                    .min(usize::try_from(self.left).unwrap_or(usize::MAX));
                let n = self.files[self.at].content.read(&mut buf[..want])?;
                if n > 0 {
                    self.left -= n as u64;
                    return Ok(n);
                }
            }
            self.at += 1;
            self.left = self.files.get(self.at).and_then(|f| f.size).unwrap_or(0);
        }
        Ok(0)
    }
}

/// What the server answered a send with, as the embedded store says it.
fn sent_of(s: client::MailSent) -> FolioResult<Sent> {
    let bad = |e: String| FolioError::Internal(format!("the server's answer to a send: {e}"));
    let stored_in = nsf::DbPath::parse(&s.stored_in).map_err(|e| bad(e.to_string()))?;
    let unid = Unid(s.unid.0);
    Ok(if s.draft {
        Sent::Draft(mail::Draft {
            mail_file: stored_in,
            unid,
        })
    } else {
        Sent::Deposited(mail::DepositId {
            mail_box: stored_in,
            unid,
            message_id: mail::MessageId::parse(&s.message_id).map_err(|e| bad(e.to_string()))?,
        })
    })
}
