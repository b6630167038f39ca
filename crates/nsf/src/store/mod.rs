//! The server-wide attachment store (design.md §2.9, I37–I39): content of
//! attachments of at least [`STORE_MIN`] bytes, stored once per server by
//! the SHA-256 of its original bytes, compressed where that helps.

mod carry;
mod content;
mod copy;
mod object;
mod read;
pub mod refs;
mod registry;
mod sweep;
mod write;

pub use carry::CarriedContent;
pub(crate) use carry::{read_carried, stage_carried, stage_held};
pub use content::{
    AttachmentCompression, CompressionLevel, ContentHash, StoredContent, StoredForm, STORE_MIN,
};
pub use read::ObjectReader;
pub use registry::StoreStats;
pub(crate) use registry::{AttachStore, Pin, Pins, STORE_DIR};
pub(crate) use sweep::sweep;
pub use sweep::SweepReport;
pub(crate) use write::{stage, Staged};
