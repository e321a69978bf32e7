//! Locks: what every external lock implements ([`DistributedLock`]), what
//! it hands its holder ([`LockGuard`], [`Lease`]), and how a lock wraps the
//! critical section of [`crate::section`].
//!
//! - [`grab_with_lock`] — acquire → section → commit → release (or release
//!   *before* the commit when the `unlock_before_commit` fault is on), for
//!   every lock taken around the section; [`Locked`] runs such a lock as a
//!   [`Strategy`].
//! - [`grab_in_transaction`] — the database locks (`pg-for-update`,
//!   `pg-advisory`) taken inside the section's own transaction.
//! - The Redis primitives the seeds share: [`setnx`], [`set_nx_px`],
//!   [`try_set_nx_px`], [`release_by_del`], [`COMPARE_AND_DELETE`].
//!
//! Above [`crate::section`] and [`crate::strategy`]; below the strategy
//! files of [`crate::lock`], which use it.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use rand::Rng;
use sqlx::pool::PoolConnection;
use sqlx::MySql;
use tokio::time::{sleep, Duration, Instant};

use crate::error::{GrabError, Rejection};

/// Why a holder must not trust its lock any more (what
/// [`LockGuard::check_still_held`] finds); defined beside the grab's errors,
/// which carry it in a `409 rejected`.
pub use crate::error::LockLost;
use crate::faults::Faults;
use crate::section::{self, SectionSpec};
use crate::strategy::{GrabContext, GrabRequest, Order, Strategy, StrategyInfo};

/// A lock taken around the whole critical section.
#[async_trait]
pub trait DistributedLock: Send + Sync {
    /// Name, seed step, guarantee and class of the strategy this lock is.
    fn info(&self) -> &'static StrategyInfo;

    /// Stable strategy name (metric label).
    fn name(&self) -> &'static str {
        self.info().name.as_str()
    }

    /// Why this deployment cannot run it (the setting to set), or `None`.
    fn unavailable_reason(&self) -> Option<&'static str> {
        None
    }

    /// One attempt: the lock, or `None` when someone else holds it.
    async fn try_acquire(
        &self,
        cx: GrabContext<'_>,
        product_id: i64,
    ) -> Result<Option<LockGuard>, GrabError>;

    /// Give the lock back.
    async fn release(&self, cx: GrabContext<'_>, guard: LockGuard) -> Result<Released, GrabError>;

    /// Just before the section's last check (after its work): what the
    /// lock does with the servers first. Nothing, but for `redlock` with
    /// the `redlock_extend` switch, which extends itself there (a refusal
    /// marks its lease lost, and the check then ends the section).
    async fn before_last_check(&self, _cx: GrabContext<'_>, _guard: &LockGuard) {}

    /// Attempts with jittered pauses until the wait budget is spent, then
    /// `busy`. Deadlines use the monotonic clock.
    async fn acquire(&self, cx: GrabContext<'_>, product_id: i64) -> Result<LockGuard, GrabError> {
        let deps = cx.deps;
        let deadline = Instant::now() + deps.lock_wait;
        let (attempts, retries) = deps.metrics.attempt_counters(self.name());
        loop {
            attempts.inc();
            if let Some(guard) = self.try_acquire(cx, product_id).await? {
                return Ok(guard);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(GrabError::Busy(deps.lock_wait));
            }
            retries.inc();
            sleep(jittered(deps.lock_retry).min(deadline - now)).await;
        }
    }
}

/// A lock held by one grab. Releasing it is an explicit `async` call on
/// its [`DistributedLock`]; dropping it does no network I/O.
#[derive(Debug)]
pub struct LockGuard {
    /// Key of the lock, e.g. `lock:product:1`.
    pub key: String,
    /// Unique per acquisition — never a thread id, tasks migrate.
    pub token: String,
    /// When the lock was acquired (monotonic).
    pub acquired_at: Instant,
    /// What else holding it consists of, by the strategy's shape.
    pub held: Held,
}

/// What holding a lock consists of beyond its key and token: the few real
/// shapes, one per family of strategies.
#[derive(Debug)]
pub enum Held {
    /// A key in a store (the Redis locks, the lock table): nothing else.
    Key,
    /// An in-process guard (`local-mutex`); dropping it unlocks.
    Local(tokio::sync::OwnedMutexGuard<()>),
    /// A monotonic fencing token the database checks (`fenced`).
    Fenced(i64),
    /// The instant after which the lock must not be relied on (`redlock`'s
    /// validity time), checked before the commit.
    Validity {
        /// The validity's end.
        until: Instant,
        /// With `check_revision` on: the largest of the fencing counters
        /// the majority's nodes returned (each node counts its own), the
        /// token the database then checks — the attempt Kleppmann argues
        /// cannot be monotonic.
        revision: Option<i64>,
    },
    /// A lease kept alive: the watchdog's (shared by the guards of one
    /// owner's re-entries), the etcd lease, the ZooKeeper session. It
    /// tells the holder when renewal lost the lock or its deadline passed.
    Lease {
        lease: Lease,
        /// A revision the lock service handed out with the lock (etcd's
        /// create revision, ZooKeeper's sequence number + 1), growing with
        /// every holder: a fencing token the database checks only when the
        /// `check_revision` switch is on — off by default, so the pause
        /// failure stays visible.
        revision: Option<i64>,
    },
    /// The session the lock lives on, kept until the explicit release (the
    /// MariaDB session that holds `GET_LOCK`). Dropping it does no I/O of
    /// ours.
    Session(HeldSession),
}

/// The database session a lock lives on (`mysql-get-lock`: the MariaDB
/// connection whose session holds `GET_LOCK`), kept with the guard until
/// the explicit release takes it back. Dropped without that release, the
/// connection is closed, never returned to the pool: its session still
/// holds the lock, and closing it is what frees it. Dropping does no I/O
/// of ours (sqlx closes it in the background).
///
/// The mutex only makes it `Sync`; nobody contends for it.
pub struct HeldSession(std::sync::Mutex<Option<PoolConnection<MySql>>>);

impl HeldSession {
    /// Keep `conn`, whose session holds the lock, with the guard.
    pub fn new(conn: PoolConnection<MySql>) -> Self {
        Self(std::sync::Mutex::new(Some(conn)))
    }

    /// The connection back, for the release (`None` only once taken).
    pub fn take(&self) -> Option<PoolConnection<MySql>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

impl Drop for HeldSession {
    fn drop(&mut self) {
        let conn = self
            .0
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(conn) = conn.as_mut() {
            conn.close_on_drop();
        }
    }
}

impl fmt::Debug for HeldSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HeldSession(..)")
    }
}

/// What the renewal task of a lease knows, shared with its holders.
#[derive(Debug)]
pub struct LeaseStatus {
    /// A renewal found the lock gone or not ours.
    lost: std::sync::atomic::AtomicBool,
    /// Send time of the last successful acquire or renewal + lease − drift:
    /// after this instant the key may have expired in Redis, whether or not
    /// a renewal is under way.
    deadline: std::sync::Mutex<Instant>,
    /// The holder is never told (the watchdog's `ignore_lost_lease`
    /// fault: Redisson's holder, its issue #4698): its last check passes
    /// whatever the renewals found.
    untold: std::sync::atomic::AtomicBool,
}

impl LeaseStatus {
    /// A fresh status whose lease runs until `deadline`.
    pub fn new(deadline: Instant) -> Arc<Self> {
        Arc::new(Self {
            lost: std::sync::atomic::AtomicBool::new(false),
            deadline: std::sync::Mutex::new(deadline),
            untold: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Whether a renewal found the lock gone or not ours.
    pub fn is_lost(&self) -> bool {
        self.lost.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Never tell the holder: its last check passes even when the lease
    /// is lost or past its deadline (a fault).
    pub fn leave_untold(&self) {
        self.untold.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether the holder is never told ([`LeaseStatus::leave_untold`]).
    pub fn is_untold(&self) -> bool {
        self.untold.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Mark the lease lost (the holder must abort).
    pub fn mark_lost(&self) {
        self.lost.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// The instant after which the lock must not be relied on.
    pub fn deadline(&self) -> Instant {
        *self
            .deadline
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Move the deadline to `deadline` if that is later (a renewal whose
    /// reply came late never shortens what a newer one granted).
    pub fn extend_to(&self, deadline: Instant) {
        let mut current = self
            .deadline
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if deadline > *current {
            *current = deadline;
        }
    }
}

/// How much earlier than a lease its holder stops trusting it: clock drift
/// between this process and the lock server, 1% of the lease + 2 ms (as
/// `redlock`).
pub fn drift(lease: Duration) -> Duration {
    lease / 100 + Duration::from_millis(2)
}

/// The last instant a lease granted (or renewed) by a request sent at
/// `sent` can be relied on.
pub fn lease_deadline(sent: Instant, lease: Duration) -> Instant {
    sent + lease.saturating_sub(drift(lease))
}

/// What one renewal of a lease came to.
#[derive(Debug)]
pub enum Renewal {
    /// Extended: the lease runs to the renewal's send time + lease − drift.
    Renewed,
    /// The lock is gone or not ours (why): the holder must abort.
    Lost(String),
    /// The server could not be reached or answered with an error: retried
    /// until the lease's deadline has passed, then the lease is lost.
    Failed(String),
}

/// What every renewal task (the watchdog's, etcd's keep-alive, ZooKeeper's
/// session check) does with a renewal's outcome: the
/// `seckill_lock_renewals_total{strategy,result}` and
/// `seckill_lock_lost_total{strategy}` counters and the [`LeaseStatus`] its
/// holders check before they commit. The task itself only sends.
#[derive(Debug)]
pub struct Renewer {
    strategy: &'static str,
    /// The lease in log lines (a key, a lease id, a node path).
    what: String,
    lease: Duration,
    metrics: crate::metrics::Metrics,
    status: Arc<LeaseStatus>,
}

impl Renewer {
    /// The bookkeeping of `strategy`'s lease `what`, renewed every third of
    /// `lease`.
    pub fn new(
        strategy: &'static str,
        what: String,
        lease: Duration,
        metrics: crate::metrics::Metrics,
        status: Arc<LeaseStatus>,
    ) -> Self {
        Self {
            strategy,
            what,
            lease,
            metrics,
            status,
        }
    }

    /// The lease each renewal asks for.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// How long between two renewals: a third of the lease.
    pub fn period(&self) -> Duration {
        self.lease / 3
    }

    /// When the first renewal of a fresh lease is due: a period after its
    /// grant was *sent* — on the lease's own clock, not a period after the
    /// reply came back. A grant whose reply was slow (a slow link: granted
    /// in Redis at once, known here only later) is renewed at once, before
    /// its key runs out under a holder that has just entered.
    pub fn first_due(&self) -> Instant {
        self.status.deadline() - self.lease.saturating_sub(drift(self.lease)) + self.period()
    }

    /// Wait until `due` (not at all when it has passed); `false` when
    /// `stop` fired (or its sender was dropped) first.
    pub async fn pause_until(
        &self,
        stop: &mut tokio::sync::oneshot::Receiver<()>,
        due: Instant,
    ) -> bool {
        tokio::select! {
            _ = stop => false,
            () = tokio::time::sleep_until(due) => true,
        }
    }

    /// Wait one period; `false` when `stop` fired (or its sender was
    /// dropped) first.
    pub async fn pause(&self, stop: &mut tokio::sync::oneshot::Receiver<()>) -> bool {
        self.pause_until(stop, Instant::now() + self.period()).await
    }

    /// Record what the renewal sent at `sent` came to; `Break` when the
    /// lease is lost and the task ends.
    pub fn settle(&self, sent: Instant, renewal: Renewal) -> std::ops::ControlFlow<()> {
        let renewals = |result: &str| {
            self.metrics
                .lock_renewals
                .with_label_values(&[self.strategy, result])
                .inc();
        };
        let (strategy, lease) = (self.strategy, &self.what);
        match renewal {
            Renewal::Renewed => {
                renewals("renewed");
                self.status.extend_to(lease_deadline(sent, self.lease));
                return std::ops::ControlFlow::Continue(());
            }
            Renewal::Lost(why) => {
                renewals("lost");
                tracing::warn!(strategy, %lease, why, "lease lost; the holder will abort");
            }
            Renewal::Failed(error) => {
                renewals("error");
                if Instant::now() < self.status.deadline() {
                    return std::ops::ControlFlow::Continue(());
                }
                tracing::warn!(strategy, %lease, error,
                    "lease ran out while its server was unreachable; the holder will abort");
            }
        }
        self.metrics
            .lock_lost
            .with_label_values(&[self.strategy])
            .inc();
        self.status.mark_lost();
        std::ops::ControlFlow::Break(())
    }
}

/// A renewed lease, shared (cloned) by every guard of one owner. The
/// renewal task stops when [`Lease::stop_renewing`] is called — when the
/// last re-entry is released — or when every clone is dropped; it then only
/// stops renewing (the lock expires on its own; no I/O happens in `Drop`).
#[derive(Debug, Clone)]
pub struct Lease {
    inner: Arc<LeaseInner>,
}

#[derive(Debug)]
struct LeaseInner {
    status: Arc<LeaseStatus>,
    /// Dropped (taken or with the last clone) to stop the renewal task.
    stop: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
}

impl Lease {
    /// A lease whose renewal task reports into `status` and stops when
    /// `stop` is dropped.
    pub fn new(status: Arc<LeaseStatus>, stop: tokio::sync::oneshot::Sender<()>) -> Self {
        Self {
            inner: Arc::new(LeaseInner {
                status,
                stop: std::sync::Mutex::new(Some(stop)),
            }),
        }
    }

    /// What the renewal task reported.
    pub fn status(&self) -> &LeaseStatus {
        &self.inner.status
    }

    /// What the renewal task reported, shared (for a task of its own).
    pub fn shared_status(&self) -> Arc<LeaseStatus> {
        self.inner.status.clone()
    }

    /// Stop the renewal task now, for every guard sharing this lease.
    pub fn stop_renewing(&self) {
        drop(
            self.inner
                .stop
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take(),
        );
    }

    /// Whether the renewal task was told to stop.
    pub fn is_stopped(&self) -> bool {
        self.inner
            .stop
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .is_none_or(tokio::sync::oneshot::Sender::is_closed)
    }
}

impl LockGuard {
    /// `Err(why)` when the lock can no longer be trusted: the lease was
    /// lost, the lease's deadline passed (a renewal is stuck or late — the
    /// key may have expired in Redis although nobody said so), or the
    /// validity time has passed.
    pub fn check_still_held(&self) -> Result<(), LockLost> {
        match &self.held {
            Held::Lease { lease, .. } if lease.status().is_untold() => Ok(()),
            Held::Lease { lease, .. } if lease.status().is_lost() => Err(LockLost::LeaseLost),
            Held::Lease { lease, .. } if Instant::now() >= lease.status().deadline() => {
                Err(LockLost::LeaseExpired)
            }
            Held::Validity { until, .. } if Instant::now() >= *until => {
                Err(LockLost::ValidityExpired)
            }
            _ => Ok(()),
        }
    }

    /// Its lease, when it is kept alive by one.
    pub fn lease(&self) -> Option<&Lease> {
        match &self.held {
            Held::Lease { lease, .. } => Some(lease),
            _ => None,
        }
    }

    /// The revision the lock service handed out with it (etcd, ZooKeeper).
    pub fn revision(&self) -> Option<i64> {
        match self.held {
            Held::Lease { revision, .. } => revision,
            _ => None,
        }
    }

    /// Its lease taken out of it (the guard keeps only its key and token).
    pub fn take_lease(&mut self) -> Option<Lease> {
        match std::mem::replace(&mut self.held, Held::Key) {
            Held::Lease { lease, .. } => Some(lease),
            other => {
                self.held = other;
                None
            }
        }
    }

    /// The database session it lives on, when it does.
    pub fn session(&self) -> Option<&HeldSession> {
        match &self.held {
            Held::Session(session) => Some(session),
            _ => None,
        }
    }

    /// The token the database must check: the strategy's own fencing token
    /// (`fenced`), or, when `check_revision` is on, the lock service's
    /// revision (etcd, ZooKeeper) or Redlock's majority counter.
    pub fn fence(&self, faults: Faults) -> Option<i64> {
        match self.held {
            Held::Fenced(token) => Some(token),
            Held::Validity {
                revision: Some(revision),
                ..
            } if faults.check_revision => Some(revision),
            Held::Lease {
                revision: Some(revision),
                ..
            } if faults.check_revision => Some(revision),
            _ => None,
        }
    }

    /// The value the database compares when the `check_token` switch is on
    /// (antirez's check-and-set): the last 64 bits of this acquisition's
    /// random value (the watchdog's value is `process:acquisition`).
    /// `None` without the switch, or for a lock with a fence (the fence is
    /// checked instead) or no hex random value.
    pub fn check_value(&self, faults: Faults) -> Option<i64> {
        if !faults.check_token || self.fence(faults).is_some() {
            return None;
        }
        let tail = self.token.get(self.token.len().checked_sub(16)?..)?;
        u64::from_str_radix(tail, 16)
            .ok()
            .map(|v| i64::from_ne_bytes(v.to_ne_bytes()))
    }
}

impl LockGuard {
    /// A guard for a remote lock acquired just now.
    pub fn remote(key: String, token: String) -> Self {
        Self {
            key,
            token,
            acquired_at: Instant::now(),
            held: Held::Key,
        }
    }
}

/// What a release found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Released {
    /// Our lock was there and is gone now.
    Released,
    /// The key held someone else's token, or nothing: we had lost it.
    NotOwner,
}

/// A fresh token for one acquisition.
pub fn new_token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// `base` scaled by a random factor in [0.5, 1.5): contenders that failed
/// together do not retry together.
pub fn jittered(base: Duration) -> Duration {
    base.mul_f64(rand::rng().random_range(0.5..1.5))
}

tokio::task_local! {
    /// How long the grab of this task waited for its lock; the grab route
    /// answers it in a `Server-Timing: lock;dur=<ms>` header, so a client
    /// measures waits exactly, request by request.
    pub static LOCK_WAIT: std::cell::Cell<Option<Duration>>;
}

/// Note this grab's lock wait (outside a grab route's scope: nothing).
pub fn note_lock_wait(waited: Duration) {
    let _ = LOCK_WAIT.try_with(|w| w.set(Some(waited)));
}

/// Acquire → critical section → commit → release (or release → commit when
/// the `unlock_before_commit` fault is on). Records wait, hold and release
/// metrics. A release that fails is logged and counted; it cannot undo a
/// commit, and the lock's TTL (where it has one) cleans up.
pub async fn grab_with_lock(
    lock: &dyn DistributedLock,
    cx: GrabContext<'_>,
    req: GrabRequest,
) -> Result<Order, GrabError> {
    let name = lock.name();
    let metrics = &cx.deps.metrics;
    let wait_started = Instant::now();
    let acquired = lock.acquire(cx, req.product_id).await;
    note_lock_wait(wait_started.elapsed());
    let guard = match acquired {
        Ok(guard) => {
            metrics
                .lock_acquire_duration
                .with_label_values(&[name, "acquired"])
                .observe(wait_started.elapsed().as_secs_f64());
            guard
        }
        Err(e) => {
            let result = if matches!(e, GrabError::Busy(_)) {
                "busy"
            } else {
                "error"
            };
            metrics
                .lock_acquire_duration
                .with_label_values(&[name, result])
                .observe(wait_started.elapsed().as_secs_f64());
            return Err(e);
        }
    };
    let spec = SectionSpec::plain(name)
        .with_fence(guard.fence(cx.faults))
        .with_check_value(guard.check_value(cx.faults));
    // The lock's last check runs inside the section, just before the
    // write: a lease lost or run out, or Redlock's validity run out, ends
    // it there with nothing written.
    let guard_ref = &guard;
    let still_held = move || -> futures::future::BoxFuture<'_, Result<(), LockLost>> {
        Box::pin(async move {
            lock.before_last_check(cx, guard_ref).await;
            guard_ref.check_still_held()
        })
    };
    let prepared = match section::prepare_checked(cx, req, spec, Some(&still_held)).await {
        Ok(Some(prepared)) => prepared,
        Ok(None) => {
            release_and_record(lock, cx, guard).await;
            metrics.fence_rejections.with_label_values(&[name]).inc();
            return Err(GrabError::Rejected(Rejection::StaleToken));
        }
        Err(e) => {
            // A renewal that found the lock gone counted it already; a
            // deadline that passed unnoticed (a frozen process, a stuck
            // renewal) or a Redlock validity that ran out is counted here.
            if let GrabError::Rejected(Rejection::LockLost(lost)) = &e {
                if *lost != LockLost::LeaseLost {
                    metrics.lock_lost.with_label_values(&[name]).inc();
                }
            }
            release_and_record(lock, cx, guard).await;
            return Err(e);
        }
    };
    if cx.faults.unlock_before_commit {
        release_and_record(lock, cx, guard).await;
        if cx.faults.commit_delay_ms > 0 {
            sleep(Duration::from_millis(cx.faults.commit_delay_ms)).await;
        }
        return prepared.commit().await;
    }
    let committed = prepared.commit().await;
    release_and_record(lock, cx, guard).await;
    committed
}

async fn release_and_record(lock: &dyn DistributedLock, cx: GrabContext<'_>, guard: LockGuard) {
    let name = lock.name();
    let metrics = &cx.deps.metrics;
    metrics
        .lock_hold_duration
        .with_label_values(&[name])
        .observe(guard.acquired_at.elapsed().as_secs_f64());
    let key = guard.key.clone();
    let result = match lock.release(cx, guard).await {
        Ok(Released::Released) => "released",
        Ok(Released::NotOwner) => {
            tracing::warn!(strategy = name, %key, "released a lock we no longer owned");
            "not_owner"
        }
        Err(e) => {
            tracing::warn!(strategy = name, %key, error = %e, "lock release failed");
            "error"
        }
    };
    metrics
        .lock_releases
        .with_label_values(&[name, result])
        .inc();
}

/// A database lock taken inside the section's own transaction
/// (`pg-for-update`, `pg-advisory`): run the section, commit — the commit
/// releases the lock — and record the wait and hold times.
pub async fn grab_in_transaction(
    cx: GrabContext<'_>,
    req: GrabRequest,
    spec: SectionSpec,
) -> Result<Order, GrabError> {
    let metrics = &cx.deps.metrics;
    let name = spec.strategy;
    metrics.lock_attempts.with_label_values(&[name]).inc();
    let started = Instant::now();
    let prepared = match section::prepare(cx, req, spec).await {
        Ok(Some(prepared)) => prepared,
        Ok(None) => return Err(GrabError::Internal("row lock write matched no row".into())),
        Err(GrabError::Busy(_)) => {
            note_lock_wait(started.elapsed());
            metrics
                .lock_acquire_duration
                .with_label_values(&[name, "busy"])
                .observe(started.elapsed().as_secs_f64());
            return Err(GrabError::Busy(cx.deps.lock_wait));
        }
        Err(e) => return Err(e),
    };
    note_lock_wait(prepared.lock_wait);
    metrics
        .lock_acquire_duration
        .with_label_values(&[name, "acquired"])
        .observe(prepared.lock_wait.as_secs_f64());
    let locked_at = prepared.locked_at;
    let committed = prepared.commit().await;
    metrics
        .lock_hold_duration
        .with_label_values(&[name])
        .observe(locked_at.elapsed().as_secs_f64());
    committed
}

/// A [`DistributedLock`] run as a [`Strategy`]: every lock taken around
/// the section grabs the same way — acquire → section → commit → release
/// ([`grab_with_lock`]). The registry wraps each lock file's type in it.
#[derive(Debug)]
pub struct Locked<L>(pub L);

#[async_trait]
impl<L: DistributedLock + fmt::Debug> Strategy for Locked<L> {
    fn info(&self) -> &'static StrategyInfo {
        self.0.info()
    }

    fn unavailable_reason(&self) -> Option<&'static str> {
        self.0.unavailable_reason()
    }

    async fn grab(&self, cx: GrabContext<'_>, req: GrabRequest) -> Result<Order, GrabError> {
        grab_with_lock(&self.0, cx, req).await
    }
}

/// Redis key of a product's lock.
pub fn lock_key(product_id: i64) -> String {
    format!("lock:product:{product_id}")
}

/// Release by a plain `DEL`, as seeds v1–v3 do: whoever holds the key now
/// loses it. `Released` only says that a key was deleted — possibly
/// someone else's, which is exactly the bug these strategies teach.
pub async fn release_by_del(cx: GrabContext<'_>, guard: &LockGuard) -> Result<Released, GrabError> {
    let mut conn = cx.deps.redis.clone();
    let deleted: i64 = redis::cmd("DEL")
        .arg(&guard.key)
        .query_async(&mut conn)
        .await?;
    Ok(if deleted == 1 {
        Released::Released
    } else {
        Released::NotOwner
    })
}

/// `SET key token NX PX ttl`: the atomic acquire of seed v3 onwards.
pub async fn set_nx_px(cx: GrabContext<'_>, key: &str, token: &str) -> Result<bool, GrabError> {
    let mut conn = cx.deps.redis.clone();
    let set: Option<String> = redis::cmd("SET")
        .arg(key)
        .arg(token)
        .arg("NX")
        .arg("PX")
        .arg(cx.deps.lock_ttl.as_millis() as u64)
        .query_async(&mut conn)
        .await?;
    Ok(set.is_some())
}

/// `SETNX key value`: the acquire of seed v1 and v2 (no expiry).
pub async fn setnx(cx: GrabContext<'_>, key: &str, value: &str) -> Result<bool, GrabError> {
    let mut conn = cx.deps.redis.clone();
    let won: i64 = redis::cmd("SETNX")
        .arg(key)
        .arg(value)
        .query_async(&mut conn)
        .await?;
    Ok(won == 1)
}

/// One `SET lock:product:{id} <fresh token> NX PX ttl` attempt, as a guard.
///
/// With `SECKILL_REDIS_WAIT_REPLICAS` > 0 the write must also reach that
/// many replicas (`WAIT n timeout`) before it counts: a lock that only the
/// primary knows is lost when a replica is promoted (the `failover`
/// scenario). Too few acknowledgements: the key is deleted again (if still
/// ours) and the attempt counts as not acquired — unless the
/// `ignore_wait_count` fault trusts it, as a client that never reads
/// WAIT's answer would. A `WAIT` that fails (a
/// Redis error) gives the key back too — compare-and-delete with the
/// token, best effort — before the error is returned, so a lock that never
/// protected anything is not left held for its whole TTL.
pub async fn try_set_nx_px(
    cx: GrabContext<'_>,
    product_id: i64,
) -> Result<Option<LockGuard>, GrabError> {
    let key = lock_key(product_id);
    let token = new_token();
    if !set_nx_px(cx, &key, &token).await? {
        return Ok(None);
    }
    let wanted = cx.deps.redis_wait_replicas;
    if wanted > 0 {
        let mut conn = cx.deps.redis.clone();
        let waited: Result<i64, redis::RedisError> = redis::cmd("WAIT")
            .arg(wanted)
            .arg(cx.deps.redis_wait_timeout.as_millis() as u64)
            .query_async(&mut conn)
            .await;
        let acked = match waited {
            Ok(acked) => acked,
            Err(e) => {
                let given_back: Result<i64, _> = COMPARE_AND_DELETE
                    .key(&key)
                    .arg(&token)
                    .invoke_async(&mut conn)
                    .await;
                if let Err(release) = given_back {
                    tracing::warn!(%key, error = %release,
                        "WAIT failed and the lock could not be given back; it expires with its TTL");
                }
                return Err(e.into());
            }
        };
        if acked < i64::from(wanted) {
            if cx.faults.ignore_wait_count {
                // The fault: the client the WAIT page warns, which does
                // not check the count WAIT returned.
                tracing::debug!(%key, acked, wanted, "lock write not replicated in time; trusted anyway (ignore_wait_count)");
                return Ok(Some(LockGuard::remote(key, token)));
            }
            tracing::debug!(%key, acked, wanted, "lock write not replicated in time; giving it back");
            let _: i64 = COMPARE_AND_DELETE
                .key(&key)
                .arg(&token)
                .invoke_async(&mut conn)
                .await?;
            return Ok(None);
        }
    }
    Ok(Some(LockGuard::remote(key, token)))
}

/// The compare-and-delete script of seed v5, loaded once per process.
pub static COMPARE_AND_DELETE: std::sync::LazyLock<redis::Script> =
    std::sync::LazyLock::new(|| redis::Script::new(include_str!("lock/compare_and_delete.lua")));
