//! The `view`, `folder` and `search` commands, each written once over a
//! [`Store`].
//!
//! Reads print JSON lines (one row or document per line) so they stream
//! and pipe into other tools; a bad formula, column or refresh option is
//! refused before the store is asked, and an unknown view is one line on
//! stderr, a non-zero exit, and no change.

use crate::commands::parse_unid;
use crate::error::{FolioError, FolioResult};
use crate::output;
use crate::store::{FolderChange, Store};
use clap::Subcommand;
use protocol::{ReadFlags, Start};
use std::io::Write;
use views::{ColumnDef, Kind, Refresh, ViewDef};

#[derive(Subcommand, Debug)]
pub enum ViewCmd {
    /// Create a view (or, with --folder, a folder).
    Create {
        path: String,
        name: String,
        /// Selection formula (required for views, e.g. `SELECT @All`).
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
        count: u32,
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
    /// Delete a view or folder and its index (the name may then be
    /// defined again; documents are not touched).
    Delete { path: String, name: String },
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

/// `folio view …`.
pub fn view(store: &dyn Store, c: &ViewCmd, out: &mut dyn Write) -> FolioResult<()> {
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
            let kind = if *folder { Kind::Folder } else { Kind::View };
            let refresh = refresh
                .parse::<Refresh>()
                .map_err(|e| FolioError::BadInput(e.to_string()))?;
            let def = view_def(name, kind, select.as_deref(), columns, *logged, refresh)?;
            store.create_view(path, &def)
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
            let page = store.read_view(path, name, &from, *count, flags)?;
            for r in &page.rows {
                output::line(out, &output::row(r, &page.titles))?;
            }
            match page.total {
                Some(n) => output::line(out, &output::total(n)),
                None => Ok(()),
            }
        }
        ViewCmd::Find {
            path,
            name,
            key,
            prefix,
        } => output::line(
            out,
            &output::found(store.find_in_view(path, name, key, *prefix)?),
        ),
        ViewCmd::Delete { path, name } => store.delete_view(path, name),
        ViewCmd::Update { path, name } => {
            output::line(out, &output::view_update(&store.update_view(path, name)?))
        }
        ViewCmd::Rebuild { path, name } => {
            output::line(out, &output::serialized(&store.rebuild_view(path, name)?)?)
        }
        ViewCmd::List { path } => {
            for v in store.list_views(path)? {
                output::line(out, &output::view_summary(&v))?;
            }
            Ok(())
        }
    }
}

/// A checked view definition from the `view create` arguments: bad
/// columns and formulas are refused before the store is asked.
pub fn view_def(
    name: &str,
    kind: Kind,
    select: Option<&str>,
    columns: &[String],
    logged: bool,
    refresh: Refresh,
) -> FolioResult<ViewDef> {
    let bad = |e: views::ViewError| FolioError::BadInput(e.to_string());
    let columns = columns
        .iter()
        .map(|c| ColumnDef::parse(c))
        .collect::<Result<Vec<_>, _>>()
        .map_err(bad)?;
    let mut def = match kind {
        Kind::Folder if select.is_some() => {
            return Err(FolioError::Usage(
                "a folder has no selection formula; drop --select".into(),
            ))
        }
        Kind::Folder => ViewDef::folder(name, columns),
        Kind::View => ViewDef::view(name, select.unwrap_or(""), columns),
    };
    def.logged = logged;
    def.refresh = refresh;
    def.check_new().map_err(bad)?;
    def.compile().map_err(bad)?;
    Ok(def)
}

/// `folio folder add|remove …`: every UNID is checked before the store
/// is asked, and the store changes all of them or none.
pub fn folder(store: &dyn Store, c: &FolderCmd) -> FolioResult<()> {
    let (path, name, unids, change) = match c {
        FolderCmd::Add { path, name, unids } => (path, name, unids, FolderChange::Add),
        FolderCmd::Remove { path, name, unids } => (path, name, unids, FolderChange::Remove),
    };
    let unids = unids
        .iter()
        .map(|u| parse_unid(u))
        .collect::<FolioResult<Vec<_>>>()?;
    store.change_folder(path, name, &unids, change)
}

/// `folio search PATH FORMULA [--since TIME]`.
pub fn search(
    store: &dyn Store,
    path: &str,
    formula: &str,
    since: Option<&str>,
    out: &mut dyn Write,
) -> FolioResult<()> {
    let since = since
        .map(|s| {
            nsf::Timestamp::parse_rfc3339(s)
                .map(|t| protocol::Timestamp(t.0))
                .ok_or_else(|| {
                    FolioError::BadInput(format!("--since {s:?}: expected an RFC 3339 time"))
                })
        })
        .transpose()?;
    formula::Formula::parse(formula)
        .map_err(|e| FolioError::BadInput(format!("bad search formula: {e}")))?;
    store.search(path, formula, since, &mut |d| {
        output::line(out, &output::document(&d))
    })?;
    Ok(())
}
