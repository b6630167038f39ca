//! The message model: the four forms of the mail template (Memo, Reply,
//! Appointment, Notice) as typed values, and their items.
//!
//! A mail document is an ordinary note; what makes it a memo or an
//! invitation is its `Form` item and the items that form uses
//! (docs/mail.md lists them). Code above this module never spells an item
//! name: it builds a [`Message`], which checks itself ([`Message::validate`])
//! and becomes items ([`Message::to_items`]); a stored note becomes a
//! message again through [`Message::from_items`], which refuses what the
//! form does not allow (a missing `MessageID`, a start after the end).
//! The conversion is exact: `from_items(to_items(m)) == m`.
//!
//! Items the system keeps about a message (the delivery state in a
//! mail.box, `DeliveredDate` on a delivered copy) are not part of the
//! message: `from_items` ignores items it does not know, so a message
//! reads the same wherever it is stored.
//!
//! Item names have no `$`: `nsf` reserves names starting with `$` for the
//! items it writes itself (design notes, attachments), so the items Notes
//! spells `$MessageID` and `$ApptUNID` are `MessageID` and `ApptUNID`.

use crate::{MailError, MailResult};
use nsf::{Item, ItemValue, Timestamp, Unid};
use std::fmt;

/// Longest address, in bytes.
pub const MAX_ADDRESS_BYTES: usize = 256;
/// Most recipients (To, Cc and Bcc together) of one message, and most
/// attendees of one appointment.
pub const MAX_RECIPIENTS: usize = 1_000;
/// Longest subject (and location), in bytes.
pub const MAX_SUBJECT_BYTES: usize = 1_024;
/// Longest body, in bytes (an item may hold 16 MiB).
pub const MAX_BODY_BYTES: usize = 8 << 20;
/// Longest message id, in bytes.
pub const MAX_MESSAGE_ID_BYTES: usize = 256;

/// Item names, as docs/mail.md lists them.
pub mod item {
    pub const FORM: &str = "Form";
    pub const FROM: &str = "From";
    pub const SEND_TO: &str = "SendTo";
    pub const COPY_TO: &str = "CopyTo";
    pub const BLIND_COPY_TO: &str = "BlindCopyTo";
    pub const SUBJECT: &str = "Subject";
    pub const BODY: &str = "Body";
    pub const POSTED_DATE: &str = "PostedDate";
    pub const MESSAGE_ID: &str = "MessageID";
    pub const IN_REPLY_TO: &str = "InReplyTo";
    pub const START: &str = "StartDateTime";
    pub const END: &str = "EndDateTime";
    pub const LOCATION: &str = "Location";
    pub const CHAIR: &str = "Chair";
    pub const REQUIRED_ATTENDEES: &str = "RequiredAttendees";
    pub const APPT_UNID: &str = "ApptUNID";
    pub const NOTICE_TYPE: &str = "NoticeType";
    /// Set by the router on each delivered copy (not part of a message).
    pub const DELIVERED_DATE: &str = "DeliveredDate";
    /// The trace lines of a message received by SMTP, newest first
    /// (RFC 5321 §4.4), each unfolded to one line.
    pub const RECEIVED: &str = "Received";
    /// On a message received by SMTP: the name of the attachment that
    /// holds the message exactly as received (with this server's
    /// `Received:` line on top), which IMAP serves byte for byte.
    pub const ORIGINAL_MIME: &str = "OriginalMIME";
}

/// `s` as names are compared: surrounding white space removed, inner runs
/// of white space made one space, lowercase.
pub(crate) fn fold_name(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// `s` with surrounding white space removed and inner runs made one space.
pub(crate) fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

// ------------------------------------------------------------------ Address

/// A sender or recipient as written: `Alice Smith`, `alice@example.com`,
/// `Alice <alice@example.com>` or `"Smith, Alice" <alice>`.
///
/// The part a directory resolves is the one inside the angle brackets when
/// there are any (the display name before it is only shown), else the
/// whole: a display name is whatever the writer typed, so mail is never
/// routed by it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Address {
    display: Option<String>,
    addr: String,
}

impl Address {
    /// Checks and normalises an address (white space runs collapse).
    pub fn parse(s: &str) -> MailResult<Address> {
        let bad = |reason: &str| MailError::BadAddress {
            address: s.chars().take(80).collect(),
            reason: reason.to_string(),
        };
        let t = s.trim();
        if t.is_empty() {
            return Err(bad("an address cannot be empty"));
        }
        if t.len() > MAX_ADDRESS_BYTES {
            return Err(bad(&format!(
                "an address is at most {MAX_ADDRESS_BYTES} bytes"
            )));
        }
        if t.chars().any(char::is_control) {
            return Err(bad("control characters are not allowed"));
        }
        let (display, addr) = match t.split_once('<') {
            None => (None, t),
            Some((before, rest)) => {
                let inner = rest
                    .strip_suffix('>')
                    .ok_or_else(|| bad("'<' must be closed by '>' at the end"))?;
                let display = before.trim();
                let display = match display.strip_prefix('"') {
                    Some(q) => q
                        .strip_suffix('"')
                        .ok_or_else(|| bad("an opening '\"' needs a closing one"))?,
                    None => display,
                };
                if display.contains('"') {
                    return Err(bad("'\"' may only surround the display name"));
                }
                let display = collapse(display);
                ((!display.is_empty()).then_some(display), inner)
            }
        };
        let addr = collapse(addr);
        if addr.is_empty() {
            return Err(bad("nothing between '<' and '>'"));
        }
        if let Some(c) = addr.chars().find(|c| "<>\",;".contains(*c)) {
            return Err(bad(&format!(
                "{c:?} is not allowed in an address (separate addresses with ',')"
            )));
        }
        Ok(Address { display, addr })
    }

    /// Parses a comma-separated list (commas inside quotes belong to the
    /// display name); empty entries are refused.
    pub fn parse_list(s: &str) -> MailResult<Vec<Address>> {
        let mut out = Vec::new();
        let mut quoted = false;
        let mut start = 0;
        for (i, c) in s.char_indices() {
            match c {
                '"' => quoted = !quoted,
                ',' if !quoted => {
                    out.push(Address::parse(&s[start..i])?);
                    start = i + 1;
                }
                _ => {}
            }
        }
        out.push(Address::parse(&s[start..])?);
        Ok(out)
    }

    /// The part a directory resolves (see the type's docs).
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The display name, if one was written.
    pub fn display(&self) -> Option<&str> {
        self.display.as_deref()
    }

    /// What a directory looks up: [`Self::addr`] folded as names are
    /// compared (case and white space ignored).
    pub fn lookup_key(&self) -> String {
        fold_name(&self.addr)
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.display {
            None => f.write_str(&self.addr),
            Some(d) if d.contains([',', ';', '<', '>']) => write!(f, "\"{d}\" <{}>", self.addr),
            Some(d) => write!(f, "{d} <{}>", self.addr),
        }
    }
}

// ---------------------------------------------------------------- MessageId

/// A message's id, the same in every copy of it (`MessageID`): how the
/// router will recognise a copy it already delivered, and what a reply
/// names in `InReplyTo`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MessageId(String);

impl MessageId {
    /// A fresh id: `<32 hex digits@folio>`.
    pub fn new() -> MessageId {
        MessageId(format!("<{}@folio>", Unid::random()))
    }

    /// Checks an id: 1 to 256 bytes, no white space or control characters.
    pub fn parse(s: &str) -> MailResult<MessageId> {
        let bad = |reason: &str| {
            MailError::BadMessage(format!(
                "message id {:?}: {reason}",
                s.chars().take(80).collect::<String>()
            ))
        };
        if s.is_empty() || s.len() > MAX_MESSAGE_ID_BYTES {
            return Err(bad("must be 1 to 256 bytes"));
        }
        if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(bad("white space and control characters are not allowed"));
        }
        Ok(MessageId(s.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for MessageId {
    fn default() -> Self {
        MessageId::new()
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

// ------------------------------------------------------------ form, notices

/// The forms of the mail template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    Memo,
    Reply,
    Appointment,
    Notice,
}

impl Form {
    pub fn as_str(self) -> &'static str {
        match self {
            Form::Memo => "Memo",
            Form::Reply => "Reply",
            Form::Appointment => "Appointment",
            Form::Notice => "Notice",
        }
    }

    fn parse(s: &str) -> Option<Form> {
        [Form::Memo, Form::Reply, Form::Appointment, Form::Notice]
            .into_iter()
            .find(|f| f.as_str().eq_ignore_ascii_case(s))
    }
}

/// What a calendar notice says about a meeting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoticeType {
    /// The chair invites the recipients (start and end required).
    Invitation,
    /// An invitee accepts.
    Accept,
    /// An invitee declines.
    Decline,
    /// The chair moves the meeting (start and end required).
    Reschedule,
    /// The chair cancels the meeting.
    Cancel,
}

impl NoticeType {
    pub fn as_str(self) -> &'static str {
        match self {
            NoticeType::Invitation => "Invitation",
            NoticeType::Accept => "Accept",
            NoticeType::Decline => "Decline",
            NoticeType::Reschedule => "Reschedule",
            NoticeType::Cancel => "Cancel",
        }
    }

    fn parse(s: &str) -> Option<NoticeType> {
        use NoticeType::*;
        [Invitation, Accept, Decline, Reschedule, Cancel]
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(s))
    }

    /// Whether a notice of this type states the meeting's time.
    fn needs_time(self) -> bool {
        matches!(self, NoticeType::Invitation | NoticeType::Reschedule)
    }
}

// ------------------------------------------------------------------ forms

/// The items every form shares.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// The sender; set when the message is deposited or saved as a draft
    /// (from the directory, never from the caller: see `mailbox.rs`).
    pub from: Option<Address>,
    pub send_to: Vec<Address>,
    pub copy_to: Vec<Address>,
    pub blind_copy_to: Vec<Address>,
    pub subject: String,
    /// Markdown.
    pub body: String,
    /// When it was deposited; `None` for a draft.
    pub posted: Option<Timestamp>,
    pub message_id: MessageId,
    /// `Received:` trace lines, newest first: only on a message received
    /// by SMTP (a local sender's are cleared when it is deposited).
    pub received: Vec<String>,
    /// Only on a message received by SMTP: the attachment holding it as
    /// received ([`item::ORIGINAL_MIME`]).
    pub original_mime: Option<String>,
}

impl Header {
    /// A header with a fresh message id and no recipients.
    pub fn new(subject: &str, body: &str) -> Header {
        Header {
            from: None,
            send_to: Vec::new(),
            copy_to: Vec::new(),
            blind_copy_to: Vec::new(),
            subject: subject.to_string(),
            body: body.to_string(),
            posted: None,
            message_id: MessageId::new(),
            received: Vec::new(),
            original_mime: None,
        }
    }

    /// To, Cc and Bcc, in that order.
    pub fn recipients(&self) -> impl Iterator<Item = &Address> {
        self.send_to
            .iter()
            .chain(&self.copy_to)
            .chain(&self.blind_copy_to)
    }
}

/// A message.
#[derive(Clone, Debug, PartialEq)]
pub struct Memo {
    pub header: Header,
}

/// An answer to a message.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    pub header: Header,
    /// The message answered.
    pub in_reply_to: MessageId,
}

/// A calendar entry; with attendees, a meeting its chair runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Appointment {
    pub header: Header,
    /// The meeting's id, shared by the chair's entry and every notice
    /// about it.
    pub appt_unid: Unid,
    pub start: Timestamp,
    pub end: Timestamp,
    pub location: String,
    pub chair: Option<Address>,
    pub required_attendees: Vec<Address>,
}

/// A calendar notice about a meeting: an invitation, an answer to one, a
/// new time, a cancellation.
#[derive(Clone, Debug, PartialEq)]
pub struct Notice {
    pub header: Header,
    pub notice_type: NoticeType,
    /// The meeting's [`Appointment::appt_unid`].
    pub appt_unid: Unid,
    pub start: Option<Timestamp>,
    pub end: Option<Timestamp>,
    pub location: String,
    pub chair: Option<Address>,
}

/// A document of one of the template's forms.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    Memo(Memo),
    Reply(Reply),
    Appointment(Appointment),
    Notice(Notice),
}

impl Message {
    pub fn form(&self) -> Form {
        match self {
            Message::Memo(_) => Form::Memo,
            Message::Reply(_) => Form::Reply,
            Message::Appointment(_) => Form::Appointment,
            Message::Notice(_) => Form::Notice,
        }
    }

    pub fn header(&self) -> &Header {
        match self {
            Message::Memo(m) => &m.header,
            Message::Reply(m) => &m.header,
            Message::Appointment(m) => &m.header,
            Message::Notice(m) => &m.header,
        }
    }

    pub fn header_mut(&mut self) -> &mut Header {
        match self {
            Message::Memo(m) => &mut m.header,
            Message::Reply(m) => &mut m.header,
            Message::Appointment(m) => &mut m.header,
            Message::Notice(m) => &mut m.header,
        }
    }

    /// Checks the limits and the form's rules (see the module docs); a
    /// draft needs no recipient.
    pub fn validate(&self) -> MailResult<()> {
        let h = self.header();
        let recipients = h.recipients().count();
        if recipients > MAX_RECIPIENTS {
            return Err(too_large(
                "the recipient list",
                recipients,
                MAX_RECIPIENTS,
                "addresses",
            ));
        }
        check_line("the subject", &h.subject)?;
        if h.received.len() > crate::smtp::MAX_RECEIVED {
            return Err(too_large(
                "the Received trace",
                h.received.len(),
                crate::smtp::MAX_RECEIVED,
                "lines",
            ));
        }
        for line in &h.received {
            check_line("a Received line", line)?;
        }
        if h.body.len() > MAX_BODY_BYTES {
            return Err(too_large("the body", h.body.len(), MAX_BODY_BYTES, "bytes"));
        }
        match self {
            Message::Memo(_) | Message::Reply(_) => Ok(()),
            Message::Appointment(a) => {
                check_line("the location", &a.location)?;
                check_span(Some(a.start), Some(a.end))?;
                if a.required_attendees.len() > MAX_RECIPIENTS {
                    return Err(too_large(
                        "the attendee list",
                        a.required_attendees.len(),
                        MAX_RECIPIENTS,
                        "addresses",
                    ));
                }
                Ok(())
            }
            Message::Notice(n) => {
                check_line("the location", &n.location)?;
                if n.notice_type.needs_time() && (n.start.is_none() || n.end.is_none()) {
                    return Err(MailError::BadMessage(format!(
                        "a {} notice needs a start and an end",
                        n.notice_type.as_str()
                    )));
                }
                check_span(n.start, n.end)
            }
        }
    }

    /// [`Self::validate`], and at least one recipient.
    pub fn validate_for_sending(&self) -> MailResult<()> {
        self.validate()?;
        if self.header().recipients().next().is_none() {
            return Err(MailError::BadMessage(
                "a message to send needs at least one recipient".into(),
            ));
        }
        Ok(())
    }

    /// The message's items (docs/mail.md), `Form` first.
    pub fn to_items(&self) -> Vec<Item> {
        let h = self.header();
        let mut v = vec![text(item::FORM, self.form().as_str())];
        if let Some(from) = &h.from {
            v.push(text(item::FROM, &from.to_string()));
        }
        v.push(addresses(item::SEND_TO, &h.send_to));
        v.push(addresses(item::COPY_TO, &h.copy_to));
        v.push(addresses(item::BLIND_COPY_TO, &h.blind_copy_to));
        v.push(text(item::SUBJECT, &h.subject));
        v.push(Item {
            name: item::BODY.into(),
            value: ItemValue::RichText(h.body.clone()),
        });
        if let Some(t) = h.posted {
            v.push(datetime(item::POSTED_DATE, t));
        }
        v.push(text(item::MESSAGE_ID, h.message_id.as_str()));
        if !h.received.is_empty() {
            v.push(text_list(item::RECEIVED, h.received.clone()));
        }
        if let Some(name) = &h.original_mime {
            v.push(text(item::ORIGINAL_MIME, name));
        }
        match self {
            Message::Memo(_) => {}
            Message::Reply(r) => v.push(text(item::IN_REPLY_TO, r.in_reply_to.as_str())),
            Message::Appointment(a) => {
                v.push(text(item::APPT_UNID, &a.appt_unid.to_string()));
                v.push(datetime(item::START, a.start));
                v.push(datetime(item::END, a.end));
                v.push(text(item::LOCATION, &a.location));
                if let Some(c) = &a.chair {
                    v.push(text(item::CHAIR, &c.to_string()));
                }
                v.push(addresses(item::REQUIRED_ATTENDEES, &a.required_attendees));
            }
            Message::Notice(n) => {
                v.push(text(item::NOTICE_TYPE, n.notice_type.as_str()));
                v.push(text(item::APPT_UNID, &n.appt_unid.to_string()));
                v.extend(n.start.map(|t| datetime(item::START, t)));
                v.extend(n.end.map(|t| datetime(item::END, t)));
                v.push(text(item::LOCATION, &n.location));
                if let Some(c) = &n.chair {
                    v.push(text(item::CHAIR, &c.to_string()));
                }
            }
        }
        v
    }

    /// Reads a message back from a document's items (other items are
    /// ignored) and validates it.
    pub fn from_items(items: &[Item]) -> MailResult<Message> {
        let r = Items(items);
        let form = r.required_text(item::FORM)?;
        let form = Form::parse(form)
            .ok_or_else(|| bad_item(item::FORM, &format!("{form:?} is not a mail form")))?;
        let header = Header {
            from: r.address(item::FROM)?,
            send_to: r.addresses(item::SEND_TO)?,
            copy_to: r.addresses(item::COPY_TO)?,
            blind_copy_to: r.addresses(item::BLIND_COPY_TO)?,
            subject: r.text(item::SUBJECT)?.unwrap_or_default().to_string(),
            body: r.body()?,
            posted: r.datetime(item::POSTED_DATE)?,
            message_id: r.message_id(item::MESSAGE_ID)?,
            received: r.text_list(item::RECEIVED)?,
            original_mime: r.text(item::ORIGINAL_MIME)?.map(str::to_string),
        };
        let m = match form {
            Form::Memo => Message::Memo(Memo { header }),
            Form::Reply => Message::Reply(Reply {
                header,
                in_reply_to: r.message_id(item::IN_REPLY_TO)?,
            }),
            Form::Appointment => Message::Appointment(Appointment {
                header,
                appt_unid: r.unid(item::APPT_UNID)?,
                start: r.required_datetime(item::START)?,
                end: r.required_datetime(item::END)?,
                location: r.text(item::LOCATION)?.unwrap_or_default().to_string(),
                chair: r.address(item::CHAIR)?,
                required_attendees: r.addresses(item::REQUIRED_ATTENDEES)?,
            }),
            Form::Notice => {
                let t = r.required_text(item::NOTICE_TYPE)?;
                Message::Notice(Notice {
                    header,
                    notice_type: NoticeType::parse(t).ok_or_else(|| {
                        bad_item(item::NOTICE_TYPE, &format!("{t:?} is not a notice type"))
                    })?,
                    appt_unid: r.unid(item::APPT_UNID)?,
                    start: r.datetime(item::START)?,
                    end: r.datetime(item::END)?,
                    location: r.text(item::LOCATION)?.unwrap_or_default().to_string(),
                    chair: r.address(item::CHAIR)?,
                })
            }
        };
        m.validate()?;
        Ok(m)
    }
}

fn too_large(what: &str, size: usize, limit: usize, unit: &str) -> MailError {
    MailError::TooLarge {
        what: what.into(),
        size: size as u64,
        limit: limit as u64,
        unit: unit.into(),
    }
}

/// A one-line text (subject, location): bounded, no control characters.
fn check_line(what: &str, s: &str) -> MailResult<()> {
    if s.len() > MAX_SUBJECT_BYTES {
        return Err(too_large(what, s.len(), MAX_SUBJECT_BYTES, "bytes"));
    }
    if s.chars().any(char::is_control) {
        return Err(MailError::BadMessage(format!(
            "{what} cannot contain control characters (it is one line)"
        )));
    }
    Ok(())
}

fn check_span(start: Option<Timestamp>, end: Option<Timestamp>) -> MailResult<()> {
    match (start, end) {
        (Some(s), Some(e)) if e < s => Err(MailError::BadMessage(format!(
            "the meeting ends ({}) before it starts ({})",
            e.to_rfc3339(),
            s.to_rfc3339()
        ))),
        _ => Ok(()),
    }
}

fn bad_item(name: &str, reason: &str) -> MailError {
    MailError::BadMessage(format!("item {name}: {reason}"))
}

pub(crate) fn text(name: &str, s: &str) -> Item {
    Item {
        name: name.into(),
        value: ItemValue::Text(s.to_string()),
    }
}

pub(crate) fn text_list(name: &str, l: Vec<String>) -> Item {
    Item {
        name: name.into(),
        value: ItemValue::TextList(l),
    }
}

pub(crate) fn datetime(name: &str, t: Timestamp) -> Item {
    Item {
        name: name.into(),
        value: ItemValue::DateTime(t),
    }
}

fn addresses(name: &str, l: &[Address]) -> Item {
    text_list(name, l.iter().map(Address::to_string).collect())
}

/// Typed reads of a document's items, each failure naming the item.
pub(crate) struct Items<'a>(pub &'a [Item]);

impl<'a> Items<'a> {
    pub fn get(&self, name: &str) -> Option<&'a ItemValue> {
        self.0
            .iter()
            .find(|i| i.name.eq_ignore_ascii_case(name))
            .map(|i| &i.value)
    }

    pub fn text(&self, name: &str) -> MailResult<Option<&'a str>> {
        match self.get(name) {
            None => Ok(None),
            Some(ItemValue::Text(s)) => Ok(Some(s)),
            Some(_) => Err(bad_item(name, "must be text")),
        }
    }

    pub fn required_text(&self, name: &str) -> MailResult<&'a str> {
        self.text(name)?.ok_or_else(|| bad_item(name, "is missing"))
    }

    /// Text or a list of text (a single value may be stored as text).
    pub fn text_list(&self, name: &str) -> MailResult<Vec<String>> {
        match self.get(name) {
            None => Ok(Vec::new()),
            Some(ItemValue::Text(s)) => Ok(vec![s.clone()]),
            Some(ItemValue::TextList(l)) => Ok(l.clone()),
            Some(_) => Err(bad_item(name, "must be text or a list of text")),
        }
    }

    fn address(&self, name: &str) -> MailResult<Option<Address>> {
        self.text(name)?
            .map(|s| Address::parse(s).map_err(|e| bad_item(name, &e.to_string())))
            .transpose()
    }

    fn addresses(&self, name: &str) -> MailResult<Vec<Address>> {
        self.text_list(name)?
            .iter()
            .map(|s| Address::parse(s).map_err(|e| bad_item(name, &e.to_string())))
            .collect()
    }

    fn body(&self) -> MailResult<String> {
        match self.get(item::BODY) {
            None => Ok(String::new()),
            Some(ItemValue::RichText(s) | ItemValue::Text(s)) => Ok(s.clone()),
            Some(_) => Err(bad_item(item::BODY, "must be rich text or text")),
        }
    }

    pub fn datetime(&self, name: &str) -> MailResult<Option<Timestamp>> {
        match self.get(name) {
            None => Ok(None),
            Some(ItemValue::DateTime(t)) => Ok(Some(*t)),
            Some(_) => Err(bad_item(name, "must be a date-time")),
        }
    }

    fn required_datetime(&self, name: &str) -> MailResult<Timestamp> {
        self.datetime(name)?
            .ok_or_else(|| bad_item(name, "is missing"))
    }

    fn message_id(&self, name: &str) -> MailResult<MessageId> {
        MessageId::parse(self.required_text(name)?).map_err(|e| bad_item(name, &e.to_string()))
    }

    fn unid(&self, name: &str) -> MailResult<Unid> {
        self.required_text(name)?
            .parse()
            .map_err(|e: nsf::BadUnid| bad_item(name, &e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn addr(s: &str) -> Address {
        Address::parse(s).unwrap()
    }

    fn bad_address(s: &str) -> String {
        match Address::parse(s) {
            Err(MailError::BadAddress { reason, .. }) => reason,
            other => panic!("{s:?}: expected BadAddress, got {other:?}"),
        }
    }

    #[test]
    fn addresses_parse_in_their_written_forms() {
        let a = addr("  Alice   Smith ");
        assert_eq!((a.display(), a.addr()), (None, "Alice Smith"));
        assert_eq!(a.lookup_key(), "alice smith");
        let a = addr("Alice <alice@example.com>");
        assert_eq!(
            (a.display(), a.addr()),
            (Some("Alice"), "alice@example.com")
        );
        assert_eq!(a.to_string(), "Alice <alice@example.com>");
        let a = addr("<Bob>");
        assert_eq!((a.display(), a.addr()), (None, "Bob"));
        assert_eq!(a.to_string(), "Bob");
        let a = addr("\"Smith, Alice\" <alice>");
        assert_eq!(a.display(), Some("Smith, Alice"));
        assert_eq!(a.to_string(), "\"Smith, Alice\" <alice>");
        assert_eq!(addr(&a.to_string()), a, "the written form parses back");
    }

    #[test]
    fn bad_addresses_say_why() {
        assert!(bad_address("   ").contains("empty"));
        assert!(bad_address("a <b").contains("closed"));
        assert!(bad_address("a <>").contains("nothing between"));
        assert!(bad_address("a;b").contains("';'"));
        assert!(bad_address("a\nb").contains("control"));
        assert!(bad_address(&"x".repeat(300)).contains("256 bytes"));
        assert!(bad_address("\"a <b>").contains("closing"));
    }

    #[test]
    fn address_lists_split_on_commas_outside_quotes() {
        let l = Address::parse_list("alice, \"Smith, Bob\" <bob> ,carol").unwrap();
        let addrs: Vec<&str> = l.iter().map(Address::addr).collect();
        assert_eq!(addrs, ["alice", "bob", "carol"]);
        assert!(matches!(
            Address::parse_list("alice,,bob"),
            Err(MailError::BadAddress { .. })
        ));
    }

    fn memo() -> Message {
        let mut h = Header::new("Lunch", "Shall we?");
        h.send_to = vec![addr("bob"), addr("Carol <carol>")];
        h.copy_to = vec![addr("dan")];
        h.blind_copy_to = vec![addr("erin")];
        h.from = Some(addr("alice"));
        h.posted = Some(Timestamp(1_700_000_000_000_000));
        Message::Memo(Memo { header: h })
    }

    #[test]
    fn a_memo_becomes_the_documented_items() {
        let m = memo();
        let items = m.to_items();
        nsf::validate_items(&items).unwrap();
        let r = Items(&items);
        assert_eq!(r.text("Form").unwrap(), Some("Memo"));
        assert_eq!(r.text("From").unwrap(), Some("alice"));
        assert_eq!(r.text_list("SendTo").unwrap(), ["bob", "Carol <carol>"]);
        assert_eq!(r.text_list("BlindCopyTo").unwrap(), ["erin"]);
        assert!(matches!(r.get("Body"), Some(ItemValue::RichText(b)) if b == "Shall we?"));
        assert!(r.get("MessageID").is_some());
        assert_eq!(Message::from_items(&items).unwrap(), m);
    }

    #[test]
    fn limits_are_typed_errors() {
        let mut m = memo();
        m.header_mut().body = "x".repeat(MAX_BODY_BYTES + 1);
        assert!(
            matches!(m.validate(), Err(MailError::TooLarge { what, .. }) if what == "the body")
        );
        let mut m = memo();
        m.header_mut().send_to = vec![addr("x"); MAX_RECIPIENTS + 1];
        assert!(matches!(m.validate(), Err(MailError::TooLarge { .. })));
        let mut m = memo();
        m.header_mut().subject = "two\nlines".into();
        assert!(matches!(m.validate(), Err(MailError::BadMessage(_))));
        let mut m = memo();
        m.header_mut().send_to.clear();
        m.header_mut().copy_to.clear();
        m.header_mut().blind_copy_to.clear();
        m.validate().unwrap();
        assert!(matches!(
            m.validate_for_sending(),
            Err(MailError::BadMessage(r)) if r.contains("at least one recipient")
        ));
    }

    #[test]
    fn stored_items_a_form_does_not_allow_are_refused() {
        let with = |change: &dyn Fn(&mut Vec<Item>)| {
            let mut items = memo().to_items();
            change(&mut items);
            Message::from_items(&items).unwrap_err().to_string()
        };
        assert!(with(&|i| i.retain(|i| i.name != "MessageID")).contains("MessageID: is missing"));
        assert!(with(&|i| i[0] = text("Form", "Person")).contains("not a mail form"));
        let number_subject = |i: &mut Vec<Item>| {
            i.retain(|i| i.name != "Subject");
            i.push(Item {
                name: "Subject".into(),
                value: ItemValue::Number(1.0),
            });
        };
        assert!(with(&number_subject).contains("Subject: must be text"));
        let bad_to = |i: &mut Vec<Item>| {
            i.retain(|i| i.name != "SendTo");
            i.push(text("SendTo", "bad <"));
        };
        assert!(with(&bad_to).contains("SendTo"));
        // A reply needs what it answers; an appointment its times.
        let mut items = memo().to_items();
        items[0] = text("Form", "Reply");
        assert!(Message::from_items(&items)
            .unwrap_err()
            .to_string()
            .contains("InReplyTo: is missing"));
        items[0] = text("Form", "Appointment");
        assert!(Message::from_items(&items)
            .unwrap_err()
            .to_string()
            .contains("ApptUNID"));
    }

    #[test]
    fn calendar_forms_check_their_times() {
        let h = Header::new("Plan", "");
        let mut a = Appointment {
            header: h.clone(),
            appt_unid: Unid::random(),
            start: Timestamp(2_000),
            end: Timestamp(1_000),
            location: "Room 1".into(),
            chair: Some(addr("alice")),
            required_attendees: vec![addr("bob")],
        };
        assert!(Message::Appointment(a.clone())
            .validate()
            .unwrap_err()
            .to_string()
            .contains("ends"));
        a.end = Timestamp(3_000);
        let m = Message::Appointment(a.clone());
        assert_eq!(Message::from_items(&m.to_items()).unwrap(), m);
        let mut n = Notice {
            header: h,
            notice_type: NoticeType::Invitation,
            appt_unid: a.appt_unid,
            start: None,
            end: None,
            location: String::new(),
            chair: None,
        };
        assert!(Message::Notice(n.clone())
            .validate()
            .unwrap_err()
            .to_string()
            .contains("needs a start and an end"));
        n.notice_type = NoticeType::Decline;
        let m = Message::Notice(n);
        assert_eq!(Message::from_items(&m.to_items()).unwrap(), m);
    }

    fn address() -> impl Strategy<Value = Address> {
        (
            proptest::option::of("[A-Za-z][A-Za-z ,.'-]{0,20}[a-z]"),
            "[a-z][a-z0-9._@-]{0,30}",
        )
            .prop_map(|(d, a)| {
                let s = match d {
                    Some(d) => format!("\"{d}\" <{a}>"),
                    None => a,
                };
                Address::parse(&s).unwrap()
            })
    }

    fn header() -> impl Strategy<Value = Header> {
        (
            proptest::option::of(address()),
            proptest::collection::vec(address(), 0..4),
            proptest::collection::vec(address(), 0..3),
            proptest::collection::vec(address(), 0..3),
            "[^\\p{Cc}]{0,40}",
            ".{0,200}",
            proptest::option::of(0i64..4_000_000_000_000_000),
        )
            .prop_map(|(from, to, cc, bcc, subject, body, posted)| Header {
                from,
                send_to: to,
                copy_to: cc,
                blind_copy_to: bcc,
                subject,
                body,
                posted: posted.map(Timestamp),
                message_id: MessageId::new(),
                received: Vec::new(),
                original_mime: None,
            })
    }

    fn notice_type() -> impl Strategy<Value = NoticeType> {
        use NoticeType::*;
        prop_oneof![
            Just(Invitation),
            Just(Accept),
            Just(Decline),
            Just(Reschedule),
            Just(Cancel)
        ]
    }

    fn message() -> impl Strategy<Value = Message> {
        let span =
            (0i64..1 << 50, 0i64..1 << 40).prop_map(|(s, d)| (Timestamp(s), Timestamp(s + d)));
        prop_oneof![
            header().prop_map(|header| Message::Memo(Memo { header })),
            header().prop_map(|header| Message::Reply(Reply {
                header,
                in_reply_to: MessageId::new()
            })),
            (
                header(),
                span.clone(),
                "[^\\p{Cc}]{0,20}",
                proptest::option::of(address()),
                proptest::collection::vec(address(), 0..4)
            )
                .prop_map(|(header, (start, end), location, chair, att)| {
                    Message::Appointment(Appointment {
                        header,
                        appt_unid: Unid::random(),
                        start,
                        end,
                        location,
                        chair,
                        required_attendees: att,
                    })
                }),
            (
                header(),
                notice_type(),
                span,
                any::<bool>(),
                proptest::option::of(address())
            )
                .prop_map(|(header, notice_type, (start, end), timed, chair)| {
                    let timed = timed || notice_type.needs_time();
                    Message::Notice(Notice {
                        header,
                        notice_type,
                        appt_unid: Unid::random(),
                        start: timed.then_some(start),
                        end: timed.then_some(end),
                        location: String::new(),
                        chair,
                    })
                }),
        ]
    }

    proptest! {
        /// Every valid message becomes valid items and comes back equal.
        #[test]
        fn messages_round_trip_through_items(m in message()) {
            m.validate().unwrap();
            let items = m.to_items();
            nsf::validate_items(&items).unwrap();
            prop_assert_eq!(Message::from_items(&items).unwrap(), m);
        }

        /// Parsing never panics, and what parses writes a form that parses
        /// back to the same address.
        #[test]
        fn addresses_parse_back_from_their_written_form(s in ".{0,60}") {
            if let Ok(a) = Address::parse(&s) {
                prop_assert_eq!(Address::parse(&a.to_string()).unwrap(), a);
            }
        }
    }
}
