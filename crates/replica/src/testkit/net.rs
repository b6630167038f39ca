//! A simulated connection between a puller and a source, with faults
//! scripted by message number.
//!
//! Messages are numbered in the order they are sent, both directions in
//! one count, from 0. A fault names the numbers it hits: a message can be
//! dropped, delivered twice, or held back behind the next message going
//! the same way (a reordering); the connection can be cut as a message is
//! sent (that message and everything after it are lost, and both sides
//! are told the connection closed); either side can crash after its n-th
//! local action (reads, writes, history saves), losing every action still
//! queued. Nothing here sleeps: a side waiting for a lost message fails
//! when the runner moves the clock past its idle timeout.

use crate::msg::{Packet, ToSource, ToTarget};
use serde::Serialize;
use std::collections::{BTreeSet, VecDeque};

/// What goes wrong on one session's connection.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Messages lost.
    pub drop: BTreeSet<u32>,
    /// Messages delivered twice.
    pub duplicate: BTreeSet<u32>,
    /// Messages delivered after the next one going the same way.
    pub hold: BTreeSet<u32>,
    /// The connection breaks as this message is sent.
    pub cut_at: Option<u32>,
    /// The target crashes after this many local actions.
    pub crash_target_after: Option<u32>,
    /// The source crashes after this many local actions.
    pub crash_source_after: Option<u32>,
}

impl Faults {
    /// No fault at all.
    pub fn none() -> Faults {
        Faults::default()
    }

    /// The connection breaks as message `k` is sent.
    pub fn cut_at(k: u32) -> Faults {
        Faults {
            cut_at: Some(k),
            ..Faults::default()
        }
    }
}

/// A message as it was sent, for tests that look at the conversation.
#[derive(Clone, Debug, PartialEq)]
pub enum Sent<V, N> {
    /// From the target.
    ToSource(ToSource),
    /// From the source.
    ToTarget(ToTarget<V, N>),
}

/// One direction of the connection.
#[derive(Debug)]
struct Lane<M> {
    queue: VecDeque<M>,
    held: Option<M>,
}

impl<M: Clone> Lane<M> {
    fn new() -> Lane<M> {
        Lane {
            queue: VecDeque::new(),
            held: None,
        }
    }

    fn push(&mut self, m: M, duplicate: bool, hold: bool) {
        if hold {
            if let Some(previous) = self.held.replace(m) {
                self.queue.push_back(previous);
            }
            return;
        }
        if duplicate {
            self.queue.push_back(m.clone());
        }
        self.queue.push_back(m);
        if let Some(held) = self.held.take() {
            self.queue.push_back(held);
        }
    }
}

/// The packets delivered in one step.
pub(crate) struct InFlight<V, N> {
    pub(crate) to_source: Vec<Packet<ToSource>>,
    pub(crate) to_target: Vec<Packet<ToTarget<V, N>>>,
}

/// The connection of one session.
#[derive(Debug)]
pub(crate) struct Link<V, N> {
    faults: Faults,
    sent: u32,
    to_source: Lane<Packet<ToSource>>,
    to_target: Lane<Packet<ToTarget<V, N>>>,
    pub(crate) cut: bool,
    pub(crate) messages: u32,
    pub(crate) bytes: u64,
    pub(crate) trace: Vec<Sent<V, N>>,
}

impl<V: Clone + Serialize, N: Clone + Serialize> Link<V, N> {
    pub(crate) fn new(faults: Faults) -> Link<V, N> {
        Link {
            faults,
            sent: 0,
            to_source: Lane::new(),
            to_target: Lane::new(),
            cut: false,
            messages: 0,
            bytes: 0,
            trace: Vec::new(),
        }
    }

    pub(crate) fn faults(&self) -> &Faults {
        &self.faults
    }

    /// Numbers the message and says what happens to it: `None` if it is
    /// lost (dropped, or the connection is or becomes cut).
    fn admit<M: Serialize>(&mut self, packet: &M) -> Option<(bool, bool)> {
        let k = self.sent;
        self.sent += 1;
        if self.faults.cut_at == Some(k) {
            self.cut = true;
        }
        if self.cut {
            return None;
        }
        self.messages += 1;
        self.bytes += postcard::to_allocvec(packet).map_or(0, |b| b.len() as u64);
        if self.faults.drop.contains(&k) {
            return None;
        }
        Some((
            self.faults.duplicate.contains(&k),
            self.faults.hold.contains(&k),
        ))
    }

    pub(crate) fn send_to_source(&mut self, packet: Packet<ToSource>) {
        self.trace.push(Sent::ToSource(packet.body.clone()));
        if let Some((duplicate, hold)) = self.admit(&packet) {
            self.to_source.push(packet, duplicate, hold);
        }
    }

    pub(crate) fn send_to_target(&mut self, packet: Packet<ToTarget<V, N>>) {
        self.trace.push(Sent::ToTarget(packet.body.clone()));
        if let Some((duplicate, hold)) = self.admit(&packet) {
            self.to_target.push(packet, duplicate, hold);
        }
    }

    /// Everything in flight that is not held back, each way.
    pub(crate) fn take(&mut self) -> InFlight<V, N> {
        InFlight {
            to_source: self.to_source.queue.drain(..).collect(),
            to_target: self.to_target.queue.drain(..).collect(),
        }
    }

    /// Lets held messages go once nothing else will overtake them.
    pub(crate) fn release_held(&mut self) -> bool {
        let mut released = false;
        if let Some(m) = self.to_source.held.take() {
            self.to_source.queue.push_back(m);
            released = true;
        }
        if let Some(m) = self.to_target.held.take() {
            self.to_target.queue.push_back(m);
            released = true;
        }
        released
    }

    pub(crate) fn has_ready(&self) -> bool {
        !self.to_source.queue.is_empty() || !self.to_target.queue.is_empty()
    }
}
