//! The SMTP session through its public face: per-state rules, the RFC
//! example conversations, and properties over arbitrary input.

mod conversations;
mod driver;
mod properties;
mod states;
mod submission;
