//! `acquire-pause` — antirez's reply to Kleppmann ("Is Redlock safe?"): a
//! pause *during* acquisition is harmless, because Redlock measures the
//! time it took to gather its votes and refuses a quorum that arrived
//! after the keys could have expired (validity = TTL − elapsed − drift,
//! elapsed counted from before the `SET`s).
//!
//! Each injection stops replica a's whole process (its scenario hook,
//! `POST /admin/freeze` at `during-acquire`: a `SIGSTOP` to itself) once
//! its Redlock client has read and counted a quorum of yes, before its
//! elapsed-time check, for `pause`; the runner sends `SIGCONT`. With the check
//! (`check`) a quorum older than the TTL is given back; with the check
//! switched off by the `skip_validity_check` fault (`no-check`) the client
//! trusts keys that expired while it was stopped.
//!
//! The check has a blind spot the sweep shows: a pause a little shorter
//! than the TTL leaves a validity shorter than the work, so the keys
//! expire while the holder is inside and the next holder enters beside it
//! (the holder is refused at its check before commit: exclusion broken,
//! data exact). Redlock's answer is that the client must not start work
//! it cannot finish within the validity; the service does not know its
//! work in advance, and this lab shows what that costs.
//!
//! With `stopped=both` replica b is stopped the same way on its next
//! quorum (it can only win one once a's keys are gone): both clients are
//! paused during acquisition, each for `pause`, and each wakes to its own
//! check. An injection counts only when both stopped.
//!
//! The proof a pause landed: `/proc/<pid>/stat` reads state `T` after the
//! hook was armed at `during-acquire`, and every replica reads the faults
//! back.

use super::case::Expectation;
use super::dials::{self, choice, dials, Choice as _, Shape};
use super::in_force::{Facts, FaultRecord};
use super::inject::{self, Window};
use super::params::{Params, Spec};
use super::world::{arm, faults_of_each, pause, two_replicas, work, Case, CaseRun, World};
use seckill_load::api::Variant;
use seckill_load::api::{FaultsPatch, FreezeAt, Kind, StrategyEntry};
use seckill_load::judge::Expected::{Breaks, Holds};

/// With Redlock's validity check, and with it switched off.
pub const VARIANTS: &[Variant] = &[Variant::Check, Variant::NoCheck];

choice! {
    /// Which clients are paused during their acquisition.
    pub enum Stopped {
        /// Replica a only; b is free to take the keys once they expire.
        A = "a",
        /// Replica a, then replica b on its next quorum.
        Both = "both",
    }
}

dials! {
    /// acquire-pause's dials.
    pub struct AcquirePauseDials {
        ttl_ms: u64 = dials::ttl("400"),
        work_ms: u64 = dials::work("100"),
        injections: u64 = dials::injections("12"),
        pause: u64 = Shape::ms(
            "2.6ttl",
            "how long replica a's process stays stopped once it has read and counted a quorum of yes, before its elapsed-time check",
        ),
        stopped: Stopped = Shape::choice(
            Stopped::WORDS,
            "a",
            "which clients are paused during acquisition: replica a, or a and then b on its next quorum",
        ),
        users: usize = dials::users("8"),
        lock_wait_ms: u64 = dials::lock_wait("500"),
    }
}

/// Its dials.
pub const PARAMS: &[Spec] = AcquirePauseDials::SPECS;

/// `--quick`: a shorter TTL and work (the pause, 2.6× the TTL, shrinks).
pub const QUICK: &[(&str, &str)] = &[
    ("ttl_ms", "300"),
    ("work_ms", "80"),
    ("pause", "1.6ttl"),
    ("users", "6"),
];

/// Redlock's drift allowance for a TTL at the service's default drift
/// factor (`SECKILL_REDLOCK_DRIFT_FACTOR` 0.01): 1 % + 2 ms. The scenarios
/// that predict from Redlock's validity (this one, slow-network, the
/// debate) read it here.
pub fn drift_ms(ttl: u64) -> u64 {
    ttl / 100 + 2
}

/// The validity Redlock trusts when its quorum is read `late` ms after
/// the SETs: TTL − late − drift (0 once that is negative: refused).
pub fn validity_ms(ttl: u64, late: u64) -> u64 {
    ttl.saturating_sub(late + drift_ms(ttl))
}

/// Whether a quorum read `late` ms after its SETs (TTL `ttl`) is trusted
/// with a validity shorter than the work (`work`): the keys then expire
/// inside the section (a validity of 0 is refused, nothing is entered).
pub fn short_validity(ttl: u64, work: u64, late: u64) -> bool {
    let validity = validity_ms(ttl, late);
    validity > 0 && validity < work
}

/// Without the validity check: whether the paused client's keys expire
/// before it leaves (pause + work > TTL).
pub fn unchecked_outlived(d: &AcquirePauseDials) -> bool {
    d.pause + d.work_ms > d.ttl_ms
}

/// Redlock only: what it should do with and without its validity check,
/// for the pause in force.
pub fn expect(strategy: &StrategyEntry, variant: Option<Variant>, params: &Params) -> Expectation {
    if strategy.kind != Kind::Validity {
        return Err(
            "this scenario pauses Redlock's acquisition (a Redlock fault); run it with redlock"
                .into(),
        );
    }
    let d = AcquirePauseDials::of(params);
    let validity = validity_ms(d.ttl_ms, d.pause);
    Ok(match variant {
        Some(Variant::Check) if validity == 0 => (
            Holds,
            "elapsed (the pause included) exceeds the TTL: the late quorum is refused".into(),
        ),
        Some(Variant::Check) if short_validity(d.ttl_ms, d.work_ms, d.pause) => (
            Breaks,
            "the validity left (TTL − pause − drift) is shorter than the work: the keys expire while the holder is inside".into(),
        ),
        Some(Variant::Check) => (
            Holds,
            "the validity left covers the work: the keys outlive the section".into(),
        ),
        _ if unchecked_outlived(&d) => (
            Breaks,
            "without the check the paused client enters on keys that expire before it leaves, beside the next holder"
                .into(),
        ),
        _ => (
            Holds,
            "the pause and the work end before the keys expire, check or no check".into(),
        ),
    })
}

/// Stop replica a during a Redlock acquisition `injections` times, each
/// for `pause`. The faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<FaultRecord> {
    let d = AcquirePauseDials::of(cx.params);
    let (lab, world, case, strategy, variant) = cx.parts();
    let (ttl, work_ms, pause_ms, injections) = (d.ttl_ms, d.work_ms, d.pause, d.injections);
    let users = d.users.max(2);
    let skip = variant == Some(Variant::NoCheck);
    two_replicas(lab, world, strategy, ttl, Vec::new()).await?;
    let service = world.service();
    arm(&service, strategy, work(work_ms)).await?;
    service
        .set_faults(FaultsPatch {
            skip_validity_check: Some(skip),
            ..FaultsPatch::default()
        })
        .await?;
    // Every replica reads the faults back (within its control refresh,
    // 20 ms in the lab).
    pause(100).await;
    let each = faults_of_each(world).await?;
    let read_back = each.len() == 2 && each.iter().all(|(_, f)| f.skip_validity_check == skip);
    case.step(format!(
        "replicas a, b on 3 Redlock nodes (TTL {ttl} ms, work {work_ms} ms); validity check {} (read back on every replica: {read_back}); {injections} injections: {} for {pause_ms} ms after counting a quorum of yes, before the elapsed-time check",
        if skip { "OFF (skip_validity_check)" } else { "on" },
        match d.stopped {
            Stopped::A => "replica a stops",
            Stopped::Both => "replica a stops, then replica b on its next quorum, each",
        }
    ));
    for _ in 0..injections {
        let round = inject::begin(&lab.http, world, case, users, 100).await?;
        let window = match inject::stop_replica(world, case, "a", FreezeAt::DuringAcquire).await? {
            Some(stopped) if d.stopped == Stopped::Both => {
                stop_both(world, case, stopped, pause_ms, read_back).await?
            }
            Some(stopped) => {
                let (pid, mut window) = stopped.hold_and_continue(case, pause_ms).await?;
                if read_back {
                    window.proof = Some(format!(
                        "/proc/{pid}/stat read T (stopped) for {} ms with its quorum of yes counted, before its elapsed-time check",
                        window.end_ms - window.start_ms
                    ));
                }
                window
            }
            None => Window::starting(case, "replica a", Some("a")),
        };
        inject::settle(work_ms).await;
        round.end(world, case, strategy, window).await?;
    }
    let who = match d.stopped {
        Stopped::A => "replica a",
        Stopped::Both => "replicas a and then b",
    };
    case.proven_by_injections(|landed| {
        format!(
            "{landed} of {injections} pauses seen: {who} stopped (state T) holding a quorum of yes"
        )
    });
    service
        .set_faults(FaultsPatch {
            skip_validity_check: Some(false),
            ..FaultsPatch::default()
        })
        .await?;
    case.step("faults undone");
    Ok(dials::record(
        &d,
        Facts {
            skip_validity_check: Some(skip),
            ..Facts::default()
        },
    ))
}

/// `stopped=both`: a is stopped (`a`); b's hook is armed at once and b
/// stops on its next quorum (once a's keys are gone), while a is woken
/// `pause` after it stopped. b is woken `pause` after it stopped. One
/// window from a's stop to b's wake, proven only when both stopped. The
/// window names no holder: b, not a, is the one that may enter with too
/// little validity left, so an overlap of any two holders counts.
async fn stop_both(
    world: &mut World,
    case: &mut Case,
    a: inject::Stopped,
    pause_ms: u64,
    read_back: bool,
) -> anyhow::Result<Window> {
    let (a_pid, mut window) = (a.pid, a.window);
    let a_held = pause_ms.saturating_sub(case.clock_ms() - window.start_ms);
    window.holder = None;
    let a_stopped_at = window.start_ms;
    let started = case.started;
    let wake_a = tokio::spawn(async move {
        pause(a_held).await;
        crate::procs::signal(a_pid, "CONT")
            .map(|()| u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX))
    });
    let b = inject::stop_replica(world, case, "b", FreezeAt::DuringAcquire).await?;
    let a_woken_at = wake_a.await??;
    let Some(b) = b else {
        window.end_ms = case.clock_ms();
        return Ok(window);
    };
    let b_start = b.window.start_ms;
    let (b_pid, b_window) = b.hold_and_continue(case, pause_ms).await?;
    window.end_ms = b_window.end_ms;
    if read_back {
        window.proof = Some(format!(
            "/proc/{a_pid}/stat read T for {} ms, then /proc/{b_pid}/stat read T for {} ms ({} ms after a stopped), each with its quorum of yes counted, before its elapsed-time check",
            a_woken_at - a_stopped_at,
            b_window.end_ms - b_start,
            b_start - window.start_ms
        ));
    }
    Ok(window)
}
