//! The scenarios by name: the enum every other module of `scenario`
//! names them by (the command line, the cases of `scenarios.json`, the
//! debate's rows), below everything that says what each one does
//! ([`super::list`]).

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

/// One scenario (`seckill-loadgen scenario NAME`); its serde name (the
/// `name` of each case in `scenarios.json`) is [`Scenario::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    GcPause,
    SlowNetwork,
    ClockJump,
    RedlockRestart,
    Failover,
    CrashHolder,
    ClockSkew,
    UnlockBeforeCommit,
    DependencyLoss,
    AcquirePause,
    ClockSlew,
    CoordinatorCrash,
    ConnectionCut,
    PartitionPrecommit,
    OrderInsertFails,
    RollingRestart,
}

impl Scenario {
    /// Stable name (reports, `--list`).
    pub fn name(self) -> &'static str {
        match self {
            Scenario::GcPause => "gc-pause",
            Scenario::SlowNetwork => "slow-network",
            Scenario::ClockJump => "clock-jump",
            Scenario::RedlockRestart => "redlock-restart",
            Scenario::Failover => "failover",
            Scenario::CrashHolder => "crash-holder",
            Scenario::ClockSkew => "clock-skew",
            Scenario::UnlockBeforeCommit => "unlock-before-commit",
            Scenario::DependencyLoss => "dependency-loss",
            Scenario::AcquirePause => "acquire-pause",
            Scenario::ClockSlew => "clock-slew",
            Scenario::CoordinatorCrash => "coordinator-crash",
            Scenario::ConnectionCut => "connection-cut",
            Scenario::PartitionPrecommit => "partition-precommit",
            Scenario::OrderInsertFails => "order-insert-fails",
            Scenario::RollingRestart => "rolling-restart",
        }
    }
}

impl std::fmt::Display for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_serde_name_is_its_stable_name() {
        for s in Scenario::value_variants() {
            let json = serde_json::to_string(s).expect("serialises");
            assert_eq!(json, format!("\"{}\"", s.name()));
            assert_eq!(
                serde_json::from_str::<Scenario>(&json).expect("reads back"),
                *s
            );
        }
    }
}
