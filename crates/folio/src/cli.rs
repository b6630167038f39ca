//! The command line. The command forms are a contract scripts rely on:
//! `folio --data DIR db create PATH`, `doc put PATH` (JSON on stdin, UNID
//! on stdout, exit 0 only once durable), and so on. Every failure is one
//! line on stderr and a non-zero exit, and changes nothing.

use crate::datadir::{self, OpenDataDir};
use crate::viewcli::{self, FolderCmd, ViewCmd};
use crate::{crashtest, load};
use clap::{Parser, Subcommand};
use nsf::{items_from_json, note_to_json, Engine, ItemUpdate, Unid};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

#[derive(Parser, Debug)]
#[command(name = "folio", version, about = "Folio document database server")]
pub struct Args {
    /// Data directory (default ./folio-data).
    #[arg(long, global = true)]
    pub data: Option<PathBuf>,
    /// Settings file (default: <data>/folio.toml if it exists).
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    /// Log level for diagnostics on stderr (error, warn, info, debug).
    #[arg(long, global = true, default_value = "warn")]
    pub log_level: String,
    /// Run the command against a running server (HOST:PORT of its native
    /// protocol) instead of opening the data directory.
    #[arg(long, global = true)]
    pub server: Option<String>,
    /// User to sign in as with --server; the password (or an API token)
    /// is read from the FOLIO_PASSWORD environment variable.
    #[arg(long, global = true)]
    pub user: Option<String>,
    /// With --server: speak TLS, trusting this PEM certificate (the
    /// server's self-signed certificate or its CA).
    #[arg(long, global = true)]
    pub tls_ca: Option<PathBuf>,
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// The data directory when `--data` is not given.
pub const DEFAULT_DATA: &str = "./folio-data";

impl Args {
    /// The data directory: `--data`, or `./folio-data`.
    pub fn data_dir(&self) -> &Path {
        self.data.as_deref().unwrap_or(Path::new(DEFAULT_DATA))
    }
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Run the server on the data directory until SIGTERM or Ctrl-C.
    Serve(ServeArgs),
    /// Databases.
    #[command(subcommand)]
    Db(DbCmd),
    /// Documents.
    #[command(subcommand)]
    Doc(DocCmd),
    /// Attachments.
    #[command(subcommand)]
    Attach(AttachCmd),
    /// Views and folders.
    #[command(subcommand)]
    View(ViewCmd),
    /// Folder membership.
    #[command(subcommand)]
    Folder(FolderCmd),
    /// Print every document a formula selects, as JSON lines.
    Search {
        path: String,
        formula: String,
        /// Only documents modified at or after this RFC 3339 time.
        #[arg(long)]
        since: Option<String>,
    },
    /// The transaction log.
    #[command(subcommand)]
    Log(LogCmd),
    /// Live information from a running server.
    #[command(subcommand)]
    Show(ShowCmd),
    /// A database's access-control list.
    #[command(subcommand)]
    Acl(AclCmd),
    /// Server users and API tokens (works while the server runs).
    #[command(subcommand)]
    User(crate::usercli::UserCmd),
    /// Benchmark workloads.
    #[command(subcommand)]
    Load(load::LoadCmd),
    /// Test support (used by the crash harness).
    #[command(subcommand, hide = true)]
    Debug(DebugCmd),
}

/// Overrides of the settings file for one run of the server.
#[derive(clap::Args, Debug, Default)]
pub struct ServeArgs {
    /// Native protocol address (setting `listen`, default 127.0.0.1:1352).
    #[arg(long)]
    pub listen: Option<String>,
    /// HTTP API address or "off" (setting `http_listen`, default 127.0.0.1:8080).
    #[arg(long)]
    pub http_listen: Option<String>,
    /// Serve TLS on both listeners with a self-signed certificate,
    /// generated in <data>/tls on first use (setting `tls.self_signed`).
    #[arg(long)]
    pub tls_self_signed: bool,
}

#[derive(Subcommand, Debug)]
pub enum DbCmd {
    /// Create a database.
    Create {
        path: String,
        #[arg(long, default_value = "")]
        title: String,
        /// Give it a mail file's design: an Inbox folder and an
        /// All Documents view.
        #[arg(long)]
        mail: bool,
    },
    /// List databases.
    List,
    /// Show a database's identity and size as JSON.
    Info { path: String },
    /// Check a database's consistency (trees, indexes, note encoding).
    Check { path: String },
}

#[derive(Subcommand, Debug)]
pub enum DocCmd {
    /// Create a document from a JSON object on stdin; prints its UNID.
    Put { path: String },
    /// Print a document as JSON.
    Get { path: String, unid: String },
    /// Update items from a JSON object on stdin (null removes an item). A
    /// "$seq" field makes the update conditional on that sequence number.
    Update {
        path: String,
        unid: String,
        /// Apply even if "$seq" is stale.
        #[arg(long)]
        force: bool,
    },
    /// Delete a document, leaving a deletion stub.
    Delete {
        path: String,
        unid: String,
        /// Only if the document is still at this sequence number.
        #[arg(long)]
        seq: Option<u32>,
    },
    /// Print every document, one JSON object per line.
    List { path: String },
}

#[derive(Subcommand, Debug)]
pub enum AttachCmd {
    /// Attach a file to a document.
    Put {
        path: String,
        unid: String,
        file: PathBuf,
        /// Attachment name (default: the file's name).
        #[arg(long)]
        name: Option<String>,
        #[arg(long, default_value = "application/octet-stream")]
        mime: String,
    },
    /// Write an attachment's content to stdout.
    Get {
        path: String,
        unid: String,
        name: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum ShowCmd {
    /// The server's statistics as JSON (transactions/min, response-time
    /// percentiles per operation, buffer pool, log, locks). Asks the
    /// server at --server, default 127.0.0.1:1352.
    Stats,
}

#[derive(Subcommand, Debug)]
pub enum AclCmd {
    /// Print the access-control list as JSON (docs/http.md, "Access control").
    Show { path: String },
    /// Replace the access-control list with the JSON on stdin.
    Set { path: String },
}

#[derive(Subcommand, Debug)]
pub enum LogCmd {
    /// Show the log's style, extents, bytes in use and checkpoint as JSON.
    Info,
}

#[derive(Subcommand, Debug)]
pub enum DebugCmd {
    /// Run the seeded crash-test workload, printing begin/ack lines.
    CrashWorkload(crashtest::ChildArgs),
}

pub fn init_tracing(args: &Args) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&args.log_level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(io::stderr)
        .try_init();
}

type CliResult = Result<(), String>;

fn open(args: &Args) -> Result<OpenDataDir, String> {
    let cfg = datadir::settings(args.data_dir(), args.config.as_deref())?;
    datadir::open(args.data_dir(), cfg)
}

/// Runs one command. Errors are returned as one line of text.
pub fn run(args: Args) -> CliResult {
    check_options(&args)?;
    match &args.cmd {
        Cmd::Load(cmd) => return load::run(cmd, &args),
        Cmd::User(cmd) => return crate::usercli::run(cmd, &args),
        Cmd::Debug(DebugCmd::CrashWorkload(c)) => return crashtest::run_child(c, &args),
        _ => {}
    }
    if let Cmd::Serve(sa) = &args.cmd {
        return serve(&args, sa);
    }
    if let Some(server) = &args.server {
        return crate::remote::run(&args, server);
    }
    if let Cmd::Show(_) = &args.cmd {
        return crate::remote::run(&args, client::DEFAULT_ADDR);
    }
    let dd = open(&args)?;
    let result = dispatch(&args, &dd.engine, &dd.views);
    let closed = dd.engine.close().map_err(|e| e.to_string());
    result.and(closed)
}

/// Refuses global options the command would otherwise ignore or take to
/// mean something else: every option given is honoured or refused.
fn check_options(args: &Args) -> CliResult {
    use load::LoadCmd;
    let given = |set: bool, name: &str| set.then(|| name.to_string());
    let server = given(args.server.is_some(), "--server");
    let user = given(args.user.is_some(), "--user");
    let tls_ca = given(args.tls_ca.is_some(), "--tls-ca");
    let data = given(args.data.is_some(), "--data");
    let config = given(args.config.is_some(), "--config");
    let refuse = |opts: &[&Option<String>], why: &str| -> CliResult {
        match opts.iter().find_map(|o| o.as_deref()) {
            Some(opt) => Err(format!("{opt} {why}")),
            None => Ok(()),
        }
    };
    match &args.cmd {
        Cmd::Serve(_) => refuse(
            &[&server, &user, &tls_ca],
            "does not apply to serve: it serves its data directory on --listen and --http-listen",
        ),
        Cmd::User(_) => refuse(
            &[&server, &user, &tls_ca, &config],
            "does not apply to user commands: they change <data>/users.json directly",
        ),
        Cmd::Debug(_) => Ok(()),
        Cmd::Load(l) => {
            refuse(
                &[&data, &config],
                "does not apply to load workloads: they make their own data in a temporary directory (--dir)",
            )?;
            match l {
                LoadCmd::Bigview(_) => refuse(
                    &[&server, &user, &tls_ca],
                    "does not apply to load bigview: it measures the embedded engine only",
                ),
                LoadCmd::Commit(c) if c.http.is_some() => refuse(
                    &[if server.is_none() { &tls_ca } else { &None }],
                    "needs --server (HTTP runs over plain http:// URLs)",
                ),
                LoadCmd::Commit(_) | LoadCmd::Docs(_) | LoadCmd::Pool(_) if server.is_none() => {
                    refuse(&[&user, &tls_ca], "applies only with --server HOST:PORT")
                }
                _ => Ok(()),
            }
        }
        Cmd::Show(_) => refuse(
            &[&data, &config],
            "does not apply to show stats: it asks a running server (--server HOST:PORT, default 127.0.0.1:1352)",
        ),
        _ if server.is_some() => refuse(
            &[&data, &config],
            "does not apply with --server: the command runs on the server, against its own data directory",
        ),
        _ => refuse(&[&user, &tls_ca], "applies only with --server HOST:PORT"),
    }
}

fn dispatch(args: &Args, engine: &Engine, views: &views::Views) -> CliResult {
    match &args.cmd {
        Cmd::Db(c) => db_cmd(engine, views, c),
        Cmd::View(c) => viewcli::view_cmd(engine, views, c),
        Cmd::Folder(c) => viewcli::folder_cmd(engine, views, c),
        Cmd::Search {
            path,
            formula,
            since,
        } => viewcli::search_cmd(engine, path, formula, since.as_deref()),
        Cmd::Doc(c) => doc_cmd(engine, c),
        Cmd::Attach(c) => attach_cmd(engine, c),
        Cmd::Log(LogCmd::Info) => {
            let info = engine
                .log_info()
                .ok_or("the transaction log is disabled (translog.enabled = false)")?;
            print_json(&log_info_json(&info))
        }
        Cmd::Acl(c) => acl_cmd(engine, c),
        Cmd::Load(_) | Cmd::Debug(_) | Cmd::Serve(_) | Cmd::Show(_) | Cmd::User(_) => {
            unreachable!("handled before opening the data directory")
        }
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn print_json(v: &serde_json::Value) -> CliResult {
    let mut out = io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, v).map_err(err)?;
    writeln!(out).map_err(err)
}

fn parse_unid(s: &str) -> Result<Unid, String> {
    s.parse::<Unid>().map_err(err)
}

fn read_stdin_json() -> Result<serde_json::Value, String> {
    let mut text = String::new();
    io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| format!("reading stdin: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("malformed JSON on stdin: {e}"))
}

fn db_cmd(engine: &Engine, views: &views::Views, c: &DbCmd) -> CliResult {
    match c {
        DbCmd::Create { path, title, mail } => {
            let db = engine.create_database(path, title).map_err(err)?;
            if *mail {
                mail::create_design(views, &db).map_err(err)?;
            }
            print_json(&serde_json::to_value(db.info().map_err(err)?).map_err(err)?)
        }
        DbCmd::List => {
            let mut out = io::stdout().lock();
            for p in engine.list_databases().map_err(err)? {
                writeln!(out, "{p}").map_err(err)?;
            }
            Ok(())
        }
        DbCmd::Info { path } => {
            let db = engine.open_database(path).map_err(err)?;
            print_json(&serde_json::to_value(db.info().map_err(err)?).map_err(err)?)
        }
        DbCmd::Check { path } => {
            let db = engine.open_database(path).map_err(err)?;
            print_json(&serde_json::to_value(db.check().map_err(err)?).map_err(err)?)
        }
    }
}

fn doc_cmd(engine: &Engine, c: &DocCmd) -> CliResult {
    match c {
        DocCmd::Put { path } => {
            let db = engine.open_database(path).map_err(err)?;
            let json = read_stdin_json()?;
            let items = items_from_json(&json)
                .map_err(err)?
                .into_iter()
                .map(|u| match u {
                    ItemUpdate::Set(item) => Ok(item),
                    ItemUpdate::Remove(name) => Err(format!(
                        "item {name:?} is null; a new document cannot remove items"
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?;
            let meta = db.create(items).map_err(err)?;
            println!("{}", meta.unid);
            Ok(())
        }
        DocCmd::Get { path, unid } => {
            let db = engine.open_database(path).map_err(err)?;
            let note = db.get(parse_unid(unid)?).map_err(err)?;
            print_json(&note_to_json(&note))
        }
        DocCmd::Update { path, unid, force } => {
            let db = engine.open_database(path).map_err(err)?;
            let unid = parse_unid(unid)?;
            let json = read_stdin_json()?;
            let based_on = match json.get("$seq") {
                None => None,
                Some(v) => Some(
                    v.as_u64()
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or("\"$seq\" must be a non-negative integer")?,
                ),
            };
            let updates = items_from_json(&json).map_err(err)?;
            let meta = db.update(unid, updates, based_on, *force).map_err(err)?;
            println!(
                "{}",
                serde_json::json!({"$unid": meta.unid.to_string(), "$seq": meta.seq_num})
            );
            Ok(())
        }
        DocCmd::Delete { path, unid, seq } => {
            let db = engine.open_database(path).map_err(err)?;
            db.delete(parse_unid(unid)?, *seq, false).map_err(err)?;
            Ok(())
        }
        DocCmd::List { path } => {
            let db = engine.open_database(path).map_err(err)?;
            let mut out = BufWriter::new(io::stdout().lock());
            db.for_each_note(|n| {
                serde_json::to_writer(&mut out, &note_to_json(&n))
                    .map_err(|e| nsf::NsfError::Invalid(e.to_string()))?;
                writeln!(out).map_err(|e| nsf::NsfError::Invalid(e.to_string()))
            })
            .map_err(err)?;
            out.flush().map_err(err)
        }
    }
}

fn attach_cmd(engine: &Engine, c: &AttachCmd) -> CliResult {
    match c {
        AttachCmd::Put {
            path,
            unid,
            file,
            name,
            mime,
        } => {
            let db = engine.open_database(path).map_err(err)?;
            let unid = parse_unid(unid)?;
            let name = match name {
                Some(n) => n.clone(),
                None => file_name(file)?,
            };
            let mut f = std::fs::File::open(file)
                .map_err(|e| format!("cannot open {}: {e}", file.display()))?;
            let a = db.put_attachment(unid, &name, mime, &mut f).map_err(err)?;
            println!("{}", serde_json::json!({"name": a.name, "size": a.size}));
            Ok(())
        }
        AttachCmd::Get { path, unid, name } => {
            let db = engine.open_database(path).map_err(err)?;
            let mut r = db.open_attachment(parse_unid(unid)?, name).map_err(err)?;
            let mut out = io::stdout().lock();
            io::copy(&mut r, &mut out).map_err(err)?;
            out.flush().map_err(err)
        }
    }
}

/// `folio acl show|set` on the data directory (full access: whoever can
/// open the files can change them anyway).
fn acl_cmd(engine: &Engine, c: &AclCmd) -> CliResult {
    match c {
        AclCmd::Show { path } => {
            let db = engine.open_database(path).map_err(err)?;
            let acl = db
                .acl()
                .map_err(err)?
                .unwrap_or_else(|| nsf::Acl::for_creator(None));
            print_json(&serde_json::from_str(&acl.to_json()).map_err(err)?)
        }
        AclCmd::Set { path } => {
            let json = read_stdin_json()?;
            let acl = nsf::Acl::parse_json(&json.to_string()).map_err(err)?;
            let db = engine.open_database(path).map_err(err)?;
            db.set_acl(&acl).map_err(err)?;
            Ok(())
        }
    }
}

pub(crate) fn file_name(p: &Path) -> Result<String, String> {
    p.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string)
        .ok_or_else(|| format!("{} has no usable file name; pass --name", p.display()))
}

/// Runs the server until SIGTERM/SIGINT, then lets requests in flight
/// finish, stops the background tasks and closes the engine cleanly
/// (flush and checkpoint), even if a job still holds it.
fn serve(args: &Args, sa: &ServeArgs) -> CliResult {
    let data_dir = args.data_dir();
    let file = crate::config::load(data_dir, args.config.as_deref())?;
    let mut settings = file.server_settings(data_dir)?;
    let mut overrides = String::new();
    if let Some(l) = &sa.listen {
        overrides.push_str(&format!("listen = {l:?}\n"));
    }
    if let Some(l) = &sa.http_listen {
        overrides.push_str(&format!("http_listen = {l:?}\n"));
    }
    if !overrides.is_empty() {
        let o = crate::config::parse(&overrides)?.server_settings(data_dir)?;
        if sa.listen.is_some() {
            settings.listen = o.listen;
        }
        if sa.http_listen.is_some() {
            settings.http_listen = o.http_listen;
        }
    }
    if sa.tls_self_signed {
        if settings.tls.cert.is_some() {
            return Err(
                "--tls-self-signed cannot be combined with tls.cert in the settings".into(),
            );
        }
        settings.tls.self_signed = true;
    }
    let dd = datadir::open(
        data_dir,
        (file.engine_config(data_dir)?, file.view_config()?),
    )?;
    let (engine, views, lock) = dd.into_parts();
    let databases = engine.list_databases().map_err(err)?.len();
    let logged = engine.is_logged();
    let data = data_dir.display().to_string();
    let host = server::Host::new(engine, views).map_err(err)?;
    let served = server::run(
        settings,
        host,
        |b| {
            let tls = match &b.tls_cert {
                Some(c) => format!(", TLS with certificate {}", c.display()),
                None => String::new(),
            };
            let http = b.http.map_or("off".to_string(), |a| a.to_string());
            eprintln!(
                "folio: serving data directory {data} ({databases} databases, log {}) on native {}, http {http}{tls}; Ctrl-C to stop",
                if logged { "on" } else { "off" },
                b.native,
            );
        },
        None,
    );
    drop(lock);
    served.map_err(err)?;
    eprintln!("folio: stopped (engine flushed and checkpointed)");
    Ok(())
}

fn log_info_json(i: &translog::LogInfo) -> serde_json::Value {
    serde_json::json!({
        "style": format!("{:?}", i.style).to_lowercase(),
        "tuning": format!("{:?}", i.tuning).to_lowercase(),
        "extent_size": i.extent_size,
        "max_size": i.max_size,
        "extents": i.extents_on_disk,
        "capacity": i.capacity,
        "bytes_in_use": i.bytes_in_use,
        "checkpoint_lsn": i.checkpoint_lsn.0,
        "redo_lsn": i.redo_lsn.0,
        "durable_lsn": i.durable_lsn.0,
        "end_lsn": i.end_lsn.0,
        "epoch": i.epoch,
        "failed": i.failed,
        "commits": i.commits,
        "fsyncs": i.fsyncs,
        "bytes_written": i.bytes_written,
        "log_full_events": i.log_full_events,
        "checkpoints": i.checkpoints,
    })
}
