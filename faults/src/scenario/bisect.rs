//! The run of `scenario NAME --locate KEY=LO..HI`: both ends of the range
//! for every strategy × variant, then the midpoint of every bracket still
//! too wide, round after round, each round's probes side by side on the
//! lanes (the rules are [`super::locate`]'s).

use anyhow::Context as _;
use seckill_load::api::StrategyName;

use super::case::CaseResult;
use super::lab::Options;
use super::list::Scenario;
use super::locate::{self, Locate, Located, Probe};
use super::report::ScenarioReport;
use super::runner;
use seckill_load::api::Variant;

/// One line being located: a scenario × strategy × variant, its probes.
struct Line {
    scenario: Scenario,
    strategy: StrategyName,
    variant: Option<Variant>,
    /// Its options: one strategy, one variant, no sweep.
    options: Options,
    /// Each probe's value (as run) and case.
    cases: Vec<(String, CaseResult)>,
}

impl Line {
    fn probes(&self, key: &str) -> Vec<Probe> {
        self.cases
            .iter()
            .map(|(value, case)| Probe::of(case, key, value))
            .collect()
    }

    /// The outcome its cases are judged on.
    fn outcome(&self) -> super::record::Outcome {
        let (_, first) = &self.cases[0];
        first
            .outcomes
            .map_or(super::record::Outcome::ExclusionBroken, |o| {
                o.judged(first.guarantee).0
            })
    }

    fn ttl_ms(&self) -> u64 {
        self.cases[0].1.params.u64("ttl_ms").unwrap_or(1000)
    }
}

/// Locate `locate.key` for every strategy × variant of `scenario`: the
/// report holds every probe's case (by line, then value) and each line's
/// [`Located`].
pub async fn run(
    scenario: Scenario,
    options: &Options,
    locate: &Locate,
) -> anyhow::Result<ScenarioReport> {
    let started = std::time::Instant::now();
    let key = locate.key.as_str();
    let unit = locate::unit_of(scenario, key)
        .with_context(|| format!("{} has no dial {key}", scenario.name()))?;
    let mut ends = options.clone();
    ends.sweep = Some((key.to_owned(), vec![locate.lo.clone(), locate.hi.clone()]));
    let mut report = runner::run_batches(&[(vec![scenario], ends)])
        .await?
        .pop()
        .context("no report")?;
    let mut lines = lines_of(
        std::mem::take(&mut report.scenarios),
        scenario,
        options,
        key,
    )?;
    narrow(&mut lines, scenario, options, key, unit).await?;
    for line in &mut lines {
        line.cases
            .sort_by(|a, b| probe_value(&a.1, key).total_cmp(&probe_value(&b.1, key)));
        let lo = probe_value(&line.cases[0].1, key);
        let hi = line
            .cases
            .last()
            .map_or(lo, |(_, case)| probe_value(case, key));
        let model = locate::case_model_flips(&line.cases[0].1, key, lo, hi, unit);
        let located = Located::of(
            line.scenario,
            line.strategy,
            line.variant,
            key,
            line.outcome(),
            locate::tolerance(key, unit, line.ttl_ms()),
            line.probes(key),
            model,
        );
        seckill_load::progress::line(format!(
            "{} · {}{}: {}",
            scenario.name(),
            line.strategy,
            line.variant.map(|v| format!(" · {v}")).unwrap_or_default(),
            located.summary
        ));
        report.located.push(located);
    }
    report.scenarios = lines
        .into_iter()
        .flat_map(|line| line.cases.into_iter().map(|(_, case)| case))
        .collect();
    // The whole bisection's time, not its first round's.
    report.duration_s = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
    Ok(report)
}

/// Options for one probe of a line: the line's own with the dial at
/// `value`, its report in `OUT/probe-<value>/`.
pub fn probe_options(line: &Options, key: &str, value: &str) -> Options {
    let mut options = line.clone();
    options.sweep = Some((key.to_owned(), vec![value.to_owned()]));
    options.out = line.out.join(format!("probe-{key}-{value}"));
    options
}

/// The ends' cases, one line per strategy × variant, each with options
/// of its own (one strategy, one variant, no sweep, its own folder).
fn lines_of(
    cases: Vec<CaseResult>,
    scenario: Scenario,
    options: &Options,
    key: &str,
) -> anyhow::Result<Vec<Line>> {
    let mut lines: Vec<Line> = Vec::new();
    for case in cases {
        let value = case.swept_value(key)?;
        let mut case = case;
        case.sweep = None;
        match lines
            .iter_mut()
            .find(|l| l.strategy == case.strategy && l.variant == case.variant)
        {
            Some(line) => line.cases.push((value, case)),
            None => {
                let mut own = options.clone();
                own.strategies = vec![case.strategy];
                own.variants = case.variant.into_iter().collect();
                own.sweep = None;
                own.out = options.out.join(format!(
                    "{}-{}{}",
                    scenario.name(),
                    case.strategy,
                    case.variant.map(|v| format!("-{v}")).unwrap_or_default()
                ));
                lines.push(Line {
                    scenario,
                    strategy: case.strategy,
                    variant: case.variant,
                    options: own,
                    cases: vec![(value, case)],
                });
            }
        }
    }
    Ok(lines)
}

/// Probe the midpoint of every bracket still too wide, round after round,
/// each round's probes side by side on the lanes, until none is left.
async fn narrow(
    lines: &mut [Line],
    scenario: Scenario,
    options: &Options,
    key: &str,
    unit: super::params::Unit,
) -> anyhow::Result<()> {
    loop {
        let mut batches = Vec::new();
        let mut owners = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            if line.cases.iter().any(|(_, c)| c.outcomes.is_none()) {
                continue;
            }
            let tolerance = locate::tolerance(key, unit, line.ttl_ms());
            for value in locate::next_values(&line.probes(key), line.outcome(), unit, tolerance) {
                batches.push((vec![scenario], probe_options(&line.options, key, &value)));
                owners.push((i, value));
            }
        }
        if batches.is_empty() {
            return Ok(());
        }
        if !options.quiet {
            let values: Vec<&str> = owners.iter().map(|(_, v)| v.as_str()).collect();
            seckill_load::progress::line(format!("== locate {key}: probing {}", values.join(", ")));
        }
        let reports = runner::run_batches(&batches).await?;
        for (report, (_, options)) in reports.iter().zip(&batches) {
            report.write(&options.out)?;
        }
        for ((line, value), report) in owners.into_iter().zip(reports) {
            for mut case in report.scenarios {
                case.sweep = None;
                lines[line].cases.push((value.clone(), case));
            }
        }
    }
}

fn probe_value(case: &CaseResult, key: &str) -> f64 {
    case.params.f64(key).unwrap_or(f64::NAN)
}
