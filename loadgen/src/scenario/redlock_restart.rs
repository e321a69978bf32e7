//! `redlock-restart` — Kleppmann's restart without fsync: the same
//! partitioned five-node Redlock as `clock-jump` (a reaches nodes 1,2,3,
//! b nodes 3,4,5), and node 3 crashes while a lock is held, then comes
//! back after `restart_delay`. If it comes back without the holder's key,
//! its vote is given twice: the other side builds a majority on it while
//! the holder is still inside.
//!
//! What it comes back with is the dials':
//! - `persistence`: `none` (no AOF), `everysec` or `always`
//!   (`appendonly yes`, `appendfsync` that);
//! - `crash`: `process` is `kill -9`, which loses nothing handed to
//!   `write(2)` — the kernel's page cache keeps it, so `everysec` keeps
//!   the key as surely as `always`; `power` runs node 3 under the
//!   power-loss preload, which holds the AOF's unsynced bytes in the
//!   process's own memory, so the kill loses exactly what a power cut
//!   would. Only `always` (synced before the reply) survives that.
//! - `restart_delay`: how long node 3 stays down. The Redis docs' remedy
//!   is a delay longer than the TTL (every lock it knew has expired); the
//!   holder is exposed only while its section outlasts the delay, so the
//!   boundary sits near the work.
//!
//! The variants are presets of those dials (a `--set` overrides them):
//! `restart` (none, at once), `delayed-restart` (none, 1.3× the TTL),
//! `fsync-always` (a power cut, at once). `everysec` under a power cut is
//! a rate, not a rule: Redis syncs when the wall clock's second has moved
//! since the last sync, so the holder's `SET` survives when a sync came
//! between it and the crash (`--set persistence=everysec --set
//! crash=power`; the debate sweeps it).
//!
//! The work is long (500 ms of a 1 s TTL; the debate's rows use 1 s of
//! 2 s) for a reason of this lab's own: a replica's Redis client must use
//! node 3 again after it restarts (its reconnect after the connections
//! broke, retried from 10 ms on), and a section shorter than that would
//! end before the other side can reach node 3 — which would measure our
//! client, not Redlock.
//!
//! Each injection is a round ([`super::inject`]): fresh stock, a new
//! history run, buyers pinned half to each replica; once a holder is inside, node 3 crashes. The
//! proof it landed: node 3's `INFO` `run_id` changed (a new process);
//! with `crash=power`, the bytes the preload held at the kill (lost), and
//! whether the key node 3 held before the crash is there after it.

use std::time::Duration;

use anyhow::Context as _;
use serde_json::{json, Value};

use super::case::Expectation;
use super::inject::{self, Window};
use super::params::{self, Params, Spec, Unit};
use super::world::{arm, partitioned_redlock, pause, wait_inside, work, CaseRun};
use crate::api::Variant;
use crate::api::{Kind, StrategyEntry};
use crate::judge::Expected::{self, Breaks, Holds};
use crate::procs::{Powerloss, RedisNode};

/// Presets of the dials (see [`variant_sets`]).
pub const VARIANTS: &[Variant] = &[
    Variant::Restart,
    Variant::DelayedRestart,
    Variant::FsyncAlways,
];

/// Its dials.
pub const PARAMS: &[Spec] = &[
    params::ttl("1000"),
    params::work("500"),
    params::injections("12"),
    Spec {
        name: "restart_delay",
        unit: Unit::Ms,
        default: "0",
        meaning: "how long node 3 stays down after the crash",
    },
    Spec {
        name: "persistence",
        unit: Unit::Choice(&["none", "everysec", "always"]),
        default: "none",
        meaning: "node 3's append-only file: none, or appendfsync everysec / always",
    },
    Spec {
        name: "crash",
        unit: Unit::Choice(&["process", "power"]),
        default: "process",
        meaning:
            "kill -9 (the page cache survives) or a power cut (the unsynced AOF bytes are lost)",
    },
    params::users("6"),
    params::lock_wait("500"),
];

/// `--quick`: the same fault (a TTL of 1 s is already short; a shorter
/// section would measure the replicas' reconnection to a restarted node).
pub const QUICK: &[(&str, &str)] = &[];

/// The dials each variant sets before the user's `--set`s.
pub fn variant_sets(variant: Option<Variant>) -> &'static [(&'static str, &'static str)] {
    match variant {
        Some(Variant::DelayedRestart) => &[("restart_delay", "1.3ttl")],
        Some(Variant::FsyncAlways) => &[("persistence", "always"), ("crash", "power")],
        _ => &[],
    }
}

/// Whether node 3 comes back with the holder's key.
fn keeps_key(params: &Params) -> bool {
    match params.choice("persistence") {
        "always" => true,
        // Written to the kernel at once; lost only with the page cache.
        "everysec" => params.choice("crash") == "process",
        _ => false,
    }
}

/// Whether the holder is exposed: node 3 comes back without its key while
/// the holder's section (its work) still runs.
pub fn predicts(params: &Params) -> Expected {
    if keeps_key(params) || params.ms("restart_delay") >= params.ms("work_ms") {
        Expected::Holds
    } else {
        Expected::Breaks
    }
}

/// Redlock only: what it should do when node 3 crashes and comes back.
pub fn expect(strategy: &StrategyEntry, _variant: Option<Variant>, params: &Params) -> Expectation {
    if strategy.kind != Kind::Validity {
        return Err("this scenario breaks Redlock's nodes; run it with redlock".into());
    }
    let (delay, work) = (params.ms("restart_delay"), params.ms("work_ms"));
    Ok(if keeps_key(params) {
        (
            Holds,
            format!(
                "node 3 comes back with the key ({} / {}): its vote is not given twice",
                params.choice("persistence"),
                params.choice("crash")
            ),
        )
    } else if predicts(params) == Holds {
        (
            Holds,
            format!("node 3 comes back empty, but {delay} ms later: the holder's section ({work} ms) is over"),
        )
    } else {
        (
            Breaks,
            format!(
                "node 3 comes back empty ({} / {}) after {delay} ms, while the holder ({work} ms of work) is inside: its vote is given twice",
                params.choice("persistence"),
                params.choice("crash")
            ),
        )
    })
}

/// Node 3's redis-server flags for `persistence`.
fn aof_args(persistence: &str) -> &'static [&'static str] {
    match persistence {
        "always" => &["--appendonly", "yes", "--appendfsync", "always"],
        "everysec" => &["--appendonly", "yes", "--appendfsync", "everysec"],
        _ => &[],
    }
}

/// `injections` rounds; in each, node 3 crashes while a lock is held and
/// comes back as the dials say. The faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<Value> {
    let params = cx.params;
    let (lab, world, case, strategy, _) = cx.parts();
    let ttl = params.ttl_ms();
    let work_ms = params.ms("work_ms");
    let delay = params.ms("restart_delay");
    let persistence = params.choice("persistence");
    let crash = params.choice("crash");
    let injections = params.injections();
    let users = usize::try_from(params.count("users")).unwrap_or(6).max(2);
    let report = lab.dir.join("node3.powerloss");
    let _ = std::fs::remove_file(&report);
    let env = if crash == "power" {
        lab.powerloss()?.env(&report)
    } else {
        Vec::new()
    };
    partitioned_redlock(lab, world, ttl, aof_args(persistence), env).await?;
    let service = world.service();
    arm(&service, strategy, work(work_ms)).await?;
    case.step(format!(
        "5 Redlock nodes; a reaches nodes 1,2,3 and b nodes 3,4,5 (other links cut); TTL {ttl} ms, work {work_ms} ms; node 3: persistence {persistence}, crash {crash}, back after {delay} ms; {injections} rounds"
    ));
    let key = "lock:product:1";
    for _ in 0..injections {
        let round = inject::begin_pinned(&lab.http, world, case, users, 100).await?;
        let mut window = Window::starting(case, "node 3", None);
        if !wait_inside(&service, None, Duration::from_secs(3)).await? {
            case.step("no holder inside within 3 s: not counted");
        } else {
            window.start_ms = case.clock_ms();
            let before = run_id(&world.nodes[3]).await?;
            let had_key = exists(&world.nodes[3], key).await?;
            let held = Powerloss::read(&report).map(|(held, _)| held);
            world.nodes[3].kill();
            pause(delay).await;
            world.nodes[3].restart().await?;
            window.end_ms = case.clock_ms();
            let after = run_id(&world.nodes[3]).await?;
            let has_key = exists(&world.nodes[3], key).await?;
            let lost = match held {
                Some(bytes) => format!("; the power cut lost {bytes} unsynced AOF byte(s)"),
                None => String::new(),
            };
            if after == before {
                case.step(format!(
                    "node 3's run_id is still {before}: it did not restart, not counted"
                ));
            } else if !had_key {
                case.step(
                    "node 3 held no lock key when it crashed (the holder was between its SETs): not counted",
                );
            } else {
                window.proof = Some(format!(
                    "node 3's INFO run_id changed ({} → {}) after {} ms down; it held the lock key before the crash and {} after{lost}",
                    &before[..8.min(before.len())],
                    &after[..8.min(after.len())],
                    window.end_ms - window.start_ms,
                    if has_key { "still holds it" } else { "does NOT" },
                ));
            }
        }
        inject::settle(work_ms).await;
        round.end(world, case, strategy, window).await?;
    }
    let proven = case.proven_by_injections(|proven| {
        format!("{proven} of {injections} crashes: node 3 came back as a new process (INFO run_id), holding the lock key before each")
    });
    Ok(json!({
        "partition": "a: nodes 1,2,3; b: nodes 3,4,5",
        "node3_restarts": proven,
        "persistence": persistence,
        "crash": crash,
        "restart_delay_ms": delay,
        "injections": injections,
        "lock_ttl_ms": ttl,
        "work_delay_ms": work_ms,
    }))
}

/// Whether `node` holds `key` now.
async fn exists(node: &RedisNode, key: &str) -> anyhow::Result<bool> {
    let mut conn = node.conn().await?;
    let n: i64 = redis::cmd("EXISTS").arg(key).query_async(&mut conn).await?;
    Ok(n > 0)
}

/// `node`'s `run_id` (`INFO server`): a new one for every process.
async fn run_id(node: &RedisNode) -> anyhow::Result<String> {
    let mut conn = node.conn().await?;
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut conn)
        .await?;
    info.lines()
        .find_map(|l| l.strip_prefix("run_id:"))
        .map(|id| id.trim().to_owned())
        .context("no run_id in INFO server")
}
