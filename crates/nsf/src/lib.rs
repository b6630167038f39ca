//! Databases and documents.
mod ids;
mod json;
mod note;
pub use ids::*;
pub use json::*;
pub use note::*;
