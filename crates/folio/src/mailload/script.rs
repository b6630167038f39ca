//! One simulated mail user as a state machine with no I/O: it says which
//! operation comes next and when, the driver carries it out and tells it
//! what the Inbox held. Tests run it without a server or a clock.
//!
//! One iteration of the script (WORKLOADS.md "mail"):
//!
//! ```text
//!   open mail file ─ open Inbox ─ read 40 entries ─ read 5 ─ update 2 ─
//!   delete 1 ─ add a draft ─ [every second iteration: send 6] ─ close
//! ```
//!
//! Think time is spread evenly: the k-th of an iteration's n operations is
//! due at `start + k × iteration / n`, whatever the earlier ones took, so
//! a slow server makes users late (their response time grows) but never
//! lowers the offered load by stretching the iteration. Users start one
//! after another across the first iteration, so the load ramps up evenly,
//! and odd and even users send in alternate iterations, so sending is
//! spread over time too.

use rand::seq::index::sample;
use rand::Rng;
use std::time::Duration;

/// Rows of the Inbox read in step 1 (one page).
pub const PAGE: u32 = 40;
/// Documents read, updated and deleted per iteration.
pub const READS: usize = 5;
pub const UPDATES: usize = 2;
pub const DELETES: usize = 1;
/// Recipients of each sent message.
pub const RECIPIENTS: usize = 3;

/// What a sent message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum SendKind {
    Memo,
    Appointment,
    Invitation,
}

/// The six messages of a sending iteration.
const SENDS: [SendKind; 6] = [
    SendKind::Memo,
    SendKind::Memo,
    SendKind::Appointment,
    SendKind::Appointment,
    SendKind::Invitation,
    SendKind::Invitation,
];

/// An operation, with its target where it has one (a document of the
/// Inbox page; recipients by user number).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op<D> {
    OpenDb,
    OpenInbox,
    ReadEntries,
    Read(D),
    Update(D),
    Delete(D),
    AddDraft,
    Send { kind: SendKind, to: Vec<usize> },
    Close,
}

impl<D> Op<D> {
    /// The name the report uses.
    pub fn name(&self) -> &'static str {
        match self {
            Op::OpenDb => "open mail file",
            Op::OpenInbox => "open Inbox",
            Op::ReadEntries => "read 40 entries",
            Op::Read(_) => "read document",
            Op::Update(_) => "update document",
            Op::Delete(_) => "delete document",
            Op::AddDraft => "add draft",
            Op::Send { .. } => "send message",
            Op::Close => "close mail file",
        }
    }

    /// Deliveries the operation offers the router: one per recipient of
    /// a sent message (a meeting invitation is one notice deposited for
    /// its invitees), none for the rest.
    pub fn deliveries(&self) -> usize {
        match self {
            Op::Send { to, .. } => to.len(),
            _ => 0,
        }
    }
}

/// Every operation name, in script order.
pub const OP_NAMES: [&str; 9] = [
    "open mail file",
    "open Inbox",
    "read 40 entries",
    "read document",
    "update document",
    "delete document",
    "add draft",
    "send message",
    "close mail file",
];

/// A step of an iteration's plan, before its target is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    OpenDb,
    OpenInbox,
    ReadEntries,
    Read(usize),
    Update(usize),
    Delete(usize),
    AddDraft,
    Send(SendKind),
    Close,
}

/// One user's script.
#[derive(Debug)]
pub struct UserScript<D> {
    user: usize,
    users: usize,
    iteration: Duration,
    /// When the first iteration starts, from the run's start.
    offset: Duration,
    /// Iterations begun (the first is number 1).
    number: u64,
    plan: Vec<Step>,
    next: usize,
    /// The documents of the page read in this iteration, and the indexes
    /// chosen for reads, updates and the delete.
    page: Vec<D>,
    targets: Vec<usize>,
}

impl<D: Clone> UserScript<D> {
    /// User `user` of `users`, iterating every `iteration`; users start
    /// evenly spread over the first iteration.
    pub fn new(user: usize, users: usize, iteration: Duration) -> UserScript<D> {
        let offset = iteration.mul_f64(user as f64 / users.max(1) as f64);
        UserScript {
            user,
            users,
            iteration,
            offset,
            number: 0,
            plan: Vec::new(),
            next: 0,
            page: Vec::new(),
            targets: Vec::new(),
        }
    }

    /// Iterations begun so far.
    pub fn iterations(&self) -> u64 {
        self.number
    }

    /// The next operation and when it is due (from the run's start).
    /// Steps whose target the page does not have (an Inbox with fewer
    /// documents) are skipped.
    pub fn next(&mut self, rng: &mut impl Rng) -> (Op<D>, Duration) {
        loop {
            if self.next >= self.plan.len() {
                self.begin();
            }
            let k = self.next;
            self.next += 1;
            let due = self.offset
                + self.iteration * (self.number - 1) as u32
                + self.iteration.mul_f64(k as f64 / self.plan.len() as f64);
            if let Some(op) = self.op(self.plan[k], rng) {
                return (op, due);
            }
        }
    }

    /// The page of Inbox documents step 1 read (feeds the reads, updates
    /// and delete of this iteration).
    pub fn page_read(&mut self, docs: Vec<D>, rng: &mut impl Rng) {
        let want = (READS + UPDATES + DELETES).min(docs.len());
        self.targets = sample(rng, docs.len(), want).into_vec();
        self.page = docs;
    }

    /// Gives up the rest of this iteration (its mail file did not open);
    /// the next call to `next` begins the following one.
    pub fn abandon_iteration(&mut self) {
        self.next = self.plan.len();
    }

    fn begin(&mut self) {
        self.number += 1;
        self.next = 0;
        self.page.clear();
        self.targets.clear();
        let mut plan = vec![Step::OpenDb, Step::OpenInbox, Step::ReadEntries];
        plan.extend((0..READS).map(Step::Read));
        plan.extend((0..UPDATES).map(|i| Step::Update(READS + i)));
        plan.extend((0..DELETES).map(|i| Step::Delete(READS + UPDATES + i)));
        plan.push(Step::AddDraft);
        // Every second iteration sends; users alternate which, so the
        // sends are spread evenly over time rather than all users sending
        // in the same stretch.
        if (self.number + self.user as u64).is_multiple_of(2) {
            plan.extend(SENDS.map(Step::Send));
        }
        plan.push(Step::Close);
        self.plan = plan;
    }

    fn op(&self, step: Step, rng: &mut impl Rng) -> Option<Op<D>> {
        // Reads take the first five chosen, updates and the delete the
        // ones after (so with a full page the deleted document is neither
        // read nor updated); a short page wraps round, and the delete,
        // last of them, may then take a document read before.
        let target = |i: usize| -> Option<D> {
            let n = self.targets.len();
            let t = *self.targets.get(i % n.max(1))?;
            self.page.get(t).cloned()
        };
        Some(match step {
            Step::OpenDb => Op::OpenDb,
            Step::OpenInbox => Op::OpenInbox,
            Step::ReadEntries => Op::ReadEntries,
            Step::Read(i) => Op::Read(target(i)?),
            Step::Update(i) => Op::Update(target(i)?),
            Step::Delete(i) => Op::Delete(target(i)?),
            Step::AddDraft => Op::AddDraft,
            Step::Send(kind) => Op::Send {
                kind,
                to: self.recipients(rng),
            },
            Step::Close => Op::Close,
        })
    }

    /// Three other users, distinct (fewer if there are not enough).
    fn recipients(&self, rng: &mut impl Rng) -> Vec<usize> {
        let others = self.users.saturating_sub(1);
        sample(rng, others, RECIPIENTS.min(others))
            .into_iter()
            .map(|i| if i >= self.user { i + 1 } else { i })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    fn iteration(s: &mut UserScript<u32>, rng: &mut StdRng) -> Vec<(Op<u32>, Duration)> {
        let mut out = Vec::new();
        loop {
            let (op, due) = s.next(rng);
            if op == Op::ReadEntries {
                s.page_read((0..40).collect(), rng);
            }
            let close = op == Op::Close;
            out.push((op, due));
            if close {
                return out;
            }
        }
    }

    #[test]
    fn an_iteration_is_the_seven_steps_and_every_second_one_sends_six() {
        let mut rng = StdRng::seed_from_u64(7);
        let mut s = UserScript::new(2, 10, Duration::from_secs(900));
        let first = iteration(&mut s, &mut rng);
        let names: Vec<&str> = first.iter().map(|(o, _)| o.name()).collect();
        assert_eq!(
            names,
            [
                "open mail file",
                "open Inbox",
                "read 40 entries",
                "read document",
                "read document",
                "read document",
                "read document",
                "read document",
                "update document",
                "update document",
                "delete document",
                "add draft",
                "close mail file"
            ]
        );
        let second = iteration(&mut s, &mut rng);
        let sends: Vec<&Op<u32>> = second
            .iter()
            .map(|(o, _)| o)
            .filter(|o| matches!(o, Op::Send { .. }))
            .collect();
        assert_eq!(sends.len(), 6);
        for op in &sends {
            let Op::Send { to, .. } = op else {
                unreachable!()
            };
            assert_eq!(to.len(), 3);
            assert_eq!(op.deliveries(), 3, "one delivery per recipient");
            assert!(!to.contains(&2), "nobody sends to themselves: {to:?}");
            let mut d = to.clone();
            d.dedup();
            assert_eq!(d.len(), 3);
        }
        let kinds: Vec<SendKind> = sends
            .iter()
            .filter_map(|o| match o {
                Op::Send { kind, .. } => Some(*kind),
                _ => None,
            })
            .collect();
        assert_eq!(kinds, SENDS);
        assert_eq!(iteration(&mut s, &mut rng).len(), 13);
        assert_eq!(s.iterations(), 3);
        let mut odd: UserScript<u32> = UserScript::new(3, 10, Duration::from_secs(900));
        let sends = iteration(&mut odd, &mut rng)
            .iter()
            .filter(|(o, _)| matches!(o, Op::Send { .. }))
            .count();
        assert_eq!(sends, 6, "odd users send in their first iteration");
    }

    #[test]
    fn think_time_is_spread_evenly_and_users_are_staggered() {
        let mut rng = StdRng::seed_from_u64(1);
        let it = Duration::from_secs(130);
        let mut s = UserScript::new(4, 10, it);
        let ops = iteration(&mut s, &mut rng);
        let start = Duration::from_secs(52);
        for (k, (_, due)) in ops.iter().enumerate() {
            assert_eq!(*due, start + Duration::from_secs(10 * k as u64));
        }
        let (_, next) = s.next(&mut rng);
        assert_eq!(next, start + it);
    }

    #[test]
    fn the_delete_is_never_a_document_read_or_updated() {
        let mut rng = StdRng::seed_from_u64(3);
        for _ in 0..50 {
            let mut s = UserScript::new(0, 4, Duration::from_secs(1));
            let ops = iteration(&mut s, &mut rng);
            let deleted: Vec<u32> = ops
                .iter()
                .filter_map(|(o, _)| match o {
                    Op::Delete(d) => Some(*d),
                    _ => None,
                })
                .collect();
            assert_eq!(deleted.len(), 1);
            assert!(ops
                .iter()
                .all(|(o, _)| !matches!(o, Op::Read(d) | Op::Update(d) if *d == deleted[0])));
        }
    }

    #[test]
    fn a_short_page_wraps_round_and_an_empty_one_skips() {
        let mut rng = StdRng::seed_from_u64(2);
        let mut s: UserScript<u32> = UserScript::new(0, 2, Duration::from_secs(1));
        let mut ops = Vec::new();
        loop {
            let (op, _) = s.next(&mut rng);
            if op == Op::ReadEntries {
                s.page_read(vec![10, 11], &mut rng);
            }
            let close = op == Op::Close;
            ops.push(op);
            if close {
                break;
            }
        }
        let count = |f: fn(&Op<u32>) -> bool| ops.iter().filter(|o| f(o)).count();
        assert_eq!(
            count(|o| matches!(o, Op::Read(10 | 11))),
            5,
            "reads wrap round"
        );
        assert_eq!(count(|o| matches!(o, Op::Update(10 | 11))), 2);
        assert_eq!(count(|o| matches!(o, Op::Delete(10 | 11))), 1);
        let mut empty: UserScript<u32> = UserScript::new(0, 2, Duration::from_secs(1));
        let mut names = Vec::new();
        loop {
            let (op, _) = empty.next(&mut rng);
            if op == Op::ReadEntries {
                empty.page_read(Vec::new(), &mut rng);
            }
            names.push(op.name());
            if op == Op::Close {
                break;
            }
        }
        assert_eq!(
            names,
            [
                "open mail file",
                "open Inbox",
                "read 40 entries",
                "add draft",
                "close mail file"
            ]
        );
    }
}
