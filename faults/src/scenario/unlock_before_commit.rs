//! `unlock-before-commit` — the classic bug, as the `unlock_before_commit`
//! fault: release the lock, then commit, `commit_delay` later (a slow
//! commit, a descheduled thread). The next holder reads before the
//! previous one committed, unless the lock is the transaction's own or the
//! fence makes the next holder wait for the row. The longer the delay, the
//! likelier a waiter gets in; with none it is a race a lock service that
//! wakes its waiters slowly (ZooKeeper's watch, then a read) often loses.
//!
//! Each injection is a round ([`super::inject`]): fresh stock, a new
//! history run, buyers on both replicas for `window_ms` with the fault on
//! (every section of either replica releases before it commits).
//!
//! The proof a round's fault landed: `GET /admin/faults` on every replica
//! answers `unlock_before_commit: true` and the commit delay in force, read
//! at the round's start.

use super::case::Expectation;
use super::dials::{self, dials, Shape};
use super::in_force::{Facts, FaultRecord};
use super::inject::{self, Window};
use super::params::{Params, Spec};
use super::world::{arm, faults_of_each, pause, two_replicas, work, CaseRun};
use seckill_load::api::Variant;
use seckill_load::api::{FaultsPatch, Kind, StrategyEntry};
use seckill_load::judge::Expected::{Breaks, Holds};

dials! {
    /// unlock-before-commit's dials.
    pub struct UnlockBeforeCommitDials {
        ttl_ms: u64 = dials::ttl("5000"),
        work_ms: u64 = dials::work("5"),
        injections: u64 = dials::injections("12"),
        commit_delay: u64 = Shape::ms(
            "30",
            "the stall between a section's release and its commit (commit_delay_ms)",
        ),
        window_ms: u64 = dials::window("300"),
        users: usize = dials::users("12"),
        lock_wait_ms: u64 = dials::lock_wait("300"),
    }
}

/// Its dials.
pub const PARAMS: &[Spec] = UnlockBeforeCommitDials::SPECS;

/// `--quick`: windows of 150 ms and 6 buyers — a section is 5 ms of work
/// and a 30 ms commit delay, so they still pass through the lock several
/// times in each. Most of a round is its queue draining when the buyers
/// stop (every grab answered): about 35 ms a buyer, 390 ms of 12 in our
/// runs, so half the buyers halve it.
pub const QUICK: &[(&str, &str)] = &[("window_ms", "150"), ("users", "6")];

/// What `strategy` should do when it unlocks before it commits.
pub fn expect(strategy: &StrategyEntry, _variant: Option<Variant>, params: &Params) -> Expectation {
    let delay = UnlockBeforeCommitDials::of(params).commit_delay;
    let (expected, why) = match strategy.kind {
        Kind::Fenced => (
            Holds,
            "the next holder's fence registration waits for the row the committing one still locks"
                .to_owned(),
        ),
        Kind::InTransaction => (
            Holds,
            "the lock is the transaction's: it cannot be released before the commit".to_owned(),
        ),
        Kind::NotALock => (Holds, "no lock to release".to_owned()),
        _ => (
            Breaks,
            format!("the next holder reads in the {delay} ms between the previous one's release and its commit"),
        ),
    };
    Ok((expected, why))
}

/// `injections` rounds of load with `unlock_before_commit` on; switched
/// off after. The faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<FaultRecord> {
    let d = UnlockBeforeCommitDials::of(cx.params);
    let (lab, world, case, strategy, _) = cx.parts();
    let (ttl, work_ms, delay) = (d.ttl_ms, d.work_ms, d.commit_delay);
    let (window_ms, injections) = (d.window_ms, d.injections);
    let users = d.users.max(2);
    two_replicas(lab, world, strategy, ttl, Vec::new()).await?;
    let service = world.service();
    let faults = FaultsPatch {
        unlock_before_commit: Some(true),
        commit_delay_ms: Some(delay),
        ..work(work_ms)
    };
    arm(&service, strategy, faults).await?;
    case.step(format!("PUT /admin/faults {{\"unlock_before_commit\": true, \"commit_delay_ms\": {delay}}}; TTL {ttl} ms, work {work_ms} ms; {injections} rounds of {window_ms} ms, {users} buyers on replicas a, b"));
    // Every replica reads the faults from Redis every 20 ms (the lab's
    // SECKILL_CONTROL_REFRESH_MS).
    pause(100).await;
    for _ in 0..injections {
        let round = inject::begin(&lab.http, world, case, users, 0).await?;
        let mut window = Window::starting(case, "every replica's sections", None);
        let each = faults_of_each(world).await?;
        let on: Vec<&str> = each
            .iter()
            .filter(|(_, f)| f.unlock_before_commit && f.commit_delay_ms == delay)
            .map(|(name, _)| name.as_str())
            .collect();
        if on.len() == each.len() && each.len() == 2 {
            window.proof = Some(format!(
                "GET /admin/faults on replicas {} answers unlock_before_commit: true, commit_delay_ms: {delay}",
                on.join(", ")
            ));
        } else {
            case.step(format!(
                "GET /admin/faults: the fault on {on:?} only, of {} replicas: not counted",
                each.len()
            ));
        }
        pause(window_ms.saturating_sub(case.clock_ms() - window.start_ms)).await;
        window.end_ms = case.clock_ms();
        round.end(world, case, strategy, window).await?;
    }
    case.proven_by_injections(|proven| {
        format!("every replica read the fault back in {proven} of {injections} rounds")
    });
    service
        .set_faults(FaultsPatch {
            unlock_before_commit: Some(false),
            commit_delay_ms: Some(0),
            ..FaultsPatch::default()
        })
        .await?;
    case.step("fault undone");
    Ok(dials::record(
        &d,
        Facts {
            unlock_before_commit: Some(true),
            ..Facts::default()
        },
    ))
}
