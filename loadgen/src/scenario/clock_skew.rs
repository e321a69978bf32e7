//! `clock-skew` — one replica's wall clock runs ahead by more than the TTL
//! (the clock-shifting preload). `setnx-getset` (survey scheme 2) writes expiry
//! times from the client's clock, so the fast replica takes over a live
//! lock; locks whose expiry the server decides do not care. The TTL (3 s
//! against 60 ms of work) leaves the locks that should hold room for a
//! starved machine: with 1 s, a holder paused by a busy host outlived it.
//!
//! The proof the skew landed: the HTTP `Date` header replica a writes
//! from its own wall clock reads the skew ahead of replica b's (± 1 s, the
//! header's resolution) and of ours.

use serde_json::{json, Value};

use super::case::Expectation;
use super::world::{arm, http_date, now_ms, steady_load, two_replicas, work, CaseRun};
use crate::api::StrategyEntry;
use crate::judge::Expected::{Breaks, Holds};
use crate::procs;

/// What `strategy` should do when one replica's clock runs ahead.
pub fn expect(strategy: &StrategyEntry, _variant: &str) -> Expectation {
    // Survey scheme 2 (value = expiry time, GETSET) is the one design that trusts the client's clock.
    Ok(match strategy.name.as_str() {
        "setnx-getset" => (
            Breaks,
            "a replica whose clock runs ahead takes over a live lock".into(),
        ),
        _ => (
            Holds,
            "expiry is decided by the server's clock, not the replica's".into(),
        ),
    })
}

/// Run the load with replica a's clock ahead by more than the TTL. The faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<Value> {
    let (lab, world, case, strategy, _) = cx.parts();
    let ttl = 3000;
    let skew: i64 = 4000;
    let shift = lab.clockshift()?;
    let file = lab.dir.join("replica-a.clock");
    procs::set_clock_offset(&file, skew)?;
    let env: Vec<(String, String)> = shift.env(&file);
    two_replicas(lab, world, strategy, ttl, env).await?;
    let service = world.service();
    arm(&service, strategy, work(60)).await?;
    case.step(format!("replica a's wall clock runs {skew} ms ahead (clockshift); TTL {ttl} ms, work 60 ms; 8 buyers on both"));
    // The proof: the HTTP `Date` each replica writes from its own wall
    // clock (1 s resolution, refreshed by actix every 500 ms).
    let a = http_date(&lab.http, &world.replica("a")?.url()).await?;
    let b = http_date(&lab.http, &world.replica("b")?.url()).await?;
    let ours = now_ms().div_euclid(1000);
    let skew_s = skew / 1000;
    let text = format!(
        "replica a's Date header reads {:+} s from b's and {:+} s from ours (skew {skew_s:+} s)",
        a - b,
        a - ours
    );
    if (a - b - skew_s).abs() <= 1 && (a - ours - skew_s).abs() <= 2 {
        case.proven(text);
    } else {
        case.step(format!("{text}: the skew is not seen"));
    }
    steady_load(lab, world, case, 8, 3000).await;
    Ok(json!({ "clock_skew_ms": skew, "replica": "a", "lock_ttl_ms": ttl }))
}
