//! Calendar and scheduling: meetings a chair creates in their own mail
//! file, invitations delivered as Notices, answers routed back to the
//! chair's entry, and the chair's reschedules and cancellations reaching
//! every invitee's calendar (docs/mail.md "Calendar", design.md I34).
//!
//! ```text
//!   chair ── create ──▶ entry (UNID = ApptUNID) ──▶ deposit Invitation ─┐
//!                                                                        ▼ router
//!   invitee ◀── Invitation in the Inbox ◀──────────────────────────────────┘
//!   invitee ── respond ──▶ own entry on accept (derived UNID) ──▶ deposit Accept/Decline
//!   router files the Accept/Decline ──▶ apply.rs: the chair's AttendeeStatus
//!   chair ── reschedule/cancel ──▶ deposit Reschedule/Cancel ──▶ apply.rs: invitee's entry
//! ```
//!
//! ```text
//!   entry.rs     the chair's entry and an invitee's: ids, items, statuses
//!   notices.rs   the notices a meeting sends; finding the latest one received
//!   schedule.rs  create, reschedule, cancel (the chair's side)
//!   respond.rs   accept or decline (the invitee's side)
//!   apply.rs     what a delivered notice changes (the router's hook, I34)
//! ```

mod apply;
mod entry;
mod notices;
mod respond;
mod schedule;

pub(crate) use apply::apply_delivered;
pub use entry::{
    attendee_entry_unid, read_meeting, AttendeeStatus, Meeting, ATTENDEE_STATUS,
    ATTENDEE_STATUS_DATE, NOTICES_VIEW, NOTICE_DATE,
};
pub use respond::{respond, Response};
pub use schedule::{cancel_meeting, create_meeting, reschedule_meeting, NewMeeting, NewTime};
