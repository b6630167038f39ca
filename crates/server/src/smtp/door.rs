//! Which door a connection came in by: inbound SMTP (mail for local
//! people, nobody signs in) or submission (RFC 6409: a signed-in person
//! sends). The session is the same machine; what differs is its sign-in
//! policy and whom the driver asks.

use super::mailer::Mailer;
use super::submission::Submitter;
use mail::smtp::{
    AuthFailure, AuthPolicy, Credentials, Delivery, DeliveryId, Identity, Recipient, StoreFailure,
    Verdict,
};
use std::sync::Arc;

#[derive(Clone)]
pub(crate) enum Door {
    Inbound(Arc<Mailer>),
    Submission {
        submitter: Arc<Submitter>,
        /// `submission.plaintext_auth`: passwords without TLS off loopback.
        plaintext_auth: bool,
    },
}

impl Door {
    /// What the listener's log lines call it.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Door::Inbound(_) => "SMTP",
            Door::Submission { .. } => "submission",
        }
    }

    /// The sign-in rule for a connection from a loopback address or not:
    /// passwords in the clear only over TLS, on loopback, or where the
    /// settings allow it (as IMAP decides its plaintext LOGIN).
    pub(crate) fn auth_policy(&self, loopback: bool) -> AuthPolicy {
        match self {
            Door::Inbound(_) => AuthPolicy::Off,
            Door::Submission { plaintext_auth, .. } => AuthPolicy::Required {
                cleartext: loopback || *plaintext_auth,
            },
        }
    }

    fn mailer(&self) -> &Arc<Mailer> {
        match self {
            Door::Inbound(m) => m,
            Door::Submission { submitter, .. } => submitter.mailer(),
        }
    }

    /// Blocking: a directory lookup; other domains only for submission.
    pub(crate) fn verify(&self, recipient: &Recipient) -> Verdict {
        let relay = matches!(self, Door::Submission { .. });
        self.mailer().verify_rcpt(recipient, relay)
    }

    /// Blocking: a deposit, `Ok` once durable.
    pub(crate) fn store(&self, delivery: &Delivery) -> Result<DeliveryId, StoreFailure> {
        match self {
            Door::Inbound(m) => m.store(delivery),
            Door::Submission { submitter, .. } => submitter.store(delivery),
        }
    }

    /// Blocking: argon2 and the directory.
    pub(crate) fn authenticate(&self, credentials: &Credentials) -> Result<Identity, AuthFailure> {
        match self {
            // An inbound session never asks (it offers no AUTH).
            Door::Inbound(_) => Err(AuthFailure::Unavailable),
            Door::Submission { submitter, .. } => submitter.authenticate(credentials),
        }
    }
}
