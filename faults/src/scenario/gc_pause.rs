//! `gc-pause` — Kleppmann's process pause: replica a's whole process
//! stops while it is inside its critical section, for `pause`, then
//! carries on where it stopped. The renewal tasks stop with it, so a lease
//! runs out as surely as a TTL.
//!
//! Where it stops is a dial (`where`): the replica's scenario hook (`POST
//! /admin/freeze`) makes its next section send `SIGSTOP` to its own
//! process exactly there, and the runner sends `SIGCONT` after `pause`.
//! - `before-check`: holding the stock it read, before the write and the
//!   lock's last check (lease deadline, Redlock's validity). A holder that
//!   wakes past its TTL overlaps the next one, and the check refuses its
//!   write: exclusion broken, data exact.
//! - `after-check`: past that check, just before the commit — Kleppmann's
//!   point that a check before the write cannot fix this, because the
//!   pause can land after it: the stale write commits (data damaged)
//!   unless the storage refuses it (a fence, a row lock).
//! - `anywhere`: a uniformly random moment of the section's work, where a
//!   real GC pause would fall.
//!
//! `check_token=on` adds antirez's remedy (his answer to Kleppmann: a
//! lock's random value used as a check-and-set in the database): each
//! holder writes its value into the product row before it reads, and its
//! write commits only while the row still holds it. For the locks that
//! hand out a random value and no fence (`set-nx-px-token`, `watchdog`,
//! `redlock`); judged on the data, as `fenced` is.
//!
//! `ignore_lost_lease=on` is Redisson's holder as its issue #4698 saw it:
//! the watchdog's holder skips its last check, so a lease that ran out
//! while it was stopped no longer ends its section before the write.
//!
//! `extend=on` has `redlock`'s holder extend its lock (every third of the
//! TTL, and once more before its last check); a holder woken past its
//! validity is refused the extension and writes nothing. `extend=expired`
//! grants it all the same where the keys are free again (redlock-rb #36;
//! node-redlock refuses it, its #283): the woken holder writes the stock
//! it read before the pause. `think_ms` spaces each buyer's grabs, so the
//! keys are free part of the time.
//!
//! `check_revision=on` is the coordination services' fence: the database
//! checks the revision the lock service handed out (etcd's create
//! revision, ZooKeeper's sequence) and refuses a write whose revision is
//! older than one already written — the cure of Jepsen's etcd 3.4.3
//! analysis, where a set guarded by the lock alone lost updates when a
//! lease expired during a pause (`scenario replay`).
//!
//! Each injection is a round of its own ([`super::inject`]): fresh stock,
//! a new history run, the freeze, `SIGCONT`, the round judged. The proof a
//! freeze landed: `/proc/<pid>/stat` reads state `T` and the arbiter shows
//! replica a inside its section while it is stopped.

use std::time::Duration;

use super::case::Expectation;
use super::dials::{self, choice, dials, Choice as _, OnOff, Shape};
use super::in_force::{Facts, FaultRecord};
use super::inject::{self, Window};
use super::lab::TOKEN;
use super::params::{Params, Spec};
use super::world::{arm, two_replicas, wait_inside, work, CaseRun};
use seckill_load::api::Variant;
use seckill_load::api::{FreezeAt, Kind, Service, StrategyEntry, StrategyName};
use seckill_load::judge::Expected::{Breaks, Holds};

choice! {
    /// Where in the section replica a stops.
    pub enum FreezeWhere {
        /// Before the lock's last check.
        BeforeCheck = "before-check",
        /// After it, just before the write.
        AfterCheck = "after-check",
        /// A random moment of the work.
        Anywhere = "anywhere",
    }
}

choice! {
    /// Whether `redlock`'s holder extends its lock (the service's
    /// `redlock_extend` and `extend_expired`).
    pub enum Extend {
        /// No extension: the work must fit in the validity.
        Off = "off",
        /// Extended every third of the TTL and before the last check;
        /// refused once the validity ran out.
        On = "on",
        /// Extended even once the validity ran out (redlock-rb #36).
        Expired = "expired",
    }
}

dials! {
    /// gc-pause's dials.
    pub struct GcPauseDials {
        ttl_ms: u64 = dials::ttl("400"),
        work_ms: u64 = dials::work("40"),
        injections: u64 = dials::injections("12"),
        pause: u64 = Shape::ms(
            "1.6ttl",
            "how long replica a's process stays stopped (SIGSTOP … SIGCONT)",
        ),
        r#where as "where": FreezeWhere = Shape::choice(
            FreezeWhere::WORDS,
            "before-check",
            "where in the section it stops: before the lock's last check, after it (just before the write), or a random moment of the work",
        ),
        check_token: OnOff = Shape::choice(
            OnOff::WORDS,
            "off",
            "on: the database checks and sets the lock's random value (antirez's remedy; set-nx-px-token, watchdog, redlock)",
        ),
        check_revision: OnOff = Shape::choice(
            OnOff::WORDS,
            "off",
            "on: the database checks the revision the lock service handed out as a fence (etcd-lease, zk-ephemeral-seq)",
        ),
        ignore_lost_lease: OnOff = Shape::choice(
            OnOff::WORDS,
            "off",
            "on: watchdog's holder skips its last check and commits, never told its lease ran out (Redisson #4698)",
        ),
        extend: Extend = Shape::choice(
            Extend::WORDS,
            "off",
            "redlock only: on, the holder extends its lock (every third of the TTL, and before its last check), refused once it expired; expired, granted all the same where the keys are free (redlock-rb #36, the refusal of node-redlock #283)",
        ),
        users: usize = dials::users("8"),
        think_ms: u64 = Shape::ms(
            "0",
            "how long each buyer waits after an answer before its next grab (0: at once)",
        ),
        lock_wait_ms: u64 = dials::lock_wait("500"),
    }
}

/// Its dials.
pub const PARAMS: &[Spec] = GcPauseDials::SPECS;

/// The locks `check_revision=on` applies to: a coordination service that
/// hands out a growing revision with the lock.
const REVISION: [StrategyName; 2] = [StrategyName::EtcdLease, StrategyName::ZkEphemeralSeq];

/// The locks `check_token=on` applies to: a random value, no fence.
const RANDOM_VALUE: [StrategyName; 3] = [
    StrategyName::SetNxPxToken,
    StrategyName::Watchdog,
    StrategyName::Redlock,
];

/// Whether the database checks the lock's random value.
pub fn checks_token(d: &GcPauseDials) -> bool {
    d.check_token == OnOff::On
}

/// Whether the database checks something the lock handed out (its random
/// value, or its revision): the case is then judged on the data.
pub fn checks_a_fence(d: &GcPauseDials) -> bool {
    checks_token(d) || d.check_revision == OnOff::On
}

/// `--quick`: a shorter TTL (the pause, 1.6× it, shrinks with it).
pub const QUICK: &[(&str, &str)] = &[("ttl_ms", "250"), ("users", "6"), ("lock_wait_ms", "300")];

/// Whether the holder's lock outlives the freeze: the time spent inside
/// before the stop (the work; half of it on average for `anywhere`) plus
/// the pause, against the TTL.
pub fn outlived(d: &GcPauseDials) -> bool {
    let inside = if d.r#where == FreezeWhere::Anywhere {
        d.work_ms / 2
    } else {
        d.work_ms
    };
    d.pause + inside > d.ttl_ms
}

/// What `strategy` should do when its holder is frozen for `pause`.
pub fn expect(strategy: &StrategyEntry, _variant: Option<Variant>, params: &Params) -> Expectation {
    let d = GcPauseDials::of(params);
    let outlived = outlived(&d);
    if checks_token(&d) {
        if !RANDOM_VALUE.into_iter().any(|s| strategy.is(s)) {
            return Err(format!(
                "check_token=on is for the locks with a random value and no fence: {}",
                RANDOM_VALUE.map(StrategyName::as_str).join(", ")
            ));
        }
        return Ok((
            Holds,
            "the database checks the random value: a woken holder whose claim a later holder overwrote is refused at its write".into(),
        ));
    }
    if d.extend != Extend::Off && !strategy.is(StrategyName::Redlock) {
        return Err(
            "extend=on|expired is redlock's extension (the service's redlock_extend)".into(),
        );
    }
    if d.check_revision == OnOff::On {
        if !REVISION.into_iter().any(|s| strategy.is(s)) {
            return Err(format!(
                "check_revision=on is for the locks a coordination service hands out with a revision: {}",
                REVISION.map(StrategyName::as_str).join(", ")
            ));
        }
        return Ok((
            Holds,
            "the database checks the lock's revision: a woken holder whose lease a later holder's larger revision replaced is refused at its write".into(),
        ));
    }
    if strategy.kind == Kind::NotALock && d.r#where != FreezeWhere::Anywhere {
        return Err("no lock: the pause is placed at the lock's last check, and this strategy takes none (one atomic statement, a compare-and-set or a two-phase commit): no injection could land (where=anywhere pauses it at a random moment)".into());
    }
    if d.extend != Extend::Off && outlived {
        return Ok((
            Breaks,
            match d.extend {
                Extend::Expired => "the frozen holder's keys expire and another enters; woken, its extension is granted where the keys are free again, and it writes the stock it read before (data too)",
                _ => "the frozen holder's keys expire and another enters; woken, its extension is refused (already expired) and it writes nothing",
            }
            .into(),
        ));
    }
    let (expected, why) = match strategy.kind {
        Kind::Ttl | Kind::Validity | Kind::LockTable if outlived => (
            Breaks,
            "the frozen holder's key expires (pause + time inside > TTL); another enters",
        ),
        Kind::Ttl | Kind::Validity | Kind::LockTable => (
            Holds,
            "the pause ends before the key expires (pause + time inside < TTL)",
        ),
        Kind::Lease if outlived => (
            Breaks,
            "SIGSTOP freezes the renewal task too: the lease runs out",
        ),
        Kind::Lease => (Holds, "the pause ends before the lease does"),
        Kind::Fenced => (
            Holds,
            "the next holder's larger token makes the database refuse the frozen one",
        ),
        Kind::NoExpiry => (Holds, "nothing expires: the others wait"),
        Kind::InTransaction => (Holds, "the row lock lives as long as the transaction"),
        Kind::Session => (
            Holds,
            "the frozen holder's connection stays open: the server keeps its lock",
        ),
        Kind::NotALock | Kind::NoLock | Kind::ProcessLocal => (Holds, "no lock to outlive"),
    };
    Ok((expected, why.into()))
}

fn freeze_at(at: FreezeWhere) -> FreezeAt {
    match at {
        FreezeWhere::AfterCheck => FreezeAt::AfterCheck,
        FreezeWhere::Anywhere => FreezeAt::Anywhere,
        FreezeWhere::BeforeCheck => FreezeAt::BeforeCheck,
    }
}

/// Freeze replica a `injections` times at `where`, each for `pause`. The
/// faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<FaultRecord> {
    let d = GcPauseDials::of(cx.params);
    let (lab, world, case, strategy, _) = cx.parts();
    let (ttl, work_ms, freeze_ms, injections) = (d.ttl_ms, d.work_ms, d.pause, d.injections);
    let at = freeze_at(d.r#where);
    let users = d.users.max(2);
    two_replicas(lab, world, strategy, ttl, Vec::new()).await?;
    let service = world.service();
    let check_token = checks_token(&d);
    let check_revision = d.check_revision == OnOff::On;
    let faults = seckill_load::api::FaultsPatch {
        check_token: Some(check_token),
        check_revision: Some(check_revision),
        ignore_lost_lease: Some(d.ignore_lost_lease == OnOff::On),
        redlock_extend: Some(d.extend != Extend::Off),
        extend_expired: Some(d.extend == Extend::Expired),
        ..work(work_ms)
    };
    arm(&service, strategy, faults).await?;
    let watcher = Service::new(vec![world.replica("b")?.url()], TOKEN.into());
    case.step(format!(
        "replicas a, b up (lock TTL / lease {ttl} ms, work {work_ms} ms{}); {users} buyers on both; {injections} injections: replica a stops at {} for {freeze_ms} ms",
        match (check_token, check_revision) {
            (true, _) => "; the database checks and sets the lock's random value",
            (_, true) => "; the database checks the lock's revision",
            _ => "",
        },
        d.r#where
    ));
    for _ in 0..injections {
        // Pinned: a buyer sent round-robin would park its grab on the
        // frozen replica until the thaw, leaving b no waiter to take the
        // expired lock (the watchdog measured 16 of 24 that way).
        let think = Duration::from_millis(d.think_ms);
        let round =
            inject::begin_pinned_thinking(&lab.http, world, case, (users, think), 100).await?;
        let window = match inject::stop_replica(world, case, "a", at).await? {
            Some(stopped) => {
                let inside = wait_inside(&watcher, Some("a"), Duration::from_millis(1)).await?;
                let (pid, mut window) = stopped.hold_and_continue(case, freeze_ms).await?;
                if inside {
                    window.proof = Some(format!(
                        "/proc/{pid}/stat read T (stopped) for {} ms, and the arbiter showed replica a inside",
                        window.end_ms - window.start_ms
                    ));
                } else {
                    case.step(
                        "replica a stopped, but the arbiter did not show it inside: not counted",
                    );
                }
                window
            }
            None => Window::starting(case, "replica a", Some("a")),
        };
        inject::settle(work_ms).await;
        round.end(world, case, strategy, window).await?;
    }
    case.proven_by_injections(|landed| {
        format!("{landed} of {injections} freezes seen: replica a stopped (state T) inside its section each time")
    });
    Ok(dials::record(&d, Facts::replica_a()))
}
