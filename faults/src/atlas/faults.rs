//! The atlas's columns: every fault the lab can inject, each a scenario
//! with the one dial that sizes it and the range that dial is measured
//! over; and its rows' families (the strategies' kinds), for the reading
//! guide.

use crate::scenario::Scenario;
use seckill_load::api::{Kind, Variant};

/// One column of the atlas: a fault, sized by one dial of one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    /// Its id in `--cells STRATEGY:FAULT` and in the JSON.
    pub id: &'static str,
    /// What it is, in a few words.
    pub title: &'static str,
    /// The same in Chinese.
    pub title_zh: &'static str,
    /// The scenario that injects it.
    pub scenario: Scenario,
    /// The scenario's variant it runs (`None`: the scenario has none).
    pub variant: Option<Variant>,
    /// Dials fixed for every cell of the column.
    pub sets: &'static [(&'static str, &'static str)],
    /// The dial that sizes the fault.
    pub dial: &'static str,
    /// The smallest size measured (as the dial takes it: `0.25ttl`, `100`).
    pub lo: &'static str,
    /// The largest.
    pub hi: &'static str,
}

/// Every column, in the workshop's order of the scenarios.
pub const FAULTS: &[Fault] = &[
    Fault {
        id: "pause",
        title: "the holder's process paused (SIGSTOP) before its last check",
        title_zh: "持锁进程在最后一次检查前被暂停（SIGSTOP）",
        scenario: Scenario::GcPause,
        variant: None,
        sets: &[],
        dial: "pause",
        lo: "0.25ttl",
        hi: "3ttl",
    },
    Fault {
        id: "slow-lock-link",
        title: "the holder's replies from the lock's Redis delayed",
        title_zh: "持锁者收到锁服务（Redis）的回复被延迟",
        scenario: Scenario::SlowNetwork,
        variant: None,
        sets: &[("link", "redis")],
        dial: "delay",
        lo: "0.25ttl",
        hi: "3ttl",
    },
    Fault {
        id: "slow-db-link",
        title: "the holder's requests to PostgreSQL delayed (the database side)",
        title_zh: "持锁者发往 PostgreSQL 的请求被延迟（数据库一侧）",
        scenario: Scenario::SlowNetwork,
        variant: None,
        sets: &[("link", "postgres"), ("where", "after-check")],
        dial: "delay",
        lo: "0.25ttl",
        hi: "3ttl",
    },
    Fault {
        id: "clock-jump",
        title: "a lock node's wall clock jumps forward while a lock is held",
        title_zh: "持锁期间某个锁节点的墙上时钟向前跳变",
        scenario: Scenario::ClockJump,
        variant: Some(Variant::PartitionJump),
        sets: &[],
        dial: "jump",
        lo: "0.1ttl",
        hi: "2ttl",
    },
    Fault {
        id: "clock-slew",
        title: "the lock nodes' clocks run fast (slewed, not jumped)",
        title_zh: "锁节点的时钟持续走快（渐变而非跳变）",
        scenario: Scenario::ClockSlew,
        variant: None,
        sets: &[],
        dial: "slew_pct",
        lo: "0.5",
        hi: "20",
    },
    Fault {
        id: "node-restart",
        title: "a lock node crashes and restarts empty after a delay",
        title_zh: "某个锁节点崩溃，延迟后以空数据重启",
        scenario: Scenario::RedlockRestart,
        variant: Some(Variant::Restart),
        sets: &[],
        dial: "restart_delay",
        lo: "0",
        hi: "2ttl",
    },
    Fault {
        id: "failover",
        title: "the lock's Redis fails over to a replica that lags behind",
        title_zh: "锁所在的 Redis 故障转移到一个复制落后的副本",
        scenario: Scenario::Failover,
        variant: Some(Variant::NoWait),
        sets: &[],
        dial: "lag_ms",
        lo: "20",
        hi: "1000",
    },
    Fault {
        id: "killed-holder",
        title: "the holder killed (kill -9) while it holds the lock",
        title_zh: "持锁者在持锁时被 kill -9",
        scenario: Scenario::CrashHolder,
        variant: None,
        sets: &[],
        dial: "watch_ms",
        lo: "0.5ttl",
        hi: "4ttl",
    },
    Fault {
        id: "lost-dependency",
        title: "Redis, then PostgreSQL and the lock's own server, lost for a while",
        title_zh: "Redis、PostgreSQL 及锁服务本身先后中断一段时间",
        scenario: Scenario::DependencyLoss,
        variant: None,
        sets: &[],
        dial: "outage_ms",
        lo: "100",
        hi: "3000",
    },
    Fault {
        id: "acquire-pause",
        title: "the client paused once it has counted a quorum, before its elapsed-time check",
        title_zh: "客户端数完多数票之后、耗时检查之前被暂停",
        scenario: Scenario::AcquirePause,
        variant: Some(Variant::Check),
        sets: &[],
        dial: "pause",
        lo: "0.25ttl",
        hi: "3ttl",
    },
    Fault {
        id: "unlock-before-commit",
        title: "the lock released before the transaction commits",
        title_zh: "事务提交之前就释放了锁",
        scenario: Scenario::UnlockBeforeCommit,
        variant: None,
        sets: &[("ttl_ms", "1000")],
        dial: "commit_delay",
        lo: "1",
        hi: "500",
    },
    Fault {
        id: "clock-skew",
        title: "one replica's wall clock runs ahead",
        title_zh: "某个副本的墙上时钟超前",
        scenario: Scenario::ClockSkew,
        variant: None,
        sets: &[],
        dial: "skew",
        lo: "0.1ttl",
        hi: "2ttl",
    },
    Fault {
        id: "coordinator-crash",
        title:
            "the commit's coordinator killed between the phases (2PC: prepared; 3PC: pre-committed)",
        title_zh: "提交的协调者在两阶段之间被杀死（2PC：已 prepare；3PC：已 pre-commit）",
        scenario: Scenario::CoordinatorCrash,
        variant: Some(Variant::DecisionLog),
        sets: &[],
        dial: "down_ms",
        lo: "100",
        hi: "3000",
    },
    Fault {
        id: "cut-lock-link",
        title: "the holder's connections to the lock's Redis dropped, then let through again",
        title_zh: "持锁者与锁服务（Redis）的连接被切断，随后恢复",
        scenario: Scenario::ConnectionCut,
        variant: None,
        sets: &[],
        dial: "cut_ms",
        lo: "0.1ttl",
        hi: "2ttl",
    },
    Fault {
        id: "partition-precommit",
        title: "the commit's coordinator cut off from both sides after the stock side's pre-commit",
        title_zh: "库存一方 pre-commit 之后，协调者与双方的网络被切断",
        scenario: Scenario::PartitionPrecommit,
        variant: None,
        sets: &[],
        dial: "cut_ms",
        lo: "100",
        hi: "3000",
    },
    Fault {
        id: "order-insert-fails",
        title: "PostgreSQL refuses order inserts after the stock was taken",
        title_zh: "库存扣减之后，PostgreSQL 拒绝订单插入",
        scenario: Scenario::OrderInsertFails,
        variant: None,
        sets: &[],
        dial: "refused",
        lo: "1",
        hi: "8",
    },
    Fault {
        id: "rolling-restart",
        title: "the lock's nodes restarted empty one after the other, under a holder that extends its lock",
        title_zh: "持锁者不断续期时，锁的节点逐个清空重启",
        scenario: Scenario::RollingRestart,
        variant: None,
        sets: &[],
        dial: "down_ms",
        lo: "0",
        hi: "1ttl",
    },
];

/// The column `id`.
pub fn fault(id: &str) -> Option<&'static Fault> {
    FAULTS.iter().find(|f| f.id == id)
}

/// A row's family for the reading guide: what kind of lock it is, in a
/// few words (English, Chinese).
pub fn family(kind: Kind) -> (&'static str, &'static str) {
    match kind {
        Kind::NoLock | Kind::ProcessLocal => ("no shared lock", "无共享锁"),
        Kind::NoExpiry => ("a key that never expires", "永不过期的键"),
        Kind::Ttl => (
            "a lease on one Redis (fixed TTL)",
            "单个 Redis 上的租约（固定 TTL）",
        ),
        Kind::Lease => ("a lease kept alive by renewals", "靠续期维持的租约"),
        Kind::Validity => (
            "a quorum lease with a validity check",
            "带有效期检查的多数派租约",
        ),
        Kind::Session => ("a database session's lock", "数据库会话锁"),
        Kind::Fenced => ("a lease fenced by the database", "由数据库校验令牌的租约"),
        Kind::LockTable => ("a lock-table row swept by age", "按年龄清理的锁表行"),
        Kind::InTransaction => ("a lock of the transaction itself", "事务自身持有的锁"),
        Kind::NotALock => ("no lock: one atomic write", "不是锁：一次原子写"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Params;

    #[test]
    fn every_column_sizes_its_fault_with_a_dial_its_scenario_has_and_both_ends_parse() {
        let mut ids: Vec<&str> = FAULTS.iter().map(|f| f.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), FAULTS.len(), "ids are unique");
        for f in FAULTS {
            assert!(
                f.scenario.params().iter().any(|s| s.name == f.dial),
                "{}: {} has no dial {}",
                f.id,
                f.scenario.name(),
                f.dial
            );
            assert!(
                f.variant.is_none()
                    || f.scenario
                        .variants()
                        .contains(&f.variant.unwrap_or(Variant::Check)),
                "{}: the variant is its scenario's",
                f.id
            );
            let at = |v: &str| {
                let mut sets = crate::scenario::owned_sets(f.sets);
                sets.push((f.dial.to_owned(), v.to_owned()));
                Params::new(f.scenario.name(), f.scenario.params(), &sets)
                    .unwrap_or_else(|e| panic!("{}: {e}", f.id))
            };
            let (lo, hi) = (at(f.lo), at(f.hi));
            let size = |p: &Params| p.in_force().f64(f.dial).expect("a number");
            assert!(size(&lo) < size(&hi), "{}: lo below hi", f.id);
        }
        // Every scenario is a column (the slow link twice: both sides).
        for s in <Scenario as clap::ValueEnum>::value_variants() {
            assert!(FAULTS.iter().any(|f| f.scenario == *s), "{}", s.name());
        }
    }
}
