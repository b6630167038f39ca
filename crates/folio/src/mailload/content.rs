//! What the workload's documents hold: text bodies of drawn sizes,
//! attachments (half text-like, half random so that compression cannot
//! shrink them), and the messages users send, as the mail template's
//! forms (`mail::Message`), in the JSON the native `SendMail` carries.

use mail::{Address, Appointment, Header, Memo, Message, Notice, NoticeType};
use nsf::{Timestamp, Unid};
use rand::Rng;

/// A user's full name (also their short name and mail file name).
pub fn user_name(i: usize) -> String {
    format!("user{i:05}")
}

/// A user's mail file.
pub fn mail_file(i: usize) -> String {
    format!("mail/{}.fdb", user_name(i))
}

const WORDS: [&str; 16] = [
    "meeting", "budget", "review", "the", "quarter", "plan", "and", "server", "mail", "please",
    "thanks", "report", "schedule", "team", "update", "notes",
];

/// Text of about `bytes` bytes, words and line breaks.
pub fn text(rng: &mut impl Rng, bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 16);
    let mut col = 0;
    while s.len() < bytes {
        let w = WORDS[rng.gen_range(0..WORDS.len())];
        s.push_str(w);
        col += w.len() + 1;
        if col > 70 {
            s.push('\n');
            col = 0;
        } else {
            s.push(' ');
        }
    }
    s.truncate(bytes);
    s
}

/// A body of 1 KiB to `max_kib` KiB.
pub fn body(rng: &mut impl Rng, max_kib: usize) -> String {
    let kib = rng.gen_range(1..=max_kib.max(1));
    text(rng, kib * 1024)
}

/// An attachment of 50 KiB to 2 MiB: text-like or, half the time,
/// random bytes. Its name and content.
pub fn attachment(rng: &mut impl Rng) -> (String, Vec<u8>) {
    let size = rng.gen_range(50 * 1024..=2 * 1024 * 1024);
    if rng.gen_bool(0.5) {
        let mut b = vec![0u8; size];
        rng.fill(&mut b[..]);
        ("data.bin".into(), b)
    } else {
        ("notes.txt".into(), text(rng, size).into_bytes())
    }
}

fn addresses(names: &[String]) -> Vec<Address> {
    names
        .iter()
        .filter_map(|n| Address::parse(n).ok())
        .collect()
}

/// A memo to `to` as delivered into a mail file by the prefill: its
/// items, with `DeliveredDate` as the router sets it.
pub fn delivered_memo(rng: &mut impl Rng, from: &str, to: &str, max_kib: usize) -> Vec<nsf::Item> {
    let mut h = Header::new(
        &format!("Prefilled {}", rng.gen::<u32>()),
        &body(rng, max_kib),
    );
    h.from = Address::parse(from).ok();
    h.send_to = addresses(&[to.to_string()]);
    h.posted = Some(Timestamp::now());
    let mut items = Message::Memo(Memo { header: h }).to_items();
    items.push(nsf::Item {
        name: mail::item::DELIVERED_DATE.into(),
        value: nsf::ItemValue::DateTime(Timestamp::now()),
    });
    items
}

/// A draft memo to nobody yet, as JSON items.
pub fn draft(rng: &mut impl Rng) -> String {
    let len = rng.gen_range(512..4096);
    let h = Header::new("Draft", &text(rng, len));
    json(&Message::Memo(Memo { header: h }))
}

/// A meeting the sender chairs, inviting `to`: sent through the
/// calendar (`Meeting` create), which makes the chair's entry and
/// deposits one Invitation for the router to deliver.
pub fn meeting(rng: &mut impl Rng, to: &[String]) -> protocol::MeetingRequest {
    let len = rng.gen_range(1024..8192);
    let start = Timestamp::now().0 + rng.gen_range(1..30i64) * 86_400_000_000;
    protocol::MeetingRequest::Create {
        subject: format!("Meeting {}", rng.gen::<u32>()),
        body: text(rng, len),
        start: protocol::Timestamp(start),
        end: protocol::Timestamp(start + 3_600_000_000),
        location: "Room 2".into(),
        invitees: to.to_vec(),
    }
}

/// A message of `kind` to `to`, as JSON items (an invitation, which goes
/// through the calendar instead, as a Notice of type Invitation).
pub fn message(rng: &mut impl Rng, kind: super::script::SendKind, to: &[String]) -> String {
    use super::script::SendKind;
    let len = rng.gen_range(1024..8192);
    let body = text(rng, len);
    let mut h = Header::new(&format!("{kind:?} {}", rng.gen::<u32>()), &body);
    h.send_to = addresses(to);
    let start = Timestamp(Timestamp::now().0 + rng.gen_range(1..30i64) * 86_400_000_000);
    let end = Timestamp(start.0 + 3_600_000_000);
    let m = match kind {
        SendKind::Memo => Message::Memo(Memo { header: h }),
        SendKind::Appointment => Message::Appointment(Appointment {
            required_attendees: h.send_to.clone(),
            header: h,
            appt_unid: Unid::random(),
            start,
            end,
            location: "Room 1".into(),
            chair: None,
        }),
        SendKind::Invitation => Message::Notice(Notice {
            header: h,
            notice_type: NoticeType::Invitation,
            appt_unid: Unid::random(),
            start: Some(start),
            end: Some(end),
            location: "Room 2".into(),
            chair: None,
        }),
    };
    json(&m)
}

fn json(m: &Message) -> String {
    nsf::items_to_json(&m.to_items()).to_string()
}
