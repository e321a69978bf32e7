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

/// Every strategy's stable name (API, metric labels, reports), in teaching
/// order. The serde names are the wire's strings; the service checks at
/// compile time that its registry lists exactly these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum StrategyName {
    None,
    LocalMutex,
    Setnx,
    SetnxExpire,
    SetnxExpireLua,
    SetnxGetset,
    SetNxPx,
    SetNxPxCheckDel,
    SetNxPxToken,
    Watchdog,
    Redlock,
    Fenced,
    MysqlGetLock,
    EtcdLease,
    ZkEphemeralSeq,
    PgLockTable,
    PgForUpdate,
    PgOptimistic,
    PgAdvisory,
    PgAtomic,
    RedisLuaStock,
    #[serde(rename = "pg-2pc")]
    Pg2pc,
    /// `pg-3pc`: three-phase commit over the same two databases, each
    /// behind a participant that commits at its own timeout.
    #[serde(rename = "pg-3pc")]
    Pg3pc,
}

impl StrategyName {
    /// Every strategy, in teaching order.
    pub const ALL: [StrategyName; 23] = [
        StrategyName::None,
        StrategyName::LocalMutex,
        StrategyName::Setnx,
        StrategyName::SetnxExpire,
        StrategyName::SetnxExpireLua,
        StrategyName::SetnxGetset,
        StrategyName::SetNxPx,
        StrategyName::SetNxPxCheckDel,
        StrategyName::SetNxPxToken,
        StrategyName::Watchdog,
        StrategyName::Redlock,
        StrategyName::Fenced,
        StrategyName::MysqlGetLock,
        StrategyName::EtcdLease,
        StrategyName::ZkEphemeralSeq,
        StrategyName::PgLockTable,
        StrategyName::PgForUpdate,
        StrategyName::PgOptimistic,
        StrategyName::PgAdvisory,
        StrategyName::PgAtomic,
        StrategyName::RedisLuaStock,
        StrategyName::Pg2pc,
        StrategyName::Pg3pc,
    ];

    /// Every name as written on the wire, in the order of [`Self::ALL`].
    pub const NAMES: [&'static str; 23] = names_of!(Self::ALL, 23);

    /// As written on the wire (its serde name).
    pub const fn as_str(self) -> &'static str {
        match self {
            StrategyName::None => "none",
            StrategyName::LocalMutex => "local-mutex",
            StrategyName::Setnx => "setnx",
            StrategyName::SetnxExpire => "setnx-expire",
            StrategyName::SetnxExpireLua => "setnx-expire-lua",
            StrategyName::SetnxGetset => "setnx-getset",
            StrategyName::SetNxPx => "set-nx-px",
            StrategyName::SetNxPxCheckDel => "set-nx-px-check-del",
            StrategyName::SetNxPxToken => "set-nx-px-token",
            StrategyName::Watchdog => "watchdog",
            StrategyName::Redlock => "redlock",
            StrategyName::Fenced => "fenced",
            StrategyName::MysqlGetLock => "mysql-get-lock",
            StrategyName::EtcdLease => "etcd-lease",
            StrategyName::ZkEphemeralSeq => "zk-ephemeral-seq",
            StrategyName::PgLockTable => "pg-lock-table",
            StrategyName::PgForUpdate => "pg-for-update",
            StrategyName::PgOptimistic => "pg-optimistic",
            StrategyName::PgAdvisory => "pg-advisory",
            StrategyName::PgAtomic => "pg-atomic",
            StrategyName::RedisLuaStock => "redis-lua-stock",
            StrategyName::Pg2pc => "pg-2pc",
            StrategyName::Pg3pc => "pg-3pc",
        }
    }
}

impl std::fmt::Display for StrategyName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(feature = "clap")]
impl clap::ValueEnum for StrategyName {
    fn value_variants<'a>() -> &'a [Self] {
        &Self::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.as_str()))
    }
}

/// A name that is no strategy's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownStrategy(pub String);

impl std::fmt::Display for UnknownStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown strategy {:?}; known: {}",
            self.0,
            StrategyName::NAMES.join(", ")
        )
    }
}

impl std::error::Error for UnknownStrategy {}

impl std::str::FromStr for StrategyName {
    type Err = UnknownStrategy;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|s| s.as_str() == name)
            .ok_or_else(|| UnknownStrategy(name.to_owned()))
    }
}

impl PartialEq<StrategyName> for String {
    fn eq(&self, other: &StrategyName) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<StrategyName> for str {
    fn eq(&self, other: &StrategyName) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<StrategyName> for &str {
    fn eq(&self, other: &StrategyName) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<str> for StrategyName {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for StrategyName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for StrategyName {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

/// One entry of `GET /admin/strategies`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StrategyEntry {
    /// Stable name (API, metric labels, loadgen, dashboards).
    pub name: StrategyName,
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

impl StrategyEntry {
    /// Whether this entry is `strategy`.
    pub fn is(&self, strategy: StrategyName) -> bool {
        self.name == strategy
    }
}

/// `GET /admin/strategies`, and the answer of `PUT /admin/strategy`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StrategiesBody {
    /// The active strategy (every replica follows within
    /// `SECKILL_CONTROL_REFRESH_MS`).
    pub active: StrategyName,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_name_is_its_serde_name_and_parses_back() {
        for strategy in StrategyName::ALL {
            let json = serde_json::to_value(strategy).expect("serialise");
            assert_eq!(json, strategy.as_str(), "{strategy:?}");
            assert_eq!(strategy.as_str().parse::<StrategyName>(), Ok(strategy));
            let back: StrategyName = serde_json::from_value(json).expect("deserialise");
            assert_eq!(back, strategy);
        }
        assert_eq!(
            "yolo".parse::<StrategyName>(),
            Err(UnknownStrategy("yolo".into()))
        );
    }
}
