//! Outbound delivery's network side: the task that hands queue entries
//! (`mail::outbound`, `mail.out.fdb`) to their routes over SMTP, and the
//! client it speaks with (design.md I58).
//!
//! ```text
//!   task.rs    the `outbound` task: due entries, attempts, records, DSNs,
//!              `outbound.*` statistics
//!   client.rs  the SMTP client: one transaction per attempt, STARTTLS
//!              when offered, each recipient's answer
//! ```

mod client;
mod task;

pub use task::OutboundTask;
