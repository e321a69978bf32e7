//! `redlock-restart` — Kleppmann's restart without fsync: the same
//! partitioned five-node Redlock as `clock-jump` (a reaches nodes 1,2,3,
//! b nodes 3,4,5), and node 3 crashes while a lock is held, then comes
//! back after `restart_delay`. If it comes back without the holder's key,
//! its vote is given twice: the other side builds a majority on it while
//! the holder is still inside.
//!
//! What it comes back with is the dials':
//! - `persistence`: `none` (no AOF), `no`, `everysec` or `always`
//!   (`appendonly yes`, `appendfsync` that; `no` leaves the sync to the
//!   kernel, seconds later);
//! - `crash`: `process` is `kill -9`, which loses nothing handed to
//!   `write(2)` — the kernel's page cache keeps it, so `everysec` keeps
//!   the key as surely as `always`; `power` runs node 3 under the
//!   power-loss preload, which holds the AOF's unsynced bytes in the
//!   process's own memory, so the kill loses exactly what a power cut
//!   would. Only `always` (synced before the reply) survives that, and
//!   `everysec` once a sync came between the `SET` and the cut;
//! - `crash_after_ms`: how long after the holder is seen inside node 3
//!   dies (everysec's window);
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
//! - `jump`: how far node 3's host clock jumps forward as node 3 crashes.
//!   The restart delay is timed on that clock, as a supervisor that sleeps
//!   until the crash time + `restart_delay` on its wall clock would
//!   (Kleppmann: the delay "would fail if the clock jumps"): node 3 runs
//!   under the clock-shifting preload, the runner reads its clock at the
//!   crash (`date` under the same preload), jumps it, and restarts node 3
//!   once that clock reads the crash time + the delay — `jump` early;
//! - `check_revision`: `on` arms Redlock's attempt at a fencing token
//!   (each node counts its own grants; the holder's token is the largest
//!   its majority returned; the database registers it as `fenced` does).
//!   Each round then starts with every node's counter at 0; one buyer on
//!   a takes the lock (its token is node 3's count: node 3 shares every
//!   majority), and b's buyers rush only once node 3 is back. The round
//!   records whether the database refused one of b's holders (`refused`,
//!   the fourth outcome): a newer holder whose token is not above the one
//!   registered. Node 3 back empty, b's majority counts from 0: its first
//!   token is no larger than a's. Node 3 back with its count, b's token
//!   is larger. (With both sides pressing the whole round, b's attempts
//!   that fail while a holds count on nodes 4 and 5 all the same — each
//!   node counts its own yes — and b's token comes out far above a's: the
//!   fence then refuses a's late write instead, as a sound fence would.
//!   That is the other way counters on several nodes go out of sync.)
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

use seckill_load::api::StrategyName;
use std::time::Duration;

use anyhow::Context as _;

use super::buyers;
use super::case::Expectation;
use super::dials::{self, choice, dials, Choice as _, OnOff, Shape};
use super::in_force::{Facts, FaultRecord};
use super::inject::{self, Window};
use super::lab::TOKEN;
use super::params::{Params, Spec};
use super::world::{arm, partitioned_redlock, pause, start_buyers, wait_inside, work, CaseRun};
use crate::procs::{self, Powerloss, RedisNode};
use seckill_load::api::Variant;
use seckill_load::api::{Kind, StrategyEntry};
use seckill_load::judge::Expected::{self, Breaks, Holds};

/// Presets of the dials (see [`variant_sets`]).
pub const VARIANTS: &[Variant] = &[
    Variant::Restart,
    Variant::DelayedRestart,
    Variant::FsyncAlways,
];

choice! {
    /// Node 3's append-only file.
    pub enum Persistence {
        /// No AOF.
        None = "none",
        /// `appendfsync no`: written to the kernel at once, synced when the
        /// kernel pleases.
        No = "no",
        /// `appendfsync everysec`.
        Everysec = "everysec",
        /// `appendfsync always`.
        Always = "always",
    }
}

choice! {
    /// How node 3 dies.
    pub enum Crash {
        /// `kill -9`: the page cache survives.
        Process = "process",
        /// A power cut: the unsynced AOF bytes are lost.
        Power = "power",
    }
}

dials! {
    /// redlock-restart's dials.
    pub struct RedlockRestartDials {
        ttl_ms: u64 = dials::ttl("1000"),
        work_ms: u64 = dials::work("500"),
        injections: u64 = dials::injections("12"),
        restart_delay: u64 = Shape::ms("0", "how long node 3 stays down after the crash"),
        persistence: Persistence = Shape::choice(
            Persistence::WORDS,
            "none",
            "node 3's append-only file: none, or appendfsync no / everysec / always",
        ),
        crash: Crash = Shape::choice(
            Crash::WORDS,
            "process",
            "kill -9 (the page cache survives) or a power cut (the unsynced AOF bytes are lost)",
        ),
        jump: u64 = Shape::ms(
            "0",
            "how far node 3's host clock jumps forward as it crashes; the restart delay is timed on that clock",
        ),
        crash_after_ms: u64 = Shape::ms(
            "0",
            "how long after the holder is seen inside node 3 crashes (everysec syncs once a second: a key older than that survives a power cut)",
        ),
        check_revision: OnOff = Shape::choice(
            OnOff::WORDS,
            "off",
            "on: Redlock hands out a fencing token (each node's counter, the largest of the majority) and the database checks it",
        ),
        users: usize = dials::users("6"),
        lock_wait_ms: u64 = dials::lock_wait("500"),
    }
}

/// Its dials.
pub const PARAMS: &[Spec] = RedlockRestartDials::SPECS;

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

/// How long after a write `appendfsync everysec` has surely synced it,
/// ms: it syncs once the wall clock's whole second has moved past the
/// last sync's (up to 1 s), at the next tick of the event loop (hz 10: up
/// to 100 ms).
const EVERYSEC_MS: u64 = 1100;

/// Whether node 3 comes back with the holder's key.
fn keeps_key(d: &RedlockRestartDials) -> bool {
    match d.persistence {
        Persistence::Always => true,
        // Written to the kernel at once; lost only with the page cache,
        // unless a sync ran between the SET and the cut.
        Persistence::Everysec => d.crash == Crash::Process || d.crash_after_ms >= EVERYSEC_MS,
        // Written to the kernel at once, synced when the kernel pleases
        // (seconds later): lost with the page cache.
        Persistence::No => d.crash == Crash::Process,
        Persistence::None => false,
    }
}

/// With `check_revision=on`: whether the database refuses a newer holder
/// after node 3 comes back. Node 3 loses its counter with the lock key;
/// b's buyers start only then, so b's majority (3, 4, 5) counts from 0 and
/// b's first token is no larger than the one a registered — whatever the
/// delay (the counter does not come back with time).
pub fn predicts_refused(d: &RedlockRestartDials) -> Expected {
    if keeps_key(d) {
        Expected::Holds
    } else {
        Expected::Breaks
    }
}

/// How long node 3 stays down in real time: the delay, less the jump of
/// the clock it is timed on.
fn real_delay(d: &RedlockRestartDials) -> u64 {
    d.restart_delay.saturating_sub(d.jump)
}

/// Whether the holder is exposed: node 3 comes back without its key while
/// the holder's section (its work) still runs.
pub fn predicts(d: &RedlockRestartDials) -> Expected {
    if keeps_key(d) || d.crash_after_ms + real_delay(d) >= d.work_ms {
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
    let d = RedlockRestartDials::of(params);
    let (delay, work) = (real_delay(&d), d.work_ms);
    if d.jump > 0 && d.crash == Crash::Power {
        return Err("jump and crash=power: node 3 runs under one preload at a time".into());
    }
    if d.check_revision == OnOff::On {
        // Judged on the refusals (the case's outcomes keep exclusion too).
        return Ok(if keeps_key(&d) {
            (
                Holds,
                format!(
                    "node 3 comes back with its counter ({} / {}): the tokens keep growing",
                    d.persistence, d.crash
                ),
            )
        } else {
            (
                Breaks,
                format!(
                    "node 3 comes back with its counter at 0 ({} / {}, after {delay} ms): b's first token is not above the one a registered, and the database refuses that newer holder",
                    d.persistence, d.crash
                ),
            )
        });
    }
    Ok(if keeps_key(&d) {
        (
            Holds,
            format!(
                "node 3 comes back with the key ({} / {}): its vote is not given twice",
                d.persistence, d.crash
            ),
        )
    } else if predicts(&d) == Holds {
        (
            Holds,
            format!("node 3 comes back empty, but {delay} ms later (restart_delay {} less the jump {}): the holder's section ({work} ms) is over", d.restart_delay, d.jump),
        )
    } else {
        (
            Breaks,
            format!(
                "node 3 comes back empty ({} / {}) after {delay} ms, while the holder ({work} ms of work) is inside: its vote is given twice",
                d.persistence, d.crash
            ),
        )
    })
}

/// Node 3's redis-server flags for `persistence`.
fn aof_args(persistence: Persistence) -> &'static [&'static str] {
    match persistence {
        Persistence::Always => &["--appendonly", "yes", "--appendfsync", "always"],
        Persistence::Everysec => &["--appendonly", "yes", "--appendfsync", "everysec"],
        Persistence::No => &["--appendonly", "yes", "--appendfsync", "no"],
        Persistence::None => &[],
    }
}

/// `injections` rounds; in each, node 3 crashes while a lock is held and
/// comes back as the dials say. The faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<FaultRecord> {
    let d = RedlockRestartDials::of(cx.params);
    let (lab, world, case, strategy, _) = cx.parts();
    let (ttl, work_ms, delay, injections) = (d.ttl_ms, d.work_ms, d.restart_delay, d.injections);
    let (persistence, crash) = (d.persistence, d.crash);
    let mut rig = Rig::set_up(lab, world, &d).await?;
    let service = world.service();
    let faults = seckill_load::api::FaultsPatch {
        check_revision: Some(rig.fenced),
        ..work(work_ms)
    };
    arm(&service, strategy, faults).await?;
    case.step(format!(
        "5 Redlock nodes; a reaches nodes 1,2,3 and b nodes 3,4,5 (other links cut); TTL {ttl} ms, work {work_ms} ms; node 3: persistence {persistence}, crash {crash} {} ms after the holder is seen inside, back after {delay} ms; {injections} rounds{}", d.crash_after_ms,
        if rig.fenced { "; each node counts its grants, the holder's token is its majority's largest count, checked by the database" } else { "" }
    ));
    // b alone: its fence refusals are the newer holders' (check_revision).
    let b_only = seckill_load::api::Service::new(vec![world.replica("b")?.url()], TOKEN.into());
    for _ in 0..injections {
        let mut round = rig.begin_round(lab, world, case).await?;
        let mut window = Window::starting(case, "node 3", None);
        if !wait_inside(&service, None, Duration::from_secs(3)).await? {
            case.step("no holder inside within 3 s: not counted");
        } else {
            pause(d.crash_after_ms).await;
            window.start_ms = case.clock_ms();
            let counted = if rig.fenced {
                Some((
                    counter(&world.nodes[3]).await?,
                    refusals(&b_only, strategy).await?,
                ))
            } else {
                None
            };
            let crashed = rig.crash(world, &d).await?;
            window.end_ms = case.clock_ms();
            // check_revision=on: b's rush, then its refusals, read once its
            // holders have had the section's time to try.
            let tokens = match counted {
                Some((before, refused_before)) => {
                    let b = buyers::retargeted(world.replica("b")?.url());
                    round.add(start_buyers(lab, case, &b, rig.users));
                    inject::settle(work_ms).await;
                    let refused = refusals(&b_only, strategy).await? - refused_before;
                    window.refused = Some(refused >= 1.0);
                    format!(
                        "; a's holder's token was node 3's count, {before}; after node 3 came back the database refused {refused} of b's holders (a token not above the one registered); node 3 counts {} now",
                        counter(&world.nodes[3]).await?
                    )
                }
                None => String::new(),
            };
            match crashed.proof(&d, window.end_ms - window.start_ms, &tokens) {
                Ok(proof) => window.proof = Some(proof),
                Err(not_counted) => case.step(not_counted),
            }
        }
        inject::settle(work_ms).await;
        round.end(world, case, strategy, window).await?;
    }
    let proven = case.proven_by_injections(|proven| {
        format!("{proven} of {injections} crashes: node 3 came back as a new process (INFO run_id), holding the lock key before each")
    });
    Ok(dials::record(
        &d,
        Facts {
            partition: Some("a: nodes 1,2,3; b: nodes 3,4,5".to_owned()),
            node3_restarts: Some(proven),
            ..Facts::default()
        },
    ))
}

/// The lock key on every node.
const LOCK_KEY: &str = "lock:product:1";

/// What a case keeps between its rounds: node 3's preloads (the jumped
/// clock, or the power cut's report) and the load's shape.
struct Rig {
    /// Node 3's clock preload and its offset file (`jump` > 0).
    clock: Option<(procs::Clockshift, std::path::PathBuf)>,
    /// The jumps so far, ms.
    offset: i64,
    /// The power-loss preload's report.
    report: std::path::PathBuf,
    /// `check_revision=on`.
    fenced: bool,
    /// Buyers.
    users: usize,
}

/// What one crash of node 3 showed.
struct Crashed {
    /// `INFO` `run_id` before and after.
    run_ids: (String, String),
    /// The lock key's value on node 3 before the crash and after.
    key: (Option<String>, Option<String>),
    /// The key's `PTTL` on node 3 just before the crash, and the real
    /// milliseconds from that reading to the read after the restart.
    outlived: (i64, u128),
    /// Unsynced AOF bytes the power cut lost (`crash=power`).
    lost: Option<u64>,
    /// With a jump: node 3's clock at the crash, the real time it was
    /// down, and how far ahead its clock reads now.
    jumped: Option<(i64, u128, i64)>,
}

impl Rig {
    /// The world: five Redlock nodes in the partition, node 3 under the
    /// preload its dials need.
    async fn set_up(
        lab: &mut super::lab::Lab,
        world: &mut super::world::World,
        d: &RedlockRestartDials,
    ) -> anyhow::Result<Self> {
        let report = lab.dir.join("node3.powerloss");
        let _ = std::fs::remove_file(&report);
        // node 3's clock, shifted when it jumps.
        let clock = if d.jump > 0 {
            let file = lab.dir.join("node3.clock");
            procs::set_clock_offset(&file, 0)?;
            Some((lab.clockshift()?, file))
        } else {
            None
        };
        let env = match (&clock, d.crash) {
            (Some((shift, file)), _) => shift.env(file),
            (None, Crash::Power) => lab.powerloss()?.env(&report),
            (None, Crash::Process) => Vec::new(),
        };
        partitioned_redlock(lab, world, d.ttl_ms, aof_args(d.persistence), env).await?;
        Ok(Self {
            clock,
            offset: 0,
            report,
            fenced: d.check_revision == OnOff::On,
            users: d.users.max(2),
        })
    }

    /// A round's load. check_revision=on: every node's counter from 0, as
    /// the round's product is new, and one buyer on a takes the lock (its
    /// token is node 3's count, shared by every majority); b's buyers rush
    /// only once node 3 is back, so b's first token is its majority's
    /// count from 0 — unless node 3 kept its own. b's fence refusals after
    /// the restart are newer holders refused (a's late write refused would
    /// count on a). Otherwise buyers pinned half to each replica.
    async fn begin_round(
        &self,
        lab: &super::lab::Lab,
        world: &mut super::world::World,
        case: &mut super::world::Case,
    ) -> anyhow::Result<inject::Round> {
        if !self.fenced {
            return inject::begin_pinned(&lab.http, world, case, self.users, 100).await;
        }
        for node in &world.nodes[1..=5] {
            let mut conn = node.conn().await?;
            redis::cmd("DEL")
                .arg(FENCE_KEY)
                .query_async::<()>(&mut conn)
                .await?;
        }
        let on_a = buyers::retargeted(world.replica("a")?.url());
        inject::begin_aimed(&lab.http, world, case, &[(&on_a, 1, Duration::ZERO)], 100).await
    }

    /// Kill node 3, keep it down `restart_delay` (on its jumped clock when
    /// it jumps), restart it; what it held before and after.
    async fn crash(
        &mut self,
        world: &mut super::world::World,
        d: &RedlockRestartDials,
    ) -> anyhow::Result<Crashed> {
        let node = &world.nodes[3];
        let before = run_id(node).await?;
        let had = value(node, LOCK_KEY).await?;
        let ttl_read = tokio::time::Instant::now();
        let ttl_left = pttl(node, LOCK_KEY).await?;
        let lost = Powerloss::read(&self.report).map(|(held, _)| held);
        world.nodes[3].kill();
        let down = tokio::time::Instant::now();
        let at_crash = match &self.clock {
            Some((shift, file)) => {
                self.offset += i64::try_from(d.jump).unwrap_or(i64::MAX);
                Some(wait_on_jumped_clock(shift, file, self.offset, d.restart_delay).await?)
            }
            None => {
                pause(d.restart_delay).await;
                None
            }
        };
        world.nodes[3].restart().await?;
        let down_ms = down.elapsed().as_millis();
        let node = &world.nodes[3];
        let jumped = match at_crash {
            Some(at) => Some((at, down_ms, super::world::clock_ahead_ms(node).await?)),
            None => None,
        };
        let after = value(node, LOCK_KEY).await?;
        let elapsed = ttl_read.elapsed().as_millis();
        Ok(Crashed {
            run_ids: (before, run_id(node).await?),
            key: (had, after),
            outlived: (ttl_left, elapsed),
            lost,
            jumped,
        })
    }
}

impl Crashed {
    /// The injection's proof (node 3 restarted, holding the lock key before
    /// the crash), or why it is not counted; `down_ms` the window, `tokens`
    /// the fenced run's clause.
    fn proof(&self, d: &RedlockRestartDials, down_ms: u64, tokens: &str) -> Result<String, String> {
        let (before, after) = &self.run_ids;
        if after == before {
            return Err(format!(
                "node 3's run_id is still {before}: it did not restart, not counted"
            ));
        }
        if self.key.0.is_none() {
            return Err(
                "node 3 held no lock key when it crashed (the holder was between its SETs): not counted"
                    .into(),
            );
        }
        let (ttl_left, elapsed) = self.outlived;
        // Only where the planned delay alone would not outlast the key
        // (`delayed-restart` waits past the TTL by design).
        let expired = u64::try_from(ttl_left)
            .is_ok_and(|left| left > d.restart_delay && u128::from(left) <= elapsed);
        if self.key.1 != self.key.0 && expired {
            return Err(format!(
                "node 3's lock key had {ttl_left} ms to live at the crash and {elapsed} ms passed before it was read again: it expired on its own (whatever holds node 3 now took it after), not counted"
            ));
        }
        let lost = match self.lost {
            Some(bytes) => format!("; the power cut lost {bytes} unsynced AOF byte(s)"),
            None => String::new(),
        };
        let jumped = match self.jumped {
            Some((at_crash, real_ms, ahead)) => format!(
                "; node 3's clock read {at_crash} at the crash, jumped +{} ms, and the {} ms delay timed on it ended after {real_ms} ms of real time (its TIME now reads {ahead:+} ms ahead)",
                d.jump, d.restart_delay
            ),
            None => String::new(),
        };
        Ok(format!(
            "node 3's INFO run_id changed ({} → {}) after {down_ms} ms down; it held the lock key before the crash and {} after{lost}{jumped}{tokens}",
            &before[..8.min(before.len())],
            &after[..8.min(after.len())],
            // Read after the restart: b's rush may have taken node 3 by
            // then, so the value tells the holder's key from b's.
            match &self.key {
                (Some(a), Some(b)) if a == b => "still holds it",
                (_, Some(_)) => "holds another holder's key (the holder's was lost)",
                _ => "does NOT",
            },
        ))
    }
}

/// A supervisor's restart delay timed on node 3's host clock, which has
/// jumps forward to `offset`: read that clock (the preload's `date`)
/// before the jump lands, jump it, then wait until it reads the crash time
/// + `delay`. Returns the clock's reading at the crash.
async fn wait_on_jumped_clock(
    shift: &procs::Clockshift,
    file: &std::path::Path,
    offset: i64,
    delay: u64,
) -> anyhow::Result<i64> {
    let at_crash = shift.clock_ms(file).await?;
    procs::set_clock_offset(file, offset)?;
    let until = at_crash + i64::try_from(delay).unwrap_or(i64::MAX);
    while shift.clock_ms(file).await? < until {
        pause(5).await;
    }
    Ok(at_crash)
}

/// The fencing counter's key on every node (`fence:product:1`).
const FENCE_KEY: &str = "fence:product:1";

/// `node`'s fencing counter (0 when it has none).
async fn counter(node: &RedisNode) -> anyhow::Result<i64> {
    value(node, FENCE_KEY)
        .await?
        .map_or(Ok(0), |v| v.parse())
        .context("a fencing counter that is not a number")
}

/// The fence's refusals so far on every replica
/// (`seckill_fence_rejections_total{strategy}`).
async fn refusals(
    service: &seckill_load::api::Service,
    strategy: StrategyName,
) -> anyhow::Result<f64> {
    Ok(service.scrape().await?.sum(
        "seckill_fence_rejections_total",
        &[("strategy", strategy.as_str())],
    ))
}

/// The value `node` holds at `key` (the holder's random value), if any.
async fn value(node: &RedisNode, key: &str) -> anyhow::Result<Option<String>> {
    let mut conn = node.conn().await?;
    Ok(redis::cmd("GET").arg(key).query_async(&mut conn).await?)
}

/// `key`'s time to live on `node` in milliseconds (`PTTL`: -2 no key, -1
/// no expiry).
async fn pttl(node: &RedisNode, key: &str) -> anyhow::Result<i64> {
    let mut conn = node.conn().await?;
    Ok(redis::cmd("PTTL").arg(key).query_async(&mut conn).await?)
}

/// `node`'s `run_id` (`INFO server`): a new one for every process.
pub(super) async fn run_id(node: &RedisNode) -> anyhow::Result<String> {
    node.info("server", "run_id")
        .await?
        .context("no run_id in INFO server")
}
