//! `watchdog` — Redisson's lock rebuilt in Rust: a reentrant hash lock,
//! a lease renewed in the background while held, waiters woken by pub/sub,
//! and — beyond Redisson — a lost or lapsed lease *signalled to the holder*.
//!
//! **Seed step:** 004 v5's closing fix ("起乙個子執行緒定時掃瞄 … 往上再加一定
//! 時間"), 000 方案六 (Redisson: "每隔10秒检查一下 … 不断延长锁key的生存时间"),
//! 001's walk through `RedissonLock.tryLockInnerAsync`, 002 "自动续期".
//!
//! - Lock: `lock:product:{id}` is a hash; field = `{process id}:{acquisition
//!   id}` (never a thread id — tokio tasks migrate between threads); value
//!   = reentry count (`watchdog_lock.lua`). A foreign string key (any
//!   `SET NX PX` client) excludes it, and it excludes them.
//! - Lease: `SECKILL_LOCK_TTL_MS` (Redisson: 30 s), renewed every lease/3 by
//!   one task per owner (`watchdog_renew.lua`). Re-entries
//!   ([`Watchdog::reenter`]) get their own guard sharing that lease; the
//!   task renews until the release that brings the count to 0, whichever
//!   guard that is (or until every guard of the owner is dropped).
//!   Renewals run on the lease's clock: each is due lease/3 after the
//!   previous one was *sent*, the first lease/3 after the grant was sent.
//!   Redisson counts from the reply instead; then a grant whose reply came
//!   back slow (granted in Redis at once, known here 300 ms later with a
//!   400 ms lease) is first renewed after its key ran out, under the holder
//!   that just entered — `slow-network` measured that overlap on about 1
//!   injection in 12 before the change.
//! - Deadline: each guard knows until when the lock is surely still its
//!   own — the send time (monotonic, taken *before* the request went out) of
//!   the last successful acquire or renewal + lease − drift (1% of the
//!   lease + 2 ms, as in `redlock`). The section checks it before it commits,
//!   so a holder whose renewal is stuck (Redis slow, the link cut, the
//!   process frozen) aborts with `409 rejected` instead of trusting a key
//!   that may have expired. An acquire whose reply comes back after its own
//!   deadline (a slow link) counts as not acquired and is released at once.
//! - Waiters: one pub/sub listener per process (`PSUBSCRIBE
//!   unlock:product:*`); the release script publishes the releasing owner
//!   (`watchdog_unlock.lua`) and the listener wakes *one* waiter of that
//!   product per message (no herd: only one can win anyway). A release by
//!   this process wakes its own waiter directly instead, a round trip
//!   earlier, and its listener skips that message. A waiter also
//!   retries when the holder's TTL would run out, and at least every
//!   500 ms, so a lost message costs latency, never the lock.
//! - Fair within a replica: the waiters of one product in this process
//!   queue on a FIFO gate (a one-permit tokio semaphore) and only the head
//!   of the queue asks Redis. Without it a task that just released and asks
//!   again wins the race against the waiter the release woke, and an
//!   unlucky waiter loses again and again (`make bench-locks`, contended
//!   row: wait p99 twice raw polling's before the gate). Across replicas
//!   there is still no queue: each replica's head races the others'.
//!   Gates and waiter lists are kept per product for the life of the
//!   process; the grab route answers an unknown product `404` before any
//!   strategy runs, so they never outnumber the products that exist
//!   (`seckill_strategy_products{strategy="watchdog"}`).
//! - Lost lease: when a renewal finds the lock gone or not ours, the guard
//!   is marked lost (`seckill_lock_lost_total`); the section checks before
//!   it commits and aborts with `409 rejected`. Redisson only logs this
//!   (its issue #4698).
//!
//! **Guarantee:** mutual exclusion through work of any length while the
//! process keeps running and reaches Redis; a holder that cannot renew in
//! time aborts before its commit instead of committing past its lease.
//!
//! **How it fails:** across pauses *at the wrong moment*. A stop-the-world
//! pause (GC, VM freeze, `SIGSTOP`) stops the renewal task too; the lease
//! runs out and another holder enters. The deadline check catches a holder
//! that wakes up before its commit, but a pause that falls between the
//! check and the commit's arrival at the database (or a clock that runs
//! slow) still lets a stale holder write — the check narrows the window to
//! the commit itself but cannot close it. Only fencing (`fenced`) closes it.
//!
//! **Redisson's reported bugs, as faults** (`scenario replay`): with
//! `renewal_stops_on_error` the renewal task ends at its first error,
//! marking nothing, and no later lock of that key in the process is
//! renewed (Redisson #2515, #3194: renewal stopped for good after a
//! connection error or reconnect); with `ignore_lost_lease` the holder skips its last check
//! (Redisson #4698: a failed renewal only logged). Together they are
//! Redisson as those reports saw it.

use seckill_wire::strategies::StrategyName;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use redis::Script;
use tokio::sync::{oneshot, Notify, Semaphore};
use tokio::time::{sleep, timeout, Instant};

use crate::error::GrabError;
use crate::locking::{
    lease_deadline, lock_key, new_token, DistributedLock, Held, Lease, LeaseStatus, LockGuard,
    Released, Renewal, Renewer,
};
use crate::strategy::{GrabContext, Kind, Safety, StrategyInfo};

/// Name, seed and guarantee of `watchdog`.
pub const INFO: StrategyInfo = StrategyInfo {
    name: StrategyName::Watchdog,
    seed: "004 v5 renewal / 000 scheme 6: Redisson's watchdog lock",
    guarantee: "safe through long work; unsafe across process pauses",
    safety: Safety::Safe,
    kind: Kind::Lease,
};

/// Longest a waiter sleeps without a release message before retrying.
const MAX_QUIET_WAIT: Duration = Duration::from_millis(500);

/// `watchdog_lock.lua`: take (or re-enter) the hash lock.
static LOCK_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("watchdog_lock.lua")));

/// `watchdog_renew.lua`: extend the lease while the lock is ours.
static RENEW_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("watchdog_renew.lua")));

/// `watchdog_unlock.lua`: count one entry down, delete and publish on the last.
static UNLOCK_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("watchdog_unlock.lua")));

/// The watchdog lock of one process.
#[derive(Debug)]
pub struct Watchdog {
    process_id: String,
    /// Waiters per lock key, woken by the pub/sub listener.
    waiters: Arc<Mutex<HashMap<String, Arc<Notify>>>>,
    /// Per key, the FIFO gate of this process's waiters (one permit).
    gates: Mutex<HashMap<String, Arc<Semaphore>>>,
    /// The keys whose renewal failed while the `renewal_stops_on_error`
    /// fault was on: no later lock of theirs in this process is renewed
    /// while it stays on (Redisson's stale renewal entry, #2515, #3194).
    renewals_broken: Arc<Mutex<std::collections::HashSet<String>>>,
}

/// What one attempt of the lock script came to.
enum Attempt {
    /// Acquired (or re-entered); the lease is good until this instant.
    Won(Instant),
    /// Held by someone else, for this many ms (-1: no expiry).
    Held(i64),
    /// Acquired, but the reply came after the lease's deadline: released
    /// again, as the key may already have expired.
    Late,
}

impl Watchdog {
    /// Build the lock and start its pub/sub listener on `redis_url`.
    pub fn new(redis_url: &str) -> anyhow::Result<Self> {
        let client = redis::Client::open(redis_url)?;
        let waiters: Arc<Mutex<HashMap<String, Arc<Notify>>>> = Arc::default();
        let process_id = new_token();
        tokio::spawn(listen_for_releases(
            client,
            waiters.clone(),
            format!("{process_id}:"),
        ));
        Ok(Self {
            process_id,
            waiters,
            gates: Mutex::default(),
            renewals_broken: Arc::default(),
        })
    }

    fn gate_of(&self, key: &str) -> Arc<Semaphore> {
        let mut map = self
            .gates
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.entry(key.to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(1)))
            .clone()
    }

    fn waiters_of(&self, key: &str) -> Arc<Notify> {
        let mut map = self
            .waiters
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.entry(key.to_owned()).or_default().clone()
    }

    /// How many products this process keeps a gate or a waiter list for
    /// (both are created for the same keys, by [`DistributedLock::acquire`]).
    fn products_kept(&self) -> usize {
        let gates = self
            .gates
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len();
        let waiters = self
            .waiters
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len();
        gates.max(waiters)
    }

    /// One attempt for `owner` (a first entry or a re-entry).
    async fn attempt(
        &self,
        cx: GrabContext<'_>,
        key: &str,
        owner: &str,
    ) -> Result<Attempt, GrabError> {
        let lease = cx.deps.lock_ttl;
        let mut conn = cx.deps.redis.clone();
        // Taken before the request leaves: the lease starts at the latest
        // when Redis runs the script, which is after this instant.
        let sent = Instant::now();
        let (won, pttl): (i64, i64) = LOCK_SCRIPT
            .key(key)
            .arg(lease.as_millis() as u64)
            .arg(owner)
            .invoke_async(&mut conn)
            .await?;
        if won != 1 {
            return Ok(Attempt::Held(pttl));
        }
        let deadline = lease_deadline(sent, lease);
        if Instant::now() < deadline {
            return Ok(Attempt::Won(deadline));
        }
        // The reply took longer than the lease: the key may be gone and
        // someone else inside. Give this entry back; never enter.
        tracing::warn!(%key, "watchdog: acquire answered after its lease ran out; released");
        if let Err(e) = self.unlock_entry(cx, key, owner).await {
            tracing::warn!(%key, error = %e, "watchdog: could not release a late acquire; it expires");
        }
        Ok(Attempt::Late)
    }

    /// Take the lock again with the same owner (reentrancy): the count goes
    /// up and the returned guard — which needs its own release — shares the
    /// lease of `guard`. `None` when the lock is no longer ours (or the
    /// reply came too late to trust).
    pub async fn reenter(
        &self,
        cx: GrabContext<'_>,
        guard: &LockGuard,
    ) -> Result<Option<LockGuard>, GrabError> {
        Ok(match self.attempt(cx, &guard.key, &guard.token).await? {
            Attempt::Won(deadline) => {
                // The script's PEXPIRE renewed the whole key.
                if let Some(lease) = guard.lease() {
                    lease.status().extend_to(deadline);
                }
                let mut entry = LockGuard::remote(guard.key.clone(), guard.token.clone());
                if let Some(lease) = guard.lease() {
                    entry.held = Held::Lease {
                        lease: lease.clone(),
                        revision: None,
                    };
                }
                Some(entry)
            }
            Attempt::Held(_) | Attempt::Late => None,
        })
    }

    /// Release one entry of `owner`: `Some(Released)` when the count reached
    /// 0 and the lock is gone, `None` when other entries still hold it,
    /// `Some(NotOwner)` when it was not ours any more.
    async fn unlock_entry(
        &self,
        cx: GrabContext<'_>,
        key: &str,
        owner: &str,
    ) -> Result<Option<Released>, GrabError> {
        // lock:product:{id} is released on unlock:product:{id}.
        let product_channel = format!("unlock:{}", key.trim_start_matches("lock:"));
        let mut conn = cx.deps.redis.clone();
        let result: i64 = UNLOCK_SCRIPT
            .key(key)
            .key(product_channel)
            .arg(cx.deps.lock_ttl.as_millis() as u64)
            .arg(owner)
            .invoke_async(&mut conn)
            .await?;
        Ok(match result {
            1 => {
                // Our own waiter of this key is woken here, a round trip
                // before the published message would reach our listener
                // (which skips releases of this process); other processes'
                // waiters wake on the message.
                let local = self
                    .waiters
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .get(key)
                    .cloned();
                if let Some(notify) = local {
                    notify.notify_one();
                }
                Some(Released::Released)
            }
            0 => None,
            _ => Some(Released::NotOwner),
        })
    }

    fn guard(
        &self,
        cx: GrabContext<'_>,
        key: String,
        owner: String,
        deadline: Instant,
    ) -> LockGuard {
        let status = LeaseStatus::new(deadline);
        if cx.faults.ignore_lost_lease {
            status.leave_untold();
        }
        let (stop, stop_rx) = oneshot::channel();
        let renewer = Renewer::new(
            INFO.name.as_str(),
            key.clone(),
            cx.deps.lock_ttl,
            cx.deps.metrics.clone(),
            status.clone(),
        );
        let stops_on_error = cx
            .faults
            .renewal_stops_on_error
            .then(|| self.renewals_broken.clone());
        let broken = stops_on_error.as_ref().is_some_and(|broken| {
            broken
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .contains(&key)
        });
        if broken {
            tracing::debug!(%key, "not renewed: an earlier renewal of this key failed (renewal_stops_on_error)");
        } else {
            tokio::spawn(renew_until_stopped(
                cx.deps.redis.clone(),
                renewer,
                Renewing {
                    key: key.clone(),
                    owner: owner.clone(),
                    stops_on_error,
                },
                stop_rx,
            ));
        }
        let mut guard = LockGuard::remote(key, owner);
        guard.held = Held::Lease {
            lease: Lease::new(status, stop),
            revision: None,
        };
        guard
    }
}

/// What one renewal task renews: the key, its owner, and, with the
/// `renewal_stops_on_error` fault, the keys whose renewal broke (the first
/// error ends the task and adds the key there).
struct Renewing {
    key: String,
    owner: String,
    stops_on_error: Option<Arc<Mutex<std::collections::HashSet<String>>>>,
}

/// Renew every lease/3 until the lease's stop sender is used or dropped
/// ([`Renewer`] keeps the books). A renewal that finds the lock gone marks
/// the lease lost and ends; one that cannot reach Redis retries until the
/// deadline has passed, then marks it lost. (A renewal that simply hangs
/// marks nothing — the holders see the deadline pass on their own.)
/// With the `renewal_stops_on_error` fault the first failed renewal ends
/// the task, marks nothing, and no later lock of the key is renewed:
/// Redisson's reported bug (#2515, #3194).
async fn renew_until_stopped(
    mut conn: redis::aio::ConnectionManager,
    renewer: Renewer,
    renewing: Renewing,
    mut stop: oneshot::Receiver<()>,
) {
    let Renewing {
        key,
        owner,
        stops_on_error,
    } = renewing;
    let lease_ms = renewer.lease().as_millis() as u64;
    // Each renewal is due a period after the last one was sent; the first,
    // a period after the grant was sent (`Renewer::first_due`).
    let mut due = renewer.first_due();
    while renewer.pause_until(&mut stop, due).await {
        let sent = Instant::now();
        due = sent + renewer.period();
        let mut invocation = RENEW_SCRIPT.key(&key);
        invocation.arg(lease_ms).arg(&owner);
        let renewed: Result<i64, _> = tokio::select! {
            _ = &mut stop => return,
            renewed = invocation.invoke_async(&mut conn) => renewed,
        };
        let renewal = match renewed {
            Ok(1) => Renewal::Renewed,
            Ok(_) => Renewal::Lost("the lock is gone or taken".into()),
            Err(e) => {
                if let Some(broken) = &stops_on_error {
                    tracing::warn!(%key, error = %e, "watchdog renewal failed; renewing stops, for this key's later locks too (renewal_stops_on_error)");
                    broken
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .insert(key.clone());
                    return;
                }
                Renewal::Failed(e.to_string())
            }
        };
        if renewer.settle(sent, renewal).is_break() {
            return;
        }
    }
}

/// The process's one pub/sub connection: wake one waiter of a product per
/// release published by another process (the message carries the
/// releasing owner; ours start with `own_prefix` and were woken at the
/// release). Reconnects with a pause when Redis goes.
async fn listen_for_releases(
    client: redis::Client,
    waiters: Arc<Mutex<HashMap<String, Arc<Notify>>>>,
    own_prefix: String,
) {
    loop {
        match client.get_async_pubsub().await {
            Ok(mut pubsub) => {
                if let Err(e) = pubsub.psubscribe("unlock:product:*").await {
                    tracing::debug!(error = %e, "watchdog: psubscribe failed");
                } else {
                    let mut messages = pubsub.on_message();
                    while let Some(message) = messages.next().await {
                        let releaser: String = message.get_payload().unwrap_or_default();
                        if releaser.starts_with(&own_prefix) {
                            continue;
                        }
                        let key = message
                            .get_channel_name()
                            .strip_prefix("unlock:")
                            .map(|rest| format!("lock:{rest}"));
                        if let Some(key) = key {
                            let notify = waiters
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner)
                                .get(&key)
                                .cloned();
                            // One release frees the lock for one holder:
                            // wake one waiter (a waiter that gave up passes
                            // the wake-up on; with none waiting, the next
                            // one to wait retries at once).
                            if let Some(notify) = notify {
                                notify.notify_one();
                            }
                        }
                    }
                }
            }
            Err(e) => tracing::debug!(error = %e, "watchdog: pub/sub connection failed"),
        }
        sleep(Duration::from_millis(200)).await;
    }
}

#[async_trait]
impl DistributedLock for Watchdog {
    fn info(&self) -> &'static StrategyInfo {
        &INFO
    }

    async fn try_acquire(
        &self,
        cx: GrabContext<'_>,
        product_id: i64,
    ) -> Result<Option<LockGuard>, GrabError> {
        let key = lock_key(product_id);
        let owner = format!("{}:{}", self.process_id, new_token());
        Ok(match self.attempt(cx, &key, &owner).await? {
            Attempt::Won(deadline) => Some(self.guard(cx, key, owner, deadline)),
            Attempt::Held(_) | Attempt::Late => None,
        })
    }

    /// Wait for the release message instead of polling.
    async fn acquire(&self, cx: GrabContext<'_>, product_id: i64) -> Result<LockGuard, GrabError> {
        let deps = cx.deps;
        let key = lock_key(product_id);
        let owner = format!("{}:{}", self.process_id, new_token());
        let deadline = Instant::now() + deps.lock_wait;
        // Queue behind this process's earlier waiters of the same key
        // (FIFO); the permit is held until this acquire returns.
        let gate = self.gate_of(&key);
        let notify = self.waiters_of(&key);
        deps.metrics
            .strategy_products
            .with_label_values(&[INFO.name.as_str()])
            .set(self.products_kept() as f64);
        let Ok(Ok(_turn)) = timeout(deps.lock_wait, gate.acquire_owned()).await else {
            return Err(GrabError::Busy(deps.lock_wait));
        };
        let (attempts, retries) = deps.metrics.attempt_counters(INFO.name.as_str());
        loop {
            // Register for the wake-up *before* trying, so a release that
            // lands between our attempt and our wait is not missed.
            let woken = notify.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            attempts.inc();
            let holder_ttl = match self.attempt(cx, &key, &owner).await? {
                Attempt::Won(lease_until) => return Ok(self.guard(cx, key, owner, lease_until)),
                Attempt::Held(pttl) => pttl,
                // Our own release just published: retry at once.
                Attempt::Late => 0,
            };
            let now = Instant::now();
            if now >= deadline {
                return Err(GrabError::Busy(deps.lock_wait));
            }
            retries.inc();
            let until_expiry =
                u64::try_from(holder_ttl).map_or(MAX_QUIET_WAIT, Duration::from_millis);
            let quiet = until_expiry.min(MAX_QUIET_WAIT).min(deadline - now);
            let _ = timeout(quiet, woken).await;
        }
    }

    /// Release one entry. The lease keeps being renewed while other
    /// entries of the same owner still hold the lock; it stops when the
    /// count reaches 0 or the lock turned out not to be ours.
    async fn release(
        &self,
        cx: GrabContext<'_>,
        mut guard: LockGuard,
    ) -> Result<Released, GrabError> {
        let lease = guard.take_lease();
        let released = self.unlock_entry(cx, &guard.key, &guard.token).await;
        if let (Ok(Some(_)), Some(lease)) = (&released, &lease) {
            lease.stop_renewing();
        }
        // On `Ok(None)` the other entries' guards keep the lease alive; on
        // an error, dropping this clone stops the renewals once no other
        // guard of this owner is left, and the lock expires.
        drop(lease);
        Ok(released?.unwrap_or(Released::Released))
    }
}
