//! The Folio server (work in progress).
