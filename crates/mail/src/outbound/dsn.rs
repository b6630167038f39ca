//! The delivery status notification (RFC 3464) a local sender gets when
//! outbound recipients are given up: a `multipart/report` with a
//! human-readable part, the `message/delivery-status` part (one block
//! per failed recipient, with the peer's answer) and the original
//! message's header (`text/rfc822-headers`, RFC 6522).
//!
//! One per queue entry, once none of its recipients is pending, filed
//! straight into the sender's mail file and Inbox under a UNID derived
//! from the entry, written only if no note of that UNID is there, before
//! the entry records it filed: a crash in between files nothing twice
//! (as the router's NDRs, I33). It is kept as received mail is: its
//! bytes as `OriginalMIME`, so IMAP serves the report as built.

use super::queue::{self, dsn_filed, Entry, OutState};
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

/// Files the DSN `entry` owes in its sender's mail file (nothing if the
/// sender is no longer in the directory), then notes it filed.
pub fn file_dsn(
    engine: &Engine,
    views: &Views,
    entry: &Entry,
    reporting_mta: &str,
    now: Timestamp,
) -> MailResult<()> {
    let queue_db = queue::open_queue(engine, views)?;
    let directory = Directory::open(engine, views)?;
    let person = match Address::parse(&entry.return_to).map(|a| directory.resolve_address(&a)) {
        Ok(Ok(Resolved::Person(p))) => Some(p),
        Ok(Err(e)) => return Err(e),
        _ => None,
    };
    if let Some(person) = person {
        let db = open_mail_file(engine, views, &person)?;
        let unid = derive_unid("dsn", entry.unid, &[]);
        match db.get_any(unid) {
            Ok(_) => {}
            Err(NsfError::NoSuchDocument { .. }) => {
                let original = queue::message(engine, views, entry)?;
                let bytes = build(entry, header_of(&original), reporting_mta, now);
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
    dsn_filed(&queue_db, entry)
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
pub fn build(entry: &Entry, original_header: &[u8], mta: &str, now: Timestamp) -> Vec<u8> {
    let boundary = format!("folio-dsn-{}", entry.unid);
    let date = rfc2822(now);
    let failed: Vec<(&str, &str)> = (0..entry.recipients.len())
        .filter(|&i| entry.states[i] == OutState::Failed)
        .map(|i| (entry.recipients[i].as_str(), entry.reasons[i].as_str()))
        .collect();
    let mut human = String::from(
        "Your message could not be delivered to one or more recipients.\r\n\
         It was handed to the outbound queue, which gave up on:\r\n\r\n",
    );
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
            "\r\nFinal-Recipient: rfc822; {rcpt}\r\nAction: failed\r\nStatus: {}\r\n\
             Diagnostic-Code: {}\r\n",
            status_code(why),
            diagnostic(why)
        ));
    }
    let mut out = format!(
        "From: Mail Delivery System <MAILER-DAEMON@{mta}>\r\n\
         To: <{to}>\r\n\
         Subject: Undelivered Mail Returned to Sender\r\n\
         Date: {date}\r\n\
         Message-ID: <{unid}.dsn@{mta}>\r\n\
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

/// The enhanced status code (RFC 3463) in the peer's answer, else a
/// generic permanent failure.
fn status_code(reason: &str) -> String {
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
        .map_or("5.0.0".into(), |w| format!("5{}", &w[1..]))
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
        };
        let header = b"From: Alice <alice@example.com>\r\nSubject: Hi\r\n\r\n";
        let bytes = build(
            &entry,
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
        assert_eq!(status_code("451 4.4.1 later"), "5.4.1");
        assert_eq!(status_code("not delivered in 24 hours"), "5.0.0");
    }
}
