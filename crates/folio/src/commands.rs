//! The database, document, attachment, access-control, log and
//! statistics commands, each written once over a [`Store`] (the view,
//! folder and search commands are in `viewcli.rs`, the mail commands in
//! `mailcli.rs`).
//!
//! A command checks its input first (stdin's JSON, UNIDs, files), so bad
//! input fails the same way whichever store it would have gone to and
//! before anything is touched; then it makes its calls on the store and
//! prints what comes back through `output.rs`.

use crate::cli::{AclCmd, AttachCmd, Cmd, DbCmd, DocCmd, LogCmd, ShowCmd};
use crate::error::{FolioError, FolioResult};
use crate::output;
use crate::store::{JsonObject, Store};
use crate::{mailcli, viewcli};
use protocol::Cursor;
use std::io::{Read, Write};
use std::path::Path;

/// How many changes `doc list` asks for at a time.
const LIST_PAGE: u32 = 1_000;

/// Runs one command over `store`, reading `input` (what stdin gives) and
/// printing to `out`.
pub fn run(
    store: &dyn Store,
    cmd: &Cmd,
    input: &mut dyn Read,
    out: &mut dyn Write,
) -> FolioResult<()> {
    match cmd {
        Cmd::Db(c) => db(store, c, out),
        Cmd::Doc(c) => doc(store, c, input, out),
        Cmd::Attach(c) => attach(store, c, out),
        Cmd::View(c) => viewcli::view(store, c, out),
        Cmd::Folder(c) => viewcli::folder(store, c),
        Cmd::Search {
            path,
            formula,
            since,
        } => viewcli::search(store, path, formula, since.as_deref(), out),
        Cmd::Acl(c) => acl(store, c, input, out),
        Cmd::Mail(c) => mailcli::mail(store, c, input, out),
        Cmd::Fixup { path, dry_run } => fixup(store, path, *dry_run, out),
        Cmd::Compact {
            path,
            copy,
            dry_run,
        } => output::pretty(
            out,
            &output::serialized(&store.compact_database(path, *copy, *dry_run)?)?,
        ),
        Cmd::Log(LogCmd::Info) => output::pretty(out, &output::log_info(&store.log_info()?)),
        Cmd::Archive { to } => {
            output::pretty(out, &output::archived(&store.archive(to.as_deref())?))
        }
        Cmd::Backup { dest, dbs } => crate::backupcli::backup(store, dest, dbs, out),
        Cmd::Restore {
            backup,
            db,
            until,
            to,
            archive_dir,
        } => crate::backupcli::restore(
            store,
            backup,
            crate::backupcli::RestoreArgs {
                db: db.clone(),
                until: until.as_deref(),
                to: to.clone(),
                archive_dir: archive_dir.clone(),
            },
            out,
        ),
        Cmd::Show(ShowCmd::Stats) => output::pretty(out, &output::statistics(&store.statistics()?)),
        Cmd::Serve(_)
        | Cmd::User(_)
        | Cmd::Load(_)
        | Cmd::Debug(_)
        | Cmd::Dump(_)
        | Cmd::Replicate { .. } => Err(FolioError::Internal(
            "serve, user, load, dump, debug and replicate commands do not run over a store".into(),
        )),
    }
}

fn db(store: &dyn Store, c: &DbCmd, out: &mut dyn Write) -> FolioResult<()> {
    match c {
        DbCmd::Create { path, title, mail } => {
            let mut info = store.create_database(path, title)?;
            if *mail {
                for def in mail::design() {
                    store.create_view(path, &def)?;
                }
                info = store.database_info(path)?;
            }
            output::pretty(out, &output::database_info(&info))
        }
        DbCmd::List => {
            for d in store.list_databases()? {
                output::text(out, &d.path)?;
            }
            Ok(())
        }
        DbCmd::Info { path } => {
            output::pretty(out, &output::database_info(&store.database_info(path)?))
        }
        DbCmd::Copy { src, dst, replica } => {
            let c = store.copy_database(src, dst, *replica)?;
            output::pretty(
                out,
                &serde_json::json!({
                    "database": output::database_info(&c.info),
                    "documents": c.documents,
                    "views": c.views,
                }),
            )
        }
        DbCmd::Delete { path } => {
            store.delete_database(path)?;
            output::text(out, &format!("deleted {path}"))
        }
        DbCmd::Check { path } => {
            output::pretty(out, &output::serialized(&store.check_database(path)?)?)
        }
    }
}

/// Prints the fixup report; fails (exit status 1) when something was, or
/// in a dry run would be, lost, so scripts notice.
fn fixup(store: &dyn Store, path: &str, dry_run: bool, out: &mut dyn Write) -> FolioResult<()> {
    let report = store.fixup_database(path, dry_run)?;
    write!(out, "{report}").map_err(output::write_failed)?;
    if report.lost_anything() {
        return Err(FolioError::DataLost(format!(
            "fixup of {path} {} {} note(s) and {} attachment(s){}; see the report",
            if dry_run { "would lose" } else { "lost" },
            report.notes_lost.len(),
            report.attachments_lost.len(),
            if report.header_lost {
                " and the header (title)"
            } else {
                ""
            },
        )));
    }
    Ok(())
}

fn doc(
    store: &dyn Store,
    c: &DocCmd,
    input: &mut dyn Read,
    out: &mut dyn Write,
) -> FolioResult<()> {
    match c {
        DocCmd::Put { path } => {
            let items = read_object(input)?;
            let meta = store.create_document(path, &items)?;
            output::text(out, &meta.unid.to_string())
        }
        DocCmd::Get { path, unid } => {
            let unid = parse_unid(unid)?;
            output::pretty(out, &output::document(&store.read_document(path, unid)?))
        }
        DocCmd::Update { path, unid, force } => {
            let unid = parse_unid(unid)?;
            let changes = read_object(input)?;
            let based_on = based_on(&changes)?;
            let meta = store.update_document(path, unid, based_on, *force, &changes)?;
            output::line(out, &output::changed(&meta))
        }
        DocCmd::Delete { path, unid, seq } => {
            store.delete_document(path, parse_unid(unid)?, *seq)?;
            Ok(())
        }
        DocCmd::List { path } => {
            let mut since = Cursor(0);
            loop {
                let page = store.changes(path, since, LIST_PAGE)?;
                for d in page.docs.iter().filter(|d| !d.deleted) {
                    output::line(out, &output::document(d))?;
                }
                since = page.next;
                if !page.more {
                    return Ok(());
                }
            }
        }
    }
}

fn attach(store: &dyn Store, c: &AttachCmd, out: &mut dyn Write) -> FolioResult<()> {
    match c {
        AttachCmd::Delete {
            path,
            unid,
            name,
            seq,
        } => {
            store.delete_attachment(path, parse_unid(unid)?, name, *seq)?;
            Ok(())
        }
        AttachCmd::Put {
            path,
            unid,
            file,
            name,
            mime,
        } => {
            let unid = parse_unid(unid)?;
            let name = match name {
                Some(n) => n.clone(),
                None => file_name(file)?,
            };
            let what = || format!("cannot open {}", file.display());
            let mut f = std::fs::File::open(file).map_err(|e| FolioError::io(what(), e))?;
            let size = f.metadata().map_err(|e| FolioError::io(what(), e))?.len();
            let stored = store.put_attachment(path, unid, &name, mime, Some(size), &mut f)?;
            output::line(out, &output::attachment(&name, stored))
        }
        AttachCmd::Get { path, unid, name } => {
            store.get_attachment(path, parse_unid(unid)?, name, out)?;
            Ok(())
        }
    }
}

fn acl(
    store: &dyn Store,
    c: &AclCmd,
    input: &mut dyn Read,
    out: &mut dyn Write,
) -> FolioResult<()> {
    match c {
        AclCmd::Show { path } => output::pretty(out, &output::acl(&store.acl(path)?)?),
        AclCmd::Set { path } => {
            let json = read_json(input)?;
            let acl = nsf::Acl::parse_json(&json.to_string())
                .map_err(|e| FolioError::BadInput(e.to_string()))?;
            store.set_acl(path, &acl)
        }
    }
}

/// A document UNID given on the command line.
pub(crate) fn parse_unid(s: &str) -> FolioResult<nsf::Unid> {
    s.parse::<nsf::Unid>()
        .map_err(|e| FolioError::BadInput(e.to_string()))
}

/// The JSON value on standard input.
fn read_json(input: &mut dyn Read) -> FolioResult<serde_json::Value> {
    let mut text = String::new();
    input
        .read_to_string(&mut text)
        .map_err(|e| FolioError::io("reading standard input", e))?;
    serde_json::from_str(&text)
        .map_err(|e| FolioError::BadInput(format!("malformed JSON on stdin: {e}")))
}

/// The JSON object on standard input (a document's items).
fn read_object(input: &mut dyn Read) -> FolioResult<JsonObject> {
    match read_json(input)? {
        serde_json::Value::Object(m) => Ok(m),
        _ => Err(FolioError::BadInput(
            "a document must be a JSON object".into(),
        )),
    }
}

/// The sequence number an update is based on: its `"$seq"`, if any.
fn based_on(changes: &JsonObject) -> FolioResult<Option<u32>> {
    changes
        .get("$seq")
        .map(|v| {
            v.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| {
                    FolioError::BadInput("\"$seq\" must be a non-negative integer".into())
                })
        })
        .transpose()
}

/// The name an attached file gets when `--name` is not given.
pub(crate) fn file_name(p: &Path) -> FolioResult<String> {
    p.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string)
        .ok_or_else(|| {
            FolioError::Usage(format!(
                "{} has no usable file name; pass --name",
                p.display()
            ))
        })
}
