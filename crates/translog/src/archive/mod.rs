//! Archive style's two halves: copying completed extents out of the log
//! (`run`), and reading the log back across the archive and the live log
//! (`read`), which restore rolls forward with.

mod read;
mod run;

pub use read::{ArchivedLog, LogRecord, RecordBody, Records};
pub(crate) use run::run;
pub use run::ArchiveReport;
