//! The run of `scenario`: every chosen scenario × strategy × variant, each
//! case in a world of its own, observed (audit, history, lock metrics) and
//! judged; the lab stopped and its database dropped at the end.
//!
//! With `--trials N` each case runs N times, each trial in a fresh world
//! (new replicas, nodes, proxies, history run), and the N verdicts make
//! one: `UNEXPECTED` if any trial was, else `inconclusive` if any trial
//! was, else `as-expected` — all N of them. The case reports `trials`
//! (N runs, k as-expected), every trial's steps (each line prefixed
//! `[trial k/N]`), the summed duration, and the observed figures, reason
//! and first overlaps of its *worst* trial: the first `UNEXPECTED` one,
//! else the first inconclusive one, else the one closest to the other
//! outcome — the least damage (overlaps + oversold + lost updates) where
//! the case was expected to break, the most where it was expected to hold.

use anyhow::Context as _;
use tokio::time::Instant;

use super::case::{CaseResult, Sweep, Trials};
use super::checks::{judge, Checks};
use super::lab::{Lab, Options};
use super::list::Scenario;
use super::observe::observe;
use super::params::Params;
use super::plan::{plan_batch, Planned};
use super::record::Outcomes;
use super::report::{ScenarioReport, Skipped};
use super::world::{Case, CaseRun, World};
use seckill_load::api::Variant;
use seckill_load::api::{Kind, StrategyEntry, StrategyName};
use seckill_load::judge::{CaseVerdict, Expected};

/// The line a run prints once its cases are planned, before the count.
pub const PLANNED: &str = "== cases planned: ";

/// Run every chosen scenario and collect the report.
pub async fn run_all(chosen: &[Scenario], options: &Options) -> anyhow::Result<ScenarioReport> {
    let mut reports = run_batches(&[(chosen.to_vec(), options.clone())]).await?;
    reports.pop().context("no report")
}

/// Run several batches (each its scenarios with its own strategies,
/// variants, dials and sweep; the lab settings — database, binary,
/// `--quick`, `--quiet`, `--trials`, `--jobs` — are the first batch's) as one plan
/// on one set of lanes, and give each batch its report. The debate's
/// rows run this way, so a lane free after one row's last point starts
/// the next row's first.
pub async fn run_batches(
    batches: &[(Vec<Scenario>, Options)],
) -> anyhow::Result<Vec<ScenarioReport>> {
    let started = Instant::now();
    let options = &batches.first().context("no batch to run")?.1;
    let mut lanes = vec![Lab::new(options, 0).await?];
    let mut results = Vec::new();
    let mut skipped: Vec<Vec<Skipped>> = batches.iter().map(|_| Vec::new()).collect();
    let outcome = async {
        let first = &mut lanes[0];
        first.read_strategies().await?;
        let mut plan = Vec::new();
        for (batch, (chosen, options)) in batches.iter().enumerate() {
            plan.extend(plan_batch(first, batch, chosen, options, &mut skipped[batch]).await?);
        }
        seckill_load::progress::planned(plan.len());
        // Read by `make results`, whose bar counts this run's cases.
        seckill_load::progress::line(format!("{PLANNED}{}", plan.len()));
        let runnable = plan.iter().filter(|p| p.not_run.is_none()).count();
        let jobs = options.jobs.clamp(1, runnable.max(1));
        let chosen: Vec<Scenario> = batches.iter().flat_map(|b| b.0.clone()).collect();
        if jobs > 1 {
            // Built now, once: cc must not block the task while another
            // lane times a fault.
            if chosen.iter().any(|s| s.shifts_clocks()) {
                first.clockshift()?;
            }
            if chosen.contains(&Scenario::RedlockRestart) {
                first.powerloss()?;
            }
        }
        for lane in 1..jobs {
            let other = lanes[0].lane(lane).await?;
            lanes.push(other);
        }
        let all: Vec<StrategyName> = plan.iter().map(|p| p.entry.name).collect();
        for lab in &mut lanes {
            lab.start_coordination(&all).await?;
        }
        results = run_plan(&mut lanes, &plan).await?;
        anyhow::Ok(plan)
    }
    .await;
    for lab in &lanes {
        lab.drop_database().await;
    }
    if outcome.is_ok() {
        let _ = std::fs::remove_dir_all(&lanes[0].dir);
    } else {
        eprintln!(
            "seckill-loadgen: replica logs kept in {}",
            lanes[0].dir.display()
        );
    }
    let plan = outcome?;
    let duration_s = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
    let mut reports: Vec<ScenarioReport> = batches
        .iter()
        .zip(skipped)
        .map(|((_, options), skipped)| ScenarioReport {
            tool: "seckill-loadgen".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            quick: options.quick,
            scenarios: Vec::new(),
            skipped,
            duration_s,
            located: Vec::new(),
        })
        .collect();
    for (planned, result) in plan.iter().zip(results) {
        reports[planned.batch].scenarios.push(result);
    }
    Ok(reports)
}

/// Run the plan on the lanes, each lane taking the next case as it gets
/// free; the results in plan order, each curve attached to its points.
async fn run_plan(lanes: &mut [Lab], plan: &[Planned]) -> anyhow::Result<Vec<CaseResult>> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: std::sync::Mutex<Vec<Option<CaseResult>>> =
        std::sync::Mutex::new(plan.iter().map(|_| None).collect());
    let tagged = lanes.len() > 1;
    let work = lanes.iter_mut().map(|lab| async {
        loop {
            let index = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let Some(planned) = plan.get(index) else {
                return anyhow::Ok(());
            };
            let tag = if tagged {
                format!("[case {}] ", index + 1)
            } else {
                String::new()
            };
            let result = run_planned(lab, planned, &tag).await?;
            if let Ok(mut slots) = slots.lock() {
                slots[index] = Some(result);
            }
        }
    });
    for outcome in futures_util::future::join_all(work).await {
        outcome?;
    }
    let mut cases: Vec<CaseResult> = slots
        .into_inner()
        .map_err(|_| anyhow::anyhow!("a lane panicked"))?
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .context("a case has no result")?;
    let mut start = 0;
    while start < cases.len() {
        let same = |p: &&Planned| p.batch == plan[start].batch && p.group == plan[start].group;
        let end = start + plan[start..].iter().take_while(same).count();
        if let Some(key) = &plan[start].sweep {
            let sweep = Sweep::of(key, &cases[start..end]);
            for case in &mut cases[start..end] {
                case.sweep = Some(sweep.clone());
            }
        }
        start = end;
    }
    Ok(cases)
}

/// One planned case with its trials, on `lab`'s lane; its verdict line
/// printed when it ends.
async fn run_planned(lab: &mut Lab, planned: &Planned, tag: &str) -> anyhow::Result<CaseResult> {
    let (quiet, runs) = (lab.options.quiet, lab.options.trials.max(1));
    let Planned {
        scenario,
        entry,
        variant,
        params,
        expected,
        why,
        label,
        not_run,
        ..
    } = planned;
    if let Some(reason) = not_run {
        seckill_load::progress::line(format!("{label}: NOT RUN — {reason}"));
        seckill_load::progress::finished(label);
        return Ok(planned.not_run(reason.clone()));
    }
    seckill_load::progress::started(label);
    if !quiet {
        seckill_load::progress::line(format!("== {tag}{label} (expected: {})", expected.as_str()));
    }
    let mut trials = Vec::new();
    for trial in 1..=runs {
        let prefix = if runs > 1 {
            format!("[trial {trial}/{runs}] ")
        } else {
            String::new()
        };
        let one = Trial {
            scenario: *scenario,
            entry,
            variant: *variant,
            expected: *expected,
            why: why.clone(),
            params,
        };
        let result = run_trial(lab, planned, one, tag, prefix, trial).await;
        if runs > 1 && !quiet {
            seckill_load::progress::line(format!(
                "    {tag}[trial {trial}/{runs}] {}: {}",
                result.verdict.as_str(),
                result.verdict_reason
            ));
        }
        trials.push(result);
    }
    let result = combine(trials);
    let counted = result.trials.map_or(String::new(), |t| {
        format!(" ({} of {} as-expected)", t.as_expected, t.runs)
    });
    seckill_load::progress::line(format!(
        "{:>20} {:<16} {:<20} {:<12} {}{}",
        result.name,
        result.strategy,
        result.variant.map_or("-", Variant::as_str),
        result.verdict.as_str(),
        result.verdict_reason,
        counted
    ));
    seckill_load::progress::finished(label);
    Ok(result)
}

/// One trial of `planned` on `lab`'s lane, bounded by [`case_limit`]: a
/// trial that fails or runs past the limit is recorded `inconclusive`
/// with the reason, its steps, the injections it finished and the logs
/// its processes wrote meanwhile (kept under `OUT/failed/`), and the run
/// goes on.
async fn run_trial(
    lab: &mut Lab,
    planned: &Planned,
    one: Trial<'_>,
    tag: &str,
    prefix: String,
    trial: u32,
) -> CaseResult {
    let mut case = Case::new(lab.options.quiet, prefix);
    case.tag = tag.to_owned();
    let logs = LogMarks::of(&lab.dir);
    let limit = case_limit(&planned.params);
    // A panic inside the case (a bug of ours) is its failure too, not the
    // run's: caught here, the world it started dropped with its future.
    let guarded = futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(run_case(
        lab, one, &mut case,
    )));
    let reason = match tokio::time::timeout(limit, guarded).await {
        Ok(Ok(Ok(result))) => return keep_unexpected(result, &logs, planned, trial),
        // The case's world (replicas, nodes, proxies) is dropped with its
        // future: every process it started is stopped by now.
        Ok(Ok(Err(e))) => format!("the case failed: {e:#}"),
        Ok(Err(panic)) => format!(
            "the case panicked: {}",
            panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)")
        ),
        Err(_) => format!(
            "the case ran past its limit of {} s (its injections' length and dials allow for less; see the steps)",
            limit.as_secs()
        ),
    };
    let label = &planned.label;
    let reason = match logs.keep(&planned.out, &failed_folder(label, trial)) {
        Ok(folder) => format!("{reason}; the logs of its processes: {}", folder.display()),
        Err(e) => format!("{reason}; its logs could not be kept: {e:#}"),
    };
    eprintln!("seckill-loadgen: {label} (trial {trial}): {reason}");
    planned.not_run(reason).unfinished(case)
}

/// One trial of a case: what it runs and what it expects (its [`Case`]
/// carries the labels its steps are printed with: `[trial k/N] `, and
/// `[case k] ` with `--jobs` > 1).
struct Trial<'a> {
    scenario: Scenario,
    entry: &'a StrategyEntry,
    variant: Option<Variant>,
    expected: Expected,
    why: String,
    /// The dials in force.
    params: &'a Params,
}

/// The trials of one case as one result (the rules are in the module's
/// doc); one trial stays as it was, without a `trials` count.
fn combine(mut trials: Vec<CaseResult>) -> CaseResult {
    let runs = u32::try_from(trials.len()).unwrap_or(u32::MAX);
    if runs == 1 {
        return trials.remove(0);
    }
    let as_expected = u32::try_from(
        trials
            .iter()
            .filter(|t| t.verdict == CaseVerdict::AsExpected)
            .count(),
    )
    .unwrap_or(u32::MAX);
    let damage = |t: &CaseResult| {
        let o = &t.observed;
        o.overlaps
            .saturating_add(o.damage.oversold.unsigned_abs())
            .saturating_add(o.damage.lost_updates.unsigned_abs())
    };
    let worst = [CaseVerdict::Unexpected, CaseVerdict::Inconclusive]
        .iter()
        .find_map(|v| trials.iter().position(|t| t.verdict == *v))
        .unwrap_or_else(|| {
            let by_damage = trials.iter().enumerate().map(|(i, t)| (damage(t), i));
            let picked = if trials[0].expected == Expected::Breaks {
                by_damage.min()
            } else {
                by_damage.max()
            };
            picked.map_or(0, |(_, i)| i)
        });
    let steps = trials.iter().flat_map(|t| t.steps.clone()).collect();
    let injections: Vec<_> = trials.iter().flat_map(|t| t.injections.clone()).collect();
    let duration_s = (trials.iter().map(|t| t.duration_s).sum::<f64>() * 100.0).round() / 100.0;
    let mut result = trials.swap_remove(worst);
    result.steps = steps;
    result.duration_s = duration_s;
    if !injections.is_empty() {
        // k of n over every trial's injections: the verdict follows.
        result.outcomes = Some(Outcomes::of(&injections));
        result.injections = injections;
        result.judge_rates();
    }
    result.trials = Some(Trials { runs, as_expected });
    result
}

/// How long one trial of a case may run before it is stopped and recorded
/// `inconclusive`: far beyond what its dials ask (each injection's round
/// is bounded by the TTL, the work, the pauses and the lock wait, a few
/// seconds apart from the start of the world), so only a hang reaches it.
fn case_limit(params: &Params) -> std::time::Duration {
    // Not every scenario has a TTL or counted injections (a fixed fault).
    let ttl = params.ttl_ms().unwrap_or(0);
    let injections = params.injections().unwrap_or(1).max(1);
    let per_injection_ms = ttl.saturating_mul(4) + params.max_ms() + 10_000;
    std::time::Duration::from_millis(120_000 + injections.saturating_mul(per_injection_ms))
}

/// A trial that ran to its end but not as predicted (`UNEXPECTED`, or
/// `inconclusive`) keeps its processes' logs as a failed one does: the
/// participants', replicas' and nodes' own account of the round that broke
/// is the trace a skeptic asks for. Its last step names the folder.
fn keep_unexpected(
    mut result: CaseResult,
    logs: &LogMarks,
    planned: &Planned,
    trial: u32,
) -> CaseResult {
    if matches!(
        result.verdict,
        CaseVerdict::Unexpected | CaseVerdict::Inconclusive
    ) {
        let step = match logs.keep(&planned.out, &failed_folder(&planned.label, trial)) {
            Ok(folder) => format!("the logs of its processes: {}", folder.display()),
            Err(e) => format!("its logs could not be kept: {e:#}"),
        };
        result.steps.push(step);
    }
    result
}

/// `failed/<scenario-strategy-variant-point>-trial-N`: where a failed
/// case's logs are kept, under the report's folder.
fn failed_folder(label: &str, trial: u32) -> String {
    let slug: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '=' {
                c
            } else {
                '-'
            }
        })
        .collect::<String>()
        .split('-')
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    format!("failed/{slug}-trial-{trial}")
}

/// The length of every log in a lane's folder when a case began (its
/// processes append to the lane's logs), so a failed case keeps only what
/// it wrote.
struct LogMarks {
    dir: std::path::PathBuf,
    lengths: Vec<(std::path::PathBuf, u64)>,
}

impl LogMarks {
    fn of(dir: &std::path::Path) -> Self {
        Self {
            dir: dir.to_owned(),
            lengths: Self::logs(dir)
                .into_iter()
                .map(|p| {
                    let len = std::fs::metadata(&p).map_or(0, |m| m.len());
                    (p, len)
                })
                .collect(),
        }
    }

    fn logs(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "log"))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Copy what each log gained since [`LogMarks::of`] into
    /// `out/folder/`; the folder.
    fn keep(&self, out: &std::path::Path, folder: &str) -> anyhow::Result<std::path::PathBuf> {
        use std::io::{Read as _, Seek as _};
        let target = out.join(folder);
        std::fs::create_dir_all(&target).with_context(|| format!("create {}", target.display()))?;
        for path in Self::logs(&self.dir) {
            let from = self
                .lengths
                .iter()
                .find(|(p, _)| *p == path)
                .map_or(0, |(_, len)| *len);
            let mut file = std::fs::File::open(&path)?;
            file.seek(std::io::SeekFrom::Start(from))?;
            let mut gained = Vec::new();
            file.read_to_end(&mut gained)?;
            if let Some(name) = path.file_name().filter(|_| !gained.is_empty()) {
                std::fs::write(target.join(name), gained)?;
            }
        }
        Ok(target)
    }
}

async fn run_case(lab: &mut Lab, trial: Trial<'_>, case: &mut Case) -> anyhow::Result<CaseResult> {
    let Trial {
        scenario,
        entry,
        variant,
        expected,
        why,
        params,
    } = trial;
    let strategy = entry.name;
    let mut world = World::default();
    lab.lock_wait_ms = params.lock_wait_ms().unwrap_or(0);
    let faults = scenario
        .run(CaseRun {
            lab,
            world: &mut world,
            case,
            strategy,
            variant,
            params,
        })
        .await?;
    let (mut observed, history) = observe(&world, case, strategy).await?;
    if !case.rounds.is_empty() {
        // The case's figures are its rounds' (each reset the product); the
        // lock metrics, read once now, count every round.
        let whole = observed;
        observed = super::inject::sum(&case.rounds);
        observed.lock_retries = whole.lock_retries;
        observed.mean_wait_ms = whole.mean_wait_ms;
        observed.contended |= whole.contended;
    }
    let guarantee = scenario.guarantee(entry.kind, params);
    let checks = Checks {
        fault_landed: case.fault_landed,
        crash: matches!(scenario, Scenario::CrashHolder | Scenario::CoordinatorCrash),
        outage: scenario == Scenario::DependencyLoss,
        locks: entry.kind != Kind::NotALock,
    };
    let (verdict, verdict_reason) = judge(checks, guarantee, expected, &observed);
    let measured = !case.injections.is_empty();
    let mut result = CaseResult {
        name: scenario,
        strategy,
        variant,
        faults: Some(faults),
        expected,
        why,
        guarantee,
        observed,
        verdict,
        verdict_reason,
        steps: std::mem::take(&mut case.steps),
        first_overlaps: history.first_overlaps,
        sections: world
            .service()
            .sections()
            .await
            .map(|body| body.sections)
            .unwrap_or_default(),
        duration_s: (case.started.elapsed().as_secs_f64() * 100.0).round() / 100.0,
        trials: None,
        params: params.in_force(),
        outcomes: measured.then(|| Outcomes::of(&case.injections)),
        injections: std::mem::take(&mut case.injections),
        standing: None,
        sweep: None,
        reason: None,
        entry: Some(entry.clone()),
    };
    if measured {
        result.judge_rates();
    }
    Ok(result)
}
