//! `acquire-pause` — antirez's reply to Kleppmann ("Is Redlock safe?"): a
//! pause *during* acquisition is harmless, because Redlock measures the
//! time it took to gather its votes and refuses a quorum that arrived
//! after the keys could have expired (validity = TTL − elapsed − drift,
//! elapsed counted from before the `SET`s).
//!
//! The `acquire_pause_ms` fault holds the Redlock client between sending
//! its `SET`s and reading the votes, for 2.6× the TTL, on one winning
//! acquire attempt in `pause_every` on each replica. With the check (`check`) the
//! late quorum is given back and 0 sections overlap; with the check
//! switched off by the `skip_validity_check` fault (`no-check`) the paused
//! client enters on keys that expired while it slept, beside whoever took
//! the lock meanwhile.
//!
//! The proof the pause landed: every replica reads the faults back, and
//! the replicas' lock-wait histogram (`seckill_lock_acquire_duration_seconds`)
//! shows waits longer than the pause bucket (2.5 s) — acquires held at
//! least that long.

use serde_json::{json, Value};

use super::buyers;
use super::case::Expectation;
use super::world::{
    arm, duration, faults_of_each, overlaps_so_far, pause, start_buyers, two_replicas, work,
    CaseRun,
};
use crate::api::{FaultsPatch, Kind, Scrape, StrategyEntry};
use crate::judge::Expected::{Breaks, Holds};

/// With Redlock's validity check, and with it switched off.
pub const VARIANTS: &[&str] = &["check", "no-check"];

/// The lock-wait histogram the pause shows in.
const WAIT_METRIC: &str = "seckill_lock_acquire_duration_seconds_bucket";
/// Its bucket just below the pause: waits above it were paused.
const BUCKET: &str = "2.5";

/// Redlock only: what it should do with and without its validity check.
pub fn expect(strategy: &StrategyEntry, variant: &str) -> Expectation {
    if strategy.kind != Kind::Validity {
        return Err(
            "this scenario pauses Redlock's acquisition (a Redlock fault); run it with redlock"
                .into(),
        );
    }
    Ok(match variant {
        "check" => (
            Holds,
            "elapsed (the pause included) exceeds the TTL: the late quorum is refused".into(),
        ),
        _ => (
            Breaks,
            "without the check the paused client enters on expired keys, beside the next holder"
                .into(),
        ),
    })
}

/// Pause one Redlock acquire attempt in ten, past the TTL, under load.
/// The faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<Value> {
    let (lab, world, case, strategy, variant) = cx.parts();
    let ttl = 1000;
    let acquire_pause = 2600;
    // One winning attempt in four: the others keep the lock busy, so a
    // paused client that wakes finds one inside.
    let every = 4;
    let work_ms = 200;
    let skip = variant == "no-check";
    two_replicas(lab, world, strategy, ttl, Vec::new()).await?;
    let service = world.service();
    arm(&service, strategy, work(work_ms)).await?;
    let before = service.scrape().await?;
    service
        .set_faults(FaultsPatch {
            acquire_pause_ms: Some(acquire_pause),
            pause_every: Some(every),
            skip_validity_check: Some(skip),
            ..FaultsPatch::default()
        })
        .await?;
    case.step(format!(
        "replicas a, b on 3 Redlock nodes (TTL {ttl} ms, work {work_ms} ms); one winning acquire attempt in {every} held {acquire_pause} ms between its SETs' answers and reading them; validity check {}",
        if skip { "OFF (skip_validity_check)" } else { "on" }
    ));
    pause(300).await;
    let each = faults_of_each(world).await?;
    let read_back = each.len() == 2
        && each.iter().all(|(_, f)| {
            f.acquire_pause_ms == acquire_pause
                && f.pause_every == every
                && f.skip_validity_check == skip
        });
    case.step(format!(
        "GET /admin/faults on replicas {}: acquire_pause_ms {acquire_pause}, skip_validity_check {skip} {}",
        each.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", "),
        if read_back { "on every one" } else { "NOT on every one" }
    ));
    let targets = buyers::targets(world.urls());
    let load = start_buyers(lab, case, &targets, 8);
    // The variant expected to break runs until the history shows an
    // overlap (a paused client must wake while another is inside), as
    // gc-pause freezes again until one shows; the one expected to hold
    // runs its fixed length.
    let windows = match (skip, lab.options.quick) {
        (true, true) => 8,
        (true, false) => 12,
        (false, true) => 3,
        (false, false) => 5,
    };
    for _ in 0..windows {
        pause(duration(lab, 2500)).await;
        if skip && overlaps_so_far(&service, strategy).await > 0 {
            case.step("the history shows an overlap: no more waiting");
            break;
        }
    }
    load.stop().await;
    case.step("buyers stopped");
    let waits = service.scrape().await?.since(&before);
    let paused = waits_above(&waits, strategy, BUCKET);
    if read_back && paused > 0.0 {
        case.proven(format!(
            "every replica reads the faults back, and {paused} lock wait(s) took longer than {BUCKET} s (the pause is {acquire_pause} ms)"
        ));
    } else {
        case.step(format!(
            "not proven: faults read back on every replica {read_back}; waits longer than {BUCKET} s: {paused}"
        ));
    }
    service
        .set_faults(FaultsPatch {
            acquire_pause_ms: Some(0),
            skip_validity_check: Some(false),
            ..FaultsPatch::default()
        })
        .await?;
    case.step("faults undone");
    Ok(json!({
        "acquire_pause_ms": acquire_pause,
        "pause_every": every,
        "skip_validity_check": skip,
        "lock_ttl_ms": ttl,
        "work_delay_ms": work_ms,
    }))
}

/// How many of `strategy`'s lock waits took longer than bucket `le`.
fn waits_above(scrape: &Scrape, strategy: &str, le: &str) -> f64 {
    let all = scrape.sum(WAIT_METRIC, &[("strategy", strategy), ("le", "+Inf")]);
    let below = scrape.sum(WAIT_METRIC, &[("strategy", strategy), ("le", le)]);
    all - below
}
