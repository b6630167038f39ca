//! The command line. The command forms are a contract scripts rely on:
//! `folio --data DIR db create PATH`, `doc put PATH` (JSON on stdin, UNID
//! on stdout, exit 0 only once durable), and so on. Every failure is one
//! line on stderr and a non-zero exit, and changes nothing.
//!
//! This module parses the command line, refuses options the command would
//! ignore, and picks what the command runs over: the data directory
//! (`LocalStore`) or, with `--server`, a server (`RemoteStore`). The
//! commands themselves are written once, over the `Store` trait
//! (`commands.rs`, `viewcli.rs`; see `store.rs`).

use crate::error::{FolioError, FolioResult};
use crate::local::LocalStore;
use crate::mailcli::MailCmd;
use crate::remote::RemoteStore;
use crate::store::Store;
use crate::viewcli::{FolderCmd, ViewCmd};
use crate::{commands, crashtest, datadir, load, output, replcli};
use clap::{Parser, Subcommand};
use std::io::{self, BufWriter, Write};
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
    /// With --server: network compression of the connection: off, lz4,
    /// zstd, zstd:N (zstd at level N, 1 to 19, both ways: 19 for slow
    /// links), or auto (off on loopback, zstd or lz4 elsewhere). A forced
    /// method or level the server does not take is refused, not dropped.
    #[arg(long, global = true)]
    pub compression: Option<client::NetCompression>,
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
    /// Replicate two replicas of a database (the same replica id): only
    /// what changed since their last replication travels. SRC and DST
    /// are paths in the data directory or HOST:PORT/PATH on a server;
    /// documents flow SRC into DST (--pull, the default), DST into SRC
    /// (--push) or both ways (--both). The older spelling: with --server
    /// HOST:PORT, SRC is in the data directory and DST on the server.
    /// Prints a summary of each pull as JSON.
    Replicate {
        src: String,
        dst: String,
        /// pull: SRC into DST; push: DST into SRC; both: pull, then push.
        /// With --server: pull brings DST's (the server's) changes into
        /// SRC, push sends SRC's to DST.
        #[arg(long, value_enum, default_value = "pull")]
        direction: crate::replcli::Direction,
        /// Same as --direction pull.
        #[arg(long, conflicts_with_all = ["push", "both", "direction"])]
        pull: bool,
        /// Same as --direction push.
        #[arg(long, conflicts_with_all = ["both", "direction"])]
        push: bool,
        /// Same as --direction both.
        #[arg(long, conflicts_with = "direction")]
        both: bool,
        /// Only documents this formula selects travel (deletion stubs
        /// always do).
        #[arg(long, alias = "select")]
        selection: Option<String>,
        /// With --server: make SRC a new replica of the server's DST,
        /// then pull.
        #[arg(long)]
        create: bool,
        /// With --server A: the server A replicates its own SRC with DST
        /// on this peer server (HOST:PORT), server to server (A's
        /// administrators only). --direction is A's view: pull brings the
        /// peer's changes into A.
        #[arg(long)]
        peer: Option<String>,
        /// With --peer: the user A signs in to the peer as; the password
        /// (or an API token) is read from FOLIO_PEER_PASSWORD.
        #[arg(long)]
        peer_user: Option<String>,
    },
    /// Print every document a formula selects, as JSON lines.
    Search {
        path: String,
        formula: String,
        /// Only documents modified at or after this RFC 3339 time.
        #[arg(long)]
        since: Option<String>,
    },
    /// Check a database page by page, keep what can be read, rebuild its
    /// indexes, and give it a new instance id (the server must be
    /// stopped). Exits non-zero when something was (or would be) lost.
    Fixup {
        path: String,
        /// Check and report only; write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Give a database's free pages back to the file system. In place
    /// (default) it runs while users read and write and keeps the
    /// instance id; --copy rewrites the file under a new instance id (the
    /// remedy for damage; the database must not be in use). Reclaims
    /// pages leaked by interrupted commits. Prints bytes and pages
    /// before and after as JSON. With --server, asks the server (Manager
    /// access or a server administrator).
    Compact {
        path: String,
        /// Rewrite the file (new instance id) instead of compacting in place.
        #[arg(long)]
        copy: bool,
        /// Report what would be given back; write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// The transaction log.
    #[command(subcommand)]
    Log(LogCmd),
    /// Look inside database and log files (read only; opens no data
    /// directory, so it works beside a running server).
    #[command(subcommand)]
    Dump(crate::dumpcli::DumpCmd),
    /// Archive style: copy the completed log extents not yet archived to
    /// the archive directory, verify them, and let the log reuse them.
    /// Prints extents, bytes and time as JSON. With --server, asks the
    /// server (administrators only; DIR is on the server).
    Archive {
        /// The archive directory (default: setting translog.archive_dir).
        #[arg(long)]
        to: Option<PathBuf>,
    },
    /// Online backup (archive style): copy databases while users write,
    /// consistent through the log, into DEST with a manifest; the log
    /// range the copies need is archived. Prints the summary as JSON.
    /// With --server, asks the server (administrators only; DEST is an
    /// absolute directory on the server).
    Backup {
        /// The backup directory (empty or new).
        dest: PathBuf,
        /// A database to copy (repeatable; default: every database).
        #[arg(long = "db")]
        dbs: Vec<String>,
    },
    /// Restore databases from a backup and roll them forward with the
    /// archived and live log, to the latest commit or to --until (the
    /// server must be stopped). Prints what was restored as JSON.
    Restore {
        /// The backup directory.
        backup: PathBuf,
        /// The database of the backup to restore (default: every one).
        #[arg(long)]
        db: Option<String>,
        /// Roll forward only to the last commit at or before this RFC 3339
        /// time.
        #[arg(long)]
        until: Option<String>,
        /// Restore under this path instead (one database; the original
        /// stays as it is).
        #[arg(long)]
        to: Option<String>,
        /// Where archived extents are (default: setting
        /// translog.archive_dir).
        #[arg(long)]
        archive_dir: Option<PathBuf>,
    },
    /// Live information from a running server.
    #[command(subcommand)]
    Show(ShowCmd),
    /// A database's access-control list.
    #[command(subcommand)]
    Acl(AclCmd),
    /// Mail: the directory of people, mail files, sending.
    #[command(subcommand)]
    Mail(crate::mailcli::MailCmd),
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
        /// Give it the mail template's design: an Inbox folder and the
        /// All Documents, Drafts, Sent and Calendar views.
        #[arg(long)]
        mail: bool,
    },
    /// List databases.
    List,
    /// Show a database's identity and size as JSON.
    Info { path: String },
    /// Check a database's consistency (trees, indexes, note encoding).
    Check { path: String },
    /// Delete a database (its Manager or a server administrator). Its
    /// file goes and its log records are never applied again; handles
    /// to it that clients hold answer "the database was deleted".
    Delete { path: String },
    /// Copy a database into a new one: by default a non-replica copy (a
    /// new replica id; the same documents, ACL, views and folders, which
    /// start empty); with --replica a new replica (the same replica id)
    /// filled by a full replication. Prints its description.
    Copy {
        src: String,
        dst: String,
        /// Make DST a replica of SRC.
        #[arg(long)]
        replica: bool,
    },
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
    /// Remove an attachment from a document (needs the right to edit it).
    Delete {
        path: String,
        unid: String,
        name: String,
        /// Only if the document is still at this sequence number.
        #[arg(long)]
        seq: Option<u32>,
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

/// Runs one command. Errors are returned for `main` to print as one line.
pub fn run(args: Args) -> FolioResult<()> {
    let args = crate::replspec::normalize(args)?;
    check_options(&args)?;
    match &args.cmd {
        Cmd::Serve(sa) => serve(&args, sa),
        Cmd::User(cmd) => crate::usercli::run(cmd, &args),
        Cmd::Dump(cmd) => {
            let mut out = BufWriter::new(io::stdout().lock());
            let result = crate::dumpcli::run(cmd, &mut out);
            result.and(out.flush().map_err(output::write_failed))
        }
        Cmd::Load(cmd) => load::run(cmd, &args).map_err(FolioError::Workload),
        Cmd::Debug(DebugCmd::CrashWorkload(c)) => {
            crashtest::run_child(c, &args).map_err(FolioError::Workload)
        }
        cmd => match (&args.server, cmd) {
            (Some(server), Cmd::Replicate { peer: Some(_), .. }) => {
                replicate_server_to_server(&args, server)
            }
            (Some(server), Cmd::Replicate { .. }) => replicate_with_server(&args, server),
            (Some(server), _) => over_server(&args, server),
            // `show stats` asks the local server by default.
            (None, Cmd::Show(_)) => over_server(&args, client::DEFAULT_ADDR),
            (None, _) => over_data_directory(&args),
        },
    }
}

/// Runs the command on the data directory, then closes it (flush and
/// checkpoint) whether or not the command succeeded.
fn over_data_directory(args: &Args) -> FolioResult<()> {
    let store = LocalStore::open(args.data_dir(), args.config.as_deref())?;
    let result = match &args.cmd {
        Cmd::Db(DbCmd::Copy {
            src,
            dst,
            replica: true,
        }) => to_console(|out| replcli::copy_replica(&store, src, dst, out)),
        Cmd::Replicate {
            src,
            dst,
            direction,
            selection,
            ..
        } => to_console(|out| {
            replcli::replicate(&store, (src, dst), *direction, selection.as_deref(), out)
        }),
        cmd => on_console(&store, cmd),
    };
    let closed = store.close();
    result.and(closed)
}

/// `replicate --server`: the data directory and a server at once.
fn replicate_with_server(args: &Args, server: &str) -> FolioResult<()> {
    let Cmd::Replicate {
        src,
        dst,
        direction,
        selection,
        create,
        ..
    } = &args.cmd
    else {
        return Err(FolioError::Internal("not a replicate command".into()));
    };
    let client = crate::remote::Endpoint::from_args(args, server)?.connect("folio replicate")?;
    let store = LocalStore::open(args.data_dir(), args.config.as_deref())?;
    crate::replprogress::enable();
    let result = to_console(|out| {
        replcli::replicate_remote(
            &store,
            &client,
            (src, dst),
            *direction,
            selection.as_deref(),
            *create,
            out,
        )
    });
    client.close();
    let closed = store.close();
    result.and(closed)
}

/// `replicate --server A --peer B`: asks A to replicate with B.
fn replicate_server_to_server(args: &Args, server: &str) -> FolioResult<()> {
    let Cmd::Replicate {
        src,
        dst,
        direction,
        selection,
        create,
        peer: Some(peer),
        peer_user,
        ..
    } = &args.cmd
    else {
        return Err(FolioError::Internal(
            "not a replicate --peer command".into(),
        ));
    };
    let credentials = match peer_user {
        Some(user) => {
            let password = std::env::var(replcli::PEER_PASSWORD_ENV).map_err(|_| {
                FolioError::Usage(format!(
                    "--peer-user {user}: set its password (or an API token) in {}",
                    replcli::PEER_PASSWORD_ENV
                ))
            })?;
            Some((user.clone(), password))
        }
        None => None,
    };
    let request = protocol::PeerReplication {
        local: src.clone(),
        peer: peer.clone(),
        remote: dst.clone(),
        credentials,
        direction: direction.into(),
        selection: selection.clone(),
        create: *create,
    };
    let client = crate::remote::Endpoint::from_args(args, server)?.connect("folio replicate")?;
    let result = to_console(|out| replcli::replicate_peer(&client, request, out));
    client.close();
    result
}

fn over_server(args: &Args, server: &str) -> FolioResult<()> {
    on_console(&RemoteStore::connect(args, server)?, &args.cmd)
}

/// Runs `f` with standard output.
fn to_console(f: impl FnOnce(&mut dyn Write) -> FolioResult<()>) -> FolioResult<()> {
    let mut out = BufWriter::new(io::stdout().lock());
    let result = f(&mut out);
    let flushed = out.flush().map_err(output::write_failed);
    result.and(flushed)
}

/// Runs the command over `store` with standard input and output.
fn on_console(store: &dyn Store, cmd: &Cmd) -> FolioResult<()> {
    let mut input = io::stdin().lock();
    let mut out = BufWriter::new(io::stdout().lock());
    let result = commands::run(store, cmd, &mut input, &mut out);
    let flushed = out.flush().map_err(output::write_failed);
    result.and(flushed)
}

/// Refuses global options the command would otherwise ignore or take to
/// mean something else: every option given is honoured or refused.
fn check_options(args: &Args) -> FolioResult<()> {
    use load::LoadCmd;
    let given = |set: bool, name: &str| set.then(|| name.to_string());
    let server = given(args.server.is_some(), "--server");
    let user = given(args.user.is_some(), "--user");
    let tls_ca = given(args.tls_ca.is_some(), "--tls-ca");
    let compression = given(args.compression.is_some(), "--compression");
    let data = given(args.data.is_some(), "--data");
    let config = given(args.config.is_some(), "--config");
    let refuse = |opts: &[&Option<String>], why: &str| -> FolioResult<()> {
        match opts.iter().find_map(|o| o.as_deref()) {
            Some(opt) => Err(FolioError::Usage(format!("{opt} {why}"))),
            None => Ok(()),
        }
    };
    match &args.cmd {
        Cmd::Serve(_) => refuse(
            &[&server, &user, &tls_ca, &compression],
            "does not apply to serve: it serves its data directory on --listen and --http-listen",
        ),
        Cmd::User(_) => refuse(
            &[&server, &user, &tls_ca, &compression, &config],
            "does not apply to user commands: they change <data>/users.json directly",
        ),
        Cmd::Debug(_) => Ok(()),
        Cmd::Dump(_) => refuse(
            &[&server, &user, &tls_ca, &compression, &data, &config],
            "does not apply to dump: it reads the file or directory it is given, and nothing else",
        ),
        Cmd::Load(l) => {
            refuse(
                &[&data, &config],
                "does not apply to load workloads: they make their own data in a temporary directory (--dir)",
            )?;
            refuse(
                &[&compression],
                "does not apply to load workloads: each chooses its connections' compression (load replication measures them all)",
            )?;
            match l {
                LoadCmd::Bigview(_) => refuse(
                    &[&server, &user, &tls_ca, &compression],
                    "does not apply to load bigview: it measures the embedded engine only",
                ),
                LoadCmd::Compact(_) => refuse(
                    &[&server, &user, &tls_ca],
                    "does not apply to load compact: it measures the embedded engine only",
                ),
                LoadCmd::Backup(_) => refuse(
                    &[&server, &user, &tls_ca],
                    "does not apply to load backup: it measures the embedded engine only",
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
        Cmd::Replicate { peer: None, peer_user: Some(_), .. } => Err(FolioError::Usage(
            "--peer-user applies only with --peer HOST:PORT".into(),
        )),
        Cmd::Replicate { peer: Some(_), .. } if server.is_none() => Err(FolioError::Usage(
            "--peer names the server's peer: give --server HOST:PORT (the server that replicates)".into(),
        )),
        // Server to server: runs on the server, nothing here is opened.
        Cmd::Replicate { peer: Some(_), .. } => refuse(
            &[&data, &config],
            "does not apply with --peer: the server replicates its own database",
        ),
        // The one command with both: SRC in the data directory, DST on
        // the server.
        Cmd::Replicate { .. } if server.is_some() => Ok(()),
        Cmd::Replicate { create: true, .. } => Err(FolioError::Usage(
            "--create makes a local replica of a server database: give --server HOST:PORT (embedded, use db copy --replica)".into(),
        )),
        Cmd::Mail(MailCmd::Send { from, .. }) if server.is_some() && from.is_some() => Err(
            FolioError::Usage("--from does not apply with --server: the sender is the signed-in user".into()),
        ),
        Cmd::Mail(MailCmd::Send { from: None, .. }) if server.is_none() => Err(FolioError::Usage(
            "mail send needs --from NAME (a person in the directory): embedded, nobody is signed in".into(),
        )),
        Cmd::Mail(MailCmd::Meeting { from: Some(_), .. }) if server.is_some() => Err(
            FolioError::Usage("--from does not apply with --server: you act as the signed-in user".into()),
        ),
        Cmd::Mail(MailCmd::Meeting { from: None, .. }) if server.is_none() => Err(FolioError::Usage(
            "mail meeting needs --from NAME (a person in the directory): embedded, nobody is signed in".into(),
        )),
        // Refused before connecting: fixup rewrites the file, which only a
        // process holding the data directory (no server running) may do.
        Cmd::Fixup { .. } if server.is_some() => {
            Err(FolioError::NeedsDataDirectory { command: "fixup" })
        }
        // Likewise: restore replaces a file, which no running server may hold.
        Cmd::Restore { .. } if server.is_some() => {
            Err(FolioError::NeedsDataDirectory { command: "restore" })
        }
        _ if server.is_some() => refuse(
            &[&data, &config],
            "does not apply with --server: the command runs on the server, against its own data directory",
        ),
        _ => refuse(&[&user, &tls_ca, &compression], "applies only with --server HOST:PORT"),
    }
}

/// Runs the server until SIGTERM/SIGINT, then lets requests in flight
/// finish, stops the background tasks and closes the engine cleanly
/// (flush and checkpoint), even if a job still holds it.
fn serve(args: &Args, sa: &ServeArgs) -> FolioResult<()> {
    let data_dir = args.data_dir();
    let file =
        crate::config::load(data_dir, args.config.as_deref()).map_err(FolioError::Settings)?;
    let mut settings = file
        .server_settings(data_dir)
        .map_err(FolioError::Settings)?;
    let mut overrides = String::new();
    if let Some(l) = &sa.listen {
        overrides.push_str(&format!("listen = {l:?}\n"));
    }
    if let Some(l) = &sa.http_listen {
        overrides.push_str(&format!("http_listen = {l:?}\n"));
    }
    if !overrides.is_empty() {
        let o = crate::config::parse(&overrides)
            .and_then(|o| o.server_settings(data_dir))
            .map_err(FolioError::Usage)?;
        if sa.listen.is_some() {
            settings.listen = o.listen;
        }
        if sa.http_listen.is_some() {
            settings.http_listen = o.http_listen;
        }
    }
    if sa.tls_self_signed {
        if settings.tls.cert.is_some() {
            return Err(FolioError::Usage(
                "--tls-self-signed cannot be combined with tls.cert in the settings".into(),
            ));
        }
        settings.tls.self_signed = true;
    }
    let replication =
        crate::peerrepl::config::entries(&file.replication, &|v| std::env::var(v).ok())
            .map_err(FolioError::Settings)?;
    let purge_interval = file.purge_interval().map_err(FolioError::Settings)?;
    let (mut engine_cfg, view_cfg) = datadir::settings_of(&file, data_dir)?;
    if file.max_open_databases.is_none() {
        // No limit set: the largest whose ceiling fits the descriptors
        // the listeners leave (design.md I19).
        let descriptors = server::engine_descriptors(&settings)?;
        engine_cfg.max_open_databases = nsf::EngineConfig::open_databases_within(descriptors);
        tracing::info!(
            "max_open_databases {} (sized from the {descriptors} descriptors the listeners \
             leave to the engine; set max_open_databases to choose)",
            engine_cfg.max_open_databases
        );
    }
    let dd = datadir::open(data_dir, (engine_cfg, view_cfg))?;
    let (engine, views, lock) = dd.into_parts();
    let databases = engine.list_databases()?.len();
    let logged = engine.is_logged();
    let data = data_dir.display().to_string();
    let router = file.router_config().map_err(FolioError::Settings)?;
    let mut host = server::Host::new(engine, views)?;
    let task = server::RouterTask::new(
        host.engine().clone(),
        host.views().clone(),
        host.stats(),
        router,
        settings.outbound.clone(),
    );
    host.add_task(task)?;
    if !settings.outbound.domains().is_empty() {
        let helo = file.smtp.server_name.clone();
        let task = server::OutboundTask::new(
            host.engine().clone(),
            host.views().clone(),
            host.stats(),
            settings.outbound.clone(),
            router.expire(),
            helo,
        );
        host.add_task(task)?;
    }
    let limits = replica::local::net::Limits::for_attachments(settings.limits.max_attachment_bytes);
    crate::peerrepl::install(&mut host, replication, purge_interval, limits)?;
    let served = server::run(
        settings,
        host,
        |b| {
            let tls = match &b.tls_cert {
                Some(c) => format!(", TLS with certificate {}", c.display()),
                None => String::new(),
            };
            let http = b.http.map_or("off".to_string(), |a| a.to_string());
            let smtp = match b.smtp {
                Some(a) => format!(", smtp {a}"),
                None => String::new(),
            };
            let imap = match b.imap {
                Some(a) => format!(", imap {a}"),
                None => String::new(),
            };
            let submission = match b.submission {
                Some(a) => format!(", submission {a}"),
                None => String::new(),
            };
            let imaps = match b.imaps {
                Some(a) => format!(", imaps {a}"),
                None => String::new(),
            };
            let submissions = match b.submissions {
                Some(a) => format!(", submissions {a}"),
                None => String::new(),
            };
            let couchdb = match b.couchdb {
                Some(a) => format!(", couchdb {a}"),
                None => String::new(),
            };
            eprintln!(
                "folio: serving data directory {data} ({databases} databases, log {}) on native {}, http {http}{smtp}{submission}{submissions}{imap}{imaps}{couchdb}{tls}; Ctrl-C to stop",
                if logged { "on" } else { "off" },
                b.native,
            );
        },
        None,
    );
    drop(lock);
    served?;
    eprintln!("folio: stopped (engine flushed and checkpointed)");
    Ok(())
}
