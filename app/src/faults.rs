//! The workshop faults: what `PUT /admin/faults` switches on, as plain
//! data. [`crate::control`] shares them across replicas through Redis
//! ([`FAULTS_KEY`]); each grab carries a snapshot in its
//! [`GrabContext`](crate::strategy::GrabContext), which the critical
//! section and the locks read.

use serde::{Deserialize, Serialize};

/// Redis key of the faults (JSON of [`Faults`]).
pub const FAULTS_KEY: &str = "seckill:faults";

/// Where inside the critical section the in-process pause (`pause_ms`) stalls.
///
/// This pause sleeps the grab's own task only — the process keeps running,
/// so the watchdog keeps renewing through it. A whole-process freeze
/// (`SIGSTOP`, renewal tasks included) is the scenario runner's `gc-pause`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
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
#[derive(Debug, Clone, Copy, Default, Deserialize, utoipa::ToSchema)]
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
