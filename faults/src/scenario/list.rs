//! The scenarios, in workshop order: a clap `ValueEnum`, each variant
//! naming its file — what it does in one line, the strategies it runs by
//! default, its variants, what each strategy should do under it, and the
//! fault script itself.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::ValueEnum;

use super::case::Expectation;
use super::in_force::FaultRecord;
use super::params::{Params, Spec};
use super::world::CaseRun;
use super::{
    acquire_pause, clock_jump, clock_skew, clock_slew, connection_cut, coordinator_crash,
    crash_holder, dependency_loss, failover, gc_pause, order_insert_fails, partition_precommit,
    redlock_restart, rolling_restart, slow_network, unlock_before_commit,
};
use seckill_load::api::Variant;
use seckill_load::api::{Kind, StrategyEntry, StrategyName};
use seckill_load::judge::{Expected, Guarantee};

pub use super::name::Scenario;

/// What the command line named: every scenario, or one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    /// `all`.
    All,
    /// One scenario by name.
    One(Scenario),
}

/// A scenario name, or `all`, as a [`Selection`] (`None`: neither).
pub fn selection(name: &str) -> Option<Selection> {
    if name == "all" {
        return Some(Selection::All);
    }
    Scenario::value_variants()
        .iter()
        .find(|s| s.name() == name)
        .map(|s| Selection::One(*s))
}

/// The parser of a variant name (`--variants`): an unknown one is refused
/// by clap with the list of known ones (exit 2).
pub fn variant_parser() -> impl TypedValueParser<Value = Variant> {
    PossibleValuesParser::new(Variant::ALL.map(|v| PossibleValue::new(v.as_str()))).map(|name| {
        Variant::ALL
            .into_iter()
            .find(|v| v.as_str() == name)
            .expect("a possible value is a variant")
    })
}

impl Scenario {
    /// What it does, in one line.
    pub fn summary(self) -> &'static str {
        match self {
            Scenario::GcPause => "SIGSTOP a replica while it holds the lock, for 2.5x the TTL/lease (Kleppmann's process pause)",
            Scenario::SlowNetwork => "one replica's replies from Redis delayed 1.5x the TTL by a proxy (Kleppmann's delayed packets)",
            Scenario::ClockJump => "Redlock, replicas partitioned to nodes {1,2,3} / {3,4,5}; node 3's clock jumps forward by `jump` (1.5x the TTL) while a lock is held (Kleppmann's clock jump)",
            Scenario::RedlockRestart => "Redlock, same partition; node 3 crashes (kill -9 or a power cut) and comes back after `restart_delay`, with persistence none, everysec or always",
            Scenario::Failover => "Redis primary + replica (replication delayed lag_ms, 200); the replica is promoted while a lock is held, `promotions` times (12), with and without WAIT 1, and WAIT 1 acked by a second replica",
            Scenario::CrashHolder => "kill -9 the replica holding the lock (setnx-expire: between SETNX and EXPIRE); do the others ever buy again?",
            Scenario::ClockSkew => "one replica's wall clock runs ahead by more than the TTL (setnx-getset trusts client clocks)",
            Scenario::UnlockBeforeCommit => "the unlock_before_commit fault: release the lock, then commit",
            Scenario::DependencyLoss => "Redis killed and restarted, then PostgreSQL (and etcd/ZooKeeper/MariaDB) cut and restored, mid-run: 503s, never a half-written order",
            Scenario::AcquirePause => "Redlock held between its SETs and reading the votes, past the TTL; with and without the validity check (antirez's reply)",
            Scenario::ClockSlew => "every Redlock node's clock runs slew_pct (1 %) fast, slewed not jumped, against work that nearly fills the validity (antirez: the drift factor covers it)",
            Scenario::CoordinatorCrash => "pg-2pc: kill -9 the coordinator between the phases (or inside phase two); everyone blocks until it restarts and recovers, with and without its decision log. pg-3pc: its participants commit at their timeout, nobody blocks",
            Scenario::PartitionPrecommit => "pg-3pc: the coordinator cut off from both sides between their pre-commits; the stock side commits at its timeout, the coordinator aborts: undersold. pg-2pc beside it: blocked, never split",
            Scenario::OrderInsertFails => "PostgreSQL refuses one order INSERT per round after the stock was taken: a Redis decrement without its cancel undersells (the seckill demos' DECR); one transaction takes the decrement back",
            Scenario::RollingRestart => "redlock's three nodes restarted one after the other without persistence while the holder extends its lock: locked again on each, or eroded until another client holds a majority (redsync #149)",
            Scenario::ConnectionCut => "the watchdog's holder loses its connections to Redis for cut_ms (0.25x the lease) while its work outlasts the lease: renewed again, or told before commit (Redisson #2515, #3194)",
        }
    }

    /// Whether it runs processes under the clock-shifting preload.
    pub fn shifts_clocks(self) -> bool {
        matches!(
            self,
            Scenario::ClockJump | Scenario::ClockSkew | Scenario::ClockSlew
        )
    }

    /// Whether it runs, by default, every strategy of `shared_lock`'s
    /// kinds instead of a list of names.
    pub fn every_shared_lock(self) -> bool {
        self == Scenario::UnlockBeforeCommit
    }

    /// The strategies it runs unless `--strategies` says otherwise (empty
    /// when [`Scenario::every_shared_lock`]).
    pub fn strategies(self) -> &'static [StrategyName] {
        match self {
            Scenario::GcPause => &[
                StrategyName::SetNxPxToken,
                StrategyName::Watchdog,
                StrategyName::Redlock,
                StrategyName::Fenced,
                StrategyName::EtcdLease,
                StrategyName::ZkEphemeralSeq,
                StrategyName::MysqlGetLock,
                StrategyName::PgForUpdate,
            ],
            Scenario::SlowNetwork => &[
                StrategyName::SetNxPxToken,
                StrategyName::Watchdog,
                StrategyName::Redlock,
                StrategyName::Fenced,
            ],
            Scenario::ClockJump
            | Scenario::RedlockRestart
            | Scenario::AcquirePause
            | Scenario::ClockSlew => &[StrategyName::Redlock],
            Scenario::Failover => &[StrategyName::SetNxPxToken, StrategyName::Fenced],
            Scenario::CrashHolder => &[
                StrategyName::Setnx,
                StrategyName::SetnxExpire,
                StrategyName::PgLockTable,
                StrategyName::SetNxPxToken,
                StrategyName::Watchdog,
            ],
            Scenario::ClockSkew => &[StrategyName::SetnxGetset, StrategyName::SetNxPxToken],
            // Every lock the replicas share: chosen by kind (`shared_lock`).
            Scenario::UnlockBeforeCommit => &[],
            Scenario::DependencyLoss => &[
                StrategyName::SetNxPxToken,
                StrategyName::PgForUpdate,
                StrategyName::Fenced,
                StrategyName::EtcdLease,
                StrategyName::ZkEphemeralSeq,
                StrategyName::MysqlGetLock,
            ],
            Scenario::CoordinatorCrash | Scenario::PartitionPrecommit => {
                &[StrategyName::Pg2pc, StrategyName::Pg3pc]
            }
            Scenario::ConnectionCut => &[StrategyName::Watchdog],
            Scenario::OrderInsertFails => &[StrategyName::RedisLuaStock, StrategyName::PgForUpdate],
            Scenario::RollingRestart => &[StrategyName::Redlock],
        }
    }

    /// The variants it runs for each strategy (`""`: just one).
    pub fn variants(self) -> &'static [Variant] {
        match self {
            Scenario::ClockJump => clock_jump::VARIANTS,
            Scenario::RedlockRestart => redlock_restart::VARIANTS,
            Scenario::Failover => failover::VARIANTS,
            Scenario::AcquirePause => acquire_pause::VARIANTS,
            Scenario::CoordinatorCrash => coordinator_crash::VARIANTS,
            _ => &[],
        }
    }

    /// Its cases' variants: each of [`Scenario::variants`], or one case
    /// with none.
    pub fn variants_or_none(self) -> Vec<Option<Variant>> {
        match self.variants() {
            [] => vec![None],
            some => some.iter().copied().map(Some).collect(),
        }
    }

    /// The dials it reads (`--set`, `--sweep`, `--params`).
    pub fn params(self) -> &'static [Spec] {
        match self {
            Scenario::GcPause => gc_pause::PARAMS,
            Scenario::SlowNetwork => slow_network::PARAMS,
            Scenario::AcquirePause => acquire_pause::PARAMS,
            Scenario::ClockSlew => clock_slew::PARAMS,
            Scenario::ClockJump => clock_jump::PARAMS,
            Scenario::RedlockRestart => redlock_restart::PARAMS,
            Scenario::Failover => failover::PARAMS,
            Scenario::ClockSkew => clock_skew::PARAMS,
            Scenario::UnlockBeforeCommit => unlock_before_commit::PARAMS,
            Scenario::CrashHolder => crash_holder::PARAMS,
            Scenario::DependencyLoss => dependency_loss::PARAMS,
            Scenario::CoordinatorCrash => coordinator_crash::PARAMS,
            Scenario::ConnectionCut => connection_cut::PARAMS,
            Scenario::PartitionPrecommit => partition_precommit::PARAMS,
            Scenario::OrderInsertFails => order_insert_fails::PARAMS,
            Scenario::RollingRestart => rolling_restart::PARAMS,
        }
    }

    /// The dials `--quick` sets before the user's `--set`s: shorter
    /// windows, the same number of injections (a verdict needs them).
    pub fn quick_sets(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Scenario::GcPause => gc_pause::QUICK,
            Scenario::SlowNetwork => slow_network::QUICK,
            Scenario::AcquirePause => acquire_pause::QUICK,
            Scenario::ClockJump => clock_jump::QUICK,
            Scenario::ClockSlew => clock_slew::QUICK,
            Scenario::RedlockRestart => redlock_restart::QUICK,
            Scenario::Failover => failover::QUICK,
            Scenario::ClockSkew => clock_skew::QUICK,
            Scenario::UnlockBeforeCommit => unlock_before_commit::QUICK,
            Scenario::CrashHolder => crash_holder::QUICK,
            Scenario::CoordinatorCrash => coordinator_crash::QUICK,
            Scenario::DependencyLoss => dependency_loss::QUICK,
            Scenario::ConnectionCut => connection_cut::QUICK,
            Scenario::PartitionPrecommit => partition_precommit::QUICK,
            Scenario::OrderInsertFails => order_insert_fails::QUICK,
            Scenario::RollingRestart => rolling_restart::QUICK,
        }
    }

    /// The dials a variant sets, after `--quick`'s and before the user's
    /// `--set`s: a variant is a preset of dials where it has any.
    pub fn variant_sets(self, variant: Option<Variant>) -> &'static [(&'static str, &'static str)] {
        match self {
            Scenario::RedlockRestart => redlock_restart::variant_sets(variant),
            Scenario::Failover => failover::variant_sets(variant),
            _ => &[],
        }
    }

    /// Dials a strategy needs set unless the user set them: etcd grants
    /// leases in whole seconds, so its TTL is at least 1000 ms where the
    /// scenario's own (or `--quick`'s) is shorter.
    pub fn implied_sets(
        self,
        strategy: StrategyName,
        sets: &[(String, String)],
    ) -> Vec<(String, String)> {
        let preset = self
            .quick_sets()
            .iter()
            .find(|(k, _)| *k == "ttl_ms")
            .map(|(_, v)| *v)
            .into_iter()
            .chain(
                self.params()
                    .iter()
                    .filter(|s| s.name == "ttl_ms")
                    .map(|s| s.default),
            );
        let short = preset
            .into_iter()
            .any(|v| v.parse::<u64>().is_ok_and(|ms| ms < 1000));
        let user_set = sets.iter().any(|(k, _)| k == "ttl_ms");
        if short && !user_set && strategy == StrategyName::EtcdLease {
            return vec![("ttl_ms".into(), "1000".into())];
        }
        Vec::new()
    }

    /// What a case of it is judged on: the strategy's guarantee, or the
    /// data where the dials add a check in the database (gc-pause's
    /// `check_token=on`).
    pub fn guarantee(self, kind: Kind, params: &Params) -> Guarantee {
        // A crashed coordinator or a lost dependency: the claim is that
        // nothing is half-written, whatever the lock's kind.
        if matches!(
            self,
            Scenario::CoordinatorCrash
                | Scenario::PartitionPrecommit
                | Scenario::DependencyLoss
                | Scenario::OrderInsertFails
        ) || (self == Scenario::GcPause
            && gc_pause::checks_a_fence(&gc_pause::GcPauseDials::of(params)))
        {
            Guarantee::Data
        } else {
            Guarantee::of(kind)
        }
    }

    /// What `strategy` should do under this scenario's `variant`, with the
    /// dials in force. A strategy whose lock no two replicas share breaks
    /// under any of them.
    pub fn expect(
        self,
        strategy: &StrategyEntry,
        variant: Option<Variant>,
        params: &Params,
    ) -> Expectation {
        if matches!(strategy.kind, Kind::NoLock | Kind::ProcessLocal) {
            return Ok((
                Expected::Breaks,
                "no lock shared by the two replicas".into(),
            ));
        }
        match self {
            Scenario::GcPause => gc_pause::expect(strategy, variant, params),
            Scenario::SlowNetwork => slow_network::expect(strategy, variant, params),
            Scenario::ClockJump => clock_jump::expect(strategy, variant, params),
            Scenario::RedlockRestart => redlock_restart::expect(strategy, variant, params),
            Scenario::Failover => failover::expect(strategy, variant, params),
            Scenario::CrashHolder => crash_holder::expect(strategy, variant, params),
            Scenario::ClockSkew => clock_skew::expect(strategy, variant, params),
            Scenario::UnlockBeforeCommit => unlock_before_commit::expect(strategy, variant, params),
            Scenario::DependencyLoss => dependency_loss::expect(strategy, variant),
            Scenario::AcquirePause => acquire_pause::expect(strategy, variant, params),
            Scenario::ClockSlew => clock_slew::expect(strategy, variant, params),
            Scenario::CoordinatorCrash => coordinator_crash::expect(strategy, variant),
            Scenario::ConnectionCut => connection_cut::expect(strategy, variant, params),
            Scenario::PartitionPrecommit => partition_precommit::expect(strategy, variant),
            Scenario::OrderInsertFails => order_insert_fails::expect(strategy, variant, params),
            Scenario::RollingRestart => rolling_restart::expect(strategy, variant, params),
        }
    }

    /// Run one case of it: its world, its fault; the faults as reported.
    pub async fn run(self, cx: CaseRun<'_>) -> anyhow::Result<FaultRecord> {
        match self {
            Scenario::GcPause => gc_pause::run(cx).await,
            Scenario::SlowNetwork => slow_network::run(cx).await,
            Scenario::ClockJump => clock_jump::run(cx).await,
            Scenario::RedlockRestart => redlock_restart::run(cx).await,
            Scenario::Failover => failover::run(cx).await,
            Scenario::CrashHolder => crash_holder::run(cx).await,
            Scenario::ClockSkew => clock_skew::run(cx).await,
            Scenario::UnlockBeforeCommit => unlock_before_commit::run(cx).await,
            Scenario::DependencyLoss => dependency_loss::run(cx).await,
            Scenario::AcquirePause => acquire_pause::run(cx).await,
            Scenario::ClockSlew => clock_slew::run(cx).await,
            Scenario::CoordinatorCrash => coordinator_crash::run(cx).await,
            Scenario::ConnectionCut => connection_cut::run(cx).await,
            Scenario::PartitionPrecommit => partition_precommit::run(cx).await,
            Scenario::OrderInsertFails => order_insert_fails::run(cx).await,
            Scenario::RollingRestart => rolling_restart::run(cx).await,
        }
    }
}

/// A lock taken around the section and shared by the replicas: what
/// `unlock-before-commit` releases early.
pub fn shared_lock(kind: Kind) -> bool {
    !matches!(kind, Kind::NoLock | Kind::ProcessLocal | Kind::NotALock)
}
