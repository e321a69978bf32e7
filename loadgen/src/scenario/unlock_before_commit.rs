//! `unlock-before-commit` — the classic bug, as the `unlock_before_commit`
//! fault: release the lock, then commit. The next holder reads before the
//! previous one committed, unless the lock is the transaction's own or the
//! fence makes the next holder wait for the row.
//!
//! The proof the fault landed: `GET /admin/faults` on every replica
//! answers `unlock_before_commit: true`.

use serde_json::{json, Value};

use super::buyers;
use super::case::Expectation;
use super::world::{
    arm, duration, faults_of_each, overlaps_so_far, pause, start_buyers, two_replicas, work,
    CaseRun,
};
use crate::api::{FaultsPatch, Kind, StrategyEntry};
use crate::judge::Expected::{Breaks, Holds};

/// What `strategy` should do when it unlocks before it commits.
pub fn expect(strategy: &StrategyEntry, _variant: &str) -> Expectation {
    let (expected, why) = match strategy.kind {
        Kind::Fenced => (
            Holds,
            "the next holder's fence registration waits for the row the committing one still locks",
        ),
        Kind::InTransaction => (
            Holds,
            "the lock is the transaction's: it cannot be released before the commit",
        ),
        Kind::NotALock => (Holds, "no lock to release"),
        _ => (
            Breaks,
            "the next holder reads before the previous one committed",
        ),
    };
    Ok((expected, why.into()))
}

/// Run the load with `unlock_before_commit` on; switch it off after. The faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<Value> {
    let (lab, world, case, strategy, _) = cx.parts();
    let ttl = 5000;
    two_replicas(lab, world, strategy, ttl, Vec::new()).await?;
    let service = world.service();
    let faults = FaultsPatch {
        unlock_before_commit: Some(true),
        ..work(5)
    };
    arm(&service, strategy, faults).await?;
    case.step("PUT /admin/faults {\"unlock_before_commit\": true}; 12 buyers on replicas a, b");
    // The proof: every replica reads the fault back (they share it
    // through Redis, refreshed every 100 ms).
    pause(300).await;
    let each = faults_of_each(world).await?;
    let on: Vec<&str> = each
        .iter()
        .filter(|(_, f)| f.unlock_before_commit)
        .map(|(name, _)| name.as_str())
        .collect();
    if on.len() == each.len() && each.len() == 2 {
        case.proven(format!(
            "GET /admin/faults on replicas {} answers unlock_before_commit: true",
            on.join(", ")
        ));
    } else {
        case.step(format!(
            "GET /admin/faults: unlock_before_commit on {on:?} only, of {} replicas",
            each.len()
        ));
    }
    // The load runs in windows of 1.5 s: two for a design expected to
    // hold; for one expected to break, until the history shows an overlap
    // (at most six) — the next holder must win its race against the
    // commit, and a lock service that wakes its waiters slowly (ZooKeeper's
    // watch, then a read) loses it often: a clean CI run once saw 169
    // zk-ephemeral-seq orders and no overlap in one 3 s window.
    let breaks = matches!(expect(lab.strategy(strategy)?, ""), Ok((Breaks, _)));
    let targets = buyers::targets(world.urls());
    let load = start_buyers(lab, case, &targets, 12);
    for _ in 0..if breaks { 6 } else { 2 } {
        pause(duration(lab, 1500)).await;
        if breaks && overlaps_so_far(&service, strategy).await > 0 {
            case.step("the history shows an overlap: no more waiting");
            break;
        }
    }
    load.stop().await;
    case.step("buyers stopped");
    service
        .set_faults(FaultsPatch {
            unlock_before_commit: Some(false),
            ..FaultsPatch::default()
        })
        .await?;
    case.step("fault undone");
    Ok(json!({ "unlock_before_commit": true, "work_delay_ms": 5 }))
}
