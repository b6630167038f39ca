//! Message submission (RFC 6409): the questions a submission session
//! asks besides the inbound ones, answered on the blocking pool.
//!
//! ```text
//!   AUTH  Credentials ─ Service::authenticate (argon2, the same users and
//!           tokens as HTTP) ─ Service::person_of ─▶ Identity
//!           wrong user or password ─▶ BadCredentials (one answer for both)
//!           no person signs in as the user ─▶ NoSender
//!   RCPT  local people, and other domains a route reaches
//!   DATA  Delivery ─ mail::deposit_submitted(SubmittedBy = the person)
//!                  ─▶ Ok(id) only once durable (I2, I28)
//! ```
//!
//! A person may use as envelope sender (`MAIL FROM`) each alias of theirs
//! that is an address (`alice@example.com`), and their short name at each
//! of `mail.domains` (`alice.smith@example.com`): the directory is the
//! one list of who owns which address, so an administrator grants one
//! with `mail create-user --alias`. The session checks it (553
//! otherwise). Recipients in other domains are taken when a route
//! reaches them (the router queues them, `mail::outbound`).

use super::mailer::{failure, Mailer};
use crate::auth::Secret;
use crate::service::Service;
use crate::ServerError;
use mail::smtp::{AuthFailure, Credentials, Delivery, DeliveryId, Identity, Mailbox, StoreFailure};
use mail::Person;
use std::sync::Arc;

/// What a submission session signs in and stores through.
pub(crate) struct Submitter {
    service: Arc<Service>,
    mailer: Arc<Mailer>,
}

impl Submitter {
    pub(crate) fn new(service: Arc<Service>, mailer: Arc<Mailer>) -> Submitter {
        Submitter { service, mailer }
    }

    /// The recipient lookups are inbound's.
    pub(crate) fn mailer(&self) -> &Arc<Mailer> {
        &self.mailer
    }

    /// Signs `credentials` in (blocking: argon2, the directory).
    pub(crate) fn authenticate(&self, credentials: &Credentials) -> Result<Identity, AuthFailure> {
        let s = &self.service;
        let secret = Secret::parse(credentials.password.clone());
        let caller = s
            .authenticate(&credentials.user, &secret)
            .map_err(|e| match e {
                ServerError::Unauthenticated(_) => {
                    tracing::info!(user = %credentials.user, "submission: sign-in refused");
                    AuthFailure::BadCredentials
                }
                e => {
                    tracing::warn!("submission: a sign-in could not be checked: {e}");
                    AuthFailure::Unavailable
                }
            })?;
        let user = caller.user.unwrap_or_default();
        let person = s.person_of(&user).map_err(|e| {
            tracing::info!(%user, "submission: the user sends no mail: {e}");
            AuthFailure::NoSender
        })?;
        Ok(Identity {
            addresses: addresses(&person, self.mailer.outbound().domains()),
            person: person.full_name,
            user,
        })
    }

    /// Deposits `delivery` from its signed-in person (blocking); `Ok`
    /// only once it is durable.
    pub(crate) fn store(&self, delivery: &Delivery) -> Result<DeliveryId, StoreFailure> {
        let envelope = &delivery.envelope;
        let (Some(identity), Some(sender)) = (&envelope.authenticated, &envelope.sender) else {
            // The session takes no MAIL before AUTH nor a null sender.
            return Err(StoreFailure::Rejected);
        };
        let stored = self.mailer.recipients(delivery).and_then(|recipients| {
            mail::deposit_submitted(
                self.mailer.engine(),
                self.mailer.views(),
                self.mailer.config(),
                &delivery.data,
                &sender.to_string(),
                &identity.person,
                &recipients,
            )
        });
        match stored {
            Ok(id) => {
                tracing::info!(user = %identity.user, message_id = %id.message_id.as_str(), "submission: message deposited");
                DeliveryId::new(id.message_id.as_str()).map_err(|_| StoreFailure::Transient)
            }
            Err(e) => {
                let failure = failure(&e);
                tracing::warn!(error = %e, ?failure, "submission: message not stored");
                Err(failure)
            }
        }
    }
}

/// The envelope senders `person` may use: each alias that is an
/// address, and their short name at each of this server's domains.
fn addresses(person: &Person, domains: &[String]) -> Vec<String> {
    let aliases = person.aliases.iter().cloned();
    let short = domains.iter().map(|d| format!("{}@{d}", person.short_name));
    aliases
        .chain(short)
        .filter_map(|a| Mailbox::parse(&a).ok())
        .map(|m| m.to_string())
        .collect()
}
