//! The router end to end over an embedded engine: delivery to several
//! recipients by name, alias and any case; non-delivery reports; batching
//! into one transaction per mail file; a mail file that cannot take mail
//! retried on the backoff schedule with the delay notice and the NDR at
//! the right times (a manual clock); and a crash at every sync point of a
//! pass, after which a rerun leaves exactly one copy of everything. Also
//! with several workers delivering side by side (each copy once, a crash
//! among them too), and a long queue in one box that must not hold up
//! the others.

use mail::{
    create_mail_file, create_user, deposit, item, open_box, Address, DeliveryState, Directory,
    Header, MailConfig, Memo, Message, NewPerson, Person, Router, RouterConfig, INBOX,
};
use nsf::{Clock, Database, Engine, EngineConfig, ItemValue, ManualClock, Timestamp};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
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

fn user(engine: &Engine, views: &Views, name: &str, aliases: &[&str]) -> Person {
    let dir = Directory::open(engine, views).unwrap();
    let new = NewPerson {
        name: name.into(),
        aliases: aliases.iter().map(|a| a.to_string()).collect(),
        server_user: None,
    };
    create_user(engine, views, &dir, &new).unwrap()
}

/// A person in the directory whose mail file does not exist (yet).
fn person_without_file(engine: &Engine, views: &Views, name: &str) -> Person {
    let dir = Directory::open(engine, views).unwrap();
    dir.add_person(&NewPerson {
        name: name.into(),
        ..NewPerson::default()
    })
    .unwrap()
}

fn send(engine: &Engine, views: &Views, from: &Person, subject: &str, to: &[&str], bcc: &[&str]) {
    let list = |l: &[&str]| l.iter().map(|a| Address::parse(a).unwrap()).collect();
    let mut h = Header::new(subject, "Hello.");
    h.send_to = list(to);
    h.blind_copy_to = list(bcc);
    deposit(
        engine,
        views,
        &config(),
        from,
        Message::Memo(Memo { header: h }),
        &mut [],
    )
    .unwrap();
}

/// The subjects in `person`'s Inbox, sorted.
fn inbox(engine: &Engine, views: &Views, person: &Person) -> Vec<String> {
    let db = engine.open_database(person.mail_file.as_str()).unwrap();
    let mut out: Vec<String> = entries(views, &db, INBOX)
        .into_iter()
        .map(|u| subject(&db, u))
        .collect();
    out.sort();
    out
}

fn entries(views: &Views, db: &Arc<Database>, view: &str) -> Vec<nsf::Unid> {
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

fn subject(db: &Database, unid: nsf::Unid) -> String {
    let note = db.get(unid).unwrap();
    match note
        .items
        .iter()
        .find(|i| i.name == "Subject")
        .map(|i| &i.value)
    {
        Some(ItemValue::Text(s)) => s.clone(),
        other => panic!("no subject: {other:?}"),
    }
}

/// Every deposit's delivery states, by subject.
fn states(engine: &Engine, views: &Views) -> Vec<(String, Vec<DeliveryState>)> {
    let db = open_box(engine, views, &mail::box_path(0, 1)).unwrap();
    let mut out = Vec::new();
    db.for_each_note(|n| {
        if let Ok(d) = mail::read_deposit(&db, n.oid.unid) {
            let s = d.message.header().subject.clone();
            out.push((s, d.deliveries.into_iter().map(|d| d.state).collect()));
        }
        Ok(())
    })
    .unwrap();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// A router whose passes never run out of time (a slow machine must not
/// change what one pass does; cutting passes short is tested on its own).
fn router(clock: &Arc<ManualClock>) -> Router {
    router_with(clock, RouterConfig::DEFAULT_WORKERS)
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(Timestamp::now()))
}

#[test]
fn each_recipient_gets_one_copy_by_any_of_their_names() {
    let (engine, views) = open(Arc::new(MemBackend::new()));
    let alice = user(&engine, &views, "Alice Smith", &[]);
    let bob = user(&engine, &views, "Bob", &["bobby@example.com"]);
    let carol = user(&engine, &views, "Carol", &[]);
    send(
        &engine,
        &views,
        &alice,
        "lunch",
        &["BOB", "Bobby@Example.COM"],
        &["carol"],
    );
    send(&engine, &views, &alice, "tea", &["Someone <bob>"], &[]);
    let clock = clock();
    let r = router(&clock);
    let pass = r.pass(&engine, &views).unwrap();
    assert_eq!(pass.delivered, 4, "{pass:?}");
    assert_eq!((pass.failed, pass.retrying, pass.next_due), (0, 0, None));
    assert_eq!(inbox(&engine, &views, &bob), ["lunch", "tea"]);
    assert_eq!(inbox(&engine, &views, &carol), ["lunch"]);
    assert!(inbox(&engine, &views, &alice).is_empty());
    // The copy has no Bcc and is marked delivered; the sender's is in Sent.
    let cdb = engine.open_database(carol.mail_file.as_str()).unwrap();
    let copy = cdb.get(entries(&views, &cdb, INBOX)[0]).unwrap();
    assert!(copy.items.iter().all(|i| i.name != item::BLIND_COPY_TO));
    assert!(copy.items.iter().any(|i| i.name == item::DELIVERED_DATE));
    let adb = engine.open_database(alice.mail_file.as_str()).unwrap();
    let mut sent: Vec<String> = entries(&views, &adb, "Sent")
        .into_iter()
        .map(|u| subject(&adb, u))
        .collect();
    sent.sort();
    assert_eq!(sent, ["lunch", "tea"]);
    for (_, s) in states(&engine, &views) {
        assert!(s.iter().all(|s| *s == DeliveryState::Delivered), "{s:?}");
    }
    // Nothing is left: another pass writes nothing.
    let seq = cdb.last_seq();
    assert_eq!(r.pass(&engine, &views).unwrap().delivered, 0);
    assert_eq!(cdb.last_seq(), seq);
    let stats = r.stats().snapshot(clock.now());
    assert_eq!((stats.delivered, stats.waiting, stats.ndr), (4, 0, 0));
    assert_eq!(stats.delivered_per_min, 4);
}

#[test]
fn an_unknown_recipient_gets_the_sender_a_non_delivery_report() {
    let (engine, views) = open(Arc::new(MemBackend::new()));
    let alice = user(&engine, &views, "Alice", &[]);
    let bob = user(&engine, &views, "Bob", &[]);
    send(&engine, &views, &alice, "hi", &["bob", "nobody"], &[]);
    let clock = clock();
    let r = router(&clock);
    let pass = r.pass(&engine, &views).unwrap();
    assert_eq!((pass.delivered, pass.failed), (1, 1));
    assert_eq!(inbox(&engine, &views, &bob), ["hi"]);
    assert_eq!(inbox(&engine, &views, &alice), ["Delivery failure: hi"]);
    let s = states(&engine, &views);
    assert_eq!(s[0].1[0], DeliveryState::Delivered);
    assert_eq!(
        s[0].1[1],
        DeliveryState::Failed {
            reason: "unknown recipient".into()
        }
    );
    r.pass(&engine, &views).unwrap();
    assert_eq!(inbox(&engine, &views, &alice).len(), 1, "one report");
    assert_eq!(r.stats().snapshot(clock.now()).ndr, 1);
}

/// The log commits of one pass delivering `n` messages from Alice to Bob.
fn commits_to_deliver(n: usize) -> u64 {
    let (engine, views) = open(Arc::new(MemBackend::new()));
    let alice = user(&engine, &views, "Alice", &[]);
    let bob = user(&engine, &views, "Bob", &[]);
    for i in 0..n {
        send(&engine, &views, &alice, &format!("m{i}"), &["bob"], &[]);
    }
    let before = engine.log_info().unwrap().commits;
    router(&clock()).pass(&engine, &views).unwrap();
    let commits = engine.log_info().unwrap().commits - before;
    assert_eq!(inbox(&engine, &views, &bob).len(), n);
    commits
}

#[test]
fn deliveries_to_one_mail_file_share_one_transaction() {
    let one = commits_to_deliver(1);
    let five = commits_to_deliver(5);
    // No extra commit at all: the copies (in Bob's file) and the sender's
    // copies (in Alice's) are one batch each, the Inbox one folder change,
    // and the five box documents' updates (one box here) one transaction,
    // however many.
    assert_eq!(five, one, "one message: {one} commits, five: {five}");
}

#[test]
fn a_mail_file_that_cannot_take_mail_waits_on_the_schedule_and_the_sender_hears() {
    let (engine, views) = open(Arc::new(MemBackend::new()));
    let alice = user(&engine, &views, "Alice", &[]);
    let bob = user(&engine, &views, "Bob", &[]);
    let carol = person_without_file(&engine, &views, "Carol");
    let dan = person_without_file(&engine, &views, "Dan");
    send(&engine, &views, &alice, "to carol", &["carol", "bob"], &[]);
    let clock = clock();
    let r = router(&clock);
    let p = r.pass(&engine, &views).unwrap();
    // Bob is not held up by Carol.
    assert_eq!((p.delivered, p.retrying), (1, 1));
    assert_eq!(inbox(&engine, &views, &bob), ["to carol"]);
    let first = clock.now();
    assert_eq!(p.next_due, Some(Timestamp(first.0 + 60_000_000)));
    let stats = r.stats().snapshot(clock.now());
    assert_eq!((stats.waiting, stats.retrying), (1, 1));
    assert!(
        stats.retry_reasons[0].0.contains("mail/carol.fdb"),
        "{stats:?}"
    );
    // Not due yet: no attempt. Then 1, 5, 15, 30, 60, 60 minutes apart.
    clock.advance(Duration::from_secs(30));
    r.pass(&engine, &views).unwrap();
    let attempts = |engine: &Engine, views: &Views| {
        let db = open_box(engine, views, &mail::box_path(0, 1)).unwrap();
        let mut a = 0;
        db.for_each_note(|n| {
            if let Ok(d) = mail::read_deposit(&db, n.oid.unid) {
                a = d.deliveries[0].attempts;
            }
            Ok(())
        })
        .unwrap();
        a
    };
    assert_eq!(attempts(&engine, &views), 1);
    let mut at = first;
    for (n, minutes) in [1u64, 5, 15, 30, 60, 60].into_iter().enumerate() {
        at = Timestamp(at.0 + minutes as i64 * 60_000_000);
        clock.set(Timestamp(at.0 - 1));
        r.pass(&engine, &views).unwrap();
        assert_eq!(attempts(&engine, &views), n as u32 + 1, "early by 1 µs");
        clock.set(at);
        let p = r.pass(&engine, &views).unwrap();
        assert_eq!(attempts(&engine, &views), n as u32 + 2);
        assert_eq!(p.retrying, 1);
    }
    // 2 h 41 min so far: no notice yet. At 4 hours the delay notice.
    assert!(inbox(&engine, &views, &alice).is_empty());
    clock.set(Timestamp(first.0 + 4 * 3_600_000_000));
    r.pass(&engine, &views).unwrap();
    assert_eq!(
        inbox(&engine, &views, &alice),
        ["Delivery delayed: to carol"]
    );
    clock.advance(Duration::from_secs(3600));
    r.pass(&engine, &views).unwrap();
    assert_eq!(inbox(&engine, &views, &alice).len(), 1, "one delay notice");
    // Carol's file appears: the next attempt delivers.
    create_mail_file(&engine, &views, &carol).unwrap();
    clock.advance(Duration::from_secs(3600));
    let p = r.pass(&engine, &views).unwrap();
    assert_eq!((p.delivered, p.retrying, p.next_due), (1, 0, None));
    assert_eq!(inbox(&engine, &views, &carol), ["to carol"]);

    // Dan's never appears: after 24 hours an NDR, and he is given up.
    // (Deposits are stamped by the system clock.)
    let start = Timestamp::now();
    send(&engine, &views, &alice, "to dan", &["dan"], &[]);
    clock.set(start);
    r.pass(&engine, &views).unwrap();
    clock.set(Timestamp(start.0 + 23 * 3_600_000_000));
    r.pass(&engine, &views).unwrap();
    assert!(!inbox(&engine, &views, &alice).contains(&"Delivery failure: to dan".to_string()));
    clock.set(Timestamp(start.0 + 25 * 3_600_000_000));
    let p = r.pass(&engine, &views).unwrap();
    assert_eq!((p.failed, p.retrying, p.next_due), (1, 0, None));
    let a = inbox(&engine, &views, &alice);
    assert!(a.contains(&"Delivery failure: to dan".to_string()), "{a:?}");
    let s = states(&engine, &views);
    let dan_state = &s.iter().find(|(s, _)| s == "to dan").unwrap().1[0];
    assert!(
        matches!(dan_state, DeliveryState::Failed { reason } if reason.starts_with("not delivered in 24 hours")),
        "{dan_state:?}"
    );
    let _ = dan;
}

/// Users and three messages (to Bob and Carol, to Bob, to Bob and an
/// unknown name) on `backend`.
fn crash_setup(backend: Arc<dyn Backend>) -> (Engine, Views) {
    let (engine, views) = open(backend);
    let alice = user(&engine, &views, "Alice", &[]);
    user(&engine, &views, "Bob", &["b"]);
    user(&engine, &views, "Carol", &[]);
    send(&engine, &views, &alice, "one", &["bob", "carol"], &[]);
    send(&engine, &views, &alice, "two", &["B"], &[]);
    send(&engine, &views, &alice, "three", &["bob", "ghost"], &[]);
    (engine, views)
}

fn check_exactly_once(engine: &Engine, views: &Views) {
    let dir = Directory::open(engine, views).unwrap();
    let person = |n: &str| dir.person(n).unwrap();
    assert_eq!(
        inbox(engine, views, &person("bob")),
        ["one", "three", "two"]
    );
    assert_eq!(inbox(engine, views, &person("carol")), ["one"]);
    assert_eq!(
        inbox(engine, views, &person("alice")),
        ["Delivery failure: three"]
    );
    let adb = engine
        .open_database(person("alice").mail_file.as_str())
        .unwrap();
    assert_eq!(entries(views, &adb, "Sent").len(), 3);
    for (s, st) in states(engine, views) {
        assert!(
            st.iter().all(|s| *s != DeliveryState::Pending),
            "{s}: {st:?}"
        );
    }
}

#[test]
fn a_crash_at_any_point_of_a_pass_loses_and_repeats_nothing() {
    // How many sync points one pass has.
    let disk = Arc::new(CrashBackend::new());
    let (engine, views) = crash_setup(disk.clone());
    let start = disk.sync_count();
    // One mail file after another, so each sync point falls at the same
    // write in every run (the workers' case is tested below).
    let r = router_with(&clock(), 1);
    r.pass(&engine, &views).unwrap();
    let syncs = disk.sync_count() - start;
    check_exactly_once(&engine, &views);
    assert!(syncs >= 8, "a pass writes several times ({syncs} syncs)");
    drop((engine, views));

    // A rerun may sync a little less (sizes differ by the random ids):
    // a point past its end crashes nothing and checks the same.
    let mut crashed = 0;
    for k in 1..=syncs {
        let disk = Arc::new(CrashBackend::new());
        let (engine, views) = crash_setup(disk.clone());
        disk.arm_crash(disk.sync_count() + k, CrashMode::DropUnsynced);
        let _ = r.pass(&engine, &views);
        let Some(image) = disk.crashed_image() else {
            disk.arm_crash(u64::MAX, CrashMode::DropUnsynced);
            check_exactly_once(&engine, &views);
            continue;
        };
        crashed += 1;
        drop((engine, views));
        let (engine, views) = open(Arc::new(image));
        r.pass(&engine, &views).unwrap();
        check_exactly_once(&engine, &views);
        engine.close().unwrap();
    }
    assert!(
        crashed + 2 >= syncs,
        "{crashed} of {syncs} sync points crashed"
    );
}

fn router_with(clock: &Arc<ManualClock>, workers: u32) -> Router {
    let config = RouterConfig::default()
        .with_workers(workers)
        .unwrap()
        .with_deliver_for(Duration::from_secs(3600));
    Router::new(config, clock.clone())
}

/// `n` people, each sending one message ("from i") to the next three.
fn ring_setup(backend: Arc<dyn Backend>, n: usize) -> (Engine, Views) {
    let (engine, views) = open(backend);
    let people: Vec<Person> = (0..n)
        .map(|i| user(&engine, &views, &format!("Person{i:02}"), &[]))
        .collect();
    for (i, p) in people.iter().enumerate() {
        let to: Vec<String> = (1..=3)
            .map(|d| format!("person{:02}", (i + d) % n))
            .collect();
        let to: Vec<&str> = to.iter().map(String::as_str).collect();
        send(&engine, &views, p, &format!("from {i:02}"), &to, &[]);
    }
    (engine, views)
}

/// Each of the ring's `n` people has exactly the three messages of the
/// three before, once each, and their own in Sent; nothing is pending.
fn check_ring(engine: &Engine, views: &Views, n: usize) {
    let dir = Directory::open(engine, views).unwrap();
    for j in 0..n {
        let p = dir.person(&format!("person{j:02}")).unwrap();
        let mut want: Vec<String> = (1..=3)
            .map(|d| format!("from {:02}", (j + n - d) % n))
            .collect();
        want.sort();
        assert_eq!(inbox(engine, views, &p), want, "{}", p.full_name);
        let db = engine.open_database(p.mail_file.as_str()).unwrap();
        assert_eq!(entries(views, &db, "Sent").len(), 1, "{}", p.full_name);
    }
    for (s, st) in states(engine, views) {
        assert!(
            st.iter().all(|s| *s == DeliveryState::Delivered),
            "{s}: {st:?}"
        );
    }
}

#[test]
fn deliveries_to_many_mail_files_side_by_side_file_each_copy_once() {
    let n = 24;
    let (engine, views) = ring_setup(Arc::new(MemBackend::new()), n);
    let clock = clock();
    let r = router_with(&clock, 8);
    let pass = r.pass(&engine, &views).unwrap();
    assert_eq!((pass.delivered, pass.failed, pass.more), (3 * n, 0, false));
    check_ring(&engine, &views, n);
    assert_eq!(r.pass(&engine, &views).unwrap().delivered, 0);
    let stats = r.stats().snapshot(clock.now());
    assert_eq!(stats.delivered, 3 * n as u64);
    // The first pass found every deposit queued; nothing is in flight
    // once a pass is over.
    assert_eq!(
        (stats.queue_depth, stats.in_flight, stats.workers_busy),
        (0, 0, 0)
    );
    assert_eq!(stats.passes_behind, 0);
}

#[test]
fn a_pass_out_of_time_leaves_the_mail_files_it_did_not_reach_due() {
    let n = 12;
    let (engine, views) = ring_setup(Arc::new(MemBackend::new()), n);
    let clock = clock();
    // No time at all: each of the two workers takes one mail file.
    let config = RouterConfig::default()
        .with_workers(2)
        .unwrap()
        .with_deliver_for(Duration::ZERO);
    let r = Router::new(config, clock.clone());
    let first = r.pass(&engine, &views).unwrap();
    assert!(first.more, "{first:?}");
    assert!(first.delivered > 0 && first.delivered <= 2 * 3, "{first:?}");
    // Nothing it did not reach counts as an attempt: no backoff, due now.
    assert_eq!(first.retrying, 0, "{first:?}");
    assert!(first.next_due.is_none_or(|t| t <= clock.now()), "{first:?}");
    let mut delivered = first.delivered;
    for _ in 0..(4 * n) {
        let p = r.pass(&engine, &views).unwrap();
        delivered += p.delivered;
        if !p.more {
            break;
        }
    }
    assert_eq!(delivered, 3 * n);
    check_ring(&engine, &views, n);
}

#[test]
fn a_crash_while_workers_deliver_loses_and_repeats_nothing() {
    let n = 8;
    let r = router_with(&clock(), 4);
    let disk = Arc::new(CrashBackend::new());
    let (engine, views) = ring_setup(disk.clone(), n);
    let start = disk.sync_count();
    r.pass(&engine, &views).unwrap();
    let syncs = disk.sync_count() - start;
    check_ring(&engine, &views, n);
    drop((engine, views));

    // Copies of several mail files commit side by side, so where each
    // sync point falls differs from run to run; every crash must still
    // leave a state the next pass completes exactly once.
    let (mut crashed, mut filed_unrecorded) = (0, 0);
    for k in 1..=syncs {
        let disk = Arc::new(CrashBackend::new());
        let (engine, views) = ring_setup(disk.clone(), n);
        disk.arm_crash(disk.sync_count() + k, CrashMode::DropUnsynced);
        let _ = r.pass(&engine, &views);
        let Some(image) = disk.crashed_image() else {
            disk.arm_crash(u64::MAX, CrashMode::DropUnsynced);
            continue;
        };
        crashed += 1;
        drop((engine, views));
        let (engine, views) = open(Arc::new(image));
        filed_unrecorded += copies_not_recorded(&engine, &views);
        while r.pass(&engine, &views).unwrap().more {}
        check_ring(&engine, &views, n);
        engine.close().unwrap();
    }
    assert!(
        crashed > syncs / 2,
        "{crashed} of {syncs} sync points crashed"
    );
    assert!(
        filed_unrecorded > 0,
        "no crash fell between a durable copy and its record"
    );
}

/// Copies in a mail file whose recipient the box still has pending.
fn copies_not_recorded(engine: &Engine, views: &Views) -> usize {
    let dir = Directory::open(engine, views).unwrap();
    let db = open_box(engine, views, &mail::box_path(0, 1)).unwrap();
    let mut found = 0;
    db.for_each_note(|n| {
        let Ok(d) = mail::read_deposit(&db, n.oid.unid) else {
            return Ok(());
        };
        for delivery in &d.deliveries {
            if delivery.state != DeliveryState::Pending {
                continue;
            }
            let p = dir.person(&delivery.recipient.to_string()).unwrap();
            let file = engine.open_database(p.mail_file.as_str()).unwrap();
            if file.get(mail::copy_unid(d.unid, &p.mail_file)).is_ok() {
                found += 1;
            }
        }
        Ok(())
    })
    .unwrap();
    found
}

#[test]
fn a_long_queue_in_one_box_does_not_hold_up_the_others() {
    let (engine, views) = open(Arc::new(MemBackend::new()));
    let alice = user(&engine, &views, "Alice", &[]);
    let bob = user(&engine, &views, "Bob", &[]);
    let carol = user(&engine, &views, "Carol", &[]);
    // 600 messages queue in mail.box (one box), then three more go to
    // mail1/mail2.box (two boxes) behind them.
    let flood = 600;
    for i in 0..flood {
        send(&engine, &views, &alice, &format!("m{i:03}"), &["bob"], &[]);
    }
    let two = MailConfig::new(2, 1 << 20).unwrap();
    for s in ["late 1", "late 2", "late 3"] {
        let mut h = Header::new(s, "Hello.");
        h.send_to = vec![Address::parse("carol").unwrap()];
        deposit(
            &engine,
            &views,
            &two,
            &alice,
            Message::Memo(Memo { header: h }),
            &mut [],
        )
        .unwrap();
    }
    let clock = clock();
    let r = router(&clock);
    let first = r.pass(&engine, &views).unwrap();
    // One pass is bounded and takes from every box: the late messages
    // are delivered at once, the long queue only in part.
    assert_eq!(
        inbox(&engine, &views, &carol),
        ["late 1", "late 2", "late 3"]
    );
    assert!(first.more, "{first:?}");
    assert!(first.delivered < flood, "{first:?}");
    let stats = r.stats().snapshot(clock.now());
    assert_eq!(stats.queue_depth, flood as u64 + 3);
    assert_eq!(stats.passes_behind, 1);
    let mut passes = 1;
    while r.pass(&engine, &views).unwrap().more {
        passes += 1;
        assert!(passes < 10, "the queue does not drain");
    }
    let want: Vec<String> = (0..flood).map(|i| format!("m{i:03}")).collect();
    assert_eq!(inbox(&engine, &views, &bob), want);
    assert_eq!(r.stats().snapshot(clock.now()).delivered, flood as u64 + 3);
}
