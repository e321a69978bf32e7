//! `crash-holder` — `kill -9` the replica holding the lock (for
//! `setnx-expire`: between its SETNX and its EXPIRE); the buyers move to
//! the survivor. Does anyone ever buy again? A key without a TTL says no
//! forever; a TTL, lease or session ends with the holder.
//!
//! The proof the crash landed: the holder was caught (the arbiter shows it
//! inside, or for `setnx-expire` the key has no TTL) and its process is
//! gone from `/proc`.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

use super::buyers;
use super::case::Expectation;
use super::lab::TOKEN;
use super::params::{self, Spec, Unit};
use super::world::{arm, pause, start_buyers, two_replicas, wait_inside, work, CaseRun};
use crate::api::{FaultsPatch, Kind, Service, StrategyEntry, StrategyName};
use crate::judge::Expected::{Breaks, Holds};
use crate::procs;

/// Its dials (one kill per trial: its outcome is the whole case's).
pub const PARAMS: &[Spec] = &[
    params::ttl("800"),
    params::work("50"),
    Spec {
        name: "gap",
        unit: Unit::Ms,
        default: "1500",
        meaning: "setnx-expire only: the stall between SETNX and EXPIRE the kill lands in",
    },
    Spec {
        name: "watch_ms",
        unit: Unit::Ms,
        default: "4ttl",
        meaning: "how long replica b's buyers are watched for the next order after the kill",
    },
    params::lock_wait("1000"),
];

/// What `strategy` should do when its holder dies.
pub fn expect(strategy: &StrategyEntry, _variant: &str) -> Expectation {
    let (expected, why) = match strategy.kind {
        Kind::NoExpiry => (Breaks, "nothing ever deletes the dead holder's key"),
        // Seed 004 v2: the crash window between two commands.
        Kind::Ttl if strategy.is(StrategyName::SetnxExpire) => (
            Breaks,
            "killed between SETNX and EXPIRE: a key without a TTL",
        ),
        Kind::LockTable => (Holds, "blocked until a waiter sweeps the row (one TTL)"),
        _ => (Holds, "the TTL, lease or session ends with the holder"),
    };
    Ok((expected, why.into()))
}

/// Kill replica a while it holds the lock; watch replica b for the next
/// order. The faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<Value> {
    let params = cx.params;
    let (lab, world, case, strategy, _) = cx.parts();
    let ttl = params.ttl_ms();
    let work_ms = params.ms("work_ms");
    two_replicas(lab, world, strategy, ttl, Vec::new()).await?;
    let service = world.service();
    let gap = if strategy == StrategyName::SetnxExpire {
        params.ms("gap")
    } else {
        0
    };
    let faults = FaultsPatch {
        setnx_expire_gap_ms: Some(gap),
        ..work(work_ms)
    };
    arm(&service, strategy, faults).await?;
    let a_url = world.replica("a")?.url();
    let b_url = world.replica("b")?.url();
    let targets = buyers::targets(vec![a_url]);
    let load = start_buyers(lab, case, &targets, 3);
    case.step(format!(
        "replicas a, b up (TTL {ttl} ms, work {work_ms} ms); 3 buyers on a only{}",
        if gap > 0 {
            format!("; {gap} ms between SETNX and EXPIRE")
        } else {
            String::new()
        }
    ));
    let watcher = Service::new(vec![b_url.clone()], TOKEN.into());
    let redis_port = world.nodes[0].port;
    let caught = if gap > 0 {
        // Inside the gap there is no section yet: watch the key itself.
        let mut conn = world.nodes[0].conn().await?;
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut seen = false;
        while Instant::now() < deadline {
            let pttl: i64 = redis::cmd("PTTL")
                .arg("lock:product:1")
                .query_async(&mut conn)
                .await?;
            if pttl == -1 {
                seen = true;
                break;
            }
            pause(2).await;
        }
        seen
    } else {
        wait_inside(&watcher, Some("a"), Duration::from_secs(5)).await?
    };
    let pid = world.replica("a")?.pid().unwrap_or(0);
    world.replica("a")?.kill();
    case.crashed_at = Some(Instant::now());
    case.step(if gap > 0 {
        "kill -9 replica a between its SETNX and its EXPIRE (the key has no TTL)"
    } else {
        "kill -9 replica a while it holds the lock"
    });
    // The proof: the holder was caught (inside, or its key without a TTL)
    // and its process is gone.
    let state = procs::process_state(pid);
    let gone = matches!(state, None | Some('Z' | 'X'));
    if caught && gone {
        case.proven(format!(
            "{}, and its process (pid {pid}) is gone: no /proc/{pid}",
            if gap > 0 {
                "the lock key had no TTL when replica a was killed"
            } else {
                "the arbiter showed replica a inside when it was killed"
            }
        ));
    } else {
        case.step(format!(
            "not proven: holder caught {caught}, process {pid} state {state:?}"
        ));
    }
    watcher.forget("a").await?;
    buyers::retarget(&targets, vec![b_url]);
    let window = params.ms("watch_ms");
    case.step(format!("buyers move to replica b; watching {window} ms for the next order (redis on port {redis_port})"));
    pause(window).await;
    load.stop().await;
    case.step("buyers stopped");
    Ok(
        json!({ "killed": "a", "lock_ttl_ms": ttl, "setnx_expire_gap_ms": gap, "watched_ms": window }),
    )
}
