//! Background tasks: the work the server does besides answering requests
//! (the statistics ticker today; the mail router and scheduled
//! replication next), each with a lifecycle the registry drives.
//!
//! ```text
//!   Host::add_task ─▶ Tasks (registration order)
//!   start_all:  for each, in order: Starting ─ start() ok ─▶ Running ─▶ next
//!                                            └ error/panic ─▶ Failed(reason) ─▶ next
//!   while serving: run() returns Err or panics ─▶ Failed(reason), logged;
//!                  run() returns Ok unasked    ─▶ Stopped, logged
//!   stop_all(deadline), in reverse order, one at a time:
//!       Stopping (its context now holds the deadline) ─ run() returns ─▶ Stopped
//!       deadline passed ─▶ every task not yet stopped asked, LAST_CALL (1 s)
//!           together to return; then aborted, Failed, named in the log
//!       second signal ─▶ every task still running aborted, Failed, named
//! ```
//!
//! Why this shape: a task is written once against a small trait and gets
//! start order, stop order, a deadline, failure isolation and a state in
//! `show stats` (`task.<name>.state`) for free, so adding the mail router
//! is a matter of implementing [`Task`]. A task is a tokio task: it awaits
//! its work and its stop signal together ([`TaskContext::stop_requested`]),
//! and hands blocking engine work to `spawn_blocking`, checking
//! [`TaskContext::is_stop_requested`] between items. A task that panics or
//! fails is isolated: it is marked failed and the server goes on without it
//! (it is not restarted). Shutdown never waits for a task much beyond the
//! deadline: one that overruns it is aborted and named, the tasks started
//! before it still get a moment to stop cleanly, and the engine is closed
//! whether or not an aborted task still holds it (`Engine::shutdown`).
//! Tasks stop in reverse start order, so a task may rely on those started
//! before it for as long as it runs (unless one of them overran).

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use parking_lot::Mutex;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::{ServerError, ServerResult};

/// What a task's `start` or `run` fails with (any error; its text becomes
/// the reason in `task.<name>.state`).
pub type TaskError = Box<dyn std::error::Error + Send + Sync>;

/// The result of a task's `start` or `run`.
pub type TaskResult = Result<(), TaskError>;

/// A background task (see the module docs).
pub trait Task: Send + 'static {
    /// The task's name in statistics and the log: lowercase letters,
    /// digits, `_` and `-`, unique in the server.
    fn name(&self) -> &str;

    /// Gets ready to run: opens what the task needs. Tasks are started one
    /// after the other, in registration order, each once the one before is
    /// running (or failed), so this should not do the task's work. An
    /// error marks the task failed; the server starts without it.
    fn start(&mut self) -> BoxFuture<'_, TaskResult> {
        Box::pin(async { Ok(()) })
    }

    /// Does the task's work until `ctx` asks it to stop, then returns
    /// `Ok` before the deadline the context holds. An error (or a panic)
    /// marks the task failed.
    fn run(self: Box<Self>, ctx: TaskContext) -> BoxFuture<'static, TaskResult>;
}

/// A running task's view of the registry: its name and its stop signal.
/// Cloned freely (into blocking work, into sub-tasks).
#[derive(Clone, Debug)]
pub struct TaskContext {
    name: Arc<str>,
    /// `Some(deadline)` once a stop is requested.
    stop: watch::Receiver<Option<Instant>>,
}

impl TaskContext {
    /// The task's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Waits until the task is asked to stop; returns the deadline by which
    /// it must have returned. Cancel-safe, so it can sit in a `select!`
    /// loop. If the registry is gone, the answer is "now".
    pub async fn stop_requested(&mut self) -> Instant {
        match self.stop.wait_for(Option::is_some).await {
            Ok(deadline) => deadline.unwrap_or_else(Instant::now),
            Err(_) => Instant::now(),
        }
    }

    /// Whether a stop was requested (for blocking work, between items).
    pub fn is_stop_requested(&self) -> bool {
        self.deadline().is_some() || self.stop.has_changed().is_err()
    }

    /// The deadline, once a stop was requested.
    pub fn deadline(&self) -> Option<Instant> {
        *self.stop.borrow()
    }
}

/// Where a task is in its life (`task.<name>.state` in the statistics).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// Its `start` is running.
    Starting,
    /// Its `run` is running.
    Running,
    /// Asked to stop; not returned yet.
    Stopping,
    /// Returned `Ok` from `run`.
    Stopped,
    /// Failed to start, failed or panicked while running, or did not stop
    /// by the deadline; the reason says which.
    Failed(String),
}

impl TaskState {
    /// Whether the task has ended (it will not change state again).
    pub fn is_ended(&self) -> bool {
        matches!(self, TaskState::Stopped | TaskState::Failed(_))
    }
}

impl std::fmt::Display for TaskState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskState::Starting => f.write_str("starting"),
            TaskState::Running => f.write_str("running"),
            TaskState::Stopping => f.write_str("stopping"),
            TaskState::Stopped => f.write_str("stopped"),
            TaskState::Failed(reason) => write!(f, "failed: {reason}"),
        }
    }
}

/// Every task's state, in registration order; the registry writes it,
/// the statistics read it.
#[derive(Debug, Default)]
pub struct TaskBoard {
    states: Mutex<Vec<(Arc<str>, TaskState)>>,
}

impl TaskBoard {
    /// Every task's name and state, in registration order.
    pub fn states(&self) -> Vec<(String, TaskState)> {
        let states = self.states.lock();
        states
            .iter()
            .map(|(n, s)| (n.to_string(), s.clone()))
            .collect()
    }

    /// One task's state.
    pub fn state(&self, name: &str) -> Option<TaskState> {
        let states = self.states.lock();
        states
            .iter()
            .find(|(n, _)| &**n == name)
            .map(|(_, s)| s.clone())
    }

    fn insert(&self, name: Arc<str>, state: TaskState) {
        self.states.lock().push((name, state));
    }

    /// Moves `name` to `to` if its state is one of `from`; an ended task
    /// never changes again.
    fn advance(&self, name: &str, from: &[TaskState], to: TaskState) -> bool {
        let mut states = self.states.lock();
        match states.iter_mut().find(|(n, _)| &**n == name) {
            Some((_, s)) if from.contains(s) => {
                *s = to;
                true
            }
            _ => false,
        }
    }

    /// Records how a task ended, unless it already had.
    fn end(&self, name: &str, to: TaskState) -> bool {
        let live = [TaskState::Starting, TaskState::Running, TaskState::Stopping];
        self.advance(name, &live, to)
    }
}

/// How long `start_all` waits for one task's `start` before starting the
/// next anyway (that task stays `Starting` until its start returns).
pub(crate) const START_WAIT: Duration = Duration::from_secs(30);

/// The registry: tasks added, started in order, stopped in reverse order.
pub struct Tasks {
    board: Arc<TaskBoard>,
    /// Added, not yet started.
    added: Vec<Box<dyn Task>>,
    /// Started, in start order.
    started: Vec<Started>,
}

struct Started {
    name: Arc<str>,
    stop: watch::Sender<Option<Instant>>,
    handle: JoinHandle<()>,
}

/// Past the shutdown deadline, how long the tasks not yet stopped get,
/// together, before they are aborted (so a task that overran does not cost
/// the tasks started before it their clean stop, and a zero grace period
/// still lets a prompt task stop).
pub(crate) const LAST_CALL: Duration = Duration::from_secs(1);

/// What a shutdown had to give up on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StopReport {
    /// Tasks that had not returned when the shutdown stopped waiting for
    /// them (aborted and marked failed), in stop order.
    pub missed: Vec<String>,
}

impl Tasks {
    /// An empty registry that reports states on `board`.
    pub fn new(board: Arc<TaskBoard>) -> Tasks {
        Tasks {
            board,
            added: Vec::new(),
            started: Vec::new(),
        }
    }

    /// Where the states are reported.
    pub fn board(&self) -> &Arc<TaskBoard> {
        &self.board
    }

    /// Adds a task, to be started by the next `start_all`.
    pub fn add(&mut self, task: Box<dyn Task>) -> ServerResult<()> {
        let name = task.name();
        let valid = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
        if !valid {
            return Err(ServerError::Internal(format!(
                "task name {name:?}: use 1 to 64 lowercase letters, digits, '_' and '-'"
            )));
        }
        let taken = self.added.iter().any(|t| t.name() == name)
            || self.started.iter().any(|t| &*t.name == name);
        if taken {
            return Err(ServerError::Internal(format!(
                "a task named {name:?} is already registered"
            )));
        }
        self.added.push(task);
        Ok(())
    }

    /// Starts every added task, one after the other in the order they
    /// were added: each once the one before is running or has failed (or
    /// after [`START_WAIT`], with a warning). Must run on the runtime the
    /// tasks are to run on.
    pub async fn start_all(&mut self) {
        for task in std::mem::take(&mut self.added) {
            let name: Arc<str> = task.name().into();
            let (stop, stop_rx) = watch::channel(None);
            let (ready, is_ready) = oneshot::channel();
            let ctx = TaskContext {
                name: name.clone(),
                stop: stop_rx,
            };
            self.board.insert(name.clone(), TaskState::Starting);
            let handle = tokio::spawn(supervise(task, ctx, ready, self.board.clone()));
            if tokio::time::timeout(START_WAIT, is_ready).await.is_err() {
                tracing::warn!(
                    task = %name,
                    "task still starting after {} s; starting the next one",
                    START_WAIT.as_secs()
                );
            }
            self.started.push(Started { name, stop, handle });
        }
    }

    /// Stops every started task: in reverse start order, each asked once
    /// the one after it has returned, every one by `deadline`. Past it,
    /// the tasks not yet stopped are all asked and get [`LAST_CALL`]
    /// together; once `cut` resolves (a second stop signal) nothing more
    /// is waited for. A task still running when the waiting ends is
    /// aborted, marked failed and named in the log and the report.
    pub async fn stop_all(
        &mut self,
        deadline: Instant,
        cut: impl std::future::Future<Output = ()>,
    ) -> StopReport {
        tokio::pin!(cut);
        let time_up = tokio::time::sleep_until(deadline);
        tokio::pin!(time_up);
        let mut was_cut = false;
        while let Some(task) = self.started.last_mut() {
            ask(&self.board, task, deadline);
            let ended = tokio::select! {
                biased;
                _ = &mut task.handle => true,
                _ = &mut time_up => false,
                _ = &mut cut => {
                    was_cut = true;
                    false
                }
            };
            if !ended {
                break;
            }
            self.started.pop();
        }
        let mut rest: Vec<Started> = self.started.drain(..).rev().collect();
        if !rest.is_empty() && !was_cut {
            let last_call = Instant::now() + LAST_CALL;
            for task in &rest {
                ask(&self.board, task, last_call);
            }
            let all = futures_util::future::join_all(rest.iter_mut().map(|t| &mut t.handle));
            tokio::select! {
                _ = all => {}
                _ = tokio::time::sleep_until(last_call) => {}
                _ = &mut cut => was_cut = true,
            }
        }
        let reason = if was_cut {
            "aborted: the shutdown was cut short"
        } else {
            "did not stop by the shutdown deadline"
        };
        let mut report = StopReport::default();
        for task in rest.iter().filter(|t| !t.handle.is_finished()) {
            task.handle.abort();
            if self.board.end(&task.name, TaskState::Failed(reason.into())) {
                tracing::warn!(task = %task.name, "background task {reason}; aborted");
            }
            report.missed.push(task.name.to_string());
        }
        report
    }
}

/// Asks a task to stop by `deadline`.
fn ask(board: &TaskBoard, task: &Started, deadline: Instant) {
    let asked = [TaskState::Starting, TaskState::Running];
    board.advance(&task.name, &asked, TaskState::Stopping);
    let _ = task.stop.send(Some(deadline));
}

/// Runs one task to its end and records how it ended: its start, then its
/// run, with panics caught so that a failing task never takes the server
/// down.
async fn supervise(
    mut task: Box<dyn Task>,
    ctx: TaskContext,
    ready: oneshot::Sender<()>,
    board: Arc<TaskBoard>,
) {
    let name = ctx.name.clone();
    let stopping = ctx.stop.clone();
    let life = AssertUnwindSafe(async {
        task.start().await?;
        board.advance(&name, &[TaskState::Starting], TaskState::Running);
        let _ = ready.send(());
        task.run(ctx).await
    });
    let state = match life.catch_unwind().await {
        Ok(Ok(())) => TaskState::Stopped,
        Ok(Err(e)) => TaskState::Failed(e.to_string()),
        Err(panic) => TaskState::Failed(format!("panicked: {}", panic_message(&*panic))),
    };
    let asked = stopping.borrow().is_some();
    match &state {
        TaskState::Failed(reason) => {
            tracing::error!(task = %name, "background task failed: {reason}; the server goes on without it")
        }
        _ if !asked => {
            tracing::warn!(task = %name, "background task ended before it was asked to stop")
        }
        _ => tracing::info!(task = %name, "background task stopped"),
    }
    board.end(&name, state);
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    if let Some(s) = panic.downcast_ref::<&str>() {
        s
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s
    } else {
        "(no message)"
    }
}

#[cfg(test)]
mod tests {
    //! The registry on tokio's paused clock: time moves only when every
    //! task waits on a timer, so deadlines are exact and nothing sleeps.

    use super::*;

    /// What the test tasks did, in order.
    type Journal = Arc<Mutex<Vec<String>>>;

    /// How a test task behaves.
    #[derive(Clone, Copy)]
    enum Conduct {
        /// Stops when asked.
        Polite,
        /// Ignores the stop request.
        Deaf,
        /// Returns an error once running.
        Errs,
        /// Panics once running.
        Panics,
        /// Its start fails.
        WontStart,
        /// Its start takes longer than `START_WAIT`.
        SlowStart,
    }

    struct Probe {
        name: &'static str,
        conduct: Conduct,
        journal: Journal,
    }

    impl Probe {
        fn note(&self, what: &str) {
            self.journal.lock().push(format!("{what} {}", self.name));
        }
    }

    impl Task for Probe {
        fn name(&self) -> &str {
            self.name
        }

        fn start(&mut self) -> BoxFuture<'_, TaskResult> {
            Box::pin(async move {
                self.note("start");
                match self.conduct {
                    Conduct::WontStart => Err("no mailbox to route from".into()),
                    Conduct::SlowStart => {
                        tokio::time::sleep(START_WAIT * 2).await;
                        Ok(())
                    }
                    _ => Ok(()),
                }
            })
        }

        fn run(self: Box<Self>, mut ctx: TaskContext) -> BoxFuture<'static, TaskResult> {
            Box::pin(async move {
                assert_eq!(ctx.name(), self.name);
                self.note("run");
                match self.conduct {
                    Conduct::Errs => return Err("the disk is on fire".into()),
                    Conduct::Panics => panic!("router state corrupt"),
                    _ => {}
                }
                let deadline = ctx.stop_requested().await;
                assert!(ctx.is_stop_requested());
                assert_eq!(ctx.deadline(), Some(deadline));
                self.note("stop");
                if let Conduct::Deaf = self.conduct {
                    std::future::pending::<()>().await;
                }
                Ok(())
            })
        }
    }

    fn registry(tasks: &[(&'static str, Conduct)]) -> (Tasks, Journal) {
        let journal = Journal::default();
        let mut reg = Tasks::new(Arc::default());
        for &(name, conduct) in tasks {
            reg.add(Box::new(Probe {
                name,
                conduct,
                journal: journal.clone(),
            }))
            .unwrap();
        }
        (reg, journal)
    }

    fn states(reg: &Tasks) -> Vec<String> {
        reg.board()
            .states()
            .into_iter()
            .map(|(n, s)| format!("{n}: {s}"))
            .collect()
    }

    /// Lets every spawned task run until it waits.
    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn tasks_start_in_order_and_stop_in_reverse_order() {
        let (mut reg, journal) = registry(&[
            ("a", Conduct::Polite),
            ("b", Conduct::Polite),
            ("c", Conduct::Polite),
        ]);
        reg.start_all().await;
        settle().await;
        assert_eq!(states(&reg), ["a: running", "b: running", "c: running"]);
        let report = reg
            .stop_all(
                Instant::now() + Duration::from_secs(10),
                std::future::pending(),
            )
            .await;
        assert_eq!(report, StopReport::default());
        assert_eq!(states(&reg), ["a: stopped", "b: stopped", "c: stopped"]);
        let j = journal.lock().clone();
        let starts: Vec<_> = j.iter().filter(|e| e.starts_with("start")).collect();
        assert_eq!(starts, ["start a", "start b", "start c"]);
        let stops: Vec<_> = j.iter().filter(|e| e.starts_with("stop")).collect();
        assert_eq!(stops, ["stop c", "stop b", "stop a"]);
        // Each started only once the one before was running.
        let pos = |e: &str| j.iter().position(|x| x == e).unwrap();
        assert!(pos("run a") < pos("start b") && pos("run b") < pos("start c"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_task_that_misses_the_deadline_is_named_and_shutdown_ends_on_time() {
        let (mut reg, journal) = registry(&[
            ("early", Conduct::Polite),
            ("deaf", Conduct::Deaf),
            ("late", Conduct::Polite),
        ]);
        reg.start_all().await;
        settle().await;
        let began = Instant::now();
        let grace = Duration::from_secs(10);
        let report = reg.stop_all(began + grace, std::future::pending()).await;
        assert_eq!(
            began.elapsed(),
            grace + LAST_CALL,
            "stop_all must end at the last call"
        );
        assert_eq!(report.missed, ["deaf"]);
        assert_eq!(
            states(&reg),
            [
                "early: stopped",
                "deaf: failed: did not stop by the shutdown deadline",
                "late: stopped",
            ]
        );
        let j = journal.lock().clone();
        let stops: Vec<_> = j.iter().filter(|e| e.starts_with("stop")).collect();
        assert_eq!(stops, ["stop late", "stop deaf", "stop early"]);
    }

    #[tokio::test(start_paused = true)]
    async fn tasks_that_ignore_the_last_call_are_named_too() {
        let (mut reg, _) = registry(&[
            ("first", Conduct::Deaf),
            ("polite", Conduct::Polite),
            ("second", Conduct::Deaf),
        ]);
        reg.start_all().await;
        settle().await;
        let began = Instant::now();
        let grace = Duration::from_secs(10);
        let report = reg.stop_all(began + grace, std::future::pending()).await;
        assert_eq!(began.elapsed(), grace + LAST_CALL);
        assert_eq!(report.missed, ["second", "first"]);
        assert_eq!(reg.board().state("polite"), Some(TaskState::Stopped));
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_grace_period_still_lets_prompt_tasks_stop() {
        let (mut reg, _) = registry(&[("a", Conduct::Polite), ("b", Conduct::Polite)]);
        reg.start_all().await;
        settle().await;
        let report = reg.stop_all(Instant::now(), std::future::pending()).await;
        assert_eq!(report, StopReport::default());
        assert_eq!(states(&reg), ["a: stopped", "b: stopped"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_cut_ends_the_stop_before_the_deadline() {
        let (mut reg, journal) = registry(&[("polite", Conduct::Polite), ("deaf", Conduct::Deaf)]);
        reg.start_all().await;
        settle().await;
        let began = Instant::now();
        let cut = tokio::time::sleep(Duration::from_secs(1));
        let report = reg.stop_all(began + Duration::from_secs(60), cut).await;
        assert_eq!(began.elapsed(), Duration::from_secs(1));
        assert_eq!(report.missed, ["deaf", "polite"]);
        assert_eq!(
            states(&reg),
            [
                "polite: failed: aborted: the shutdown was cut short",
                "deaf: failed: aborted: the shutdown was cut short",
            ]
        );
        assert!(!journal.lock().contains(&"stop polite".to_string()));
    }

    #[tokio::test(start_paused = true)]
    async fn failing_tasks_are_marked_failed_and_the_others_go_on() {
        let (mut reg, journal) = registry(&[
            ("erring", Conduct::Errs),
            ("unstartable", Conduct::WontStart),
            ("panicking", Conduct::Panics),
            ("steady", Conduct::Polite),
        ]);
        reg.start_all().await;
        settle().await;
        assert_eq!(
            states(&reg),
            [
                "erring: failed: the disk is on fire",
                "unstartable: failed: no mailbox to route from",
                "panicking: failed: panicked: router state corrupt",
                "steady: running",
            ]
        );
        assert!(!journal.lock().contains(&"run unstartable".to_string()));
        let report = reg
            .stop_all(
                Instant::now() + Duration::from_secs(10),
                std::future::pending(),
            )
            .await;
        assert_eq!(report, StopReport::default());
        assert_eq!(reg.board().state("steady"), Some(TaskState::Stopped));
        assert_eq!(
            reg.board().state("erring"),
            Some(TaskState::Failed("the disk is on fire".into())),
            "a failed task stays failed through shutdown"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_start_does_not_hold_back_the_tasks_after_it() {
        let (mut reg, _) = registry(&[("slow", Conduct::SlowStart), ("next", Conduct::Polite)]);
        let began = Instant::now();
        reg.start_all().await;
        settle().await;
        assert_eq!(began.elapsed(), START_WAIT);
        assert_eq!(states(&reg), ["slow: starting", "next: running"]);
        tokio::time::sleep(START_WAIT).await;
        settle().await;
        assert_eq!(reg.board().state("slow"), Some(TaskState::Running));
        let report = reg
            .stop_all(
                Instant::now() + Duration::from_secs(1),
                std::future::pending(),
            )
            .await;
        assert_eq!(report, StopReport::default());
    }

    #[test]
    fn names_must_be_new_and_fit_a_statistic() {
        let (mut reg, journal) = registry(&[("router", Conduct::Polite)]);
        for (name, why) in [
            ("router", "already registered"),
            ("Router", "lowercase"),
            ("mail.router", "lowercase"),
            ("", "lowercase"),
        ] {
            let e = reg
                .add(Box::new(Probe {
                    name,
                    conduct: Conduct::Polite,
                    journal: journal.clone(),
                }))
                .unwrap_err();
            assert!(e.to_string().contains(why), "{name:?}: {e}");
        }
    }
}
