//! The CLI against a running server (`--server HOST:PORT`).
//!
//! The same commands, the same output, over the native protocol through
//! the blocking client library: a script written against a data directory
//! works against a server by adding `--server` (and `--user`, with the
//! password in `FOLIO_PASSWORD`). Commands that need the files themselves
//! (`db check`, `log info`, `view rebuild`) say so instead of guessing.

use crate::cli::{AclCmd, Args, AttachCmd, Cmd, DbCmd, DocCmd, LogCmd, ShowCmd};
use crate::viewcli::{self, FolderCmd, ViewCmd};
use client::blocking::Client;
use client::{ClientOptions, DocRef, ReadFlags, Start, TlsOptions};
use nsf::Timestamp;
use std::io::{self, BufWriter, Read, Write};

type CliResult = Result<(), String>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

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
}

impl Endpoint {
    /// The endpoint the global options name for `server`.
    pub fn from_args(args: &Args, server: &str) -> Result<Endpoint, String> {
        let credentials = match &args.user {
            Some(user) => {
                let password = std::env::var(PASSWORD_ENV).map_err(|_| {
                    format!("--user {user}: set the password (or an API token) in {PASSWORD_ENV}")
                })?;
                Some((user.clone(), password))
            }
            None => None,
        };
        Ok(Endpoint {
            addr: server.to_string(),
            credentials,
            tls_ca: args.tls_ca.clone(),
        })
    }

    /// Opens one connection as `client_name`.
    pub fn connect(&self, client_name: &str) -> Result<Client, String> {
        Client::connect(self.options(client_name)).map_err(|e| format!("{}: {e}", self.addr))
    }

    /// The client options for one connection as `client_name`.
    pub fn options(&self, client_name: &str) -> ClientOptions {
        let mut opts = ClientOptions::new(self.addr.as_str());
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

/// Connects as the global options say.
pub fn connect(args: &Args, server: &str) -> Result<Client, String> {
    Endpoint::from_args(args, server)?.connect("folio-cli")
}

/// Runs one command against the server at `server`.
pub fn run(args: &Args, server: &str) -> CliResult {
    let c = connect(args, server)?;
    match &args.cmd {
        Cmd::Db(cmd) => db_cmd(&c, cmd),
        Cmd::Doc(cmd) => doc_cmd(&c, cmd),
        Cmd::Attach(cmd) => attach_cmd(&c, cmd),
        Cmd::View(cmd) => view_cmd(&c, cmd),
        Cmd::Folder(cmd) => folder_cmd(&c, cmd),
        Cmd::Search {
            path,
            formula,
            since,
        } => search_cmd(&c, path, formula, since.as_deref()),
        Cmd::Show(ShowCmd::Stats) => show_stats(&c),
        Cmd::Acl(cmd) => acl_cmd(&c, cmd),
        Cmd::Log(LogCmd::Info) => Err(local_only("log info")),
        _ => Err("this command does not take --server".into()),
    }
}

fn local_only(what: &str) -> String {
    format!("{what} works on the data directory itself: run it on the server machine without --server (with the server stopped)")
}

fn print_json(v: &serde_json::Value) -> CliResult {
    let mut out = io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, v).map_err(err)?;
    writeln!(out).map_err(err)
}

fn read_stdin() -> Result<String, String> {
    let mut text = String::new();
    io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| format!("reading stdin: {e}"))?;
    serde_json::from_str::<serde_json::Value>(&text)
        .map_err(|e| format!("malformed JSON on stdin: {e}"))?;
    Ok(text)
}

fn unid(s: &str) -> Result<client::Unid, String> {
    s.parse::<nsf::Unid>()
        .map(|u| client::Unid(u.0))
        .map_err(err)
}

fn unid_text(u: client::Unid) -> String {
    nsf::Unid(u.0).to_string()
}

fn open(c: &Client, path: &str) -> Result<client::DbHandle, String> {
    c.open_database(path).map(|(h, _)| h).map_err(err)
}

fn info_json(i: &client::DatabaseInfo) -> serde_json::Value {
    serde_json::json!({
        "path": i.path,
        "title": i.title,
        "replica_id": format!("{:016X}", i.replica_id),
        "instance_id": format!("{:016X}", i.instance_id),
        "created": Timestamp(i.created.0).to_rfc3339(),
        "note_count": i.note_count,
        "file_size": i.file_size,
        "sequence": i.sequence.0,
        "needs_fixup": i.needs_fixup,
    })
}

/// Creates a view or folder on the server from its definition.
pub fn create_view(c: &Client, db: client::DbHandle, def: &views::ViewDef) -> CliResult {
    let json = serde_json::to_string(def).map_err(err)?;
    match c
        .request(client::Request::CreateView { db, json })
        .map_err(err)?
    {
        client::Response::Done => Ok(()),
        other => Err(format!("unexpected answer to CreateView: {other:?}")),
    }
}

fn db_cmd(c: &Client, cmd: &DbCmd) -> CliResult {
    match cmd {
        DbCmd::Create { path, title, mail } => {
            let design = if *mail { mail::design() } else { Vec::new() };
            let info = c.create_database(path, title).map_err(err)?;
            if !design.is_empty() {
                let h = open(c, path)?;
                for def in design {
                    create_view(c, h, &def)?;
                }
            }
            print_json(&info_json(&info))
        }
        DbCmd::List => {
            let mut out = io::stdout().lock();
            for d in c.list_databases(None).map_err(err)? {
                writeln!(out, "{}", d.path).map_err(err)?;
            }
            Ok(())
        }
        DbCmd::Info { path } => print_json(&info_json(&c.database_info(path).map_err(err)?)),
        DbCmd::Check { .. } => Err(local_only("db check")),
    }
}

fn doc_cmd(c: &Client, cmd: &DocCmd) -> CliResult {
    match cmd {
        DocCmd::Put { path } => {
            let json = read_stdin()?;
            let h = open(c, path)?;
            let meta = c.create_document(h, &json).map_err(err)?;
            println!("{}", unid_text(meta.unid));
            Ok(())
        }
        DocCmd::Get { path, unid: u } => {
            let u = unid(u)?;
            let h = open(c, path)?;
            let doc = c.read_document(h, DocRef::Unid(u)).map_err(err)?;
            let v: serde_json::Value = serde_json::from_str(&doc.json).map_err(err)?;
            print_json(&v)
        }
        DocCmd::Update {
            path,
            unid: u,
            force,
        } => {
            let u = unid(u)?;
            let json = read_stdin()?;
            let v: serde_json::Value = serde_json::from_str(&json).map_err(err)?;
            let based_on = match v.get("$seq") {
                None => None,
                Some(s) => Some(
                    s.as_u64()
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or("\"$seq\" must be a non-negative integer")?,
                ),
            };
            let h = open(c, path)?;
            let meta = c
                .update_document(h, u, based_on, *force, &json)
                .map_err(err)?;
            println!(
                "{}",
                serde_json::json!({"$unid": unid_text(meta.unid), "$seq": meta.seq_num})
            );
            Ok(())
        }
        DocCmd::Delete { path, unid: u, seq } => {
            let u = unid(u)?;
            let h = open(c, path)?;
            c.delete_document(h, u, *seq, false).map_err(err)?;
            Ok(())
        }
        DocCmd::List { path } => {
            let h = open(c, path)?;
            let mut out = BufWriter::new(io::stdout().lock());
            let mut since = client::Cursor(0);
            loop {
                let (docs, next, more) = c.modified_since(h, since, 1000).map_err(err)?;
                for d in docs.iter().filter(|d| !d.deleted) {
                    writeln!(out, "{}", d.json).map_err(err)?;
                }
                since = next;
                if !more {
                    break;
                }
            }
            out.flush().map_err(err)
        }
    }
}

fn attach_cmd(c: &Client, cmd: &AttachCmd) -> CliResult {
    match cmd {
        AttachCmd::Put {
            path,
            unid: u,
            file,
            name,
            mime,
        } => {
            let u = unid(u)?;
            let name = match name {
                Some(n) => n.clone(),
                None => crate::cli::file_name(file)?,
            };
            let f = std::fs::File::open(file)
                .map_err(|e| format!("cannot open {}: {e}", file.display()))?;
            let size = f.metadata().ok().map(|m| m.len());
            let h = open(c, path)?;
            let stored = c.put_attachment(h, u, &name, mime, size, f).map_err(err)?;
            println!("{}", serde_json::json!({"name": name, "size": stored}));
            Ok(())
        }
        AttachCmd::Get {
            path,
            unid: u,
            name,
        } => {
            let u = unid(u)?;
            let h = open(c, path)?;
            let mut out = io::stdout().lock();
            c.get_attachment(h, u, name, &mut out).map_err(err)?;
            out.flush().map_err(err)
        }
    }
}

fn view_cmd(c: &Client, cmd: &ViewCmd) -> CliResult {
    match cmd {
        ViewCmd::Create {
            path,
            name,
            select,
            columns,
            logged,
            folder,
            refresh,
        } => {
            let def =
                viewcli::view_def(name, select.as_deref(), columns, *logged, *folder, refresh)?;
            let h = open(c, path)?;
            create_view(c, h, &def)
        }
        ViewCmd::Read {
            path,
            name,
            start,
            key,
            prefix,
            count,
            backward,
            categories,
            total,
        } => {
            let h = open(c, path)?;
            let opened = c.open_collection(h, name).map_err(err)?;
            let from = match key {
                Some(k) => Start::Key {
                    key: k.clone(),
                    prefix: *prefix,
                },
                None => Start::Position(start.unwrap_or(0)),
            };
            let flags = ReadFlags {
                backward: *backward,
                categories: *categories,
                count: *total,
            };
            let count = u32::try_from(*count).map_err(|_| "--count is too large")?;
            let (rows, entries) = c
                .read_entries(opened.collection, from, count, flags)
                .map_err(err)?;
            let mut out = BufWriter::new(io::stdout().lock());
            for r in &rows {
                serde_json::to_writer(&mut out, &server::http::row_json(r, &opened.titles))
                    .map_err(err)?;
                writeln!(out).map_err(err)?;
            }
            if let Some(n) = entries {
                viewcli::print_total(&mut out, n)?;
            }
            out.flush().map_err(err)
        }
        ViewCmd::Find {
            path,
            name,
            key,
            prefix,
        } => {
            let h = open(c, path)?;
            let opened = c.open_collection(h, name).map_err(err)?;
            let v = match c
                .find_by_key(opened.collection, key, *prefix)
                .map_err(err)?
            {
                Some(f) => serde_json::json!({"position": f.position, "count": f.count}),
                None => serde_json::json!({"position": null, "count": 0}),
            };
            println!("{v}");
            Ok(())
        }
        ViewCmd::Update { path, name } => {
            let h = open(c, path)?;
            let opened = c.open_collection(h, name).map_err(err)?;
            let u = c.update_collection(opened.collection).map_err(err)?;
            println!(
                "{}",
                serde_json::json!({"notes_seen": u.changed, "last_seq": u.seq})
            );
            Ok(())
        }
        ViewCmd::Rebuild { .. } => Err(local_only("view rebuild")),
        ViewCmd::List { .. } => Err(local_only("view list")),
    }
}

fn folder_cmd(c: &Client, cmd: &FolderCmd) -> CliResult {
    let (path, name, unids, add) = match cmd {
        FolderCmd::Add { path, name, unids } => (path, name, unids, true),
        FolderCmd::Remove { path, name, unids } => (path, name, unids, false),
    };
    let unids = unids
        .iter()
        .map(|u| unid(u))
        .collect::<Result<Vec<_>, _>>()?;
    let h = open(c, path)?;
    if add {
        c.folder_add(h, name, &unids).map_err(err)
    } else {
        c.folder_remove(h, name, &unids).map_err(err)
    }
}

fn search_cmd(c: &Client, path: &str, formula: &str, since: Option<&str>) -> CliResult {
    let since = match since {
        None => None,
        Some(s) => Some(client::Timestamp(
            Timestamp::parse_rfc3339(s)
                .ok_or_else(|| format!("--since {s:?}: expected an RFC 3339 time"))?
                .0,
        )),
    };
    let h = open(c, path)?;
    let mut out = BufWriter::new(io::stdout().lock());
    let mut failed = None;
    c.search(h, formula, since, |doc| {
        if failed.is_none() {
            if let Err(e) = writeln!(out, "{}", doc.json) {
                failed = Some(e);
            }
        }
    })
    .map_err(err)?;
    if let Some(e) = failed {
        return Err(err(e));
    }
    out.flush().map_err(err)
}

fn show_stats(c: &Client) -> CliResult {
    let mut map = serde_json::Map::new();
    for s in c.statistics().map_err(err)? {
        let v = match s.value {
            client::StatValue::Count(n) => serde_json::json!(n),
            client::StatValue::Gauge(g) => serde_json::json!((g * 1000.0).round() / 1000.0),
            client::StatValue::Text(t) => serde_json::json!(t),
        };
        map.insert(s.name, v);
    }
    print_json(&serde_json::Value::Object(map))
}

fn acl_cmd(c: &Client, cmd: &AclCmd) -> CliResult {
    match cmd {
        AclCmd::Show { path } => {
            let json = c.get_acl(path).map_err(err)?;
            print_json(&serde_json::from_str(&json).map_err(err)?)
        }
        AclCmd::Set { path } => c.set_acl(path, &read_stdin()?).map_err(err),
    }
}
