//! The plan of a `scenario` run, made before any case runs: every scenario ×
//! strategy × variant at every point of the sweep, with its dials, its
//! prediction, its label, and why it cannot run here (if it cannot).

use super::case::CaseResult;
use super::lab::{Lab, Options};
use super::list::{shared_lock, Scenario};
use super::params::{self, Params};
use super::report::Skipped;
use seckill_load::api::{StrategyEntry, StrategyName, Variant};
use seckill_load::judge::Expected;

/// One case of the run, planned before any runs: a scenario × strategy
/// × variant at one point of the sweep, with its dials and prediction.
pub(super) struct Planned {
    /// Its batch (its report).
    pub(super) batch: usize,
    /// Its batch's report folder (`--out`): where its logs are kept when
    /// it fails (a lane's lab was made with the first batch's options).
    pub(super) out: std::path::PathBuf,
    /// The case's curve: every point of one scenario × strategy × variant
    /// (numbered within the batch).
    pub(super) group: usize,
    /// The dial of that curve (`--sweep`).
    pub(super) sweep: Option<String>,
    pub(super) scenario: Scenario,
    pub(super) entry: StrategyEntry,
    pub(super) variant: Option<Variant>,
    pub(super) params: Params,
    pub(super) expected: Expected,
    pub(super) why: String,
    /// `scenario · strategy · variant · key=value`.
    pub(super) label: String,
    /// Why it cannot run here (reported `not-run`).
    pub(super) not_run: Option<String>,
}

impl Planned {
    /// Its record when it did not run, or did not finish: `reason` why.
    pub(super) fn not_run(&self, reason: String) -> CaseResult {
        CaseResult::not_run(
            self.scenario,
            &self.entry,
            self.variant,
            &self.params,
            self.expected,
            self.why.clone(),
            reason,
        )
    }
}

/// Every case of the run, in report order: each chosen scenario × strategy
/// × variant at every point of the sweep (one point without `--sweep`).
/// A strategy the scenario does not aim at is skipped (once, with the
/// reason); one that cannot run here is planned `not-run`.
pub(super) async fn plan_batch(
    lab: &Lab,
    batch: usize,
    chosen: &[Scenario],
    options: &Options,
    skipped: &mut Vec<Skipped>,
) -> anyhow::Result<Vec<Planned>> {
    let points: Vec<Option<(String, String)>> = match &options.sweep {
        Some((key, values)) => values
            .iter()
            .map(|v| Some((key.clone(), v.clone())))
            .collect(),
        None => vec![None],
    };
    let mut planned = Vec::new();
    let mut group = 0;
    for &scenario in chosen {
        for strategy in strategies_of(lab, scenario, options) {
            let entry = lab.strategy(strategy)?.clone();
            // Asked once per strategy, at its first case (for MariaDB, a
            // connection attempt).
            let mut not_run: Option<Option<String>> = None;
            let wanted = |v: &Option<Variant>| {
                options.variants.is_empty() || v.is_some_and(|v| options.variants.contains(&v))
            };
            let variants = scenario.variants_or_none();
            for variant in variants.iter().copied().filter(wanted) {
                group += 1;
                for point in &points {
                    let params = case_params(scenario, strategy, variant, options, point.clone())
                        .map_err(|e| anyhow::anyhow!(e))?;
                    let (expected, why) = match scenario.expect(&entry, variant, &params) {
                        Ok(e) => e,
                        Err(reason) => {
                            if Some(&variant) == variants.first() && point == &points[0] {
                                skipped.push(Skipped {
                                    name: scenario.name().to_owned(),
                                    strategy,
                                    reason,
                                });
                            }
                            continue;
                        }
                    };
                    if not_run.is_none() {
                        not_run = Some(cannot_run(lab, &entry).await);
                    }
                    planned.push(Planned {
                        batch,
                        out: options.out.clone(),
                        group,
                        sweep: options.sweep.as_ref().map(|(key, _)| key.clone()),
                        scenario,
                        label: case_label(scenario, strategy, variant, point.as_ref()),
                        not_run: not_run.clone().flatten(),
                        entry: entry.clone(),
                        variant,
                        params,
                        expected,
                        why,
                    });
                }
            }
        }
    }
    Ok(planned)
}

/// The dials of one case, in the order they apply (later wins):
/// `--quick`'s, the variant's, those the strategy needs, the user's
/// `--set`s, then the sweep's point.
pub fn case_params(
    scenario: Scenario,
    strategy: StrategyName,
    variant: Option<Variant>,
    options: &Options,
    point: Option<(String, String)>,
) -> Result<Params, String> {
    let mut sets: Vec<(String, String)> = if options.quick {
        params::owned(scenario.quick_sets())
    } else {
        Vec::new()
    };
    sets.extend(params::owned(scenario.variant_sets(variant)));
    sets.extend(scenario.implied_sets(strategy, &options.sets));
    sets.extend(options.sets.iter().cloned());
    sets.extend(point);
    Params::new(scenario.name(), scenario.params(), &sets)
}

/// Why `entry` cannot run here, if it cannot. The probe replica that
/// listed the strategies had no Redlock nodes, etcd or ZooKeeper (each
/// case starts its own), so only what the lab cannot supply counts: a
/// PostgreSQL without prepared transactions (pg-2pc), no MariaDB.
async fn cannot_run(lab: &Lab, entry: &StrategyEntry) -> Option<String> {
    let strategy = entry.name;
    if entry.is(StrategyName::MysqlGetLock) {
        let addr = lab.coordination_addr(strategy).ok().flatten()?;
        let reached = tokio::time::timeout(
            std::time::Duration::from_secs(2),
            tokio::net::TcpStream::connect(addr),
        )
        .await
        .is_ok_and(|c| c.is_ok());
        return (!reached).then(|| {
            format!(
                "no MariaDB/MySQL answers at {addr} (--mysql-url / SECKILL_MYSQL_URL): start one, or leave mysql-get-lock out with --strategies"
            )
        });
    }
    let supplied = [
        StrategyName::Redlock,
        StrategyName::EtcdLease,
        StrategyName::ZkEphemeralSeq,
    ];
    if entry.available || supplied.into_iter().any(|s| entry.is(s)) {
        return None;
    }
    Some(format!(
        "{strategy} is unavailable here: {}",
        entry
            .unavailable_reason
            .as_deref()
            .unwrap_or("the service gave no reason")
    ))
}

/// `scenario · strategy · variant · key=value`, as the lines say it.
fn case_label(
    scenario: Scenario,
    strategy: StrategyName,
    variant: Option<Variant>,
    point: Option<&(String, String)>,
) -> String {
    let mut label = format!("{} · {strategy}", scenario.name());
    if let Some(variant) = variant {
        label.push_str(&format!(" · {variant}"));
    }
    if let Some((key, value)) = point {
        label.push_str(&format!(" · {key}={value}"));
    }
    label
}

/// The strategies a scenario runs: `--strategies`, else its defaults —
/// its list, or every strategy of the service whose kind it aims at.
fn strategies_of(lab: &Lab, scenario: Scenario, options: &Options) -> Vec<StrategyName> {
    if !options.strategies.is_empty() {
        return options.strategies.clone();
    }
    if scenario.every_shared_lock() {
        return lab
            .listed
            .iter()
            .flat_map(|listed| &listed.strategies)
            .filter(|s| shared_lock(s.kind))
            .map(|s| s.name)
            .collect();
    }
    scenario.strategies().to_vec()
}
