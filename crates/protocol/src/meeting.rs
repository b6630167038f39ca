//! Meetings over the network: create, respond, reschedule, cancel and
//! read, as one request variant (`Request::Meeting`) carrying a
//! [`MeetingRequest`] and one answer variant (`Response::Meeting`)
//! carrying a [`MeetingAnswer`] (docs/protocol.md §5.2).
//!
//! Like the mail user requests (`mailadmin.rs`), the calendar keeps to
//! one tag of each top-level enum and grows here by appended variants.
//! The acting person is the signed-in user's person in the directory; a
//! server administrator may name another with `on_behalf_of` (a gateway
//! or load driver acting for many people over few connections), the
//! same rule as `SendMail`. Times are [`Timestamp`]s (microseconds since
//! 1970, UTC), not text: a typed record the mail layer defines.

use crate::ids::{Timestamp, Unid};
use serde::{Deserialize, Serialize};

#[cfg(test)]
use proptest_derive::Arbitrary;

/// A meeting operation. The variant order is the wire format.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub enum MeetingRequest {
    /// Creates a meeting chaired by the acting person and invites every
    /// invitee; answered with `Created`.
    Create {
        /// One line.
        subject: String,
        /// Markdown.
        body: String,
        /// When it starts.
        start: Timestamp,
        /// When it ends (not before `start`).
        end: Timestamp,
        /// Where.
        location: String,
        /// Addresses, each naming one person in the directory.
        invitees: Vec<String>,
    },
    /// Accepts (`accept: true`) or declines the meeting as an invitee;
    /// answered with `Sent`.
    Respond {
        /// The meeting (its `ApptUNID`).
        appt: Unid,
        /// Accept, else decline.
        accept: bool,
    },
    /// Moves the meeting (its chair only); answered with `Sent`.
    Reschedule {
        /// The meeting.
        appt: Unid,
        /// The new start.
        start: Timestamp,
        /// The new end.
        end: Timestamp,
        /// The new place (`None`: unchanged).
        location: Option<String>,
    },
    /// Cancels the meeting (its chair only); answered with `Sent`.
    Cancel {
        /// The meeting.
        appt: Unid,
    },
    /// The meeting as the acting person's own entry holds it (the
    /// chair's with every answer); answered with `Meeting`.
    Read {
        /// The meeting.
        appt: Unid,
    },
}

/// The answer to a [`MeetingRequest`]. The variant order is the wire
/// format.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub enum MeetingAnswer {
    /// The meeting made; the invitation is durable in a mail box.
    Created {
        /// The meeting's id (`ApptUNID`).
        appt: Unid,
        /// The invitation's message id.
        message_id: String,
    },
    /// The notice (answer, reschedule, cancel) is durable in a mail box.
    Sent {
        /// The notice's message id.
        message_id: String,
    },
    /// A meeting as an entry holds it.
    Meeting(MeetingInfo),
}

/// A meeting as the reader's own entry holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(Arbitrary))]
pub struct MeetingInfo {
    /// The meeting's id.
    pub appt: Unid,
    /// Its subject.
    pub subject: String,
    /// When it starts.
    pub start: Timestamp,
    /// When it ends.
    pub end: Timestamp,
    /// Where.
    pub location: String,
    /// The chair's full name.
    pub chair: String,
    /// Each invitee and their answer (`needs-action`, `accepted`,
    /// `declined`); empty unless the reader is the chair.
    pub attendees: Vec<(String, String)>,
}

#[cfg(test)]
mod tests {
    use crate::{FrameType, MeetingAnswer, MeetingRequest, Request, Response, Unid};

    /// Meetings sit after every earlier request and answer: the tag is
    /// the last variant's, and the operation's tag follows it.
    #[test]
    fn meeting_requests_follow_send_mail() {
        let r = Request::Meeting {
            op: MeetingRequest::Cancel {
                appt: Unid([7; 16]),
            },
            on_behalf_of: None,
        };
        let bytes = r.encode().unwrap();
        assert_eq!(&bytes[..2], [32, 3]);
        assert_eq!(Request::decode(&bytes).ok(), Some(r));
        let a = Response::Meeting(MeetingAnswer::Sent {
            message_id: "m".into(),
        });
        let bytes = a.encode().unwrap();
        assert_eq!(bytes, [25, 1, 1, b'm']);
        assert_eq!(Response::decode(&bytes, FrameType::Response).ok(), Some(a));
    }
}
