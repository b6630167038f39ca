//! Views and folders: sorted indexes of a database's documents, stored in
//! the database file and kept up to date incrementally.
//!
//! A view is defined by a design note (selection formula, columns, sort,
//! refresh option, whether its index is logged); a folder is a view whose
//! members are chosen explicitly. Each index is a counted B+tree keyed by
//! collation key (see `collate`), so opening, scrolling to a position,
//! finding a key and applying one change all take O(log n) page reads
//! whether the view holds a thousand entries or a million. Updates apply
//! the database's change sequence since the index's last sequence;
//! rebuilds sort externally in bounded memory and bulk-load. Logged
//! indexes commit through the transaction log with the documents; an
//! unlogged index is rebuilt after a crash (I14, docs/design.md).
//!
//! This crate sits on `nsf` (documents, index transactions) and `formula`.

mod catalog;
mod collate;
mod collection;
mod def;
mod delete;
mod entries;
mod error;
mod filing;
mod rebuild;
mod restrict;
mod search;
mod views;

pub use collection::{value_json, Collection, Found, Row, Start};
pub use def::{is_design_note, ColumnDef, Compiled, Kind, Refresh, Sort, ViewDef};
pub use entries::NoteDoc;
pub use error::{ViewError, ViewResult};
pub use filing::FolderEdit;
pub use formula::Value;
pub use rebuild::RebuildReport;
pub use search::search;
pub use views::{UpdateReport, ViewConfig, Views};
