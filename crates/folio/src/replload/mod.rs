//! `folio load replication`: replica creation and incremental replication
//! over simulated slow links (WORKLOADS.md "replication"), modelled on
//! the classic server's network-compression study (seed 004), and the
//! large-database figures of issue 14's targets.
//!
//! The source is a `folio serve` the tool starts in a temporary
//! directory (or `--server`); the target is a replica in a data
//! directory of its own, pulled into in this process exactly as `folio
//! replicate LOCAL REMOTE --server --create` does — a client replicating
//! with its server, as in the classic study.
//!
//! ```text
//!   args.rs     the options and their checks
//!   link.rs     the rate-limiting, delaying TCP proxy that makes a link
//!   corpus.rs   the seeded mail corpus and its best-compressed size
//!   source.rs   the source server (per variant) and uploading to it
//!   pull.rs     one measured pull through a link into a target
//!   links.rs    both scenarios per variant × link, savings against off
//!   large.rs    100,000 small documents: LAN creation, nothing-changed rerun
//!   report.rs   report.html
//! ```

mod args;
pub mod corpus;
mod large;
pub mod link;
mod links;
mod pull;
mod report;
mod source;

pub use args::{ReplArgs, Scenario, Variant};

use crate::cli::Args;
use serde_json::json;

/// `folio load replication`.
pub fn run(a: &ReplArgs, args: &Args) -> Result<(), String> {
    a.check(args.server.is_some())?;
    let server = match &args.server {
        Some(addr) => Some(source::Source::remote(
            crate::remote::Endpoint::from_args(args, addr).map_err(|e| e.to_string())?,
        )),
        None => None,
    };
    let base = match &a.dir {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
    .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let links = if a.scenario.contains(&Scenario::Links) {
        Some(links::run(a, server, base.path())?)
    } else {
        None
    };
    let large = if a.scenario.contains(&Scenario::Large) {
        Some(large::run(a, base.path())?)
    } else {
        None
    };
    let result = json!({
        "workload": "replication",
        "settings": {
            "scenarios": a.scenario.iter().map(|s| format!("{s:?}").to_lowercase()).collect::<Vec<_>>(),
            "links": a.link.iter().map(|l| l.name.clone()).collect::<Vec<_>>(),
            "variants": a.variant.iter().map(|v| v.name()).collect::<Vec<_>>(),
            "corpus": format!("{} documents, {} MB; +{} documents, {} MB", a.docs, a.corpus_mb, a.add, a.corpus_mb / 2.0),
            "one-way delay on kbit links": "50 ms",
            "network compression": format!("{} (forced; off for the off variant)", a.network_compression),
            "attachment level": a.attachment_level,
            "large documents": a.large_docs,
            "server": args.server.clone().unwrap_or_else(|| "started by the tool (loopback)".into()),
            "seed": a.seed,
        },
        "machine": crate::load::machine(),
        "links": links,
        "large": large,
    });
    report::write(&a.out, &result)?;
    println!("result.json and report.html in {}", a.out.display());
    Ok(())
}
