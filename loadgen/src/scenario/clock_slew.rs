//! `clock-slew` — antirez's reply to Kleppmann ("Is Redlock safe?"): a
//! clock that runs a little fast — slewed, as NTP slews it, not jumped —
//! is harmless, because Redlock's drift factor (1 % of the TTL + 2 ms)
//! already gives back the time a key could lose to it.
//!
//! Every Redlock node runs under the clock-shifting preload with one
//! offset file, which the runner advances every 20 ms by the rate × the
//! time elapsed: the nodes' wall clocks (the clocks Redis expires keys by)
//! run 1 % fast, in steps of a millisecond — a slew done in steps, as the
//! preload knows offsets, not rates. Expected: Redlock holds.
//!
//! The proof the slew landed: each node's own `TIME`, read at the end,
//! reads ahead of ours by about the rate × the time the slew ran (within
//! half of it either way, plus 10 ms for the reading itself).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::time::Instant;

use super::buyers;
use super::case::Expectation;
use super::lab::Setup;
use super::world::{
    arm, clock_ahead_ms, duration, pause, start_buyers, start_replicas, work, CaseRun,
};
use crate::api::{Kind, StrategyEntry};
use crate::judge::Expected::Holds;
use crate::procs::{self, RedisNode};

/// How much faster the nodes' clocks run, in parts per ten thousand (1 %).
const RATE_PER_10K: i64 = 100;

/// Redlock only: a slow slew stays inside the drift factor.
pub fn expect(strategy: &StrategyEntry, _variant: &str) -> Expectation {
    if strategy.kind != Kind::Validity {
        return Err("this scenario slews Redlock's nodes' clocks; run it with redlock".into());
    }
    Ok((
        Holds,
        "a 1 % fast clock loses a key at most 1 % of the TTL early: the drift factor covers it"
            .into(),
    ))
}

/// Run the load while every Redlock node's clock runs 1 % fast. The
/// faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<Value> {
    let (lab, world, case, strategy, _) = cx.parts();
    // 3 s against 300 ms of work, as clock-jump's control run: room for a
    // starved machine.
    let ttl = 3000;
    let shift = lab.clockshift()?;
    let offset_file = lab.dir.join("redlock-nodes.clock");
    procs::set_clock_offset(&offset_file, 0)?;
    let redis = RedisNode::start(&lab.dir, "redis", &[], Vec::new()).await?;
    let redis_url = redis.url();
    world.nodes.push(redis);
    for i in 1..=3 {
        world.nodes.push(
            RedisNode::start(&lab.dir, &format!("node{i}"), &[], shift.env(&offset_file)).await?,
        );
    }
    let urls: Vec<String> = world.nodes[1..].iter().map(RedisNode::url).collect();
    start_replicas(
        lab,
        world,
        [
            ("a", Setup::new(&redis_url, ttl).redlock(urls.clone())),
            ("b", Setup::new(&redis_url, ttl).redlock(urls)),
        ],
    )
    .await?;
    let service = world.service();
    arm(&service, strategy, work(300)).await?;
    case.step(format!(
        "replicas a, b on 3 Redlock nodes under clockshift (TTL {ttl} ms, work 300 ms); 6 buyers on both"
    ));
    let targets = buyers::targets(world.urls());
    let load = start_buyers(lab, case, &targets, 6);
    pause(300).await;
    // The slew: the offset follows the elapsed time, 1 % of it.
    let stop = Arc::new(AtomicBool::new(false));
    let slewed = Instant::now();
    let slew = {
        let (stop, file) = (stop.clone(), offset_file.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let elapsed = i64::try_from(slewed.elapsed().as_millis()).unwrap_or(i64::MAX);
                let _ = procs::set_clock_offset(&file, elapsed * RATE_PER_10K / 10_000);
                pause(20).await;
            }
        })
    };
    case.step(format!(
        "every node's wall clock now runs {} % fast (its offset advanced every 20 ms)",
        RATE_PER_10K as f64 / 100.0
    ));
    pause(duration(lab, 6000)).await;
    let elapsed = i64::try_from(slewed.elapsed().as_millis()).unwrap_or(i64::MAX);
    let expected = elapsed * RATE_PER_10K / 10_000;
    let mut ahead = Vec::new();
    for node in &world.nodes[1..] {
        ahead.push(clock_ahead_ms(node).await?);
    }
    stop.store(true, Ordering::Relaxed);
    let _ = slew.await;
    load.stop().await;
    case.step("buyers stopped");
    let text = format!(
        "after {elapsed} ms of slew the nodes' TIME reads {} ms ahead of ours (rate × elapsed = {expected} ms)",
        ahead
            .iter()
            .map(|a| format!("{a:+}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if ahead
        .iter()
        .all(|a| (*a - expected).abs() <= expected / 2 + 10)
    {
        case.proven(text);
    } else {
        case.step(format!("not proven: {text}"));
    }
    Ok(json!({
        "clock_rate_percent": RATE_PER_10K as f64 / 100.0,
        "nodes": "every Redlock node",
        "slewed_ms": elapsed,
        "offset_ms": expected,
        "lock_ttl_ms": ttl,
    }))
}
