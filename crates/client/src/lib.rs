//! The Folio client library (work in progress).
