//! One strategy's run from many processes (the Kubernetes Job's pods, or
//! two terminals): what `run` does in one process, split where a process
//! boundary must go.
//!
//! - **`prepare`** (once): check the service, set `--work-delay-ms`, read
//!   the faults in force, reset the products, switch every replica, start
//!   the history, scrape `/metrics`. Written as a [`Prepared`] record.
//! - **`run --shard K/N`** (N times, side by side): check that every replica
//!   runs the strategy (a shard never resets or switches: a late one would
//!   wipe orders the others were acknowledged for), then send this shard's
//!   part of the load ([`Shard`]). Written as a [`ShardRecord`]: the whole
//!   tally, latency histograms and ledger included, with wall-clock start
//!   and end.
//! - **`merge`** (once, after every shard ended): the records joined into one
//!   load — counts summed, histograms added, ledgers united, the span from
//!   the first shard's first grab to the last one's last answer — then read
//!   back, judged and reported exactly as `run` does in one process
//!   ([`super::run::conclude`]): the audit, the acknowledged-order check over
//!   the union, the metrics since the prepared scrape, `--threshold`.
//!
//! Each record is a JSON file in `--out` and one JSON line on standard
//! output, so a pod's log carries it: `merge` reads record files, folders
//! of them, and logs with record lines among other lines.

use crate::api::StrategyName;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};

use super::finish::{error_code, exit_code, thresholds_name_runs, write_reports};
use super::run::{self, Attacked};
use super::settings::{Conditions, Settings};
use crate::api::{Faults, FaultsPatch, Scrape, Service, StrategiesBody, StrategyEntry};
use crate::load::{Live, Shard, Tally, Workload};
use crate::report::{self, Report, ShardSummary};

/// A record `prepare` or a shard writes, told apart by `"record"`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "kebab-case")]
pub enum Record {
    Prepared(Box<Prepared>),
    Shard(Box<ShardRecord>),
}

/// What `prepare` did and read: what `merge` judges the run under.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Prepared {
    pub strategy: StrategyEntry,
    /// The whole load, as every shard was told it.
    pub workload: Workload,
    pub replicas: Vec<String>,
    /// Whether the history arbiter records the run (`--history`).
    pub history: bool,
    /// `GET /admin/faults` after `--work-delay-ms` was set; `None` when it
    /// could not be read (`faults_unread` says why: the run is then
    /// inconclusive, never judged as fault-free).
    pub faults: Option<Faults>,
    pub faults_unread: Option<String>,
    pub ttl_ms: u64,
    /// The patch that puts `work_delay_ms` back (`merge` applies it).
    pub restore: Option<FaultsPatch>,
    /// `/metrics` of every replica, summed, before the first grab.
    pub metrics_before: Scrape,
    pub prepared_unix_ms: u64,
}

/// One shard's load: what `merge` adds up.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardRecord {
    pub shard: Shard,
    pub strategy: StrategyName,
    /// The whole load (this shard sent its part of it).
    pub workload: Workload,
    pub replicas: Vec<String>,
    /// Wall clock of the first grab sent and the last answer; `None`
    /// when the shard sent none (fewer buyers than shards).
    pub started_unix_ms: Option<u64>,
    pub finished_unix_ms: Option<u64>,
    pub interrupted: bool,
    pub tally: Tally,
    /// Product 1's stock as this shard sampled it, seconds from its start.
    pub stock_over_time: Vec<(f64, i64)>,
    /// Goose's own report of this shard, relative to its `--out`.
    pub goose_report: String,
}

/// `prepare`: make the run ready for its shards and write the record.
pub fn prepare_main(strategy: StrategyName, settings: &Settings) -> crate::Boxed<'_, ExitCode> {
    Box::pin(prepare_main_here(strategy, settings))
}

async fn prepare_main_here(strategy: StrategyName, settings: &Settings) -> ExitCode {
    match prepare(strategy, settings).await {
        Ok(prepared) => {
            let written = write_record(&Record::Prepared(Box::new(prepared)), settings, "prepare");
            match written {
                Ok(path) => {
                    eprintln!(
                        "seckill-loadgen: {strategy} prepared on {} replica(s), stock {} × {} product(s) ({}); \
                         now run the shards (run --strategy {strategy} --shard K/N), then merge",
                        settings.urls.len(),
                        settings.workload.stock,
                        settings.workload.products,
                        path.display()
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("seckill-loadgen: {e:#}");
                    ExitCode::from(2)
                }
            }
        }
        Err(e) => {
            eprintln!("seckill-loadgen: {e:#}");
            error_code(&e)
        }
    }
}

async fn prepare(strategy: StrategyName, settings: &Settings) -> anyhow::Result<Prepared> {
    std::fs::create_dir_all(&settings.out)
        .with_context(|| format!("create {}", settings.out.display()))?;
    let service = Service::new(settings.urls.clone(), settings.admin_token.clone());
    let listed = service.check().await?;
    let entry = available(&listed, strategy)?;
    let run::Ready { restore, faults } = run::ready(&service, settings).await?;
    let metrics_before =
        run::prepare(&service, &entry, &settings.workload, settings.history).await?;
    Ok(Prepared {
        strategy: entry,
        workload: settings.workload.clone(),
        replicas: service.urls.clone(),
        history: settings.history,
        faults_unread: faults.as_ref().err().cloned(),
        faults: faults.ok(),
        ttl_ms: listed.lock_ttl_ms,
        restore,
        metrics_before,
        prepared_unix_ms: crate::clock::unix_ms(),
    })
}

/// The entry of `name`, if the service can run it.
fn available(listed: &StrategiesBody, name: StrategyName) -> anyhow::Result<StrategyEntry> {
    let entry = crate::api::entry(listed, name.as_str())?;
    if let Some(reason) = crate::api::unavailable(entry) {
        anyhow::bail!("{name}: {reason}");
    }
    Ok(entry.clone())
}

/// `run --shard K/N`: this shard's part of a prepared run, written as its
/// record.
pub fn shard_main(
    strategy: StrategyName,
    shard: Shard,
    settings: &Settings,
) -> crate::Boxed<'_, ExitCode> {
    Box::pin(shard_main_here(strategy, shard, settings))
}

async fn shard_main_here(strategy: StrategyName, shard: Shard, settings: &Settings) -> ExitCode {
    let refused = [
        (
            !settings.thresholds.is_empty(),
            "--threshold belongs to merge",
        ),
        (
            settings.work_delay_ms.is_some(),
            "--work-delay-ms belongs to prepare",
        ),
        (settings.history, "--history belongs to prepare"),
        (
            !settings.report_files.is_empty(),
            "--report-file belongs to merge",
        ),
    ];
    if let Some((_, why)) = refused.iter().find(|(set, _)| *set) {
        eprintln!(
            "seckill-loadgen: --shard {shard}: {why} (the run is prepared once and merged once)"
        );
        return ExitCode::from(2);
    }
    let (record, interrupted) = match send_share(strategy, shard, settings).await {
        Ok(done) => done,
        Err(e) => {
            eprintln!("seckill-loadgen: shard {shard}: {e:#}");
            return error_code(&e);
        }
    };
    let line = summary(&record);
    match write_record(
        &Record::Shard(Box::new(record)),
        settings,
        &shard.file_stem(),
    ) {
        Ok(path) => {
            eprintln!(
                "seckill-loadgen: shard {shard} of {strategy}: {} grabs, {} acknowledged, p99 {:.1} ms ({})",
                line.grabs,
                line.acknowledged,
                line.p99_ms,
                path.display()
            );
            if interrupted {
                ExitCode::from(130)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("seckill-loadgen: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn send_share(
    strategy: StrategyName,
    shard: Shard,
    settings: &Settings,
) -> anyhow::Result<(ShardRecord, bool)> {
    std::fs::create_dir_all(settings.out.join("goose"))
        .with_context(|| format!("create {}", settings.out.display()))?;
    let service = Service::new(settings.urls.clone(), settings.admin_token.clone());
    let listed = service.check().await?;
    let entry = available(&listed, strategy)?;
    for base in &service.urls {
        let seen = service.product(base, 1).await?.strategy;
        if seen != strategy {
            anyhow::bail!(
                "{base} runs {seen}, not {strategy}: prepare the run first \
                 (seckill-loadgen prepare --strategy {strategy} …); a shard never resets or switches"
            );
        }
    }
    let whole = &settings.workload;
    let (started, finished, interrupted, attacked) = if shard.share(whole.users) == 0 {
        let empty = Attacked {
            live: Default::default(),
            stock_samples: Vec::new(),
            goose_file: String::new(),
        };
        (None, None, false, empty)
    } else {
        let bar = ProgressBar::hidden();
        let (attacked, interrupted) =
            run::attack(&service, &entry, whole, shard, &settings.out, &bar).await?;
        let (started, finished) = attacked.live.span();
        (started, finished, interrupted, attacked)
    };
    let record = ShardRecord {
        shard,
        strategy,
        workload: whole.clone(),
        replicas: service.urls.clone(),
        started_unix_ms: started.map(wall_clock),
        finished_unix_ms: finished.map(wall_clock),
        interrupted,
        tally: attacked.live.tally(),
        stock_over_time: attacked.stock_samples,
        goose_report: attacked.goose_file,
    };
    Ok((record, interrupted))
}

/// What `merge` is asked to do besides the records.
#[derive(Debug, Clone)]
pub struct MergeSettings {
    /// Empty: the replicas the prepared run names.
    pub urls: Vec<String>,
    pub admin_token: String,
    pub out: PathBuf,
    pub report_files: Vec<PathBuf>,
    pub treat_as_safe: Vec<StrategyName>,
    pub expect_unsafe: Vec<StrategyName>,
    pub quiet: bool,
    pub thresholds: Vec<report::threshold::Threshold>,
}

/// `merge INPUT…`: one report of the prepared run and its shards.
pub fn merge_main(inputs: &[PathBuf], merge: MergeSettings) -> crate::Boxed<'_, ExitCode> {
    Box::pin(merge_main_here(inputs, merge))
}

async fn merge_main_here(inputs: &[PathBuf], merge: MergeSettings) -> ExitCode {
    let (prepared, shards) = match read_records(inputs).and_then(joined) {
        Ok(found) => found,
        Err(e) => {
            eprintln!("seckill-loadgen: merge: {e:#}");
            return ExitCode::from(2);
        }
    };
    match merged(&prepared, &shards, merge).await {
        Ok((report, settings)) => {
            println!("{}", report.terminal());
            for line in &report.shards {
                println!(
                    "shard {}: {} grabs, {} acknowledged, p50 {:.1} ms, p99 {:.1} ms, {:.1} s",
                    line.shard,
                    line.grabs,
                    line.acknowledged,
                    line.p50_ms,
                    line.p99_ms,
                    line.duration_s
                );
            }
            println!("reports: {}", settings.out.join("report.html").display());
            exit_code(&report)
        }
        Err(e) => {
            eprintln!("seckill-loadgen: merge: {e:#}");
            error_code(&e)
        }
    }
}

/// The shards' load as one, read back and judged: the report, written.
async fn merged(
    prepared: &Prepared,
    shards: &[ShardRecord],
    merge: MergeSettings,
) -> anyhow::Result<(Report, Settings)> {
    let urls = if merge.urls.is_empty() {
        prepared.replicas.clone()
    } else {
        merge.urls
    };
    if urls != prepared.replicas {
        eprintln!(
            "seckill-loadgen: merge reads back from {} while the run was prepared on {}: the verdict \
             holds (the database's audit and the shards' ledgers), but the lock figures are \
             differences of scrapes of other replicas — read those in Prometheus",
            urls.join(","),
            prepared.replicas.join(",")
        );
    }
    let settings = Settings {
        urls,
        admin_token: merge.admin_token,
        workload: prepared.workload.clone(),
        work_delay_ms: None,
        out: merge.out,
        report_files: merge.report_files,
        treat_as_safe: merge.treat_as_safe,
        expect_unsafe: merge.expect_unsafe,
        quiet: merge.quiet,
        history: prepared.history,
        thresholds: merge.thresholds,
    };
    std::fs::create_dir_all(&settings.out)
        .with_context(|| format!("create {}", settings.out.display()))?;
    thresholds_name_runs(
        &settings.thresholds,
        std::slice::from_ref(&prepared.strategy),
    )?;
    let service = Service::new(settings.urls.clone(), settings.admin_token.clone());
    service.check().await?;
    let attacked = one_load(shards)?;
    let conditions = Conditions {
        faults: prepared
            .faults
            .ok_or_else(|| prepared.faults_unread.clone().unwrap_or_default()),
        ttl_ms: prepared.ttl_ms,
        replicas: prepared.replicas.len(),
    };
    let run = run::conclude(
        &service,
        &prepared.strategy,
        &settings,
        &conditions,
        &prepared.metrics_before,
        attacked,
    )
    .await?;
    run::restore(&service, prepared.restore).await;
    let thresholds = super::limits::check(&settings.thresholds, std::slice::from_ref(&run));
    let report = Report {
        tool: "seckill-loadgen".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        replicas: prepared.replicas.clone(),
        synchronous_commit: service.audit().await.ok().map(|a| a.synchronous_commit),
        faults: prepared.faults,
        workload: prepared.workload.clone(),
        runs: vec![run],
        skipped: Vec::new(),
        failed: Vec::new(),
        interrupted: shards.iter().any(|s| s.interrupted),
        thresholds,
        shards: shards.iter().map(summary).collect(),
    };
    write_reports(&report, &settings.out, &settings.report_files)?;
    Ok((report, settings))
}

/// The shards' tallies added into one load, on one time line from the
/// first shard's first grab to the last shard's last answer.
fn one_load(shards: &[ShardRecord]) -> anyhow::Result<Attacked> {
    let live = std::sync::Arc::new(Live::default());
    for record in shards {
        live.absorb(&record.tally)
            .map_err(|e| anyhow::anyhow!("shard {}: {e}", record.shard))?;
    }
    let first = shards.iter().filter_map(|s| s.started_unix_ms).min();
    let last = shards.iter().filter_map(|s| s.finished_unix_ms).max();
    if let (Some(first), Some(last)) = (first, last) {
        live.set_span(Duration::from_millis(last.saturating_sub(first)));
    }
    Ok(Attacked {
        live,
        stock_samples: stock_over_time(shards, first),
        goose_file: shards
            .iter()
            .find(|s| !s.goose_report.is_empty())
            .map(|s| s.goose_report.clone())
            .unwrap_or_default(),
    })
}

/// Product 1's stock as every shard sampled it, on one time line from the
/// first shard's start.
fn stock_over_time(shards: &[ShardRecord], first: Option<u64>) -> Vec<(f64, i64)> {
    let mut points: Vec<(f64, i64)> = shards
        .iter()
        .flat_map(|s| {
            let offset = match (s.started_unix_ms, first) {
                (Some(start), Some(first)) => start.saturating_sub(first) as f64 / 1000.0,
                _ => 0.0,
            };
            s.stock_over_time
                .iter()
                .map(move |(t, stock)| (t + offset, *stock))
        })
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}

/// One shard's figures, from its own tally.
fn summary(record: &ShardRecord) -> ShardSummary {
    let live = Live::default();
    // A record this process wrote or read back adds up (checked on read).
    let _ = live.absorb(&record.tally);
    let duration = match (record.started_unix_ms, record.finished_unix_ms) {
        (Some(s), Some(f)) => f.saturating_sub(s) as f64 / 1000.0,
        _ => 0.0,
    };
    ShardSummary {
        shard: record.shard,
        grabs: live.grabs(),
        acknowledged: live.ledger.entries().acknowledged(),
        p50_ms: live.latency_ms(0.50),
        p99_ms: live.latency_ms(0.99),
        duration_s: duration,
        started_unix_ms: record.started_unix_ms,
    }
}

/// Every record in `inputs`: a record file, a folder (its `*.json` files
/// that are records; a report beside them is passed over), or a log whose
/// lines include record lines.
pub fn read_records(inputs: &[PathBuf]) -> anyhow::Result<Vec<Record>> {
    let mut records = Vec::new();
    for input in inputs {
        if input.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(input)
                .with_context(|| format!("read {}", input.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect();
            files.sort();
            for file in files {
                records.extend(records_in(&file)?);
            }
        } else {
            let found = records_in(input)?;
            if found.is_empty() {
                anyhow::bail!(
                    "{} holds no record of prepare or of a shard",
                    input.display()
                );
            }
            records.extend(found);
        }
    }
    Ok(records)
}

/// The records in one file: the whole file one record, or one per line.
fn records_in(path: &Path) -> anyhow::Result<Vec<Record>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    if let Ok(record) = serde_json::from_str::<Record>(&text) {
        return Ok(vec![record]);
    }
    let mut records = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if !line.starts_with("{\"record\":") {
            continue;
        }
        let record = serde_json::from_str(line).with_context(|| {
            format!(
                "{}:{}: a record line that does not read",
                path.display(),
                n + 1
            )
        })?;
        records.push(record);
    }
    Ok(records)
}

/// The one prepared run and its shards, 1 to N each once, in order; each
/// shard of the same strategy and load, started after the run was prepared.
fn joined(records: Vec<Record>) -> anyhow::Result<(Prepared, Vec<ShardRecord>)> {
    let mut prepared: Vec<Prepared> = Vec::new();
    let mut shards: Vec<ShardRecord> = Vec::new();
    for record in records {
        match record {
            Record::Prepared(p) => prepared.push(*p),
            Record::Shard(s) => shards.push(*s),
        }
    }
    let prepared = match prepared.len() {
        1 => prepared.remove(0),
        0 => anyhow::bail!(
            "no prepare record among the inputs (seckill-loadgen prepare writes prepare.json)"
        ),
        n => anyhow::bail!("{n} prepare records among the inputs: merge one run at a time"),
    };
    let Some(of) = shards.first().map(|s| s.shard.of) else {
        anyhow::bail!(
            "no shard record among the inputs (run --shard K/N writes shard-K-of-N.json)"
        );
    };
    shards.sort_by_key(|s| s.shard.index);
    for s in &shards {
        if s.shard.of != of {
            anyhow::bail!(
                "shard {} beside shards of {of}: merge one split at a time",
                s.shard
            );
        }
    }
    let mut missing = Vec::new();
    for index in 1..=of {
        match shards.iter().filter(|s| s.shard.index == index).count() {
            1 => {}
            0 => missing.push(format!("{index}/{of}")),
            n => anyhow::bail!("shard {index}/{of} appears {n} times"),
        }
    }
    if !missing.is_empty() {
        anyhow::bail!(
            "shard(s) {} missing: every shard's record is needed",
            missing.join(", ")
        );
    }
    let strategy = prepared.strategy.name;
    let load = serde_json::to_value(&prepared.workload)?;
    for s in &shards {
        if s.strategy != strategy {
            anyhow::bail!(
                "shard {} ran {}, the prepared run {strategy}",
                s.shard,
                s.strategy
            );
        }
        if serde_json::to_value(&s.workload)? != load {
            anyhow::bail!(
                "shard {} was given another load than the prepared run's",
                s.shard
            );
        }
        // Five seconds for the clocks of different hosts.
        if s.started_unix_ms
            .is_some_and(|t| t + 5_000 < prepared.prepared_unix_ms)
        {
            anyhow::bail!(
                "shard {} started before the run was prepared: it belongs to an earlier run",
                s.shard
            );
        }
    }
    Ok((prepared, shards))
}

/// Write `record` to `OUT/NAME.json` and print it as one line on standard
/// output (a pod's log carries it).
fn write_record(record: &Record, settings: &Settings, name: &str) -> anyhow::Result<PathBuf> {
    let path = settings.out.join(format!("{name}.json"));
    let text = serde_json::to_string(record)?;
    std::fs::write(&path, &text).with_context(|| format!("write {}", path.display()))?;
    println!("{text}");
    Ok(path)
}

/// An instant of this process on the wall clock.
fn wall_clock(at: std::time::Instant) -> u64 {
    crate::clock::unix_ms_at(SystemTime::now() - at.elapsed())
}
