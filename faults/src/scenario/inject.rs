//! Injections: a fault injected a fixed number of times in one world,
//! each judged on its own.
//!
//! A trial injects its fault `injections` times, whatever the earlier
//! ones showed — nothing repeats "until it shows". Each injection is a
//! round of its own in the case's world ([`Round`]): the product reset to
//! its stock, a new history run, a new tally of the buyers' answers,
//! buyers started; then the scenario injects and records the window (its
//! target, its start and end on the case's clock, the proof it landed);
//! the buyers stop with every grab answered, and the round is judged for
//! two outcomes:
//! - **exclusion broken**: the history shows an overlap involving the
//!   faulted holder (a section of the target entered while another was
//!   inside, or another entered while one of the target's was);
//! - **data damaged**: the audit and the acknowledgement check find a
//!   committed stale write (lost update, oversold unit, negative stock,
//!   duplicate, an acknowledged order missing, …).
//!
//! An injection that was not proven to land is kept in the record and
//! left out of k of n.

use seckill_load::api::StrategyName;
use std::sync::Arc;
use std::time::Duration;

use super::buyers::{self, Buyers};
use super::observe::observe_round;
use super::record::Observed;
pub use super::record::{Injection, Window};
use super::world::{pause, Case, World};
use seckill_load::api::HistoryReport;
use seckill_load::judge::{self, Guarantee};
use seckill_load::load::Live;

impl Window {
    /// A window beginning now on the case's clock, not proven yet.
    pub fn starting(case: &Case, target: &str, holder: Option<&str>) -> Self {
        let start_ms = case.clock_ms();
        Self {
            target: target.to_owned(),
            holder: holder.map(str::to_owned),
            start_ms,
            end_ms: start_ms,
            proof: None,
            stalled: None,
            refused: None,
        }
    }
}

/// Replica `name`'s process, stopped by its own scenario hook.
#[derive(Debug)]
pub struct Stopped {
    /// Its pid.
    pub pid: u32,
    /// The window, from the moment it read `T`.
    pub window: Window,
}

/// Arm replica `name`'s hook at `at` and wait up to 5 s for its process
/// to read state `T` (its next section reached the point and stopped
/// itself). `None`: it never did — the hook is disarmed again, so it
/// cannot fire later unwatched.
pub async fn stop_replica(
    world: &mut World,
    case: &mut Case,
    name: &str,
    at: seckill_load::api::FreezeAt,
) -> anyhow::Result<Option<Stopped>> {
    use anyhow::Context as _;
    let replica = world.replica(name)?;
    let hook = seckill_load::api::Service::new(vec![replica.url()], super::lab::TOKEN.into());
    let pid = replica
        .pid()
        .with_context(|| format!("replica {name} is not running"))?;
    hook.arm_freeze(at).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while tokio::time::Instant::now() < deadline {
        if crate::procs::process_state(pid) == Some('T') {
            return Ok(Some(Stopped {
                pid,
                window: Window::starting(case, &format!("replica {name}"), Some(name)),
            }));
        }
        pause(1).await;
    }
    hook.disarm_freeze().await?;
    case.step(format!(
        "replica {name} never stopped within 5 s (no section reached {at:?}): not counted"
    ));
    Ok(None)
}

impl Stopped {
    /// Hold it stopped until `hold_ms` after it stopped, then `SIGCONT`;
    /// the window, ended now.
    pub async fn hold_and_continue(
        self,
        case: &Case,
        hold_ms: u64,
    ) -> anyhow::Result<(u32, Window)> {
        let mut window = self.window;
        pause(hold_ms.saturating_sub(case.clock_ms() - window.start_ms)).await;
        crate::procs::signal(self.pid, "CONT")?;
        window.end_ms = case.clock_ms();
        Ok((self.pid, window))
    }
}

/// The rounds of a scenario whose injection can miss (its proof decided
/// before the round is judged): rounds go on until `injections` are proven,
/// at most a third of `injections` more than that, so a trial has its
/// fixed number of proven injections whenever it can — else 0 of 11 reads
/// `undecided` against the 25 % line. Used as `while rounds.another() {
/// …; rounds.record(proven) }`.
#[derive(Debug, Clone, Copy)]
pub struct UntilProven {
    injections: u64,
    tried: u64,
    proven: u64,
}

impl UntilProven {
    pub fn new(injections: u64) -> Self {
        Self {
            injections,
            tried: 0,
            proven: 0,
        }
    }

    /// Whether to inject again: fewer than `injections` proven, and the
    /// third more not spent.
    pub fn another(&self) -> bool {
        self.proven < self.injections && self.tried < self.injections + self.injections.div_ceil(3)
    }

    /// One round injected, proven to have landed or not.
    pub fn record(&mut self, proven: bool) {
        self.tried += 1;
        self.proven += u64::from(proven);
    }
}

/// After a fault has ended: `work_ms` more of the round's load, so a lock
/// that expires under the faulted holder's remaining section (it began
/// before the fault) still meets a waiter. Whatever entered meanwhile is
/// answered before the round is judged ([`Round::end`] awaits every grab
/// in flight), so nothing longer is needed.
pub async fn settle(work_ms: u64) {
    pause(work_ms).await;
}

/// One round of a case: a fresh stock, history run and tally, and buyers.
#[derive(Debug)]
pub struct Round {
    loads: Vec<Buyers>,
}

/// A round with `users` buyers over every running replica.
pub async fn begin(
    http: &reqwest::Client,
    world: &World,
    case: &mut Case,
    users: usize,
    warm_ms: u64,
) -> anyhow::Result<Round> {
    let everywhere = buyers::targets(world.urls());
    begin_aimed(
        http,
        world,
        case,
        &[(&everywhere, users, Duration::ZERO)],
        warm_ms,
    )
    .await
}

/// A round with `users` buyers split evenly over the running replicas,
/// each buyer pinned to its replica: a side whose grabs fail fast (a `503`
/// while its nodes are down) keeps its buyers trying, instead of sending
/// them to wait in the other side's queue.
pub async fn begin_pinned(
    http: &reqwest::Client,
    world: &World,
    case: &mut Case,
    users: usize,
    warm_ms: u64,
) -> anyhow::Result<Round> {
    begin_pinned_thinking(http, world, case, (users, Duration::ZERO), warm_ms).await
}

/// [`begin_pinned`] with each buyer waiting `think` after an answer
/// before its next grab: `(users, think)`.
pub async fn begin_pinned_thinking(
    http: &reqwest::Client,
    world: &World,
    case: &mut Case,
    (users, think): (usize, Duration),
    warm_ms: u64,
) -> anyhow::Result<Round> {
    let urls = world.urls();
    let sides: Vec<buyers::Targets> = urls.iter().cloned().map(buyers::retargeted).collect();
    let each = users.div_ceil(sides.len().max(1)).max(1);
    let loads: Vec<(&buyers::Targets, usize, Duration)> =
        sides.iter().map(|t| (t, each, think)).collect();
    begin_aimed(http, world, case, &loads, warm_ms).await
}

/// A round with loads aimed by the scenario: `(targets, buyers, think)`
/// each. The product is reset, a history run started and the tally made
/// new before any buyer starts; `warm_ms` of load before the fault.
pub async fn begin_aimed(
    http: &reqwest::Client,
    world: &World,
    case: &mut Case,
    loads: &[(&buyers::Targets, usize, Duration)],
    warm_ms: u64,
) -> anyhow::Result<Round> {
    let service = world.service();
    service.reset(1, 1000).await?;
    service.history_start().await?;
    case.tally = Arc::new(Live::default());
    let loads = loads
        .iter()
        .map(|(targets, users, think)| {
            buyers::start(http, targets, *users, *think, &case.next_user, &case.tally)
        })
        .collect();
    pause(warm_ms).await;
    Ok(Round { loads })
}

impl Round {
    /// Buyers started mid-round (a rush after the fault): stopped, every
    /// grab answered, with the round's own.
    pub fn add(&mut self, load: Buyers) {
        self.loads.push(load);
    }

    /// Stop the buyers (every grab answered), read what the round left
    /// and judge the injection: recorded in the case (its `injections`
    /// and `rounds`), and written as a step.
    pub async fn end(
        self,
        world: &World,
        case: &mut Case,
        strategy: StrategyName,
        window: Window,
    ) -> anyhow::Result<()> {
        for load in self.loads {
            load.stop().await;
        }
        let (observed, history) = observe_round(world, case, strategy).await?;
        let involved = window
            .holder
            .as_deref()
            .is_none_or(|holder| involves(&history, holder));
        let exclusion_broken = observed.overlaps > 0 && involved;
        let breaches = observed.evidence().breaches(Guarantee::Data);
        let trace = if exclusion_broken || !breaches.is_empty() {
            Some(trace(world, &history).await)
        } else {
            None
        };
        let injection = Injection {
            target: window.target,
            holder: window.holder,
            start_ms: window.start_ms,
            end_ms: window.end_ms,
            start_unix_ms: Some(case.started_unix_ms + window.start_ms),
            end_unix_ms: Some(case.started_unix_ms + window.end_ms),
            proof: window.proof,
            exclusion_broken,
            data_damaged: !breaches.is_empty(),
            damage: judge::list(&breaches),
            overlaps: observed.overlaps,
            orders: observed.orders,
            stalled: window.stalled,
            refused: window.refused,
            trace,
        };
        let line = format!(
            "injection {}: {}exclusion {}, data {}{}",
            case.injections.len() + 1,
            if injection.proof.is_some() {
                ""
            } else {
                "NOT LANDED (not counted) — "
            },
            if exclusion_broken { "BROKEN" } else { "held" },
            if injection.data_damaged {
                "DAMAGED: "
            } else {
                "exact"
            },
            injection.damage
        );
        let line = match injection.stalled {
            Some(true) => format!("{line}; STALLED: nobody bought again"),
            Some(false) => format!("{line}; sold again"),
            None => line,
        };
        case.step(line);
        case.injections.push(injection);
        case.rounds.push(observed);
        Ok(())
    }
}

/// Whether an overlap of the history involves a section of `holder`.
/// The counterexample of a round that broke something: its overlapping
/// sections, first overlaps, audit row and orders, read now (the round's
/// history run and orders are still the current ones).
async fn trace(world: &World, history: &HistoryReport) -> super::record::Trace {
    use super::record::Trace;
    let service = world.service();
    let mut sections: Vec<seckill_load::api::Section> = service
        .sections()
        .await
        .map(|body| body.sections.into_iter().filter(|s| s.overlap).collect())
        .unwrap_or_default();
    let left_out = sections.len().saturating_sub(Trace::KEPT);
    sections.truncate(Trace::KEPT);
    let audit = service
        .audit()
        .await
        .ok()
        .and_then(|a| a.products.into_iter().find(|r| r.product_id == 1));
    let orders = service.orders(1).await.ok().map(|mut orders| {
        orders.truncate(Trace::KEPT);
        orders
    });
    Trace {
        sections,
        sections_left_out: left_out,
        first_overlaps: history.first_overlaps.clone(),
        audit,
        orders,
    }
}

fn involves(history: &HistoryReport, holder: &str) -> bool {
    let prefix = format!("{holder}:");
    history
        .first_overlaps
        .iter()
        .any(|o| o.entered.starts_with(&prefix) || o.inside.iter().any(|m| m.starts_with(&prefix)))
}

/// The rounds of a case as one [`Observed`]: counts summed, the
/// acknowledgement checks summed, contention seen in any round.
pub fn sum(rounds: &[Observed]) -> Observed {
    let mut total = Observed::default();
    let mut accounting = Some(seckill_load::load::Accounting::default());
    for o in rounds {
        total.overlaps += o.overlaps;
        total.max_holders = total.max_holders.max(o.max_holders);
        total.damage = seckill_load::api::Damage::sum([&total.damage, &o.damage]);
        total.negative_stock |= o.negative_stock;
        total.rejected += o.rejected;
        total.busy += o.busy;
        total.orders += o.orders;
        total.unavailable += o.unavailable;
        total.errors += o.errors;
        total.entries += o.entries;
        total.history_errors += o.history_errors;
        total.stale += o.stale;
        total.lock_retries = total.lock_retries.max(o.lock_retries);
        total.mean_wait_ms = total.mean_wait_ms.max(o.mean_wait_ms);
        total.contended |= o.contended;
        total.recovered_after_ms = total.recovered_after_ms.max(o.recovered_after_ms);
        accounting = match (accounting, o.accounting) {
            (Some(a), Some(b)) => Some(add(a, b)),
            _ => None,
        };
    }
    total.accounting = if rounds.is_empty() { None } else { accounting };
    total
}

fn add(
    a: seckill_load::load::Accounting,
    b: seckill_load::load::Accounting,
) -> seckill_load::load::Accounting {
    let mut sum = a;
    sum.acknowledged += b.acknowledged;
    sum.acknowledged_missing += b.acknowledged_missing;
    sum.unacknowledged_present += b.unacknowledged_present;
    sum.indeterminate.found += b.indeterminate.found;
    sum.indeterminate.not_found += b.indeterminate.not_found;
    sum.bounds.sold_units += b.bounds.sold_units;
    sum.bounds.acknowledged_units += b.bounds.acknowledged_units;
    sum.bounds.attempted_units += b.bounds.attempted_units;
    sum.bounds.products_out += b.bounds.products_out;
    sum
}

#[cfg(test)]
mod tests {
    use super::UntilProven;

    /// How many rounds run when each round's proof comes from `landed`.
    fn rounds(injections: u64, mut landed: impl FnMut(u64) -> bool) -> (u64, u64) {
        let (mut rounds, mut tried, mut proven) = (UntilProven::new(injections), 0, 0);
        while rounds.another() {
            let yes = landed(tried);
            rounds.record(yes);
            tried += 1;
            proven += u64::from(yes);
        }
        (tried, proven)
    }

    #[test]
    fn rounds_stop_at_the_injections_proven_or_a_third_more_tried() {
        assert_eq!(rounds(12, |_| true), (12, 12));
        // One miss: one more round, and the trial has its 12.
        assert_eq!(rounds(12, |i| i != 3), (13, 12));
        // Never proven: 12 and a third more, then it stops short.
        assert_eq!(rounds(12, |_| false), (16, 0));
        assert_eq!(rounds(3, |_| false), (4, 0));
    }
}
