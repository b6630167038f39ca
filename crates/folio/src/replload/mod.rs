//! `folio load replication`: replica creation and incremental replication
//! over simulated slow links (WORKLOADS.md "replication"), modelled on
//! the classic server's network-compression study (seed 004).
//!
//! ```text
//!   link.rs     the rate-limiting, delaying TCP proxy that makes a link
//!   corpus.rs   the seeded mail corpus and its best-compressed size
//! ```

pub mod corpus;
pub mod link;
