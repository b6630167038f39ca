//! Meetings through the native door (`Request::Meeting`) and the
//! embedded command line: a [`MeetingRequest`] in, a [`MeetingAnswer`]
//! out, over the same calls HTTP `/mail/meetings` makes (`calendar.rs`).
//!
//! Both the `folio mail meeting …` commands (embedded, as an
//! administrator naming the person with `--from`) and a client over the
//! network come through here, which is what makes their output the same.
//! Input the wire cannot check (addresses, limits) is checked by the mail
//! layer before anything is written. Durability as in `calendar.rs`:
//! answered once the entry and the notice are durable (I28, I16).

use super::mail::mail_err;
use super::{Caller, Service};
use crate::ServerResult;
use mail::{Address, NewMeeting, NewTime, Response};
use nsf::{Timestamp, Unid};
use protocol::{MeetingAnswer, MeetingInfo, MeetingRequest};

impl Service {
    /// Runs one meeting operation as the caller's person or, for an
    /// administrator, as `on_behalf_of` (see `acting_person`).
    pub fn meeting_op(
        &self,
        caller: &Caller,
        op: MeetingRequest,
        on_behalf_of: Option<&str>,
    ) -> ServerResult<MeetingAnswer> {
        let who = on_behalf_of;
        Ok(match op {
            MeetingRequest::Create {
                subject,
                body,
                start,
                end,
                location,
                invitees,
            } => {
                let m = NewMeeting {
                    subject,
                    body,
                    start: time(start),
                    end: time(end),
                    location,
                    invitees: addresses(&invitees)?,
                };
                let (appt, message_id) = self.create_meeting(caller, who, m)?;
                MeetingAnswer::Created {
                    appt: protocol::Unid(appt.0),
                    message_id,
                }
            }
            MeetingRequest::Respond { appt, accept } => {
                let r = if accept {
                    Response::Accept
                } else {
                    Response::Decline
                };
                let message_id = self.respond_meeting(caller, who, unid(appt), r)?;
                MeetingAnswer::Sent { message_id }
            }
            MeetingRequest::Reschedule {
                appt,
                start,
                end,
                location,
            } => {
                let t = NewTime {
                    start: time(start),
                    end: time(end),
                    location,
                };
                let message_id = self.reschedule_meeting(caller, who, unid(appt), t)?;
                MeetingAnswer::Sent { message_id }
            }
            MeetingRequest::Cancel { appt } => {
                let message_id = self.cancel_meeting(caller, who, unid(appt))?;
                MeetingAnswer::Sent { message_id }
            }
            MeetingRequest::Read { appt } => {
                let m = self.meeting(caller, who, unid(appt))?;
                MeetingAnswer::Meeting(MeetingInfo {
                    appt: protocol::Unid(m.appt_unid.0),
                    subject: m.subject,
                    start: protocol::Timestamp(m.start.0),
                    end: protocol::Timestamp(m.end.0),
                    location: m.location,
                    chair: m.chair,
                    attendees: m
                        .attendees
                        .into_iter()
                        .map(|(who, s)| (who, s.as_str().to_string()))
                        .collect(),
                })
            }
        })
    }
}

fn time(t: protocol::Timestamp) -> Timestamp {
    Timestamp(t.0)
}

fn unid(u: protocol::Unid) -> Unid {
    Unid(u.0)
}

/// Each invitee's address, parsed (a bad one is refused before anything
/// is written).
fn addresses(list: &[String]) -> ServerResult<Vec<Address>> {
    list.iter()
        .map(|a| Address::parse(a).map_err(mail_err))
        .collect()
}
