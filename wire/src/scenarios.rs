//! The variants of the fault scenarios (`seckill-loadgen scenario`): the
//! `variant` of each case in `scenarios.json`, and what `--variants`
//! names. A scenario with one way of breaking has none.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One variant of a scenario's fault, by its stable name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Variant {
    /// `clock-jump`: the partition alone (the control).
    #[serde(rename = "partition")]
    Partition,
    /// `clock-jump`: the partition, and node 3's clock jumps.
    #[serde(rename = "partition+jump")]
    PartitionJump,
    /// `redlock-restart`: node 3 restarts at once.
    #[serde(rename = "restart")]
    Restart,
    /// `redlock-restart`: node 3 restarts after the TTL.
    #[serde(rename = "delayed-restart")]
    DelayedRestart,
    /// `redlock-restart`: node 3 fsyncs every write and loses power.
    #[serde(rename = "fsync-always")]
    FsyncAlways,
    /// `failover`: no `WAIT` after the lock write.
    #[serde(rename = "no-wait")]
    NoWait,
    /// `failover`: `WAIT 1` after the lock write.
    #[serde(rename = "wait-1")]
    Wait1,
    /// `failover`: `WAIT 1` acknowledged by a second replica while the
    /// lagging one is promoted.
    #[serde(rename = "wait-1-two-replicas")]
    Wait1TwoReplicas,
    /// `acquire-pause`: Redlock checks the validity left after acquiring.
    #[serde(rename = "check")]
    Check,
    /// `acquire-pause`: the check skipped.
    #[serde(rename = "no-check")]
    NoCheck,
    /// `coordinator-crash`: a logged decision, the crash between the phases.
    #[serde(rename = "decision-log")]
    DecisionLog,
    /// `coordinator-crash`: a logged decision, the crash mid-commit.
    #[serde(rename = "decision-log-mid-commit")]
    DecisionLogMidCommit,
    /// `coordinator-crash`: no decision log, the crash between the phases.
    #[serde(rename = "no-decision-log")]
    NoDecisionLog,
    /// `coordinator-crash`: no decision log, the crash mid-commit.
    #[serde(rename = "no-decision-log-mid-commit")]
    NoDecisionLogMidCommit,
}

impl Variant {
    /// Every variant.
    pub const ALL: [Variant; 14] = [
        Variant::Partition,
        Variant::PartitionJump,
        Variant::Restart,
        Variant::DelayedRestart,
        Variant::FsyncAlways,
        Variant::NoWait,
        Variant::Wait1,
        Variant::Wait1TwoReplicas,
        Variant::Check,
        Variant::NoCheck,
        Variant::DecisionLog,
        Variant::DecisionLogMidCommit,
        Variant::NoDecisionLog,
        Variant::NoDecisionLogMidCommit,
    ];

    /// The stable name (its serde name).
    pub const fn as_str(self) -> &'static str {
        match self {
            Variant::Partition => "partition",
            Variant::PartitionJump => "partition+jump",
            Variant::Restart => "restart",
            Variant::DelayedRestart => "delayed-restart",
            Variant::FsyncAlways => "fsync-always",
            Variant::NoWait => "no-wait",
            Variant::Wait1 => "wait-1",
            Variant::Wait1TwoReplicas => "wait-1-two-replicas",
            Variant::Check => "check",
            Variant::NoCheck => "no-check",
            Variant::DecisionLog => "decision-log",
            Variant::DecisionLogMidCommit => "decision-log-mid-commit",
            Variant::NoDecisionLog => "no-decision-log",
            Variant::NoDecisionLogMidCommit => "no-decision-log-mid-commit",
        }
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_name_is_its_serde_name() {
        for v in Variant::ALL {
            let json = serde_json::to_string(&v).expect("serialises");
            assert_eq!(json, format!("\"{}\"", v.as_str()));
            let back: Variant = serde_json::from_str(&json).expect("deserialises");
            assert_eq!(back, v);
        }
    }
}
