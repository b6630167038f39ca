//! `folio mail meeting create|respond|reschedule|cancel|show`: meetings
//! from the command line, embedded and with `--server`.
//!
//! Both ways run the same server code (`Service::meeting_op`): embedded
//! directly, as an administrator acting for the person `--from` names
//! (nobody is signed in there); over `--server` through the native
//! `Meeting` request as the signed-in user. So the output is the same
//! both ways, and is the HTTP API's JSON for the same call
//! (docs/http.md "Meetings"). Times are RFC 3339 and are checked, like
//! every other argument, before the store is asked.

use crate::error::{FolioError, FolioResult};
use crate::output;
use crate::store::Store;
use clap::Subcommand;
use protocol::{MeetingAnswer, MeetingRequest, Timestamp, Unid};
use serde_json::{json, Value as Json};
use std::io::{Read, Write};

#[derive(Subcommand, Debug)]
pub enum MeetingCmd {
    /// Create a meeting you chair and invite people; the description is
    /// read from stdin (Markdown).
    Create {
        #[arg(long, default_value = "")]
        subject: String,
        /// Start, RFC 3339 (e.g. 2026-12-01T10:00:00Z).
        #[arg(long)]
        start: String,
        /// End, RFC 3339; not before the start.
        #[arg(long)]
        end: String,
        #[arg(long, default_value = "")]
        location: String,
        /// Invitees, comma-separated (repeatable).
        #[arg(long, required = true)]
        invite: Vec<String>,
    },
    /// Accept or decline a meeting you were invited to.
    Respond {
        /// The meeting's id (ApptUNID, 32 hex digits).
        appt: String,
        /// accept or decline.
        response: String,
    },
    /// Move a meeting you chair.
    Reschedule {
        appt: String,
        #[arg(long)]
        start: String,
        #[arg(long)]
        end: String,
        /// A new place (default: unchanged).
        #[arg(long)]
        location: Option<String>,
    },
    /// Cancel a meeting you chair.
    Cancel { appt: String },
    /// Print a meeting as your own entry holds it (the chair's with every
    /// answer).
    Show { appt: String },
}

/// Runs a `mail meeting` command as `from` (embedded) or the signed-in
/// user (`from` is `None` over `--server`).
pub fn meeting(
    store: &dyn Store,
    from: Option<&str>,
    c: &MeetingCmd,
    input: &mut dyn Read,
    out: &mut dyn Write,
) -> FolioResult<()> {
    let op = request(c, input)?;
    output::line(out, &answer(&store.meeting(from, op)?))
}

/// The request a command makes, its arguments checked.
fn request(c: &MeetingCmd, input: &mut dyn Read) -> FolioResult<MeetingRequest> {
    Ok(match c {
        MeetingCmd::Create {
            subject,
            start,
            end,
            location,
            invite,
        } => {
            let mut invitees = Vec::new();
            for list in invite {
                for a in mail::Address::parse_list(list)? {
                    invitees.push(a.to_string());
                }
            }
            MeetingRequest::Create {
                subject: subject.clone(),
                body: crate::mailcli::read_body(input)?,
                start: time("--start", start)?,
                end: time("--end", end)?,
                location: location.clone(),
                invitees,
            }
        }
        MeetingCmd::Respond { appt, response } => MeetingRequest::Respond {
            appt: appt_unid(appt)?,
            accept: match mail::Response::parse(response)? {
                mail::Response::Accept => true,
                mail::Response::Decline => false,
            },
        },
        MeetingCmd::Reschedule {
            appt,
            start,
            end,
            location,
        } => MeetingRequest::Reschedule {
            appt: appt_unid(appt)?,
            start: time("--start", start)?,
            end: time("--end", end)?,
            location: location.clone(),
        },
        MeetingCmd::Cancel { appt } => MeetingRequest::Cancel {
            appt: appt_unid(appt)?,
        },
        MeetingCmd::Show { appt } => MeetingRequest::Read {
            appt: appt_unid(appt)?,
        },
    })
}

/// The answer as JSON, in the HTTP API's shapes.
fn answer(a: &MeetingAnswer) -> Json {
    match a {
        MeetingAnswer::Created { appt, message_id } => {
            json!({"apptunid": appt.to_string(), "message_id": message_id})
        }
        MeetingAnswer::Sent { message_id } => json!({"message_id": message_id}),
        MeetingAnswer::Meeting(m) => {
            let attendees: Vec<Json> = m
                .attendees
                .iter()
                .map(|(who, st)| json!({"name": who, "status": st}))
                .collect();
            json!({
                "apptunid": m.appt.to_string(),
                "subject": m.subject,
                "start": nsf::Timestamp(m.start.0).to_rfc3339(),
                "end": nsf::Timestamp(m.end.0).to_rfc3339(),
                "location": m.location,
                "chair": m.chair,
                "attendees": attendees,
            })
        }
    }
}

fn time(flag: &str, s: &str) -> FolioResult<Timestamp> {
    nsf::Timestamp::parse_rfc3339(s)
        .map(|t| Timestamp(t.0))
        .ok_or_else(|| FolioError::BadInput(format!("{flag}: {s:?} is not an RFC 3339 time")))
}

fn appt_unid(s: &str) -> FolioResult<Unid> {
    let u: nsf::Unid = s
        .parse()
        .map_err(|e: nsf::BadUnid| FolioError::BadInput(format!("meeting id {s:?}: {e}")))?;
    Ok(Unid(u.0))
}
