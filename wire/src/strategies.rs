//! `GET /admin/strategies` (and the answer of `PUT /admin/strategy`): every
//! strategy of the service, what it promises ([`Safety`]) and how it is
//! built ([`Kind`]), with the active one.

use serde::{Deserialize, Serialize};

/// What a strategy promises under contention, for reports and verdicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Safety {
    /// Expected to oversell or lose updates: that is the lesson.
    Unsafe,
    /// Safe with one replica only.
    SingleReplica,
    /// Safe until a holder dies: then locked for good (or until a sweep).
    SafeWhileHoldersLive,
    /// Safe while the work fits in the lock's TTL.
    SafeWithinTtl,
    /// Safe under the conditions this lab produces.
    Safe,
}

/// How a strategy is built — its construction class, which decides what
/// each fault does to it (the load generator's expectations read it from
/// `GET /admin/strategies`, never from a name table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// No lock at all (`none`).
    NoLock,
    /// A lock inside one process (`local-mutex`): other replicas do not see it.
    ProcessLocal,
    /// A Redis key that never expires (`setnx`): a dead holder locks for good.
    NoExpiry,
    /// A key with a fixed TTL on one Redis (`set-nx-px*`, `setnx-expire*`,
    /// `setnx-getset`): work or a pause longer than the TTL lets a second
    /// holder in.
    Ttl,
    /// A lease or session kept alive by a background task while the process
    /// runs (`watchdog`, `etcd-lease`, `zk-ephemeral-seq`): a whole-process
    /// pause past it loses the lock.
    Lease,
    /// A quorum of independent nodes whose validity time is checked before
    /// the commit (`redlock`).
    Validity,
    /// Held by a database session (`mysql-get-lock`): freed when the
    /// connection closes, not on a timer.
    Session,
    /// A TTL lock whose fencing token the database checks (`fenced`): stale
    /// holders are refused by the data, not by the lock.
    Fenced,
    /// A row in a lock table, swept by age (`pg-lock-table`).
    LockTable,
    /// A lock held by the section's own transaction (`pg-for-update`,
    /// `pg-advisory`).
    InTransaction,
    /// Not a lock: one atomic operation or a compare-and-set
    /// (`pg-optimistic`, `pg-atomic`, `redis-lua-stock`).
    NotALock,
}

/// One entry of `GET /admin/strategies`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StrategyEntry {
    /// Stable name (API, metric labels, loadgen, dashboards).
    pub name: String,
    /// What it guarantees, in one line.
    pub guarantee: String,
    /// Whether this deployment can run it.
    pub available: bool,
    /// Why `available` is false: the setting that is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
    /// Which seed step it teaches.
    pub seed: String,
    /// Its class for verdicts.
    pub safety: Safety,
    /// How it is built: what each fault does to it.
    pub kind: Kind,
}

/// `GET /admin/strategies`, and the answer of `PUT /admin/strategy`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StrategiesBody {
    /// The active strategy (every replica follows within
    /// `SECKILL_CONTROL_REFRESH_MS`).
    pub active: String,
    /// Every strategy of this build, in teaching order.
    pub strategies: Vec<StrategyEntry>,
    /// `SECKILL_LOCK_TTL_MS`.
    pub lock_ttl_ms: u64,
    /// `SECKILL_LOCK_WAIT_MS`.
    pub lock_wait_ms: u64,
    /// `SECKILL_REDIS_WAIT_REPLICAS`.
    pub redis_wait_replicas: u32,
    /// This replica's instance id.
    pub instance: String,
}

impl StrategiesBody {
    /// The entry of `name`, if the service lists it.
    pub fn get(&self, name: &str) -> Option<&StrategyEntry> {
        self.strategies.iter().find(|s| s.name == name)
    }
}

/// `PUT /admin/strategy` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SwitchBody {
    /// Strategy name (`GET /admin/strategies` lists them).
    #[cfg_attr(feature = "openapi", schema(example = "redlock"))]
    pub strategy: String,
}
