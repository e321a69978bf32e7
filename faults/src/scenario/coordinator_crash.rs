//! `coordinator-crash` — `pg-2pc`'s coordinator (replica a) is `kill -9`ed
//! with a grab's transactions prepared and not yet committed (seed 001:
//! 2PC is blocking, its coordinator a single point of failure). The
//! prepared stock side keeps its row lock with no session behind it: every
//! grab of the product on replica b waits out its lock timeout and answers
//! `busy`. Replica a is started again under the same instance id and
//! recovers its in-doubt transactions from its decision log.
//!
//! Variants: where it dies, and whether it logged its decision.
//! - `decision-log`: between the phases (both sides prepared, the decision
//!   logged): recovery commits both sides. Holds.
//! - `decision-log-mid-commit`: inside phase two (the order side committed,
//!   the stock side still prepared): recovery commits the stock side. Holds.
//! - `no-decision-log`: between the phases, without the log
//!   (`SECKILL_TWO_PC_DECISION_LOG=false`): recovery finds no decision and
//!   rolls both back (presumed abort) — right, since nothing had committed.
//!   Holds.
//! - `no-decision-log-mid-commit`: inside phase two, without the log:
//!   presumed abort rolls back a stock side whose order side committed — an
//!   order whose unit was never taken (a lost update). Breaks.
//!
//! With `--strategies pg-3pc` (seed 001's fix for the blocking) the same
//! kill lands after both pre-commits (`decision-log`, the 3PC coordinator
//! logs nothing: its participants decide) or between the do-commits
//! (`decision-log-mid-commit`). Each database is fronted by a participant
//! process of the case's own (`seckill-app participant`) with its timeout
//! (`participant_timeout_ms`): pre-committed and unattended that long, it
//! commits. The stock row is free again while the coordinator is still
//! dead, and b sells on. The `no-decision-log` variants do not apply.
//!
//! Each of `injections` rounds crashes the coordinator once, keeps it
//! dead `down_ms`, starts it again and waits for its recovery; the round
//! is judged on its data (a committed stale write, k of n), and on
//! whether replica b was *stalled* while a was dead: only `busy` answers,
//! no order (k of n: 2PC blocks, 3PC should not).
//!
//! The proof the crash landed: the in-doubt sides of one grab of replica
//! a's — all of them, and no other grab's — are in `pg_prepared_xacts`
//! before the kill, held there, are exactly those once its process is
//! gone, and no other grab of a's is in doubt at any reading (every 100
//! ms) while it stays dead. A kill that also caught another grab halfway
//! through its commits, or came after the held grab had settled, is
//! recorded, not counted, and injected again (up to a third more rounds),
//! so a trial has `injections` proven crashes whenever it can.

use std::time::Duration;

use tokio::time::Instant;

use super::buyers;
use super::case::Expectation;
use super::dials::{self, dials, Shape};
use super::in_force::{Facts, FaultRecord};
use super::inject::{self, Window};
use super::lab::Setup;
use super::params::Spec;
use super::world::{arm, pause, start_replicas, work, CaseRun};
use crate::procs::{self, RedisNode};
use seckill_load::api::Variant;
use seckill_load::api::{FaultsPatch, PauseAt, StrategyEntry, StrategyName};
use seckill_load::judge::Expected::{Breaks, Holds};
use seckill_load::load::Outcome;

/// The variants: where the coordinator dies, and whether it logs.
pub const VARIANTS: &[Variant] = &[
    Variant::DecisionLog,
    Variant::DecisionLogMidCommit,
    Variant::NoDecisionLog,
    Variant::NoDecisionLogMidCommit,
];

dials! {
    /// coordinator-crash's dials.
    pub struct CoordinatorCrashDials {
        work_ms: u64 = dials::work("5"),
        down_ms: u64 = Shape::ms(
            "2500",
            "how long the coordinator stays dead before it is started again",
        ),
        injections: u64 = dials::injections("12"),
        lock_wait_ms: u64 = dials::lock_wait("300"),
        participant_timeout_ms: u64 = Shape::ms(
            "2000",
            "pg-3pc only: a participant pre-committed this long with no word from its coordinator commits on its own",
        ),
    }
}

/// Its dials.
pub const PARAMS: &[Spec] = CoordinatorCrashDials::SPECS;

/// `--quick`: the same outage. It must outlast `pg-3pc`'s participants'
/// timeout, counted from their pre-commit some 0.7 s before the kill (and
/// that timeout must outlast the 0.7 s: a participant that commits before
/// the kill frees the row for the next grab, which the kill may then catch
/// between its two pre-commits — the split, not this fault).
pub const QUICK: &[(&str, &str)] = &[];

/// What `strategy` should do when its coordinator dies in `variant`.
pub fn expect(strategy: &StrategyEntry, variant: Option<Variant>) -> Expectation {
    if strategy.is(StrategyName::Pg3pc) {
        return match variant {
            Some(Variant::NoDecisionLog | Variant::NoDecisionLogMidCommit) => {
                Err("pg-3pc's coordinator logs no decision: its participants decide at their timeout".into())
            }
            _ => Ok((
                Holds,
                "both sides pre-committed: each participant commits at its timeout, with the coordinator dead".into(),
            )),
        };
    }
    if !strategy.is(StrategyName::Pg2pc) {
        return Err("only pg-2pc and pg-3pc have a coordinator".into());
    }
    Ok(match variant {
        Some(Variant::NoDecisionLogMidCommit) => (
            Breaks,
            "no decision logged: recovery rolls back the stock side of an order that committed"
                .into(),
        ),
        Some(Variant::NoDecisionLog) => (
            Holds,
            "no decision logged: recovery rolls both sides back, and nothing had committed".into(),
        ),
        _ => (
            Holds,
            "recovery commits the in-doubt sides from the decision log".into(),
        ),
    })
}

/// Kill the coordinator between the phases (or inside phase two), watch
/// the blocking, restart it, watch the recovery. The faults, as reported.
pub async fn run(cx: CaseRun<'_>) -> anyhow::Result<FaultRecord> {
    let d = CoordinatorCrashDials::of(cx.params);
    let (lab, world, case, strategy, variant) = cx.parts();
    let work_ms = d.work_ms;
    let logged = !matches!(
        variant,
        Some(Variant::NoDecisionLog | Variant::NoDecisionLogMidCommit)
    );
    let mid_commit = matches!(
        variant,
        Some(Variant::DecisionLogMidCommit | Variant::NoDecisionLogMidCommit)
    );
    let (pause_at, in_doubt_sides) = if mid_commit {
        (PauseAt::BetweenCommits, 1)
    } else {
        (PauseAt::BeforeCommit, 2)
    };
    let ttl = 2000;
    let dbs = [lab.db_url.clone(), lab.stock_db_url.clone()];
    let redis = RedisNode::start(&lab.dir, "redis", &[], Vec::new()).await?;
    let redis_url = redis.url();
    world.nodes.push(redis);
    let three_pc = strategy == StrategyName::Pg3pc.as_str();
    let mut a_extra = Vec::new();
    if !logged {
        a_extra.push(("SECKILL_TWO_PC_DECISION_LOG".to_owned(), "false".to_owned()));
    }
    let mut b_extra = Vec::new();
    if three_pc {
        let links = start_participants(lab, world, &redis_url, d.participant_timeout_ms).await?;
        a_extra.extend(links.clone());
        b_extra.extend(links);
    }
    start_replicas(
        lab,
        world,
        [
            ("a", Setup::new(&redis_url, ttl).extra(a_extra.clone())),
            ("b", Setup::new(&redis_url, ttl).extra(b_extra)),
        ],
    )
    .await?;
    arm(&world.service(), strategy, work(work_ms)).await?;
    let (injections, crash_ms, lock_wait) = (d.injections, d.down_ms, d.lock_wait_ms);
    case.step(announcement(&d, three_pc, logged, mid_commit));
    let coordinator = Coordinator {
        dbs: &dbs,
        prefix: if three_pc { "seckill3pc" } else { "seckill2pc" },
        pause_at,
        in_doubt_sides,
        lock_wait_ms: lock_wait,
        work_ms,
        crash_ms,
    };
    // A crash not counted (a late kill that caught the next grab, seen 1
    // of 12 in CI) is injected again.
    let mut rounds = inject::UntilProven::new(injections);
    while rounds.another() {
        rounds.record(coordinator.crash_once(lab, world, case, strategy).await?);
    }
    case.proven_by_injections(|proven| {
        format!("{proven} of {injections} crashes left the grab's side(s) prepared in pg_prepared_xacts after replica a was gone")
    });
    Ok(dials::record(
        &d,
        Facts {
            killed: Some("a".to_owned()),
            pause_at: Some(pause_at),
            decision_log: Some(logged && !three_pc),
            participants: Some(three_pc),
            ..Facts::default()
        },
    ))
}

/// The case's first step: the replicas, the dials, where the crash lands.
fn announcement(
    d: &CoordinatorCrashDials,
    three_pc: bool,
    logged: bool,
    mid_commit: bool,
) -> String {
    let (injections, crash_ms, lock_wait) = (d.injections, d.down_ms, d.lock_wait_ms);
    let where_ = if mid_commit {
        "inside phase two (order side committed, stock side prepared)"
    } else {
        "between the phases (both sides prepared)"
    };
    format!(
        "replicas a (the coordinator{}) and b up, lock wait {lock_wait} ms; {injections} injections: 3 buyers on both, then on a only while its next grab stops {where_}; kill -9 a, {crash_ms} ms dead, started again",
        if three_pc {
            format!(
                "; participants of their own, timeout {} ms",
                d.participant_timeout_ms
            )
        } else if logged {
            String::new()
        } else {
            ", no decision log".into()
        }
    )
}

/// `pg-3pc`'s two participants, processes of the case's own with their
/// timeout; the settings that send a replica to them.
pub async fn start_participants(
    lab: &super::lab::Lab,
    world: &mut super::world::World,
    redis_url: &str,
    timeout_ms: u64,
) -> anyhow::Result<Vec<(String, String)>> {
    let mut env = lab.env(&Setup::new(redis_url, 2000));
    env.push(("SECKILL_THREE_PC_TIMEOUT_MS".into(), timeout_ms.to_string()));
    let mut links = vec![(
        "SECKILL_THREE_PC_TIMEOUT_MS".to_owned(),
        timeout_ms.to_string(),
    )];
    for side in ["stock", "order"] {
        let p = procs::Participant::start(&lab.app_bin, &lab.dir, side, env.clone()).await?;
        links.push((
            format!("SECKILL_THREE_PC_{}_PARTICIPANT", side.to_uppercase()),
            p.addr(),
        ));
        world.participants.push(p);
    }
    Ok(links)
}

/// One crash of the coordinator, as a round.
struct Coordinator<'a> {
    dbs: &'a [String; 2],
    /// `seckill2pc` or `seckill3pc`: the gids of the strategy.
    prefix: &'static str,
    pause_at: PauseAt,
    in_doubt_sides: usize,
    lock_wait_ms: u64,
    work_ms: u64,
    crash_ms: u64,
}

impl Coordinator<'_> {
    /// Buyers on both, then on a only with the pause armed; kill a with its
    /// grab in doubt; watch b blocked; start a again and wait for its
    /// recovery; judge the round (its proof, when the crash landed as
    /// meant). Whether it did.
    async fn crash_once(
        &self,
        lab: &super::lab::Lab,
        world: &mut super::world::World,
        case: &mut super::world::Case,
        strategy: StrategyName,
    ) -> anyhow::Result<bool> {
        let (round, targets, b_url) =
            begin_holding_a(lab, world, case, (60_000, self.pause_at, self.work_ms)).await?;
        // A grab a started before the pause does not take it: waiting for
        // the row lock (up to the lock wait), then preparing and logging
        // its decision (an fsync: slow on a loaded machine), its sides can
        // look in doubt for a moment, and commit just before the kill (seen
        // once in CI: one injection of twelve not landed). Let those end
        // first; only then is a prepared set the paused grab's.
        pause(self.lock_wait_ms + 100).await;
        let prepared = wait_prepared(
            self.dbs,
            self.prefix,
            self.in_doubt_sides,
            Duration::from_secs(5),
        )
        .await?;
        let pid = world.replica("a")?.pid().unwrap_or(0);
        world.replica("a")?.kill();
        case.crashed_at = Some(Instant::now());
        let mut window = Window::starting(case, "replica a (the coordinator)", Some("a"));
        let gone = matches!(procs::process_state(pid), None | Some('Z' | 'X'));
        // b buys without the pause.
        let b_service =
            seckill_load::api::Service::new(vec![b_url.clone()], super::lab::TOKEN.into());
        b_service.set_faults(work(self.work_ms)).await?;
        buyers::retarget(&targets, vec![b_url]);
        let busy_before = case.tally.outcome(Outcome::Busy);
        let ordered_before = case.tally.outcome(Outcome::Ordered);
        // What the dead coordinator left, read every 100 ms while it is
        // down: the set sampled before the kill, or the kill came late — a
        // pg-3pc participant committed the paused grab at its timeout and
        // the next grab took the row: caught between its pre-commits, or
        // its pre-commit still on its way to a participant that prepares
        // it after the kill (seen under a saturated CPU: the split, not
        // this fault).
        let down = watch_in_doubt(self.dbs, self.prefix, self.crash_ms).await?;
        let (at_kill, still) = (&down.first, &down.last);
        let busy = case.tally.outcome(Outcome::Busy) - busy_before;
        let sold = case.tally.outcome(Outcome::Ordered) - ordered_before;
        let proven = gone && down.left_exactly(&prepared, self.in_doubt_sides);
        // Stalled: while a was dead, b's buyers got only busy answers.
        window.stalled = Some(busy > 0 && sold == 0);
        if proven {
            window.proof = Some(format!(
                "replica a (pid {pid}) gone with {} side(s) of one grab prepared; {} of them still prepared {} ms later; b: {busy} busy answers, {sold} orders meanwhile",
                prepared.len(),
                still.len(),
                self.crash_ms
            ));
        } else {
            case.step(format!(
                "not proven: process gone {gone}, prepared {prepared:?}, at the kill {at_kill:?}, while down {:?}, still {still:?}, busy {busy}, sold {sold}: not counted",
                down.seen
            ));
        }
        self.restart_and_recover(world, case).await?;
        window.end_ms = case.clock_ms();
        // No switch: the restarted replica read the strategy and faults b
        // published as it started, and a switch would load the stock
        // database again from the product row, over what b sold. b sells
        // a little longer before the round is judged.
        pause(150).await;
        round.end(world, case, strategy, window).await?;
        Ok(proven)
    }

    /// The coordinator comes back under the same instance id and settles
    /// what it left in doubt (said in a step, with how long it took).
    async fn restart_and_recover(
        &self,
        world: &mut super::world::World,
        case: &mut super::world::Case,
    ) -> anyhow::Result<()> {
        let restart = Instant::now();
        world.replica("a")?.restart().await?;
        let left = wait_settled(self.dbs, self.prefix, Duration::from_secs(10)).await?;
        case.step(format!(
            "replica a restarted; {} in {} ms",
            if left.is_empty() {
                "every in-doubt side settled"
            } else {
                "NOT settled"
            },
            restart.elapsed().as_millis(),
        ));
        Ok(())
    }
}

/// The gids of replica a's transactions (`prefix`: the strategy's) still
/// prepared in this run's two databases (`pg_prepared_xacts` lists the
/// whole server: another run's replica a is not this one).
pub async fn in_doubt(urls: &[String; 2], prefix: &str) -> anyhow::Result<Vec<String>> {
    use sqlx::Connection as _;
    let mut all = Vec::new();
    for url in urls {
        let mut conn = sqlx::PgConnection::connect(url).await?;
        let gids: Vec<String> = sqlx::query_scalar(
            "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND gid LIKE $1",
        )
        .bind(format!("{prefix}:a:%"))
        .fetch_all(&mut conn)
        .await?;
        let _ = conn.close().await;
        all.extend(gids);
    }
    all.sort();
    Ok(all)
}

/// What [`watch_in_doubt`] saw while the coordinator was down.
struct Down {
    /// The in-doubt gids at its first reading (at the kill).
    first: Vec<String>,
    /// Every gid in doubt at any reading.
    seen: std::collections::BTreeSet<String>,
    /// The in-doubt gids at its last reading, `for_ms` later.
    last: Vec<String>,
}

impl Down {
    /// Whether the kill left exactly `prepared`: `sides` sides of one grab
    /// (a kill that also caught another grab halfway through its commits
    /// is not this fault), the same at the kill, and no other gid in doubt
    /// at any reading while the coordinator was down.
    fn left_exactly(&self, prepared: &[String], sides: usize) -> bool {
        let grabs = prepared
            .iter()
            .filter_map(|gid| gid.rsplit_once(':').map(|(base, _)| base))
            .collect::<std::collections::BTreeSet<_>>();
        prepared.len() == sides
            && grabs.len() == 1
            && self.first == prepared
            && self.seen.iter().all(|gid| prepared.contains(gid))
    }
}

/// Read the in-doubt gids every 100 ms for `for_ms`.
async fn watch_in_doubt(urls: &[String; 2], prefix: &str, for_ms: u64) -> anyhow::Result<Down> {
    let until = Instant::now() + Duration::from_millis(for_ms);
    let first = in_doubt(urls, prefix).await?;
    let mut seen: std::collections::BTreeSet<String> = first.iter().cloned().collect();
    loop {
        let left = until.saturating_duration_since(Instant::now());
        tokio::time::sleep(left.min(Duration::from_millis(100))).await;
        let now = in_doubt(urls, prefix).await?;
        seen.extend(now.iter().cloned());
        if Instant::now() >= until {
            return Ok(Down {
                first,
                seen,
                last: now,
            });
        }
    }
}

async fn wait_prepared(
    url: &[String; 2],
    prefix: &str,
    sides: usize,
    within: Duration,
) -> anyhow::Result<Vec<String>> {
    let deadline = Instant::now() + within;
    loop {
        let gids = in_doubt(url, prefix).await?;
        // A side that is prepared for a moment between the phases of a
        // grab that is not paused yet: wait until the set stays.
        if gids.len() == sides {
            pause(300).await;
            let again = in_doubt(url, prefix).await?;
            if again == gids {
                return Ok(gids);
            }
        }
        if Instant::now() > deadline {
            return Ok(gids);
        }
        pause(10).await;
    }
}

pub async fn wait_settled(
    url: &[String; 2],
    prefix: &str,
    within: Duration,
) -> anyhow::Result<Vec<String>> {
    let deadline = Instant::now() + within;
    loop {
        let gids = in_doubt(url, prefix).await?;
        if gids.is_empty() || Instant::now() > deadline {
            return Ok(gids);
        }
        pause(20).await;
    }
}

/// A round of three buyers on both replicas; then only replica a buys
/// (the pause is every replica's fault, and b must not take it), and its
/// next grab is held `hold_ms` at `at` (with `work_ms` of work): the grab
/// the coordinator-crash and partition-precommit scenarios strike. The
/// round, its buyers' targets (to move them later) and replica b's URL.
pub(super) async fn begin_holding_a(
    lab: &super::lab::Lab,
    world: &mut super::world::World,
    case: &mut super::world::Case,
    (hold_ms, at, work_ms): (u64, PauseAt, u64),
) -> anyhow::Result<(inject::Round, buyers::Targets, String)> {
    let a_url = world.replica("a")?.url();
    let b_url = world.replica("b")?.url();
    let targets = buyers::targets(vec![a_url.clone(), b_url.clone()]);
    let round = inject::begin_aimed(
        &lab.http,
        world,
        case,
        &[(&targets, 3, Duration::ZERO)],
        200,
    )
    .await?;
    buyers::retarget(&targets, vec![a_url]);
    pause(100).await;
    world
        .service()
        .set_faults(FaultsPatch {
            pause_ms: Some(hold_ms),
            pause_every: Some(1),
            pause_at: Some(at),
            ..work(work_ms)
        })
        .await?;
    Ok((round, targets, b_url))
}
