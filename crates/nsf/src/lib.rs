//! Databases and documents.
mod ids;
mod note;
pub use ids::*;
pub use note::*;
