//! `clock-slew` — antirez's reply to Kleppmann ("Is Redlock safe?"): a
//! clock that runs a little fast — slewed, as NTP slews it, not jumped —
//! is harmless, because Redlock's drift factor already gives back the
//! time a key could lose to it.
//!
//! Every Redlock node runs under the clock-shifting preload with one
//! offset file, which the runner advances every 20 ms by `slew_pct` of
//! the time elapsed: the nodes' wall clocks (the clocks Redis expires keys
//! by) run that much fast, in steps of a millisecond — a slew done in
//! steps, as the preload knows offsets, not rates. A key set for the TTL
//! then lives TTL / (1 + slew) of real time.
//!
//! The client trusts its lock for the validity, TTL − elapsed − (TTL ×
//! `drift_factor` + 2 ms), and the work (`work_ms=fill` by default) nearly
//! fills it: the validity less `margin_ms` (room for the write). The
//! section ends about 8 ms after its work (the reads before, the write
//! after), and the keys have expired before that when TTL × slew / (1 +
//! slew) > TTL × drift_factor + 2 ms + margin − 8 ms: the boundary the
//! claim names. Below it Redlock holds; above it another replica can take
//! the expired keys while the holder still writes. The drift factor moves
//! the boundary by its own size: 0 vs the docs' 0.01.
//!
//! `clock=client` turns it round: the nodes' clocks are true and the
//! client's own runs `slew_pct` slow — both replicas under the same
//! preload's rate (`CLOCKSHIFT_RATE_PPM`: their monotonic clocks, the ones
//! Redlock's client measures elapsed time, validity and work on, run at
//! 1 − slew of real time, smoothly). The client then trusts its lock for
//! (TTL − drift) / (1 − slew) of real time and works as much longer, while
//! the keys live the TTL: the section outlasts them when its work / (1 −
//! slew) + the write exceeds the TTL. antirez's drift factor was written
//! for this too: "the clock error", whoever's clock it is.
//!
//! Each injection is a round ([`super::inject`]): fresh stock, a new
//! history run, buyers for about two holds, the round judged. The slew
//! runs from the first round to the last. The proof it landed: at each
//! round's end every node's own `TIME` reads ahead of ours by the slew ×
//! the time it has run (within a fifth of it, plus 10 ms, plus half the
//! round trip of the best of three readings). With `clock=client`: a
//! process under the replicas' preload measures `1 − slew` of real time
//! on its monotonic clock against `CLOCK_MONOTONIC_RAW`, within 0.2 %.

use seckill_load::api::StrategyName;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::case::Expectation;
use super::dials::{self, choice, dials, Choice as _, Shape};
use super::in_force::{Facts, FaultRecord};
use super::inject::{self, Window};
use super::lab::{Lab, Setup};
use super::params::{Params, Spec};
use super::world::{arm, clock_reading, pause, start_replicas, work, Case, CaseRun, World};
use crate::procs::{self, Clockshift, RedisNode};
use seckill_load::api::Variant;
use seckill_load::api::{Kind, StrategyEntry};
use seckill_load::judge::Expected::{self, Breaks, Holds};

choice! {
    /// Whose clock is off.
    pub enum SlewClock {
        /// Every Redlock node's wall clock runs fast.
        Nodes = "nodes",
        /// The client's (both replicas') monotonic clock runs slow.
        Client = "client",
    }
}

dials! {
    /// clock-slew's dials.
    pub struct ClockSlewDials {
        ttl_ms: u64 = dials::ttl("1000"),
        work_ms: u64 = Shape::ms_or_fill(
            "fill",
            "work inside the section; fill = the validity (TTL − TTL × drift_factor − 2 ms) less margin_ms",
        ),
        injections: u64 = dials::injections("12"),
        slew_pct: f64 = Shape::number(
            "1",
            "how far off the clock runs, %: every Redlock node's faster (slewed in 1 ms steps), or the client's slower",
        ),
        clock: SlewClock = Shape::choice(
            SlewClock::WORDS,
            "nodes",
            "whose clock is off: the Redlock nodes' (fast) or the client's own (slow)",
        ),
        drift_factor: f64 = Shape::number(
            "0.01",
            "the client's drift allowance, a fraction of the TTL (SECKILL_REDLOCK_DRIFT_FACTOR)",
        ),
        // 40 ms: the write and the scheduling around it on a busy two-core
        // machine (three lanes of debug binaries in CI). With 25, a check
        // that passed a few ms before the validity ran out now and then let
        // the write land after the keys expired (CI: 1 of 12, undecided) —
        // the pause no check covers, not the slew this case is about.
        margin_ms: u64 = Shape::count(
            "40",
            "what work_ms=fill leaves of the validity for the write, ms",
        ),
        users: usize = dials::users("6"),
        lock_wait_ms: u64 = dials::lock_wait("500"),
    }
}

/// Its dials.
pub const PARAMS: &[Spec] = ClockSlewDials::SPECS;

/// The reads before the work and the write after it, ms: the section
/// outlasts its work by about this much (5–10 ms on two cores in our
/// runs), and its last check comes before the write.
const AROUND_WORK_MS: f64 = 8.0;

/// `--quick`: a shorter TTL (the work fills it all the same), fewer buyers
/// waiting out each round's end, and 100 ms left for the write: the quick
/// run is CI's, debug binaries on a loaded two-core machine, where a check
/// that passed with 40 ms left still let the write land after the keys
/// expired (1 injection of 12, in one CI run of three; with 25 ms, once
/// before): the pause no check covers, not the slew. The keys at 1 %
/// outlive the section by some 90 ms.
pub const QUICK: &[(&str, &str)] = &[("ttl_ms", "500"), ("users", "4"), ("margin_ms", "100")];

/// How long the holder's section outlasts its keys, ms (≤ 0: the keys
/// outlive it): the section ends at about the work + [`AROUND_WORK_MS`]
/// after the SETs, the keys expire TTL / (1 + slew) after them; with the
/// client's clock slow, the work (timed on it) lasts work / (1 − slew) and
/// the keys the TTL.
fn exposure_ms(d: &ClockSlewDials) -> f64 {
    let slew = d.slew_pct / 100.0;
    let (work, ttl) = (d.work_ms as f64, d.ttl_ms as f64);
    match d.clock {
        SlewClock::Nodes => work + AROUND_WORK_MS - ttl / (1.0 + slew),
        SlewClock::Client => work / (1.0 - slew).max(f64::EPSILON) + AROUND_WORK_MS - ttl,
    }
}

/// Whether the keys expire before the holder's section ends.
pub fn predicts(d: &ClockSlewDials) -> Expected {
    if exposure_ms(d) > 0.0 {
        Expected::Breaks
    } else {
        Expected::Holds
    }
}

/// Redlock only: holds while the keys outlive the holder's last check.
pub fn expect(strategy: &StrategyEntry, _variant: Option<Variant>, params: &Params) -> Expectation {
    if strategy.kind != Kind::Validity {
        return Err("this scenario slews Redlock's nodes' clocks; run it with redlock".into());
    }
    let d = ClockSlewDials::of(params);
    if !(0.0..=0.5).contains(&d.drift_factor) {
        return Err("drift_factor: between 0 and 0.5 (the service refuses others)".into());
    }
    if d.slew_pct < 0.0 || (d.clock == SlewClock::Client && d.slew_pct >= 100.0) {
        return Err(
            "slew_pct: how far off, so ≥ 0 (and below 100 for a clock that runs slow)".into(),
        );
    }
    let exposure = exposure_ms(&d);
    Ok(if exposure > 0.0 {
        (
            Breaks,
            format!(
                "{}: about {exposure:.0} ms before the holder's section ends: another can enter while it writes",
                if d.clock == SlewClock::Nodes { "the keys live TTL / (1 + slew)" } else { "the client works work / (1 − slew) of real time; the keys expire" }
            ),
        )
    } else {
        (
            Holds,
            format!(
                "the keys outlive the holder's section by about {:.0} ms: the drift allowance and the margin cover the clock's error",
                -exposure
            ),
        )
    })
}

/// Run `injections` rounds while every Redlock node's clock runs
/// `slew_pct` fast, or the client's own runs that much slow. The faults,
/// as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<FaultRecord> {
    let d = ClockSlewDials::of(cx.params);
    let (lab, world, case, strategy, _) = cx.parts();
    let injections = d.injections;
    let slew = d.slew_pct / 100.0;
    let client = d.clock == SlewClock::Client;
    let shift = lab.clockshift()?;
    let offset_file = lab.dir.join("redlock-nodes.clock");
    procs::set_clock_offset(&offset_file, 0)?;
    start_service(lab, world, case, strategy, &d, &shift, &offset_file).await?;
    // The slew of the nodes: their offset follows the elapsed time (the
    // client's rate needs no task: the preload applies it).
    let stop = Arc::new(AtomicBool::new(false));
    let slewed = Instant::now();
    let task = (!client).then(|| slew_nodes(&stop, &offset_file, slewed, slew));
    warm_up(lab, world, case).await;
    let outcome = slewed_rounds(lab, world, case, strategy, &d, &shift, slewed).await;
    stop.store(true, Ordering::Relaxed);
    if let Some(task) = task {
        let _ = task.await;
    }
    outcome?;
    case.proven_by_injections(|proven| {
        if client {
            format!("{proven} of {injections} rounds: the replicas' preload ran the monotonic clock at 1 − slew")
        } else {
            format!("{proven} of {injections} rounds: every node's TIME read ahead by the slew × the time it had run")
        }
    });
    Ok(dials::record(
        &d,
        Facts {
            nodes: Some(
                if client {
                    "none (the client's clock is off)"
                } else {
                    "every Redlock node"
                }
                .to_owned(),
            ),
            exposure_ms: Some((exposure_ms(&d) * 10.0).round() / 10.0),
            ..Facts::default()
        },
    ))
}

/// The client's rate, parts per million (clock=client).
fn client_ppm(d: &ClockSlewDials) -> i64 {
    -((d.slew_pct / 100.0 * 1e6).round() as i64)
}

/// Step 1: the arbiter's Redis and 3 Redlock nodes (under the offset file
/// unless clock=client), replicas a and b on them, the strategy armed.
async fn start_service(
    lab: &Lab,
    world: &mut World,
    case: &mut Case,
    strategy: StrategyName,
    d: &ClockSlewDials,
    shift: &Clockshift,
    offset_file: &Path,
) -> anyhow::Result<()> {
    let (ttl, work_ms, injections) = (d.ttl_ms, d.work_ms, d.injections);
    let (slew, factor) = (d.slew_pct / 100.0, d.drift_factor);
    let users = d.users.max(2);
    let client = d.clock == SlewClock::Client;
    let node_env = if client {
        Vec::new()
    } else {
        shift.env(offset_file)
    };
    let redis = RedisNode::start(&lab.dir, "redis", &[], Vec::new()).await?;
    let redis_url = redis.url();
    world.nodes.push(redis);
    for i in 1..=3 {
        world
            .nodes
            .push(RedisNode::start(&lab.dir, &format!("node{i}"), &[], node_env.clone()).await?);
    }
    let urls: Vec<String> = world.nodes[1..].iter().map(RedisNode::url).collect();
    let mut drift_env = vec![(
        "SECKILL_REDLOCK_DRIFT_FACTOR".to_owned(),
        factor.to_string(),
    )];
    if client {
        drift_env.extend(shift.rate_env(client_ppm(d)));
    }
    start_replicas(
        lab,
        world,
        [
            (
                "a",
                Setup::new(&redis_url, ttl)
                    .redlock(urls.clone())
                    .extra(drift_env.clone()),
            ),
            (
                "b",
                Setup::new(&redis_url, ttl).redlock(urls).extra(drift_env),
            ),
        ],
    )
    .await?;
    let service = world.service();
    arm(&service, strategy, work(work_ms)).await?;
    case.step(format!(
        "replicas a, b on 3 Redlock nodes (TTL {ttl} ms, drift factor {factor}, work {work_ms} ms); {users} buyers on both; {} {} % {}; {injections} rounds",
        if client { "the replicas' own monotonic clocks (clockshift's rate) run" } else { "every node's clock (clockshift) runs" },
        slew * 100.0,
        if client { "slow" } else { "fast" }
    ));
    Ok(())
}

/// Step 2: the task that advances the nodes' offset in `file` by `slew` of
/// the time since `slewed`, every 20 ms until `stop`.
fn slew_nodes(stop: &Arc<AtomicBool>, file: &Path, slewed: Instant, slew: f64) -> JoinHandle<()> {
    let (stop, file) = (stop.clone(), file.to_owned());
    tokio::spawn(async move {
        while !stop.load(Ordering::Relaxed) {
            let elapsed = slewed.elapsed().as_secs_f64() * 1000.0;
            let _ = procs::set_clock_offset(&file, (elapsed * slew) as i64);
            pause(20).await;
        }
    })
}

/// Step 3: one grab on each replica before the first round, not judged.
async fn warm_up(lab: &Lab, world: &World, case: &mut Case) {
    // A replica's first section (its first quorum, its first database
    // connection) ran 86 ms past its work in one CI run, more than the
    // margin, and broke that round's exclusion with no slew to blame.
    super::world::warm_up(
        lab,
        world,
        case,
        "a replica's first section is slower than the margin",
    )
    .await;
}

/// Step 4: the `injections` rounds, each with the slewed clock read as
/// its proof.
async fn slewed_rounds(
    lab: &Lab,
    world: &World,
    case: &mut Case,
    strategy: StrategyName,
    d: &ClockSlewDials,
    shift: &Clockshift,
    slewed: Instant,
) -> anyhow::Result<()> {
    let client = d.clock == SlewClock::Client;
    for _ in 0..d.injections {
        let round = inject::begin(&lab.http, world, case, d.users.max(2), 0).await?;
        let target = if client {
            "the replicas' monotonic clocks"
        } else {
            "every Redlock node's clock"
        };
        let mut window = Window::starting(case, target, None);
        // About two holds of the lock, each nearly the whole TTL.
        pause(d.ttl_ms + d.work_ms + 400).await;
        let (held, text) = clock_proof(world, d, shift, slewed).await?;
        window.end_ms = case.clock_ms();
        if held {
            window.proof = Some(text);
        } else {
            case.step(format!("not proven: {text}"));
        }
        round.end(world, case, strategy, window).await?;
    }
    Ok(())
}

/// The proof: the clock that is off, read as the round ends — (whether it
/// reads as set, what was read).
async fn clock_proof(
    world: &World,
    d: &ClockSlewDials,
    shift: &Clockshift,
    slewed: Instant,
) -> anyhow::Result<(bool, String)> {
    let slew = d.slew_pct / 100.0;
    Ok(if d.clock == SlewClock::Client {
        // The client's clock, read under the replicas' preload.
        let rate = shift
            .read_rate(client_ppm(d), std::time::Duration::from_millis(300))
            .await?;
        let text = format!(
            "a process under the replicas' preload measured {rate:.4} of real time on its monotonic clock (CLOCK_MONOTONIC_RAW beside it; set: {:.4})",
            1.0 - slew
        );
        ((rate - (1.0 - slew)).abs() <= 0.002, text)
    } else {
        let expected = (slewed.elapsed().as_secs_f64() * 1000.0 * slew) as i64;
        let mut readings = Vec::new();
        for node in &world.nodes[1..] {
            readings.push(clock_reading(node).await?);
        }
        let text = format!(
            "after {} ms of slew the nodes' TIME reads {} ms ahead of ours (slew × elapsed = {expected} ms)",
            slewed.elapsed().as_millis(),
            readings
                .iter()
                .map(|r| format!("{:+} ± {}", r.ahead_ms, r.within_ms))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let held = readings
            .iter()
            .all(|r| (r.ahead_ms - expected).abs() <= expected / 5 + 10 + r.within_ms);
        (held, text)
    })
}
