//! Databases and documents.
mod ids;
pub use ids::*;
