//! The SMTP session's two questions to the engine, answered on the
//! blocking pool (a directory lookup may read pages, a deposit waits for
//! its commits' fsyncs), as the other doors run their jobs.
//!
//! ```text
//!   RCPT  Recipient ─ candidates ─ Directory::resolve ─▶ Verdict
//!           <alice@example.com>   "alice@example.com" (an alias), then
//!                                 "alice" (a short name or alias)
//!           <Postmaster>          "postmaster"
//!   DATA  Delivery ─ recipients resolved again ─ mail::deposit_received
//!                  ─▶ Ok(id) only once durable (I2, I28) │ StoreFailure
//! ```
//!
//! Inbound relays nothing: with no `mail.domains` every recipient is a
//! local lookup, whatever its domain; with them, an address in another
//! domain is refused at RCPT (`550`), as is one nobody answers to. (A
//! signed-in submission may name other domains that a route reaches:
//! the router queues those for outbound delivery.) A name two people answer to (two replicas each accepted it)
//! gets `450`: the sender retries while an administrator fixes the
//! directory, and no mail goes to a guess. The recipients are resolved
//! again when the message is stored, and deposited under the full name
//! of the person each names, so two RCPTs naming one person give one
//! copy; one who was removed in between keeps the address given, and the
//! router reports it undeliverable.

use mail::outbound::OutboundConfig;
use mail::smtp::{Delivery, DeliveryId, Recipient, StoreFailure, Verdict};
use mail::{Address, Directory, MailConfig, MailError, Resolved};
use nsf::Engine;
use std::sync::Arc;
use views::Views;

/// What the SMTP driver stores through.
pub(crate) struct Mailer {
    engine: Arc<Engine>,
    views: Arc<Views>,
    config: MailConfig,
    outbound: OutboundConfig,
}

impl Mailer {
    pub(crate) fn new(
        engine: Arc<Engine>,
        views: Arc<Views>,
        config: MailConfig,
        outbound: OutboundConfig,
    ) -> Mailer {
        Mailer {
            engine,
            views,
            config,
            outbound,
        }
    }

    pub(crate) fn outbound(&self) -> &OutboundConfig {
        &self.outbound
    }

    /// Whether `recipient` may be given at RCPT: a local person, or, when
    /// `relay` (a signed-in submission), an address in another domain
    /// that a route reaches. Inbound, another domain is `550` (no relay).
    pub(crate) fn verify_rcpt(&self, recipient: &Recipient, relay: bool) -> Verdict {
        match self.outbound.remote_domain(&recipient.to_string()) {
            Some(domain) if relay && self.outbound.route(&domain).is_some() => Verdict::Accept,
            Some(_) => Verdict::NoRelay,
            None => self.verify(recipient),
        }
    }

    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    pub(crate) fn views(&self) -> &Views {
        &self.views
    }

    pub(crate) fn config(&self) -> &MailConfig {
        &self.config
    }

    /// Whether `recipient` is a local person (blocking).
    pub(crate) fn verify(&self, recipient: &Recipient) -> Verdict {
        match self.resolve(recipient) {
            Ok(Resolved::Person(_)) => Verdict::Accept,
            Ok(Resolved::Unknown) => Verdict::NoSuchUser,
            Ok(Resolved::Ambiguous(people)) => {
                tracing::warn!(
                    %recipient,
                    "SMTP: the recipient names {} people in the directory; answered 450",
                    people.len()
                );
                Verdict::TryLater
            }
            Err(e) => {
                tracing::warn!(%recipient, error = %e, "SMTP: directory lookup failed; answered 450");
                Verdict::TryLater
            }
        }
    }

    /// Deposits `delivery` (blocking); `Ok` only once it is durable.
    pub(crate) fn store(&self, delivery: &Delivery) -> Result<DeliveryId, StoreFailure> {
        let stored = self.recipients(delivery).and_then(|recipients| {
            let sender = delivery.envelope.sender.as_ref().map(|s| s.to_string());
            mail::deposit_received(
                &self.engine,
                &self.views,
                &self.config,
                &delivery.data,
                sender.as_deref(),
                &recipients,
            )
        });
        match stored {
            Ok(id) => DeliveryId::new(id.message_id.as_str()).map_err(|e| {
                tracing::error!(error = %e, "SMTP: a deposit's id does not fit a reply");
                StoreFailure::Transient
            }),
            Err(e) => {
                let failure = failure(&e);
                tracing::warn!(error = %e, ?failure, "SMTP: message not stored");
                Err(failure)
            }
        }
    }

    /// Each envelope recipient as the full name of the person it names
    /// now, else as given.
    pub(crate) fn recipients(&self, delivery: &Delivery) -> Result<Vec<Address>, MailError> {
        delivery
            .envelope
            .recipients
            .iter()
            .map(|r| {
                // A remote address stays as given: the router queues it.
                if self.outbound.remote_domain(&r.to_string()).is_some() {
                    return Address::parse(&r.to_string());
                }
                match self.resolve(r)? {
                    Resolved::Person(p) => Address::parse(&p.full_name),
                    _ => Address::parse(&r.to_string()),
                }
            })
            .collect()
    }

    /// The first candidate name of `recipient` that someone answers to.
    fn resolve(&self, recipient: &Recipient) -> Result<Resolved, MailError> {
        let directory = Directory::open(&self.engine, &self.views)?;
        let mut last = Resolved::Unknown;
        for name in candidates(recipient) {
            // A name no address can be (quotes, brackets) names nobody.
            let Ok(address) = Address::parse(&name) else {
                continue;
            };
            last = directory.resolve_address(&address)?;
            if !matches!(last, Resolved::Unknown) {
                break;
            }
        }
        Ok(last)
    }
}

/// The names a recipient is looked up by, in order.
fn candidates(recipient: &Recipient) -> Vec<String> {
    match recipient {
        Recipient::Postmaster => vec!["postmaster".into()],
        Recipient::Mailbox(m) => vec![m.to_string(), m.local_part().to_string()],
    }
}

/// The reply class of a deposit's failure (design §10): the engine's own
/// failures are for retrying (`451`, `452` when the disk is full), the
/// message's are final.
pub(crate) fn failure(e: &MailError) -> StoreFailure {
    match e {
        MailError::Nsf(nsf::NsfError::LogFull) => StoreFailure::InsufficientStorage,
        MailError::Nsf(nsf) if is_no_space(&nsf.to_string()) => StoreFailure::InsufficientStorage,
        MailError::Nsf(_) | MailError::View(_) => StoreFailure::Transient,
        MailError::TooLarge { .. } => StoreFailure::ExceedsStorage,
        _ => StoreFailure::Rejected,
    }
}

/// An I/O failure for want of disk space (ENOSPC's text), wherever in
/// the engine it came from.
fn is_no_space(message: &str) -> bool {
    message.to_ascii_lowercase().contains("no space left")
}

#[cfg(test)]
mod tests {
    use super::*;
    use mail::smtp::Mailbox;

    #[test]
    fn a_mailbox_is_looked_up_whole_then_by_its_local_part() {
        let m = Mailbox::parse("Alice@Example.com").unwrap();
        assert_eq!(
            candidates(&Recipient::Mailbox(m)),
            ["Alice@Example.com", "Alice"]
        );
        assert_eq!(candidates(&Recipient::Postmaster), ["postmaster"]);
    }

    #[test]
    fn engine_failures_are_retried_and_message_failures_are_final() {
        let too_large = MailError::TooLarge {
            what: "x".into(),
            size: 2,
            limit: 1,
            unit: "bytes".into(),
        };
        assert_eq!(failure(&too_large), StoreFailure::ExceedsStorage);
        assert_eq!(
            failure(&MailError::BadMessage("no".into())),
            StoreFailure::Rejected
        );
        assert_eq!(
            failure(&MailError::Nsf(nsf::NsfError::LogFull)),
            StoreFailure::InsufficientStorage
        );
        assert!(is_no_space(
            "write failed: No space left on device (os error 28)"
        ));
        assert!(!is_no_space("write failed: Input/output error"));
    }
}
