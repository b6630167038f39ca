//! The `view`, `folder` and `search` commands.
//!
//! Reads print JSON lines (one row or document per line) so they stream
//! and pipe into other tools; a bad formula or an unknown view is one line
//! on stderr, a non-zero exit, and no change.

use clap::Subcommand;
use nsf::{note_to_json, Database, Engine, Timestamp, Unid};
use std::io::{self, BufWriter, Write};
use std::sync::Arc;
use views::{ColumnDef, Refresh, Row, Start, ViewDef, Views};

#[derive(Subcommand, Debug)]
pub enum ViewCmd {
    /// Create a view (or, with --folder, a folder).
    Create {
        path: String,
        name: String,
        /// Selection formula (views; default `SELECT @All`).
        #[arg(long)]
        select: Option<String>,
        /// `TITLE=FORMULA[:asc|:desc][:cat][:case]`, repeatable, in order.
        #[arg(long = "column", required = true)]
        columns: Vec<String>,
        /// Write index changes through the transaction log.
        #[arg(long)]
        logged: bool,
        /// Make a folder (explicit membership) instead of a view.
        #[arg(long)]
        folder: bool,
        /// auto, auto_after_first_use (default), manual, every:HOURS.
        #[arg(long, default_value = "auto_after_first_use")]
        refresh: String,
    },
    /// Print rows as JSON lines.
    Read {
        path: String,
        name: String,
        /// Start at this entry position (0-based).
        #[arg(long, conflicts_with = "key")]
        start: Option<u64>,
        /// Start at the first entry whose first sorted column is KEY.
        #[arg(long)]
        key: Option<String>,
        /// With --key: match entries starting with KEY.
        #[arg(long)]
        prefix: bool,
        #[arg(long, default_value_t = 40)]
        count: usize,
        /// Read towards the start.
        #[arg(long)]
        backward: bool,
        /// Include category rows (categorized views).
        #[arg(long)]
        categories: bool,
        /// End with a line giving the number of entries in the view.
        #[arg(long)]
        total: bool,
    },
    /// Find entries by key: prints the first position and the count.
    Find {
        path: String,
        name: String,
        key: String,
        #[arg(long)]
        prefix: bool,
    },
    /// Apply the changes since the index's last update.
    Update { path: String, name: String },
    /// Rebuild the index from scratch.
    Rebuild { path: String, name: String },
    /// List views and folders.
    List { path: String },
}

#[derive(Subcommand, Debug)]
pub enum FolderCmd {
    /// Add documents to a folder.
    Add {
        path: String,
        name: String,
        #[arg(required = true)]
        unids: Vec<String>,
    },
    /// Remove documents from a folder.
    Remove {
        path: String,
        name: String,
        #[arg(required = true)]
        unids: Vec<String>,
    },
}

type CliResult = Result<(), String>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn open_db(engine: &Engine, path: &str) -> Result<Arc<Database>, String> {
    engine.open_database(path).map_err(err)
}

pub fn view_cmd(engine: &Engine, views: &Views, c: &ViewCmd) -> CliResult {
    match c {
        ViewCmd::Create {
            path,
            name,
            select,
            columns,
            logged,
            folder,
            refresh,
        } => {
            let def = view_def(name, select.as_deref(), columns, *logged, *folder, refresh)?;
            let db = open_db(engine, path)?;
            views.create(&db, def).map_err(err)
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
            let db = open_db(engine, path)?;
            let coll = views.open(&db, name).map_err(err)?;
            say_rebuilt(&coll);
            let from = match key {
                Some(k) => Start::Key {
                    key: k.clone(),
                    prefix: *prefix,
                },
                None => Start::Position(start.unwrap_or(0)),
            };
            let rows = coll
                .read(&from, *count, *backward, *categories)
                .map_err(err)?;
            let titles = coll.titles();
            let mut out = BufWriter::new(io::stdout().lock());
            for r in &rows {
                print_row(&mut out, r, &titles)?;
            }
            if *total {
                print_total(&mut out, coll.count().map_err(err)?)?;
            }
            out.flush().map_err(err)
        }
        ViewCmd::Find {
            path,
            name,
            key,
            prefix,
        } => {
            let db = open_db(engine, path)?;
            let coll = views.open(&db, name).map_err(err)?;
            say_rebuilt(&coll);
            let found = coll.find(key, *prefix).map_err(err)?;
            let v = match found {
                Some(f) => serde_json::json!({"position": f.position, "count": f.count}),
                None => serde_json::json!({"position": null, "count": 0}),
            };
            println!("{v}");
            Ok(())
        }
        ViewCmd::Update { path, name } => {
            let db = open_db(engine, path)?;
            let r = views.update(&db, name).map_err(err)?;
            println!("{}", serde_json::to_string(&r).map_err(err)?);
            Ok(())
        }
        ViewCmd::Rebuild { path, name } => {
            let db = open_db(engine, path)?;
            let r = views.rebuild(&db, name).map_err(err)?;
            println!("{}", serde_json::to_string(&r).map_err(err)?);
            Ok(())
        }
        ViewCmd::List { path } => {
            let db = open_db(engine, path)?;
            for (name, kind) in views.list(&db).map_err(err)? {
                println!("{}", serde_json::json!({"name": name, "kind": kind}));
            }
            Ok(())
        }
    }
}

/// A checked view definition from the `view create` arguments (shared by
/// the embedded and the networked command).
pub fn view_def(
    name: &str,
    select: Option<&str>,
    columns: &[String],
    logged: bool,
    folder: bool,
    refresh: &str,
) -> Result<ViewDef, String> {
    let columns = columns
        .iter()
        .map(|c| ColumnDef::parse(c))
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
    let mut def = if folder {
        if select.is_some() {
            return Err("a folder has no selection formula; drop --select".into());
        }
        ViewDef::folder(name, columns)
    } else {
        ViewDef::view(name, select.unwrap_or(""), columns)
    };
    def.logged = logged;
    def.refresh = refresh.parse::<Refresh>().map_err(err)?;
    // Check everything before touching the database.
    def.check_new().map_err(err)?;
    def.compile().map_err(err)?;
    Ok(def)
}

fn say_rebuilt(coll: &views::Collection<'_>) {
    if let Some(why) = coll.rebuilt.as_ref().filter(|w| *w != "first use") {
        eprintln!("folio: rebuilt the index of {:?}: {why}", coll.name());
    }
}

fn print_row(out: &mut impl Write, r: &Row, titles: &[String]) -> CliResult {
    serde_json::to_writer(&mut *out, &r.to_json(titles)).map_err(err)?;
    writeln!(out).map_err(err)
}

/// The last line of `view read --total` (shared by the embedded and the
/// networked command).
pub fn print_total(out: &mut impl Write, total: u64) -> CliResult {
    writeln!(out, "{}", serde_json::json!({ "total": total })).map_err(err)
}

pub fn folder_cmd(engine: &Engine, views: &Views, c: &FolderCmd) -> CliResult {
    let (path, name, unids, add) = match c {
        FolderCmd::Add { path, name, unids } => (path, name, unids, true),
        FolderCmd::Remove { path, name, unids } => (path, name, unids, false),
    };
    let unids = unids
        .iter()
        .map(|u| u.parse::<Unid>().map_err(err))
        .collect::<Result<Vec<_>, _>>()?;
    let db = open_db(engine, path)?;
    if add {
        views.folder_add(&db, name, &unids).map_err(err)
    } else {
        views.folder_remove(&db, name, &unids).map_err(err)
    }
}

/// `folio search PATH FORMULA [--since TIME]`.
pub fn search_cmd(engine: &Engine, path: &str, formula: &str, since: Option<&str>) -> CliResult {
    let since = match since {
        None => None,
        Some(s) => Some(
            Timestamp::parse_rfc3339(s)
                .ok_or_else(|| format!("--since {s:?}: expected an RFC 3339 time"))?,
        ),
    };
    // A bad formula fails before the database is opened.
    formula::Formula::parse(formula).map_err(|e| format!("bad search formula: {e}"))?;
    let db = open_db(engine, path)?;
    let mut out = BufWriter::new(io::stdout().lock());
    views::search(&db, formula, since, |n| {
        serde_json::to_writer(&mut out, &note_to_json(n))
            .map_err(|e| views::ViewError::Output(e.into()))?;
        writeln!(out).map_err(views::ViewError::Output)
    })
    .map_err(err)?;
    out.flush().map_err(err)
}
