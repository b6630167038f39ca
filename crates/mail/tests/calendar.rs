//! Meetings end to end over an embedded engine, the router run by hand:
//! invitations reach every invitee; accepting and declining update the
//! chair's entry and the accepter's calendar; rescheduling moves and
//! cancelling removes the accepter's entry; an answer applied again after
//! a crash changes the chair's entry once; an older answer never
//! overwrites a newer one; bad input is refused and changes nothing.

use mail::{
    attendee_entry_unid, cancel_meeting, create_meeting, read_meeting, reschedule_meeting, respond,
    AttendeeStatus, Directory, MailConfig, MailError, NewMeeting, NewPerson, NewTime, Person,
    Response, Router, RouterConfig, INBOX,
};
use mail::{create_user, Address};
use nsf::{Database, Engine, EngineConfig, ItemValue, ManualClock, Timestamp, Unid};
use std::path::Path;
use std::sync::Arc;
use storage::backend::{CrashBackend, CrashMode, MemBackend};
use storage::Backend;
use translog::LogConfig;
use views::{Row, Start, ViewConfig, Views};

fn open(backend: Arc<dyn Backend>) -> (Engine, Views) {
    let mut cfg = EngineConfig::new("/data");
    cfg.buffer_pool_size = 4 << 20;
    cfg.background = false;
    let mut lc = LogConfig::new(Path::new("/data/translog"));
    lc.extent_size = 256 << 10;
    lc.max_size = 8 << 20;
    cfg.log = Some(lc);
    let (engine, _) = Engine::open(backend.clone(), cfg).unwrap();
    let views = Views::new(
        backend,
        ViewConfig {
            rebuild_dir: "/sort".into(),
            rebuild_memory: 1 << 20,
        },
    );
    (engine, views)
}

fn config() -> MailConfig {
    MailConfig::new(1, 1 << 20).unwrap()
}

fn user(engine: &Engine, views: &Views, name: &str) -> Person {
    let dir = Directory::open(engine, views).unwrap();
    let new = NewPerson {
        name: name.into(),
        ..NewPerson::default()
    };
    create_user(engine, views, &dir, &new).unwrap()
}

fn person(engine: &Engine, views: &Views, name: &str) -> Person {
    Directory::open(engine, views)
        .unwrap()
        .person(name)
        .unwrap()
}

fn route(engine: &Engine, views: &Views) {
    let r = Router::new(
        RouterConfig::default(),
        Arc::new(ManualClock::new(Timestamp::now())),
    );
    let pass = r.pass(engine, views).unwrap();
    assert_eq!((pass.failed, pass.retrying), (0, 0), "{pass:?}");
}

fn mail_file(engine: &Engine, p: &Person) -> Arc<Database> {
    engine.open_database(p.mail_file.as_str()).unwrap()
}

fn entries(views: &Views, db: &Arc<Database>, view: &str) -> Vec<Unid> {
    let c = views.open(db, view).unwrap();
    c.read(&Start::Position(0), 10_000, false, false)
        .unwrap()
        .into_iter()
        .filter_map(|r| match r {
            Row::Entry { unid, .. } => Some(unid),
            _ => None,
        })
        .collect()
}

fn item(db: &Database, unid: Unid, name: &str) -> ItemValue {
    let note = db.get(unid).unwrap();
    note.items
        .into_iter()
        .find(|i| i.name == name)
        .map(|i| i.value)
        .unwrap_or_else(|| panic!("no {name}"))
}

/// The Inbox's subjects, sorted.
fn inbox(engine: &Engine, views: &Views, p: &Person) -> Vec<String> {
    let db = mail_file(engine, p);
    let mut out: Vec<String> = entries(views, &db, INBOX)
        .into_iter()
        .map(|u| match item(&db, u, "Subject") {
            ItemValue::Text(s) => s,
            v => panic!("{v:?}"),
        })
        .collect();
    out.sort();
    out
}

const HOUR: i64 = 3_600_000_000;
const T0: i64 = 1_900_000_000_000_000;

fn meeting(invitees: &[&str]) -> NewMeeting {
    NewMeeting {
        subject: "Plan".into(),
        body: "Next quarter.".into(),
        start: Timestamp(T0),
        end: Timestamp(T0 + HOUR),
        location: "Room 1".into(),
        invitees: invitees
            .iter()
            .map(|a| Address::parse(a).unwrap())
            .collect(),
    }
}

/// Alice chairs a meeting with Bob and Carol, routed.
fn invited(engine: &Engine, views: &Views) -> Unid {
    let alice = user(engine, views, "Alice");
    user(engine, views, "Bob");
    user(engine, views, "Carol");
    user(engine, views, "Dan");
    let (appt, _) =
        create_meeting(engine, views, &config(), &alice, meeting(&["bob", "CAROL"])).unwrap();
    route(engine, views);
    appt
}

fn statuses(engine: &Engine, views: &Views, appt: Unid) -> Vec<AttendeeStatus> {
    let alice = person(engine, views, "alice");
    let m = read_meeting(&mail_file(engine, &alice), appt)
        .unwrap()
        .unwrap();
    m.statuses.into_iter().map(|(s, _)| s).collect()
}

#[test]
fn invitations_answers_reschedule_and_cancel_reach_everyone() {
    let (engine, views) = open(Arc::new(MemBackend::new()));
    let appt = invited(&engine, &views);
    let (alice, bob, carol) = (
        person(&engine, &views, "alice"),
        person(&engine, &views, "bob"),
        person(&engine, &views, "carol"),
    );
    // The chair's Calendar has the meeting; both invitees the Notice.
    let adb = mail_file(&engine, &alice);
    assert_eq!(entries(&views, &adb, "Calendar"), [appt]);
    assert_eq!(inbox(&engine, &views, &bob), ["Plan"]);
    assert_eq!(inbox(&engine, &views, &carol), ["Plan"]);
    use AttendeeStatus::*;
    assert_eq!(statuses(&engine, &views, appt), [NeedsAction, NeedsAction]);
    let m = read_meeting(&adb, appt).unwrap().unwrap();
    let names: Vec<String> = m
        .appointment
        .required_attendees
        .iter()
        .map(|a| a.to_string())
        .collect();
    assert_eq!(
        names,
        ["Bob", "Carol"],
        "invitees as the directory names them"
    );

    respond(&engine, &views, &config(), &bob, appt, Response::Accept).unwrap();
    respond(&engine, &views, &config(), &carol, appt, Response::Decline).unwrap();
    // The accepter's calendar has it at once; the chair hears on delivery.
    let bdb = mail_file(&engine, &bob);
    let bentry = attendee_entry_unid(appt, &bob.mail_file);
    assert_eq!(entries(&views, &bdb, "Calendar"), [bentry]);
    assert!(entries(&views, &mail_file(&engine, &carol), "Calendar").is_empty());
    assert_eq!(statuses(&engine, &views, appt), [NeedsAction, NeedsAction]);
    route(&engine, &views);
    assert_eq!(statuses(&engine, &views, appt), [Accepted, Declined]);
    assert_eq!(
        inbox(&engine, &views, &alice),
        ["Accepted: Plan", "Declined: Plan"]
    );

    // Rescheduling moves the chair's entry and the accepter's.
    let later = NewTime {
        start: Timestamp(T0 + 24 * HOUR),
        end: Timestamp(T0 + 25 * HOUR),
        location: Some("Room 2".into()),
    };
    reschedule_meeting(&engine, &views, &config(), &alice, appt, later).unwrap();
    assert_eq!(
        item(&adb, appt, "StartDateTime"),
        ItemValue::DateTime(Timestamp(T0 + 24 * HOUR))
    );
    route(&engine, &views);
    assert_eq!(
        item(&bdb, bentry, "StartDateTime"),
        ItemValue::DateTime(Timestamp(T0 + 24 * HOUR))
    );
    assert_eq!(
        item(&bdb, bentry, "Location"),
        ItemValue::Text("Room 2".into())
    );
    assert_eq!(statuses(&engine, &views, appt), [Accepted, Declined]);
    assert_eq!(
        inbox(&engine, &views, &carol),
        ["Plan", "Rescheduled: Plan"]
    );

    // Cancelling removes it everywhere; answering it then is refused.
    cancel_meeting(&engine, &views, &config(), &alice, appt).unwrap();
    assert!(entries(&views, &adb, "Calendar").is_empty());
    route(&engine, &views);
    assert!(entries(&views, &bdb, "Calendar").is_empty());
    assert!(matches!(
        respond(&engine, &views, &config(), &carol, appt, Response::Accept),
        Err(MailError::MeetingCancelled { .. })
    ));
    assert!(matches!(
        cancel_meeting(&engine, &views, &config(), &alice, appt),
        Err(MailError::UnknownMeeting { .. })
    ));
}

#[test]
fn an_older_answer_never_overwrites_a_newer_one() {
    let (engine, views) = open(Arc::new(MemBackend::new()));
    let appt = invited(&engine, &views);
    let bob = person(&engine, &views, "bob");
    // Both answers wait in the box and are delivered in one pass: the
    // later (decline) wins whatever order they are applied in.
    respond(&engine, &views, &config(), &bob, appt, Response::Accept).unwrap();
    respond(&engine, &views, &config(), &bob, appt, Response::Decline).unwrap();
    route(&engine, &views);
    use AttendeeStatus::*;
    assert_eq!(statuses(&engine, &views, appt), [Declined, NeedsAction]);
    assert!(entries(&views, &mail_file(&engine, &bob), "Calendar").is_empty());
    // Accepting again brings the entry back and the chair hears it.
    respond(&engine, &views, &config(), &bob, appt, Response::Accept).unwrap();
    route(&engine, &views);
    assert_eq!(statuses(&engine, &views, appt), [Accepted, NeedsAction]);
    assert_eq!(
        entries(&views, &mail_file(&engine, &bob), "Calendar").len(),
        1
    );
}

#[test]
fn bad_requests_are_refused_and_change_nothing() {
    let (engine, views) = open(Arc::new(MemBackend::new()));
    let appt = invited(&engine, &views);
    let alice = person(&engine, &views, "alice");
    let bob = person(&engine, &views, "bob");
    let dan = person(&engine, &views, "dan");
    let files: Vec<Arc<Database>> = [&alice, &bob, &dan]
        .iter()
        .map(|p| mail_file(&engine, p))
        .collect();
    let seqs = |files: &[Arc<Database>]| files.iter().map(|d| d.last_seq()).collect::<Vec<_>>();
    let before = seqs(&files);
    let c = config();
    // Not an invitee; an unknown meeting; not the chair.
    assert!(matches!(
        respond(&engine, &views, &c, &dan, appt, Response::Accept),
        Err(MailError::NotInvited { .. })
    ));
    assert!(matches!(
        respond(&engine, &views, &c, &bob, Unid::random(), Response::Decline),
        Err(MailError::NotInvited { .. })
    ));
    assert!(matches!(
        cancel_meeting(&engine, &views, &c, &alice, Unid::random()),
        Err(MailError::UnknownMeeting { .. })
    ));
    assert!(matches!(
        cancel_meeting(&engine, &views, &c, &bob, appt),
        Err(MailError::UnknownMeeting { .. })
    ));
    // Ends before it starts; no invitee; an unknown invitee.
    let mut m = meeting(&["bob"]);
    m.end = Timestamp(T0 - 1);
    let e = create_meeting(&engine, &views, &c, &alice, m).unwrap_err();
    assert!(e.to_string().contains("ends"), "{e}");
    let t = NewTime {
        start: Timestamp(T0),
        end: Timestamp(T0 - HOUR),
        location: None,
    };
    let e = reschedule_meeting(&engine, &views, &c, &alice, appt, t).unwrap_err();
    assert!(e.to_string().contains("ends"), "{e}");
    assert!(matches!(
        create_meeting(&engine, &views, &c, &alice, meeting(&[])),
        Err(MailError::BadMessage(_))
    ));
    assert!(matches!(
        create_meeting(&engine, &views, &c, &alice, meeting(&["bob", "nobody"])),
        Err(MailError::UnknownPerson(_))
    ));
    assert!(Response::parse("maybe").is_err());
    assert_eq!(seqs(&files), before, "nothing written");
    route(&engine, &views);
    assert_eq!(seqs(&files), before, "nothing deposited");
}

/// Alice's meeting with Bob, and Bob's acceptance deposited, on `backend`.
fn answered(backend: Arc<dyn Backend>) -> (Engine, Views, Unid) {
    let (engine, views) = open(backend);
    let appt = invited(&engine, &views);
    let bob = person(&engine, &views, "bob");
    respond(&engine, &views, &config(), &bob, appt, Response::Accept).unwrap();
    (engine, views, appt)
}

/// The chair's entry changed once: Bob accepted, by one update.
fn check_answered_once(engine: &Engine, views: &Views, appt: Unid, entry_seq: u32) {
    use AttendeeStatus::*;
    assert_eq!(statuses(engine, views, appt), [Accepted, NeedsAction]);
    let alice = person(engine, views, "alice");
    let note = mail_file(engine, &alice).get(appt).unwrap();
    assert_eq!(
        note.oid.seq_num, entry_seq,
        "one update of the chair's entry"
    );
    assert_eq!(inbox(engine, views, &alice), ["Accepted: Plan"]);
}

#[test]
fn an_answer_routed_again_after_a_crash_changes_the_chairs_entry_once() {
    let disk = Arc::new(CrashBackend::new());
    let (engine, views, appt) = answered(disk.clone());
    let alice = person(&engine, &views, "alice");
    let seq0 = mail_file(&engine, &alice).get(appt).unwrap().oid.seq_num;
    let start = disk.sync_count();
    route(&engine, &views);
    let syncs = disk.sync_count() - start;
    check_answered_once(&engine, &views, appt, seq0 + 1);
    drop((engine, views));

    let mut crashed = 0;
    for k in 1..=syncs {
        let disk = Arc::new(CrashBackend::new());
        let (engine, views, appt) = answered(disk.clone());
        disk.arm_crash(disk.sync_count() + k, CrashMode::DropUnsynced);
        let r = Router::new(
            RouterConfig::default(),
            Arc::new(ManualClock::new(Timestamp::now())),
        );
        let _ = r.pass(&engine, &views);
        let Some(image) = disk.crashed_image() else {
            disk.arm_crash(u64::MAX, CrashMode::DropUnsynced);
            check_answered_once(&engine, &views, appt, seq0 + 1);
            continue;
        };
        crashed += 1;
        drop((engine, views));
        let (engine, views) = open(Arc::new(image));
        route(&engine, &views);
        route(&engine, &views);
        check_answered_once(&engine, &views, appt, seq0 + 1);
        engine.close().unwrap();
    }
    assert!(syncs >= 3, "a pass writes several times ({syncs} syncs)");
    assert!(
        crashed + 2 >= syncs,
        "{crashed} of {syncs} sync points crashed"
    );
}
