//! `seckill-loadgen scenario` — every failure of the seeds, reproduced on
//! one machine, with the overlaps counted directly.
//!
//! A scenario owns the processes it breaks. For each strategy (and each
//! variant of the fault) it starts what it needs on free loopback ports —
//! `seckill-app` replicas from the built binary, `redis-server` nodes, TCP
//! proxies (slow and cut links), a dedicated Redis as the history arbiter —
//! against a fresh database on `--database-url`; resets the product,
//! switches the strategy, starts a new mutual-exclusion history run, drives
//! closed-loop buyers, applies its fault (a real `SIGSTOP`, a clock jump,
//! a node restart, a promoted replica, a slow link, a `kill -9`, a stopped
//! Redis or a cut PostgreSQL), undoes it, and stops everything it started
//! — also on failure and on Ctrl-C.
//!
//! Each case is judged against what its design promises under *that*
//! fault (`expected`: `holds` or `breaks`), from what was observed:
//! overlapping critical sections counted by the history arbiter, and the
//! database's audit (oversold units, lost updates, duplicates). A run that
//! showed no contention, sold nothing, or never landed its fault is
//! `inconclusive`, never `as-expected`. See DESIGN.md, "Faults, scenarios
//! and the history", and the README's workshop for what each one teaches.

mod buyers;
mod cases;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use serde::Serialize;
use serde_json::Value;

pub use cases::Options;

/// One scenario as `--list` shows it.
#[derive(Debug, Clone, Copy)]
pub struct ScenarioInfo {
    /// Stable name.
    pub name: &'static str,
    /// What it does, in one line.
    pub summary: &'static str,
    /// Strategies it runs by default.
    pub strategies: &'static [&'static str],
}

/// Every scenario, in workshop order.
pub const SCENARIOS: &[ScenarioInfo] = &[
    ScenarioInfo {
        name: "gc-pause",
        summary: "SIGSTOP a replica while it holds the lock, for 2.5x the TTL/lease (Kleppmann's process pause)",
        strategies: &[
            "set-nx-px-token",
            "watchdog",
            "redlock",
            "fenced",
            "etcd-lease",
            "zk-ephemeral-seq",
            "mysql-get-lock",
            "pg-for-update",
        ],
    },
    ScenarioInfo {
        name: "slow-network",
        summary: "one replica's replies from Redis delayed 1.5x the TTL by a proxy (Kleppmann's delayed packets)",
        strategies: &["set-nx-px-token", "watchdog", "redlock", "fenced"],
    },
    ScenarioInfo {
        name: "clock-jump",
        summary: "Redlock, replicas partitioned to nodes {1,2,3} / {3,4,5}; node 3's clock jumps past the TTL (Kleppmann's clock jump)",
        strategies: &["redlock"],
    },
    ScenarioInfo {
        name: "redlock-restart",
        summary: "Redlock, same partition; node 3 crashes and restarts without persistence, after a delay, or with appendfsync always",
        strategies: &["redlock"],
    },
    ScenarioInfo {
        name: "failover",
        summary: "Redis primary + replica (replication delayed 300 ms); the replica is promoted while a lock is held, with and without WAIT 1",
        strategies: &["set-nx-px-token", "fenced"],
    },
    ScenarioInfo {
        name: "crash-holder",
        summary: "kill -9 the replica holding the lock (setnx-expire: between SETNX and EXPIRE); do the others ever buy again?",
        strategies: &["setnx", "setnx-expire", "pg-lock-table", "set-nx-px-token", "watchdog"],
    },
    ScenarioInfo {
        name: "clock-skew",
        summary: "one replica's wall clock runs ahead by more than the TTL (setnx-getset trusts client clocks)",
        strategies: &["setnx-getset", "set-nx-px-token"],
    },
    ScenarioInfo {
        name: "unlock-before-commit",
        summary: "the unlock_before_commit fault: release the lock, then commit",
        strategies: &[
            "setnx",
            "setnx-expire",
            "setnx-expire-lua",
            "setnx-getset",
            "set-nx-px",
            "set-nx-px-check-del",
            "set-nx-px-token",
            "watchdog",
            "redlock",
            "pg-lock-table",
            "fenced",
            "etcd-lease",
            "zk-ephemeral-seq",
            "mysql-get-lock",
            "pg-for-update",
            "pg-advisory",
        ],
    },
    ScenarioInfo {
        name: "dependency-loss",
        summary: "Redis killed and restarted, then PostgreSQL (and etcd/ZooKeeper/MariaDB) cut and restored, mid-run: 503s, never a half-written order",
        strategies: &[
            "set-nx-px-token",
            "pg-for-update",
            "fenced",
            "etcd-lease",
            "zk-ephemeral-seq",
            "mysql-get-lock",
        ],
    },
];

/// `holds` or `breaks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Expected {
    /// The design's promise survives this fault.
    Holds,
    /// This fault is the design's weak point: it should show.
    Breaks,
}

/// The verdict of one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// Observed what the design predicts.
    #[serde(rename = "as-expected")]
    AsExpected,
    /// Observed the opposite.
    #[serde(rename = "UNEXPECTED")]
    Unexpected,
    /// No contention, nothing sold, or the fault never landed.
    #[serde(rename = "inconclusive")]
    Inconclusive,
}

impl Verdict {
    /// As written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::AsExpected => "as-expected",
            Verdict::Unexpected => "UNEXPECTED",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// What a strategy promises: no two holders, or exact data (the fence, the
/// atomic operations), — the yardstick of "holds".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Guarantee {
    /// Mutual exclusion: overlaps must be 0 and the audit clean.
    Exclusion,
    /// Exact data: the audit must be clean; overlaps are shown, not judged.
    Data,
}

/// What was observed in one case.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Observed {
    /// Critical sections that began while another was inside (arbiter).
    pub overlaps: u64,
    /// Most sections inside at once.
    pub max_holders: u64,
    /// Audit: units sold beyond the stock.
    pub oversold: i64,
    /// Audit: orders the stock column never saw.
    pub lost_updates: i64,
    /// Audit: users with two orders.
    pub duplicates: i64,
    /// Audit: units gone from the stock column without an order.
    pub undersold: i64,
    /// `409 rejected` answers (lost lease, validity, stale fence).
    pub rejected: u64,
    /// `429 busy` answers.
    pub busy: u64,
    /// Orders in the database.
    pub orders: i64,
    /// `503` answers.
    pub unavailable: u64,
    /// Other failed requests (refused connections to a killed replica, …).
    pub errors: u64,
    /// Sections the arbiter recorded.
    pub entries: u64,
    /// Entries/exits the arbiter missed (must be 0 for a complete history).
    pub history_errors: u64,
    /// Failed lock attempts (`seckill_lock_retries_total`).
    pub lock_retries: u64,
    /// Mean wait for the lock, ms.
    pub mean_wait_ms: f64,
    /// Whether the run showed contention at all.
    pub contended: bool,
    /// `crash-holder`: ms from the kill to the next order, if any came.
    pub recovered_after_ms: Option<u64>,
}

/// One case: a strategy under one variant of a scenario's fault.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    /// Scenario name.
    pub name: String,
    /// Strategy.
    pub strategy: String,
    /// Variant of the fault, when the scenario has several.
    pub variant: Option<String>,
    /// The faults in force (what was broken, how long, the TTL).
    pub faults: Value,
    /// `holds` or `breaks`.
    pub expected: Expected,
    /// Why that is the expectation.
    pub why: String,
    /// What "holds" means for this strategy.
    pub guarantee: Guarantee,
    /// What happened.
    pub observed: Observed,
    /// Judged.
    pub verdict: Verdict,
    /// Why the verdict (what broke, or what made it inconclusive).
    pub verdict_reason: String,
    /// What the runner did, with timings from the start of the case.
    pub steps: Vec<String>,
    /// The arbiter's first overlaps (time, who entered, who was inside).
    pub first_overlaps: Vec<Value>,
    /// Length of the case, seconds.
    pub duration_s: f64,
}

/// `scenarios.json`.
#[derive(Debug, Serialize)]
pub struct ScenarioReport {
    /// Tool.
    pub tool: &'static str,
    /// Version.
    pub version: &'static str,
    /// `--quick` was used.
    pub quick: bool,
    /// Every case run.
    pub scenarios: Vec<CaseResult>,
    /// Strategies a scenario does not apply to, with the reason.
    pub skipped: Vec<Value>,
    /// Wall time of the whole run, seconds.
    pub duration_s: f64,
}

impl ScenarioReport {
    /// Whether any verdict is `UNEXPECTED`.
    pub fn unexpected(&self) -> usize {
        self.scenarios
            .iter()
            .filter(|c| c.verdict == Verdict::Unexpected)
            .count()
    }

    /// The terminal table.
    pub fn terminal(&self) -> String {
        let line =
            |cells: &[String]| {
                format!(
                "{:<20} {:<16} {:<20} {:<7} {:>8} {:>5} {:>5} {:>5} {:>4} {:>5} {:>5} {:>6}  {}\n",
                cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6],
                cells[7], cells[8], cells[9], cells[10], cells[11], cells[12]
            )
            };
        let head: Vec<String> = [
            "scenario", "strategy", "variant", "expect", "overlaps", "max", "over", "lost", "dup",
            "rej", "busy", "orders", "verdict",
        ]
        .iter()
        .map(|h| (*h).to_owned())
        .collect();
        let mut out = line(&head);
        for c in &self.scenarios {
            out.push_str(&line(&c.cells()));
        }
        out
    }

    /// `scenarios.md`.
    pub fn markdown(&self) -> String {
        let mut out = String::from(
            "| scenario | strategy | variant | expected | overlaps | max holders | oversold | lost updates | duplicates | rejected | busy | orders | verdict |\n|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
        );
        for c in &self.scenarios {
            out.push_str(&format!("| {} |\n", c.cells().join(" | ")));
        }
        out
    }
}

impl CaseResult {
    /// The table cells of this case: scenario, strategy, variant, expected,
    /// overlaps, max holders, oversold, lost updates, duplicates, rejected,
    /// busy, orders, verdict.
    pub fn cells(&self) -> Vec<String> {
        let o = &self.observed;
        vec![
            self.name.clone(),
            self.strategy.clone(),
            self.variant.clone().unwrap_or_else(|| "-".into()),
            match self.expected {
                Expected::Holds => "holds".into(),
                Expected::Breaks => "breaks".into(),
            },
            o.overlaps.to_string(),
            o.max_holders.to_string(),
            o.oversold.to_string(),
            o.lost_updates.to_string(),
            o.duplicates.to_string(),
            o.rejected.to_string(),
            o.busy.to_string(),
            o.orders.to_string(),
            self.verdict.as_str().to_owned(),
        ]
    }
}

/// Judge a case from its observations.
pub fn judge(
    scenario: &str,
    guarantee: Guarantee,
    expected: Expected,
    fault_landed: bool,
    o: &Observed,
) -> (Verdict, String) {
    if !fault_landed {
        return (
            Verdict::Inconclusive,
            "the fault never landed (no holder was caught inside)".into(),
        );
    }
    let crash = scenario == "crash-holder";
    if o.orders == 0 && !crash {
        return (Verdict::Inconclusive, "nothing was sold".into());
    }
    if !o.contended {
        return (
            Verdict::Inconclusive,
            "no contention: no waits, retries, busy answers or overlaps".into(),
        );
    }
    if scenario == "dependency-loss" && o.unavailable + o.errors == 0 {
        return (
            Verdict::Inconclusive,
            "no request failed: the outage was not felt".into(),
        );
    }
    let mut broke = Vec::new();
    if o.oversold > 0 {
        broke.push(format!("oversold {}", o.oversold));
    }
    if o.lost_updates > 0 {
        broke.push(format!("{} lost updates", o.lost_updates));
    }
    if o.undersold > 0 {
        broke.push(format!("undersold {}", o.undersold));
    }
    if o.duplicates > 0 {
        broke.push(format!("{} duplicate orders", o.duplicates));
    }
    if guarantee == Guarantee::Exclusion && o.overlaps > 0 {
        broke.push(format!(
            "{} overlapping sections (max {} holders)",
            o.overlaps, o.max_holders
        ));
    }
    if crash && o.recovered_after_ms.is_none() {
        broke.push("no order after the holder died: deadlocked".into());
    }
    let reason = if broke.is_empty() {
        let mut held = String::from("held: audit exact");
        if guarantee == Guarantee::Exclusion {
            held.push_str(", 0 overlaps");
        } else if o.overlaps > 0 {
            held.push_str(&format!(
                " although {} sections overlapped (stale holders refused: {} rejected)",
                o.overlaps, o.rejected
            ));
        }
        if let Some(ms) = o.recovered_after_ms {
            held.push_str(&format!(", sold again {ms} ms after the crash"));
        }
        held
    } else {
        format!("broke: {}", broke.join(", "))
    };
    let verdict = match (expected, broke.is_empty()) {
        (Expected::Holds, true) | (Expected::Breaks, false) => Verdict::AsExpected,
        _ => Verdict::Unexpected,
    };
    (verdict, reason)
}

/// `seckill-loadgen scenario …`: run, print, write `scenarios.json`, exit.
pub async fn main(names: &[String], list: bool, options: Options) -> ExitCode {
    if list || names.is_empty() {
        for s in SCENARIOS {
            println!("{:<22} {}", s.name, s.summary);
        }
        if !list {
            eprintln!("seckill-loadgen: name a scenario (or `all`)");
            return ExitCode::from(2);
        }
        return ExitCode::SUCCESS;
    }
    let chosen: Vec<&ScenarioInfo> = if names.iter().any(|n| n == "all") {
        SCENARIOS.iter().collect()
    } else {
        let mut chosen = Vec::new();
        for name in names {
            match SCENARIOS.iter().find(|s| s.name == name) {
                Some(s) => chosen.push(s),
                None => {
                    eprintln!(
                        "seckill-loadgen: unknown scenario {name:?}; known: {}",
                        SCENARIOS
                            .iter()
                            .map(|s| s.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                    return ExitCode::from(2);
                }
            }
        }
        chosen
    };
    let out = options.out.clone();
    let run = async {
        let report = cases::run_all(&chosen, &options).await?;
        write(&report, &out)?;
        anyhow::Ok(report)
    };
    let report = tokio::select! {
        report = run => report,
        _ = tokio::signal::ctrl_c() => {
            // Dropping the run stopped every process it started; the
            // database needs a word with PostgreSQL.
            cases::drop_run_database(&options.database_url).await;
            eprintln!("seckill-loadgen: interrupted; every process the scenario started is stopped");
            return ExitCode::from(130);
        }
    };
    match report {
        Ok(report) => {
            println!("{}", report.terminal());
            println!(
                "{} cases in {:.0} s; reports: {}",
                report.scenarios.len(),
                report.duration_s,
                out.join("scenarios.json").display()
            );
            let unexpected = report.unexpected();
            if unexpected > 0 {
                eprintln!("seckill-loadgen: {unexpected} case(s) UNEXPECTED");
                return ExitCode::from(1);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("seckill-loadgen: scenario failed: {e:#}");
            ExitCode::from(3)
        }
    }
}

fn write(report: &ScenarioReport, out: &std::path::Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("create {}", out.display()))?;
    let json = serde_json::to_string_pretty(report)?;
    std::fs::write(out.join("scenarios.json"), json)?;
    std::fs::write(out.join("scenarios.md"), report.markdown())?;
    std::fs::write(
        out.join("scenarios.html"),
        crate::report::scenarios_html(report),
    )?;
    Ok(())
}

/// Sleep, a readable name.
pub(crate) async fn pause(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// Where reports go by default.
pub fn default_out() -> PathBuf {
    PathBuf::from("loadgen-report")
}
