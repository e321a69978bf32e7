//! `seckill-loadgen probe`: read-only load — N goose users GET one path
//! for a fixed time; requests/s and latency printed as JSON. `make bench`
//! uses it to check goose keeps up with `wrk`, and to load the read path
//! while memory is measured.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use goose::metrics::GooseMetrics;
use goose::prelude::*;
use serde::{Deserialize, Serialize};

use super::attack::{base_config, pick_replica};
use super::live::Live;
use super::outcome::Outcome;

/// What `probe` prints, one JSON line (read back by `make bench`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Probe {
    /// The path every user GETs.
    pub path: String,
    /// goose users.
    pub users: usize,
    /// How long the load ran, s.
    pub duration_s: f64,
    /// Answers, successes and errors.
    pub requests: u64,
    /// Answers that were not 2xx, or none.
    pub errors: u64,
    /// `requests` / `duration_s`.
    pub requests_per_sec: f64,
    /// Latency quantiles, ms.
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// `probe`: run, print the figures as JSON; exit 3 when nothing answered.
pub fn main<'a>(
    urls: &'a [String],
    path: &'a str,
    users: usize,
    run_time: Duration,
) -> crate::Boxed<'a, ExitCode> {
    Box::pin(main_here(urls, path, users, run_time))
}

async fn main_here(urls: &[String], path: &str, users: usize, run_time: Duration) -> ExitCode {
    let live = Arc::new(Live::default());
    if let Err(e) = load(urls, path, users, run_time, live.clone()).await {
        eprintln!("seckill-loadgen: probe failed: {e:#}");
        return ExitCode::from(3);
    }
    let secs = live.elapsed().as_secs_f64().max(1e-3);
    let ok = live.outcome(Outcome::Ordered);
    let errors = live.outcome(Outcome::Error);
    let figures = Probe {
        path: path.to_owned(),
        users,
        duration_s: secs,
        requests: ok + errors,
        errors,
        requests_per_sec: (ok + errors) as f64 / secs,
        p50_ms: live.latency_ms(0.50),
        p99_ms: live.latency_ms(0.99),
    };
    match serde_json::to_string(&figures) {
        Ok(line) => println!("{line}"),
        Err(e) => eprintln!("seckill-loadgen: probe figures: {e}"),
    }
    if ok == 0 {
        eprintln!(
            "seckill-loadgen: no successful answer from {}",
            urls.join(", ")
        );
        return ExitCode::from(3);
    }
    ExitCode::SUCCESS
}

/// Read-only load: `users` goose users GET `path` (spread over `urls`) for
/// `run_time`, recording each answer in `live` (2xx → "ordered" slot, as a
/// plain success count; anything else → "error"). Used by `probe` to
/// measure the load generator against `wrk` and the service's read path.
async fn load(
    urls: &[String],
    path: &str,
    users: usize,
    run_time: Duration,
    live: Arc<Live>,
) -> anyhow::Result<GooseMetrics> {
    let mut config = base_config(urls, users, users as f64 * 20.0);
    config.run_time = Some(format!("{}", run_time.as_secs().max(1)));
    // Latency and counts are recorded in `live`; goose's per-transaction
    // and per-scenario aggregates would only cost client CPU here.
    config.no_transaction_metrics = true;
    config.no_scenario_metrics = true;
    config.no_status_codes = true;
    let on_start = pick_replica(urls, 0);
    let path: Arc<str> = Arc::from(path);
    let get = Transaction::new(Arc::new(move |user: &mut GooseUser| {
        let live = live.clone();
        let path = path.clone();
        Box::pin(async move {
            live.mark_started();
            let sent = Instant::now();
            let response = user.get(&path).await?;
            let ok = response
                .response
                .as_ref()
                .is_ok_and(|r| r.status().is_success());
            if let Ok(r) = response.response {
                let _ = r.bytes().await;
            }
            let outcome = if ok { Outcome::Ordered } else { Outcome::Error };
            live.record(outcome, 0, 0, sent.elapsed());
            Ok(())
        })
    }))
    .set_name("probe");
    let scenario = scenario!("readers")
        .register_transaction(on_start)
        .register_transaction(get);
    let metrics = GooseAttack::initialize_with_config(config)?
        .register_scenario(scenario)
        .execute()
        .await;
    goose::reset_killswitch();
    Ok(metrics?)
}
