//! Run-time control shared by every replica: the active strategy and the
//! workshop faults.
//!
//! Both live in Redis (`seckill:strategy`, `seckill:faults` as JSON). An
//! admin call on any replica writes Redis and applies locally at once;
//! every replica re-reads both keys every `SECKILL_CONTROL_REFRESH_MS`, so
//! the whole deployment follows within that interval. Grabs read the local
//! copy — an atomic and a short read lock — so the hot path never waits for
//! Redis just to learn the strategy, and the database strategies keep
//! working while Redis is down (with the last known settings).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::GrabError;
use crate::lock::{Deps, Strategies, Strategy};

/// Redis key of the active strategy's name.
pub const STRATEGY_KEY: &str = "seckill:strategy";
/// Redis key of the faults (JSON of [`Faults`]).
pub const FAULTS_KEY: &str = "seckill:faults";

/// Where inside the critical section the in-process pause (`pause_ms`) stalls.
///
/// This pause sleeps the grab's own task only — the process keeps running,
/// so the watchdog keeps renewing through it. A whole-process freeze
/// (`SIGSTOP`, renewal tasks included) is the scenario runner's `gc-pause`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PauseAt {
    /// Before the stock is read: a holder that wakes past its TTL reads
    /// fresh stock, so it overlaps without losing an update.
    #[default]
    BeforeRead,
    /// Between the read and the write: the holder wakes and writes the
    /// stale value it read — the lost update of every TTL-lock seed.
    BeforeWrite,
    /// After the lock's last check (lease, validity), just before the
    /// commit: no check before commit can help; only fencing does.
    BeforeCommit,
}

/// Faults a workshop can switch on (`PUT /admin/faults`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Faults {
    /// Simulated work between the read and the write of the critical section.
    pub work_delay_ms: u64,
    /// An extra stall inside the critical section (a GC or VM pause), taken
    /// by one grab in `pause_every`.
    pub pause_ms: u64,
    /// Which grabs take the pause: every n-th grab on each replica (1 = all).
    pub pause_every: u64,
    /// Where the pause stalls the section.
    #[serde(default)]
    pub pause_at: PauseAt,
    /// Release the lock *before* committing — the classic bug.
    pub unlock_before_commit: bool,
    /// A pause between `SETNX` and `PEXPIRE` of `setnx-expire` (widens the
    /// crash window of seed 004 v2).
    #[serde(default)]
    pub setnx_expire_gap_ms: u64,
    /// A pause between the check and the delete of `set-nx-px-check-del`
    /// (widens the race of seed 004 v4).
    #[serde(default)]
    pub release_gap_ms: u64,
    /// Not a fault but its cure: the database checks the revision the lock
    /// service handed out (etcd's create revision, ZooKeeper's sequence) as
    /// a fencing token, exactly as `fenced` checks its counter.
    #[serde(default)]
    pub check_revision: bool,
}

impl Faults {
    /// The faults of a fresh deployment.
    pub fn with_work_delay(work_delay_ms: u64) -> Self {
        Self {
            work_delay_ms,
            pause_ms: 0,
            pause_every: 1,
            pause_at: PauseAt::BeforeRead,
            unlock_before_commit: false,
            setnx_expire_gap_ms: 0,
            release_gap_ms: 0,
            check_revision: false,
        }
    }
}

/// A partial update of [`Faults`]; unknown fields are refused.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultsPatch {
    /// New work delay.
    pub work_delay_ms: Option<u64>,
    /// New pause.
    pub pause_ms: Option<u64>,
    /// New pause frequency (≥ 1).
    pub pause_every: Option<u64>,
    /// New pause position.
    pub pause_at: Option<PauseAt>,
    /// New unlock-before-commit switch.
    pub unlock_before_commit: Option<bool>,
    /// New SETNX/EXPIRE gap.
    pub setnx_expire_gap_ms: Option<u64>,
    /// New check/delete gap.
    pub release_gap_ms: Option<u64>,
    /// Whether the database checks the lock service's revision.
    pub check_revision: Option<bool>,
}

impl FaultsPatch {
    /// Apply to `faults`.
    pub fn apply(self, mut faults: Faults) -> Faults {
        if let Some(v) = self.work_delay_ms {
            faults.work_delay_ms = v;
        }
        if let Some(v) = self.pause_ms {
            faults.pause_ms = v;
        }
        if let Some(v) = self.pause_every {
            faults.pause_every = v;
        }
        if let Some(v) = self.pause_at {
            faults.pause_at = v;
        }
        if let Some(v) = self.unlock_before_commit {
            faults.unlock_before_commit = v;
        }
        if let Some(v) = self.setnx_expire_gap_ms {
            faults.setnx_expire_gap_ms = v;
        }
        if let Some(v) = self.release_gap_ms {
            faults.release_gap_ms = v;
        }
        if let Some(v) = self.check_revision {
            faults.check_revision = v;
        }
        faults
    }
}

/// This replica's copy of the shared control state.
#[derive(Debug)]
pub struct Control {
    strategies: Strategies,
    active: AtomicUsize,
    faults: RwLock<Faults>,
    grabs_seen: AtomicU64,
}

impl Control {
    /// Start with the configured strategy and faults.
    pub fn new(strategies: Strategies, initial_strategy: &str, faults: Faults) -> Self {
        let active = strategies.index_of(initial_strategy).unwrap_or(0);
        Self {
            strategies,
            active: AtomicUsize::new(active),
            faults: RwLock::new(faults),
            grabs_seen: AtomicU64::new(0),
        }
    }

    /// All strategies.
    pub fn strategies(&self) -> &Strategies {
        &self.strategies
    }

    /// The active strategy.
    pub fn active(&self) -> &Arc<dyn Strategy> {
        self.strategies.get(self.active.load(Ordering::Relaxed))
    }

    /// The faults in force.
    pub fn faults(&self) -> Faults {
        *self
            .faults
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the next grab takes the pause (`pause_every`).
    pub fn next_grab_pauses(&self, faults: &Faults) -> bool {
        if faults.pause_ms == 0 {
            return false;
        }
        let n = self.grabs_seen.fetch_add(1, Ordering::Relaxed);
        n.is_multiple_of(faults.pause_every.max(1))
    }

    fn set_local(&self, strategy: Option<usize>, faults: Option<Faults>) {
        if let Some(index) = strategy {
            self.active.store(index, Ordering::Relaxed);
        }
        if let Some(faults) = faults {
            *self
                .faults
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = faults;
        }
    }

    /// Switch every replica to `index`: activate it here, publish, apply.
    pub async fn switch(&self, deps: &Deps, index: usize) -> Result<(), GrabError> {
        let strategy = self.strategies.get(index);
        strategy.activate(deps).await?;
        let mut conn = deps.redis.clone();
        redis::cmd("SET")
            .arg(STRATEGY_KEY)
            .arg(strategy.info().name)
            .query_async::<()>(&mut conn)
            .await?;
        self.set_local(Some(index), None);
        Ok(())
    }

    /// Publish new faults for every replica and apply them here.
    pub async fn set_faults(&self, deps: &Deps, faults: Faults) -> Result<(), GrabError> {
        let json = serde_json::to_string(&faults)
            .map_err(|e| GrabError::Internal(format!("faults json: {e}")))?;
        let mut conn = deps.redis.clone();
        redis::cmd("SET")
            .arg(FAULTS_KEY)
            .arg(json)
            .query_async::<()>(&mut conn)
            .await?;
        self.set_local(None, Some(faults));
        Ok(())
    }

    /// Re-read both keys from Redis. Missing keys keep the local values.
    pub async fn refresh(&self, deps: &Deps) -> Result<(), GrabError> {
        let mut conn = deps.redis.clone();
        let (strategy, faults): (Option<String>, Option<String>) = redis::cmd("MGET")
            .arg(STRATEGY_KEY)
            .arg(FAULTS_KEY)
            .query_async(&mut conn)
            .await?;
        let index = strategy.and_then(|name| {
            let found = self.strategies.index_of(&name);
            if found.is_none() {
                tracing::warn!(%name, "Redis names an unknown strategy; keeping the current one");
            }
            found
        });
        let faults = faults.and_then(|json| match serde_json::from_str(&json) {
            Ok(f) => Some(f),
            Err(e) => {
                tracing::warn!(error = %e, "unreadable faults in Redis; keeping the current ones");
                None
            }
        });
        self.set_local(index, faults);
        Ok(())
    }

    /// Refresh every `interval` until `stop` fires.
    pub async fn refresh_loop(
        self: Arc<Self>,
        deps: Deps,
        interval: Duration,
        stop: tokio::sync::watch::Receiver<bool>,
    ) {
        refresh_every("the shared strategy/faults", interval, stop, move || {
            let (control, deps) = (self.clone(), deps.clone());
            async move { control.refresh(&deps).await }
        })
        .await;
    }
}

/// Call `refresh` every `interval` until `stop` fires. A failure is logged
/// once when it starts and once when it ends (the local copy stays in use
/// meanwhile), not at every tick.
pub async fn refresh_every<F, Fut>(
    what: &'static str,
    interval: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
    mut refresh: F,
) where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), GrabError>>,
{
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stop.changed() => return,
        }
        match refresh().await {
            Ok(()) if failing => {
                tracing::info!("{what} readable again");
                failing = false;
            }
            Ok(()) => {}
            Err(e) if !failing => {
                tracing::warn!(error = %e, "cannot read {what}; keeping the local copy");
                failing = true;
            }
            Err(_) => {}
        }
    }
}
