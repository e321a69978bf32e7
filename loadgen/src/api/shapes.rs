//! The answers of the service, typed: what `GET /admin/strategies`,
//! `/admin/audit`, `/admin/faults`, `/admin/history` and a product read
//! return. Fields the service always sends carry no default, so an answer
//! without one fails to decode.

use serde::{Deserialize, Serialize};

use super::error::ServiceError;

/// How a strategy is built, which decides what each fault does to it (the
/// `kind` of `GET /admin/strategies`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// `none`.
    NoLock,
    /// `local-mutex`: one process only.
    ProcessLocal,
    /// `setnx`: never expires.
    NoExpiry,
    /// A key with a fixed TTL on one Redis.
    Ttl,
    /// A lease (or session) kept alive by a background task.
    Lease,
    /// `redlock`: a quorum of nodes, validity checked before commit.
    Validity,
    /// Held by a database session; frees when the connection closes.
    Session,
    /// A TTL lock, but the database refuses stale tokens.
    Fenced,
    /// A row swept by age.
    LockTable,
    /// Held by the transaction itself.
    InTransaction,
    /// No lock at all: the stock update itself is atomic.
    NotALock,
}

/// What a strategy promises (`safety` of `GET /admin/strategies`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Safety {
    /// Expected to oversell or lose updates.
    Unsafe,
    /// Safe with one replica only.
    SingleReplica,
    /// Safe until a holder dies.
    SafeWhileHoldersLive,
    /// Safe while the work fits in the lock's TTL.
    SafeWithinTtl,
    /// Safe under the conditions this lab produces.
    Safe,
}

/// One strategy as `GET /admin/strategies` lists it.
#[derive(Debug, Clone, Deserialize)]
pub struct StrategyEntry {
    /// Stable name.
    pub name: String,
    /// One-line guarantee.
    pub guarantee: String,
    /// Whether this service can run it (Redlock needs its nodes, …).
    pub available: bool,
    /// Why it is not available (the setting it lacks).
    #[serde(default)]
    pub unavailable_reason: Option<String>,
    /// Its class for verdicts.
    pub safety: Safety,
    /// How it is built.
    pub kind: Kind,
}

/// `GET /admin/strategies`.
#[derive(Debug, Clone, Deserialize)]
pub struct Strategies {
    /// The active one.
    pub active: String,
    /// Every strategy, in the service's teaching order.
    pub strategies: Vec<StrategyEntry>,
    /// TTL of the expiring locks (and the watchdog's lease).
    pub lock_ttl_ms: u64,
}

impl Strategies {
    /// The entry of `name`, or an error listing the known names.
    pub fn get(&self, name: &str) -> Result<&StrategyEntry, ServiceError> {
        self.strategies
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| ServiceError::UnknownStrategy {
                name: name.to_owned(),
                known: self
                    .strategies
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

/// One product's ground truth from `GET /admin/audit`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct AuditRow {
    pub product_id: i64,
    pub initial_stock: i64,
    pub stock: i64,
    pub orders: i64,
    pub ordered_units: i64,
    pub oversold: i64,
    /// Never negative.
    pub lost_updates: i64,
    /// Units gone from the stock column that no order took.
    pub undersold: i64,
    pub duplicates: i64,
    pub negative_stock: bool,
}

/// `GET /admin/audit`.
#[derive(Debug, Clone, Deserialize)]
pub struct Audit {
    pub strategy: String,
    #[serde(default)]
    pub synchronous_commit: Option<String>,
    pub products: Vec<AuditRow>,
}

/// `GET /admin/faults`: the faults every replica applies.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Faults {
    pub work_delay_ms: u64,
    pub pause_ms: u64,
    pub pause_every: u64,
    pub pause_at: String,
    pub unlock_before_commit: bool,
    pub setnx_expire_gap_ms: u64,
    pub release_gap_ms: u64,
    pub check_revision: bool,
}

/// `GET /api/v1/products/{id}`.
#[derive(Debug, Clone, Deserialize)]
pub struct Product {
    pub id: i64,
    pub name: String,
    pub stock: i64,
    pub initial_stock: i64,
    /// The strategy this replica runs.
    pub strategy: String,
}

/// One strategy's counts in `GET /admin/history`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct StrategyHistory {
    pub strategy: String,
    pub entries: u64,
    pub overlaps: u64,
    pub max_holders: u64,
}

/// A section inside right now.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Inside {
    pub member: String,
    pub instance: String,
    pub product: i64,
    pub since_us: i64,
}

/// One of the arbiter's first overlaps.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub struct Overlap {
    /// The arbiter's clock, microseconds.
    pub at_us: i64,
    /// The strategy that ran.
    pub strategy: String,
    /// The member that entered.
    pub entered: String,
    /// The members inside when it did.
    pub inside: Vec<String>,
    pub product: i64,
}

/// `GET /admin/history`.
#[derive(Debug, Clone, Deserialize)]
pub struct History {
    pub enabled: bool,
    pub run: Option<String>,
    pub instance: String,
    /// Arbiter calls of the answering replica that failed.
    pub errors: u64,
    pub strategies: Vec<StrategyHistory>,
    pub inside: Vec<Inside>,
    pub first_overlaps: Vec<Overlap>,
}

impl History {
    /// The counts of `strategy` (none recorded: all zero).
    pub fn of(&self, strategy: &str) -> StrategyHistory {
        self.strategies
            .iter()
            .find(|s| s.strategy == strategy)
            .cloned()
            .unwrap_or_else(|| StrategyHistory {
                strategy: strategy.to_owned(),
                ..StrategyHistory::default()
            })
    }
}

/// `PUT /admin/history`'s answer.
#[derive(Debug, Clone, Deserialize)]
pub struct HistorySwitched {
    pub enabled: bool,
    pub run: Option<String>,
}

/// `POST /admin/history/forget`'s answer.
#[derive(Debug, Clone, Deserialize)]
pub struct Forgotten {
    pub instance: String,
    pub removed: u64,
}
