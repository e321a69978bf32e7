//! `GET`/`PUT /admin/faults`: the workshop faults every replica applies
//! ([`Faults`]), and a partial update of them ([`FaultsPatch`]).

use serde::{Deserialize, Serialize};

/// Where inside the critical section the in-process pause (`pause_ms`) stalls.
///
/// This pause sleeps the grab's own task only — the process keeps running,
/// so the watchdog keeps renewing through it. A whole-process freeze
/// (`SIGSTOP`, renewal tasks included) is the scenario runner's `gc-pause`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    /// commit: no check before commit can help; only fencing does. For
    /// `pg-2pc`, between the two phases: both sides prepared and the
    /// decision logged, nothing committed yet.
    BeforeCommit,
    /// `pg-2pc` only: inside the second phase, after the order side's
    /// `COMMIT PREPARED` and before the stock side's (other strategies
    /// never pause here).
    BetweenCommits,
}

/// The faults in force (`GET /admin/faults`, the answer of `PUT`). Every
/// field is always sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Faults {
    /// Simulated work between the read and the write of the critical section.
    pub work_delay_ms: u64,
    /// An extra stall inside the critical section (a GC or VM pause), taken
    /// by one grab in `pause_every`.
    pub pause_ms: u64,
    /// Which grabs take the pause: every n-th grab on each replica (1 = all).
    pub pause_every: u64,
    /// Where the pause stalls the section.
    pub pause_at: PauseAt,
    /// Release the lock *before* committing — the classic bug.
    pub unlock_before_commit: bool,
    /// With `unlock_before_commit`: a stall between the release and the
    /// commit (a slow commit, a descheduled thread) — how long the next
    /// holder has to read the stock not yet committed.
    pub commit_delay_ms: u64,
    /// A pause between `SETNX` and `PEXPIRE` of `setnx-expire` (widens the
    /// crash window of seed 004 v2).
    pub setnx_expire_gap_ms: u64,
    /// A pause between the check and the delete of `set-nx-px-check-del`
    /// (widens the race of seed 004 v4).
    pub release_gap_ms: u64,
    /// Not a fault but its cure: the database checks the revision the lock
    /// service handed out (etcd's create revision, ZooKeeper's sequence) as
    /// a fencing token, exactly as `fenced` checks its counter. On
    /// `redlock` it turns on the attempt Kleppmann argues cannot work: each
    /// node increments its own counter with its vote, and the holder's
    /// token is the largest its majority returned.
    pub check_revision: bool,
    /// Not a fault but a cure, antirez's check-and-set: the database
    /// compares the lock's random value. Each holder writes 64 bits
    /// of its value into the product row (`lock_value`) before it
    /// reads, and its write commits only while the row still holds them.
    /// For the locks that hand out a random value and no fencing token.
    pub check_token: bool,
    /// `redlock` only: hold the client this long after the nodes answered
    /// its `SET`s and before it reads their votes (a pause *during*
    /// acquisition: a GC, a descheduled thread). Taken by one acquire
    /// attempt in `pause_every` among those that won a quorum, on each
    /// replica (an attempt that lost teaches nothing; `pause_ms` need not
    /// be set). Redlock's
    /// validity check (TTL − elapsed − drift, elapsed counted from before
    /// the `SET`s) refuses the late quorum.
    pub acquire_pause_ms: u64,
    /// `redlock` only: trust a quorum of yes without the validity check —
    /// no TTL − elapsed − drift, the validity counted from when the votes
    /// were read as if the keys had just been set. The client of antirez's
    /// reply without the check that makes a pause during acquisition safe.
    pub skip_validity_check: bool,
    /// The SET NX PX locks with `SECKILL_REDIS_WAIT_REPLICAS` > 0 only:
    /// trust a lock whose `WAIT` timed out with fewer replicas than asked
    /// (the client the WAIT page warns: it "should check that the returned
    /// value is equal or greater to the replication level it demanded").
    /// Off: such a lock is given back and the attempt counts as lost.
    #[serde(default)]
    pub ignore_wait_count: bool,
    /// `watchdog` only, Redisson's reported bug (its issues #2515 and
    /// #3194): the renewal task ends at its first failed renewal (a cut
    /// connection, a reconnect) without marking the lease lost, and no
    /// later lock of that key in the process is renewed while the fault
    /// stays on. Off: a failed renewal is retried until the lease's
    /// deadline, then the lease is marked lost.
    #[serde(default)]
    pub renewal_stops_on_error: bool,
    /// `watchdog` only, Redisson's reported bug (its issue #4698): the
    /// holder is never told its lease failed — the section's last check
    /// skips the lost mark and the lease's deadline, and the write
    /// commits. Off: a lost or lapsed lease ends the section `409
    /// rejected`.
    #[serde(default)]
    pub ignore_lost_lease: bool,
    /// `redis-lua-stock` only, the miaosha-style bug (the seckill demos'
    /// `DECR` in Redis, then the order `INSERT`): a confirm that failed
    /// gives nothing back — no *cancel*, and the reservation forgotten so
    /// the stale-reservation sweep cannot give it back either. The unit
    /// stays taken in Redis with no order: an undersell. Off: the cancel
    /// runs whenever the order surely does not exist.
    #[serde(default)]
    pub skip_cancel: bool,
    /// `redlock` only: the holder extends its lock, as redsync's `Extend`
    /// and node-redlock's `extend` let a client do — every third of the
    /// TTL while it holds the lock, and once more just before its last
    /// check. On every node, `PEXPIRE` where the key is still its own and
    /// `SET … PX` where a node that restarted empty lost it (redsync's
    /// "extend or lock", its PR #149), answered at quorum; an extension
    /// asked for once the holder's validity ran out is refused ("Cannot
    /// extend an already-expired lock", node-redlock #283) and the section
    /// ends `409 rejected`. Off: no extension (the work must fit in the
    /// validity).
    #[serde(default)]
    pub redlock_extend: bool,
    /// `redlock` with `redlock_extend` only, redsync's behaviour before
    /// its PR #149: an extension `PEXPIRE`s only where the key is still
    /// its own, so a node that restarted empty never holds it again and
    /// the holder's majority erodes, restart by restart.
    #[serde(default)]
    pub extend_held_only: bool,
    /// `redlock` with `redlock_extend` only, redlock-rb's reported
    /// behaviour (its issue #36): an extension is not refused once the
    /// holder's validity ran out; where the keys are free again it locks
    /// them anew and the holder goes on as if it had always held them.
    #[serde(default)]
    pub extend_expired: bool,
}

impl Faults {
    /// No fault, with `work_delay_ms` of simulated work: the faults of a
    /// fresh deployment.
    pub fn with_work_delay(work_delay_ms: u64) -> Self {
        Self {
            work_delay_ms,
            pause_ms: 0,
            pause_every: 1,
            pause_at: PauseAt::BeforeRead,
            unlock_before_commit: false,
            commit_delay_ms: 0,
            setnx_expire_gap_ms: 0,
            release_gap_ms: 0,
            check_revision: false,
            check_token: false,
            acquire_pause_ms: 0,
            skip_validity_check: false,
            ignore_wait_count: false,
            renewal_stops_on_error: false,
            ignore_lost_lease: false,
            skip_cancel: false,
            redlock_extend: false,
            extend_held_only: false,
            extend_expired: false,
        }
    }
}

/// `PUT /admin/faults` body: any subset of [`Faults`]; unknown fields are
/// refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct FaultsPatch {
    /// New work delay.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_delay_ms: Option<u64>,
    /// New pause.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause_ms: Option<u64>,
    /// New pause frequency (≥ 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause_every: Option<u64>,
    /// New pause position.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause_at: Option<PauseAt>,
    /// New unlock-before-commit switch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unlock_before_commit: Option<bool>,
    /// New stall between the release and the commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit_delay_ms: Option<u64>,
    /// New SETNX/EXPIRE gap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setnx_expire_gap_ms: Option<u64>,
    /// New check/delete gap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub release_gap_ms: Option<u64>,
    /// Whether the database checks the lock service's revision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check_revision: Option<bool>,
    /// Whether the database compares the lock's random value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check_token: Option<bool>,
    /// New Redlock acquire pause.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acquire_pause_ms: Option<u64>,
    /// Whether Redlock skips its validity check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip_validity_check: Option<bool>,
    /// Whether a lock whose WAIT timed out short is trusted anyway.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignore_wait_count: Option<bool>,
    /// Whether the watchdog's renewal task ends at its first error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renewal_stops_on_error: Option<bool>,
    /// Whether the watchdog's holder ignores a lost or lapsed lease.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignore_lost_lease: Option<bool>,
    /// Whether `redis-lua-stock` skips its cancel after a failed confirm.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip_cancel: Option<bool>,
    /// Whether `redlock`'s holder extends its lock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redlock_extend: Option<bool>,
    /// Whether an extension touches only the nodes still holding the key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extend_held_only: Option<bool>,
    /// Whether an extension is granted once the validity ran out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extend_expired: Option<bool>,
}

impl FaultsPatch {
    /// `faults` with every field this patch sets replaced.
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
        if let Some(v) = self.commit_delay_ms {
            faults.commit_delay_ms = v;
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
        if let Some(v) = self.check_token {
            faults.check_token = v;
        }
        if let Some(v) = self.acquire_pause_ms {
            faults.acquire_pause_ms = v;
        }
        if let Some(v) = self.skip_validity_check {
            faults.skip_validity_check = v;
        }
        if let Some(v) = self.ignore_wait_count {
            faults.ignore_wait_count = v;
        }
        if let Some(v) = self.renewal_stops_on_error {
            faults.renewal_stops_on_error = v;
        }
        if let Some(v) = self.ignore_lost_lease {
            faults.ignore_lost_lease = v;
        }
        if let Some(v) = self.skip_cancel {
            faults.skip_cancel = v;
        }
        if let Some(v) = self.redlock_extend {
            faults.redlock_extend = v;
        }
        if let Some(v) = self.extend_held_only {
            faults.extend_held_only = v;
        }
        if let Some(v) = self.extend_expired {
            faults.extend_expired = v;
        }
        faults
    }
}

/// Where `POST /admin/freeze` stops the whole process (a `SIGSTOP` the
/// process sends itself; the scenario runner's `SIGCONT` ends it): the
/// gc-pause scenario's `where` dial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum FreezeAt {
    /// Between the read and the write, before the lock's last check
    /// (lease deadline, validity): a holder that wakes past its TTL is
    /// refused by the check and writes nothing.
    BeforeCheck,
    /// After the lock's last check, just before the commit: nothing the
    /// holder checks can help it; only the storage (a fence, a row lock)
    /// can refuse the stale write.
    AfterCheck,
    /// A uniformly random moment of the section's work (`work_delay_ms`),
    /// drawn when a section begins; a draw that falls after the section
    /// ended is drawn again by the next section.
    Anywhere,
    /// `redlock` only, before any section: between the nodes' answers to
    /// its `SET`s (a quorum of yes) and reading them — antirez's pause
    /// *during* acquisition, which its validity check (TTL − elapsed)
    /// must catch.
    DuringAcquire,
}

/// `POST /admin/freeze` body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct FreezeBody {
    /// Where the next section of this replica stops the process.
    pub at: FreezeAt,
}

/// The answer of `POST` and `DELETE /admin/freeze`: what is armed now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FreezeArmed {
    /// The point armed, or `null` (nothing armed).
    #[serde(deserialize_with = "crate::nullable::required")]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub armed: Option<FreezeAt>,
}
