//! The side-by-side report of `run`/`compare`: one [`Run`] per strategy,
//! written as a terminal table and Markdown (`tables.rs`), JSON (schema in
//! the README, keys of the design's wire shapes kept) and one
//! self-contained HTML page ([`html`]) with SVG charts (`charts.rs`).

mod charts;
pub mod html;
mod tables;
pub mod threshold;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::api::{AuditRow, Damage, Faults, Kind, OverlapEvent, Safety, Section};
use crate::judge::RunVerdict;
use crate::load::Accounting;
use crate::load::{Outcome, Workload};

/// Lock figures: deltas of the replicas' `/metrics` over the run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LockFigures {
    pub attempts: u64,
    pub retries: u64,
    pub acquire_wait_p99_ms: Option<f64>,
    pub hold_p99_ms: Option<f64>,
    pub renewals: u64,
    pub lost: u64,
    pub releases_not_owner: u64,
    pub fence_rejections: u64,
    pub redlock_quorum_failures: u64,
}

/// How the run's orders were batched (from the service's
/// `seckill_order_batch_*` histograms, and each grab's exact
/// `Server-Timing: batch;dur`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BatchFigures {
    /// Batches committed (or failed) during the run.
    pub batches: u64,
    /// Orders per batch, on average.
    pub mean_size: f64,
    /// Median and 99th percentile batch size (bucket-interpolated).
    pub p50_size: Option<f64>,
    pub p99_size: Option<f64>,
    /// What batching added to a grab: the time its order waited for its
    /// batch to start, exact.
    pub wait_p50_ms: Option<f64>,
    pub wait_p99_ms: Option<f64>,
    /// One batch's `INSERT` and commit, 99th percentile (bucket-interpolated).
    pub commit_p99_ms: Option<f64>,
}

impl BatchFigures {
    /// One line: `orders in 812 batches of 7.6 on average (p50 6, p99 15); ...`.
    pub fn line(&self) -> String {
        let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2} ms"));
        let n = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.0}"));
        format!(
            "orders in {} batches of {:.1} on average (p50 {}, p99 {}); wait for a batch p50 {}, p99 {}; commit p99 {}",
            self.batches,
            self.mean_size,
            n(self.p50_size),
            n(self.p99_size),
            ms(self.wait_p50_ms),
            ms(self.wait_p99_ms),
            ms(self.commit_p99_ms),
        )
    }
}

/// One strategy's run (written to `report.json`, and read back by
/// whatever quotes it: `make bench`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Run {
    pub strategy: crate::api::StrategyName,
    pub safety: Safety,
    pub kind: Kind,
    pub guarantee: String,
    pub verdict: RunVerdict,
    /// Whether the judge found any breach (classed safe or not).
    pub violations: bool,
    /// The breaches, as printed (`oversold 3`, `2 lost updates`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breaches: Vec<String>,
    pub duration_s: f64,
    pub grabs: u64,
    pub grabs_per_sec: f64,
    /// Orders in the database (ground truth, all products).
    pub orders: i64,
    pub orders_per_sec: f64,
    pub ordered_units: i64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub outcomes: BTreeMap<String, u64>,
    pub initial_stock: i64,
    pub stock_left: i64,
    /// Oversold units, lost updates, undersold units (gone from the stock
    /// column with no order for them: a lost reservation, a write that
    /// went wrong), duplicates: each summed per product, never netted
    /// against another.
    #[serde(flatten)]
    pub damage: Damage,
    pub negative_stock: bool,
    /// A buyer's whole wait, first send (or scheduled time) to final answer,
    /// busy/rejected retries included.
    pub buyer_p50_ms: f64,
    pub buyer_p99_ms: f64,
    pub lock: LockFigures,
    /// Orders committed in batches (`redis-lua-stock`): sizes and waits;
    /// absent when the strategy wrote no batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<BatchFigures>,
    /// With `--history`: critical sections that began while another was
    /// inside, across every replica (the arbiter's count).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overlaps: Option<u64>,
    /// With `--history`: the most sections inside at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_holders: Option<u64>,
    /// With `--history`: the arbiter calls that failed during the run,
    /// summed over the replicas (any makes the verdict `inconclusive`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_errors: Option<u64>,
    /// With `--history`: sections a failed exit left inside, dropped after
    /// the stale bound (not counted as overlaps).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale: Option<u64>,
    /// With `--history`: the arbiter's first overlaps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first_overlaps: Vec<OverlapEvent>,
    /// The acknowledgement check: `acknowledged`, `acknowledged_missing`,
    /// `unacknowledged_present`, `indeterminate` `{found, not_found}` and
    /// the stock `bounds`, as keys of the run (`None`: the orders could not
    /// be read, and the run is inconclusive).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub accounting: Option<Accounting>,
    /// Why the verdict is `inconclusive` (empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inconclusive_because: Vec<String>,
    /// With `--history`: the run's critical sections, for the timeline of
    /// `report.html` (not written to `report.json`).
    #[serde(skip)]
    pub sections: Vec<Section>,
    /// Why the strategy was expected to break under the faults in force.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_to_break: Option<String>,
    /// Product 1's stock during the run: `[seconds since the first grab,
    /// stock]`, sampled every 250 ms; the last point is the audit's.
    pub stock_over_time: Vec<(f64, i64)>,
    pub audit: Vec<AuditRow>,
    /// goose's own HTML report, relative to the output folder.
    pub goose_report: String,
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub tool: String,
    pub version: String,
    pub replicas: Vec<String>,
    pub synchronous_commit: Option<String>,
    /// `GET /admin/faults` while the runs ran (work delay, pauses,
    /// unlock-before-commit…): a "safe" lock can break under them.
    pub faults: Option<Faults>,
    pub workload: Workload,
    pub runs: Vec<Run>,
    /// Strategies listed but not run, with the reason.
    pub skipped: Vec<Skipped>,
    /// Strategies whose run failed (the reason says why); exit code 3.
    pub failed: Vec<Skipped>,
    /// Stopped by Ctrl-C: `runs` holds what finished.
    pub interrupted: bool,
    /// Each `--threshold` against each run it applies to (empty without
    /// one); any breached exits 5 unless a worse code wins.
    #[serde(default)]
    pub thresholds: Vec<threshold::Checked>,
    /// The shards a merged run was sent from (`merge`), each with its own
    /// figures; empty for a run from one process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardSummary>,
}

/// One shard's line in the merged report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardSummary {
    pub shard: crate::load::Shard,
    pub grabs: u64,
    pub acknowledged: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub duration_s: f64,
    pub started_unix_ms: Option<u64>,
}

/// A strategy the service cannot run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Skipped {
    pub strategy: crate::api::StrategyName,
    pub reason: String,
}

impl Run {
    /// Grabs the service failed (503/5xx) or never answered.
    pub fn errors(&self) -> u64 {
        self.outcomes
            .get(Outcome::Error.as_str())
            .copied()
            .unwrap_or(0)
    }
}

impl Report {
    /// Runs classed safe that showed a violation.
    pub fn violations(&self) -> Vec<&Run> {
        self.runs
            .iter()
            .filter(|r| r.verdict == RunVerdict::Violation)
            .collect()
    }

    /// Runs that could not be judged.
    pub fn inconclusive(&self) -> Vec<&Run> {
        self.runs
            .iter()
            .filter(|r| r.verdict == RunVerdict::Inconclusive)
            .collect()
    }

    /// The runs that committed their orders in batches.
    pub(crate) fn batched(&self) -> impl Iterator<Item = (&str, &BatchFigures)> {
        self.runs
            .iter()
            .filter_map(|r| Some((r.strategy.as_str(), r.batch.as_ref()?)))
    }

    /// The thresholds the runs breached.
    pub fn breached(&self) -> Vec<&threshold::Checked> {
        self.thresholds.iter().filter(|c| !c.ok).collect()
    }

    /// The JSON report.
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}

/// Runs and reports for the tests of the report, of `compare` and of the
/// fault lab's reports (another crate's tests: so built always, a few
/// constructors, and hidden from the docs).
#[doc(hidden)]
pub mod fixtures {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use super::{LockFigures, Report, Run};
    use crate::api::{Damage, Kind, OverlapEvent, Safety, Section};
    use crate::judge::RunVerdict;
    use crate::load::Accounting;
    use crate::load::{Shape, Workload};

    /// Every character HTML must escape.
    pub const HOSTILE: &str = "<script>\"'&";
    /// [`HOSTILE`] escaped.
    pub const ESCAPED: &str = "&lt;script&gt;&quot;'&amp;";

    /// A listed, available strategy `name` of class `Safe`, kind `Ttl`,
    /// with no guarantee or seed text.
    pub fn entry(name: crate::api::StrategyName) -> crate::api::StrategyEntry {
        crate::api::StrategyEntry {
            name,
            guarantee: String::new(),
            available: true,
            unavailable_reason: None,
            seed: String::new(),
            safety: Safety::Safe,
            kind: Kind::Ttl,
        }
    }

    /// A run of `strategy` with a hostile name in every free string a page
    /// shows (the history's strategy text among them).
    pub fn run(strategy: crate::api::StrategyName, verdict: RunVerdict, oversold: i64) -> Run {
        Run {
            strategy,
            safety: Safety::Safe,
            kind: Kind::Ttl,
            guarantee: "exclusion".into(),
            verdict,
            violations: oversold > 0,
            breaches: if oversold > 0 {
                vec![format!("oversold {oversold}")]
            } else {
                Vec::new()
            },
            duration_s: 1.0,
            grabs: 40,
            grabs_per_sec: 40.0,
            orders: 20 + oversold,
            orders_per_sec: 20.0,
            ordered_units: 20 + oversold,
            p50_ms: 1.0,
            p95_ms: 2.0,
            p99_ms: 3.0,
            max_ms: 4.0,
            outcomes: BTreeMap::from([("ordered".to_owned(), 20)]),
            initial_stock: 20,
            stock_left: -oversold,
            damage: Damage {
                oversold,
                ..Damage::default()
            },
            negative_stock: oversold > 0,
            buyer_p50_ms: 1.0,
            buyer_p99_ms: 3.0,
            lock: LockFigures::default(),
            batch: None,
            overlaps: Some(1),
            max_holders: Some(2),
            first_overlaps: vec![OverlapEvent {
                at_us: 10,
                strategy: format!("{strategy}{HOSTILE}"),
                entered: format!("r1:{HOSTILE}"),
                inside: vec![HOSTILE.into()],
                product: 1,
            }],
            history_errors: Some(0),
            stale: Some(0),
            accounting: Some(Accounting {
                acknowledged: 20,
                ..Accounting::default()
            }),
            inconclusive_because: Vec::new(),
            sections: vec![
                Section {
                    instance: HOSTILE.into(),
                    member: format!("{HOSTILE}:1"),
                    strategy: format!("{strategy}{HOSTILE}"),
                    product: 1,
                    entered_us: 1_000_000,
                    exited_us: Some(1_004_000),
                    overlap: true,
                },
                Section {
                    instance: "r2".into(),
                    member: "r2:1".into(),
                    strategy: strategy.to_string(),
                    product: 1,
                    entered_us: 1_002_000,
                    exited_us: None,
                    overlap: true,
                },
            ],
            expected_to_break: None,
            stock_over_time: vec![(0.0, 20), (0.5, -oversold)],
            audit: Vec::new(),
            goose_report: format!("goose/{HOSTILE}.html"),
        }
    }

    /// A report of these runs (a burst of 40 on 20 units).
    pub fn report_of(runs: Vec<Run>) -> Report {
        Report {
            tool: "seckill-loadgen".into(),
            version: "0".into(),
            replicas: vec!["http://127.0.0.1:1".into()],
            synchronous_commit: None,
            faults: None,
            workload: Workload {
                shape: Shape::Burst,
                users: 40,
                increase_rate: 800.0,
                run_time: None,
                max_run_time: Duration::from_secs(30),
                stock: 20,
                products: 1,
                hot_ratio: 1.0,
                repeat_ratio: 0.0,
                quantity_min: 1,
                quantity_max: 1,
                retry: true,
                retry_ms: 10,
                give_up_after: Duration::from_secs(5),
            },
            runs,
            skipped: Vec::new(),
            failed: Vec::new(),
            interrupted: false,
            thresholds: Vec::new(),
            shards: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{report_of, run};
    use super::Report;
    use crate::judge::RunVerdict;

    #[test]
    fn a_report_reads_back_as_it_was_written() {
        let mut clean = run(crate::api::StrategyName::PgForUpdate, RunVerdict::Safe, 0);
        clean.first_overlaps.clear();
        clean.accounting = None;
        let written = report_of(vec![
            run(crate::api::StrategyName::Setnx, RunVerdict::Violation, 3),
            clean,
        ]);
        let json = serde_json::to_string_pretty(&written).expect("serialise");
        let read: Report = serde_json::from_str(&json).expect("read back");
        assert_eq!(read.runs.len(), 2);
        assert_eq!(read.runs[0].verdict, RunVerdict::Violation);
        assert_eq!(read.runs[1].accounting, None);
        assert_eq!(
            serde_json::to_string_pretty(&read).expect("serialise again"),
            json
        );
    }
}
