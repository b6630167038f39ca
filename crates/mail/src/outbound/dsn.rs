//! The delivery status notifications (RFC 3464) a local sender gets
//! about outbound recipients: when they are given up (`Action: failed`),
//! and once, when the entry has waited `mail.outbound_delay_notice_secs`
//! with recipients still pending (`Action: delayed`, with
//! `Will-Retry-Until`). Each is a `multipart/report` with a
//! human-readable part, the `message/delivery-status` part (one block
//! per recipient it is about, with the peer's last answer) and the
//! original message's header (`text/rfc822-headers`, RFC 6522).
//!
//! At most one of each per queue entry: the failure report once none of
//! its recipients is pending, the delay notice the first time an attempt
//! finds it waited long enough; each filed
//! straight into the sender's mail file and Inbox under a UNID derived
//! from the entry, written only if no note of that UNID is there, before
//! the entry records it filed: a crash in between files nothing twice
//! (as the router's NDRs, I33). It is kept as received mail is: its
//! bytes as `OriginalMIME`, so IMAP serves the report as built.

use super::queue::{self, delay_noticed, dsn_filed, Entry, OutState};
use crate::directory::{Directory, Resolved};
use crate::inbound::{memo_from, ORIGINAL_MIME_NAME};
use crate::mailfile::open_mail_file;
use crate::message::{datetime, item, Address};
use crate::mime;
use crate::router::{derive_unid, foreign};
use crate::template::INBOX;
use crate::{MailError, MailResult};
use nsf::{Engine, ForeignAttachment, ForeignContent, NsfError, Timestamp};
use views::Views;

/// What a report is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    /// The failed recipients: given up.
    Failed,
    /// The pending recipients: still tried, until this time.
    Delayed { retry_until: Timestamp },
}

/// Files the DSN `entry` owes in its sender's mail file (nothing if the
/// sender is no longer in the directory), then notes it filed.
pub fn file_dsn(
    engine: &Engine,
    views: &Views,
    entry: &Entry,
    reporting_mta: &str,
    now: Timestamp,
) -> MailResult<()> {
    file_report(engine, views, entry, Report::Failed, reporting_mta, now)?;
    let queue_db = queue::open_queue(engine, views)?;
    dsn_filed(&queue_db, entry)
}

/// Files the one delay notice of `entry` in its sender's mail file
/// (nothing if the sender is no longer in the directory), then notes it
/// filed, so no later attempt files another.
pub fn file_delay_notice(
    engine: &Engine,
    views: &Views,
    entry: &Entry,
    retry_until: Timestamp,
    reporting_mta: &str,
    now: Timestamp,
) -> MailResult<()> {
    let report = Report::Delayed { retry_until };
    file_report(engine, views, entry, report, reporting_mta, now)?;
    let queue_db = queue::open_queue(engine, views)?;
    delay_noticed(&queue_db, entry, now)
}

/// Files the report under a UNID derived from the entry and its kind,
/// written only if no note of that UNID is there (a crash after it and
/// before the entry's record files nothing twice), and in the Inbox.
fn file_report(
    engine: &Engine,
    views: &Views,
    entry: &Entry,
    report: Report,
    reporting_mta: &str,
    now: Timestamp,
) -> MailResult<()> {
    let directory = Directory::open(engine, views)?;
    let person = match Address::parse(&entry.return_to).map(|a| directory.resolve_address(&a)) {
        Ok(Ok(Resolved::Person(p))) => Some(p),
        Ok(Err(e)) => return Err(e),
        _ => None,
    };
    if let Some(person) = person {
        let db = open_mail_file(engine, views, &person)?;
        let kind = match report {
            Report::Failed => "dsn",
            Report::Delayed { .. } => "delayed",
        };
        let unid = derive_unid(kind, entry.unid, &[]);
        match db.get_any(unid) {
            Ok(_) => {}
            Err(NsfError::NoSuchDocument { .. }) => {
                let original = queue::message(engine, views, entry)?;
                let bytes = build(entry, report, header_of(&original), reporting_mta, now);
                let inbound = mime::to_document(&bytes)?;
                let mut msg = memo_from(&inbound, None);
                msg.header_mut().original_mime = Some(ORIGINAL_MIME_NAME.into());
                let mut items = msg.to_items();
                items.push(datetime(item::DELIVERED_DATE, now));
                let mut note = foreign(unid, items, now);
                for a in inbound.attachments {
                    note.attachments.push(ForeignAttachment {
                        name: a.name,
                        mime: a.mime,
                        content: ForeignContent::Reader(Box::new(std::io::Cursor::new(a.bytes))),
                    });
                }
                note.attachments.push(ForeignAttachment {
                    name: ORIGINAL_MIME_NAME.into(),
                    mime: crate::ORIGINAL_MIME_TYPE.into(),
                    content: ForeignContent::Reader(Box::new(std::io::Cursor::new(bytes))),
                });
                db.put_foreign(note)?;
            }
            Err(e) => return Err(MailError::Nsf(e)),
        }
        // In the Inbox before the entry records the DSN filed (adding
        // twice is harmless).
        views.folder_add(&db, INBOX, &[unid])?;
    }
    Ok(())
}

/// The message's header block (up to its first empty line).
fn header_of(message: &[u8]) -> &[u8] {
    let end = message
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(message.len(), |p| p + 2);
    &message[..end]
}

/// The report's bytes (see the module docs).
pub fn build(
    entry: &Entry,
    report: Report,
    original_header: &[u8],
    mta: &str,
    now: Timestamp,
) -> Vec<u8> {
    let (about, action, class, subject, kind) = match report {
        Report::Failed => (
            OutState::Failed,
            "failed",
            '5',
            "Undelivered Mail Returned to Sender",
            "dsn",
        ),
        Report::Delayed { .. } => (
            OutState::Pending,
            "delayed",
            '4',
            "Delayed Mail (still being retried)",
            "delayed",
        ),
    };
    let boundary = format!("folio-{kind}-{}", entry.unid);
    let date = rfc2822(now);
    let failed: Vec<(&str, &str)> = (0..entry.recipients.len())
        .filter(|&i| entry.states[i] == about)
        .map(|i| (entry.recipients[i].as_str(), entry.reasons[i].as_str()))
        .collect();
    let mut human = match report {
        Report::Failed => String::from(
            "Your message could not be delivered to one or more recipients.\r\n\
             It was handed to the outbound queue, which gave up on:\r\n\r\n",
        ),
        Report::Delayed { retry_until } => format!(
            "Your message has not been delivered yet to the recipients below.\r\n\
             The server keeps trying until {}; you need not send it again.\r\n\r\n",
            rfc2822(retry_until)
        ),
    };
    for (rcpt, why) in &failed {
        human.push_str(&format!("  <{rcpt}>: {why}\r\n"));
    }
    human.push_str(&format!(
        "\r\nThe message had the ID {}; its header follows.\r\n",
        entry.message_id
    ));
    let mut status = format!(
        "Reporting-MTA: dns; {mta}\r\nArrival-Date: {}\r\n",
        rfc2822(entry.queued)
    );
    for (rcpt, why) in &failed {
        status.push_str(&format!(
            "\r\nFinal-Recipient: rfc822; {rcpt}\r\nAction: {action}\r\nStatus: {}\r\n",
            status_code(why, class),
        ));
        if !why.is_empty() {
            status.push_str(&format!("Diagnostic-Code: {}\r\n", diagnostic(why)));
        }
        if let Report::Delayed { retry_until } = report {
            status.push_str(&format!("Will-Retry-Until: {}\r\n", rfc2822(retry_until)));
        }
    }
    let mut out = format!(
        "From: Mail Delivery System <MAILER-DAEMON@{mta}>\r\n\
         To: <{to}>\r\n\
         Subject: {subject}\r\n\
         Date: {date}\r\n\
         Message-ID: <{unid}.{kind}@{mta}>\r\n\
         Auto-Submitted: auto-replied\r\n\
         MIME-Version: 1.0\r\n\
         Content-Type: multipart/report; report-type=delivery-status;\r\n \
         boundary=\"{boundary}\"\r\n\
         \r\n\
         This is a delivery status notification (RFC 3464).\r\n\
         \r\n\
         --{boundary}\r\n\
         Content-Type: text/plain; charset=utf-8\r\n\
         \r\n\
         {human}\
         \r\n--{boundary}\r\n\
         Content-Type: message/delivery-status\r\n\
         \r\n\
         {status}\
         \r\n--{boundary}\r\n\
         Content-Type: text/rfc822-headers\r\n\
         \r\n",
        to = if entry.sender.is_empty() {
            "postmaster"
        } else {
            &entry.sender
        },
        unid = entry.unid,
    )
    .into_bytes();
    out.extend_from_slice(original_header);
    out.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    out
}

/// The enhanced status code (RFC 3463) in the peer's answer, its class
/// made `class` (`5` failed, `4` delayed), else a generic one of that
/// class.
fn status_code(reason: &str, class: char) -> String {
    reason
        .split_whitespace()
        .find(|w| {
            let parts: Vec<&str> = w.split('.').collect();
            parts.len() == 3
                && matches!(parts[0], "4" | "5")
                && parts
                    .iter()
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
        .map_or(format!("{class}.0.0"), |w| format!("{class}{}", &w[1..]))
}

/// `smtp; <the peer's reply>` when the reason is one, else ours.
fn diagnostic(reason: &str) -> String {
    let smtp = reason.len() >= 3 && reason.as_bytes()[..3].iter().all(u8::is_ascii_digit);
    if smtp {
        format!("smtp; {reason}")
    } else {
        format!("X-Folio; {reason}")
    }
}

fn rfc2822(t: Timestamp) -> String {
    chrono::DateTime::from_timestamp_micros(t.0)
        .unwrap_or_default()
        .to_rfc2822()
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsf::Unid;

    #[test]
    fn the_report_names_each_failed_recipient_and_parses() {
        let entry = Entry {
            unid: Unid([3; 16]),
            domain: "far.example".into(),
            sender: "alice@example.com".into(),
            recipients: vec!["bob@far.example".into(), "carl@far.example".into()],
            states: vec![OutState::Failed, OutState::Sent],
            reasons: vec![
                "550 5.1.1 <bob@far.example>: no such user".into(),
                String::new(),
            ],
            attempts: 1,
            next: Timestamp(0),
            queued: Timestamp(1_700_000_000_000_000),
            return_to: "Alice".into(),
            message_id: "<abc@folio>".into(),
            dsn_due: true,
            delay_noticed: false,
        };
        let header = b"From: Alice <alice@example.com>\r\nSubject: Hi\r\n\r\n";
        let bytes = build(
            &entry,
            Report::Failed,
            header_of(header),
            "mx.example.com",
            Timestamp(1_700_000_100_000_000),
        );
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.contains("Final-Recipient: rfc822; bob@far.example\r\n"));
        assert!(text.contains("Status: 5.1.1\r\n"));
        assert!(text.contains("Diagnostic-Code: smtp; 550 5.1.1"));
        assert!(!text.contains("carl@far.example"), "only the failed");
        assert!(text.contains("Subject: Hi\r\n"));
        let parsed = mime::to_document(&bytes).unwrap();
        assert_eq!(
            parsed.subject.as_deref(),
            Some("Undelivered Mail Returned to Sender")
        );
        assert!(parsed.body_text.contains("<bob@far.example>: 550 5.1.1"));
        assert_eq!(status_code("451 4.4.1 later", '5'), "5.4.1");
        assert_eq!(status_code("not delivered in 24 hours", '5'), "5.0.0");
        assert_eq!(status_code("451 4.4.1 later", '4'), "4.4.1");

        // The delay notice is about the pending recipients only.
        let mut waiting = entry.clone();
        waiting.states = vec![OutState::Pending, OutState::Sent];
        waiting.reasons[0] = "451 4.3.0 try again later".into();
        let until = Timestamp(1_700_086_400_000_000);
        let bytes = build(
            &waiting,
            Report::Delayed { retry_until: until },
            header_of(header),
            "mx.example.com",
            Timestamp(1_700_014_400_000_000),
        );
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(
            text.contains("Action: delayed\r\nStatus: 4.3.0\r\n"),
            "{text}"
        );
        assert!(text.contains("Will-Retry-Until: "), "{text}");
        assert!(text.contains("Subject: Delayed Mail"), "{text}");
        assert!(!text.contains("carl@far.example"), "only the pending");
        assert!(mime::to_document(&bytes).is_ok());
    }
}
