//! `unlock-before-commit` — the classic bug, as the `unlock_before_commit`
//! fault: release the lock, then commit. The next holder reads before the
//! previous one committed, unless the lock is the transaction's own or the
//! fence makes the next holder wait for the row.
//!
//! The proof the fault landed: `GET /admin/faults` on every replica
//! answers `unlock_before_commit: true`.

use serde_json::{json, Value};

use super::case::Expectation;
use super::world::{arm, faults_of_each, pause, steady_load, two_replicas, work, CaseRun};
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
    steady_load(lab, world, case, 12, 3000).await;
    service
        .set_faults(FaultsPatch {
            unlock_before_commit: Some(false),
            ..FaultsPatch::default()
        })
        .await?;
    case.step("fault undone");
    Ok(json!({ "unlock_before_commit": true, "work_delay_ms": 5 }))
}
