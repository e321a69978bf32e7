//! One strategy's load: a goose attack whose users grab, spread over the
//! replicas, with outcomes and latencies recorded as they happen.
//!
//! Three shapes (`../shared/DESIGN.md`, "Load generator"):
//! - **closed loop** — `--users` buyers, started at `--increase-rate` per
//!   second, each grabbing again as soon as it has an answer, for
//!   `--run-time` or until every product is sold out;
//! - **burst** — `--burst N`: N buyers wait at a gate until all N are
//!   started, then grab at the same instant (the flash-sale moment), once
//!   each;
//! - **open rate** — `--rate R`: grabs are *scheduled* at R per second and
//!   each latency is measured from its scheduled time, not from when a user
//!   got round to sending it, so a slow service cannot hide its queueing
//!   (coordinated omission). `--users` is then the concurrency available to
//!   keep up with the schedule.
//!
//! A buyer answered `busy` (429) or `rejected` (409, the fence refused a
//! stale holder) tries again after `--retry-ms`, as a real shop client
//! would, until a final answer or `--give-up-after`; every attempt counts in
//! grabs/s and in the outcome counts.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use goose::config::GooseConfiguration;
use goose::metrics::GooseMetrics;
use goose::prelude::*;
use hdrhistogram::Histogram;
use rand::Rng;
use serde::Serialize;
use serde_json::json;
use tokio::sync::Notify;

/// The shape of the load.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Shape {
    /// `users` closed-loop buyers.
    ClosedLoop,
    /// All users released together, one buyer each.
    Burst,
    /// Grabs scheduled at `per_sec`.
    Rate { per_sec: f64 },
}

/// Everything that defines one strategy's load (the same for each strategy
/// of a comparison).
#[derive(Debug, Clone, Serialize)]
pub struct Workload {
    pub shape: Shape,
    pub users: usize,
    pub increase_rate: f64,
    /// Fixed length; None = until sold out (bounded by `max_run_time`).
    /// In `report.json` as `run_time_ms` (null = until sold out).
    #[serde(rename = "run_time_ms", serialize_with = "opt_ms")]
    pub run_time: Option<Duration>,
    #[serde(rename = "max_run_time_ms", serialize_with = "ms")]
    pub max_run_time: Duration,
    pub stock: u64,
    pub products: u64,
    pub hot_ratio: f64,
    pub repeat_ratio: f64,
    pub quantity_min: u32,
    pub quantity_max: u32,
    pub retry: bool,
    pub retry_ms: u64,
    #[serde(rename = "give_up_after_ms", serialize_with = "ms")]
    pub give_up_after: Duration,
}

/// Durations in `report.json` are whole milliseconds, like every `_ms` field.
fn ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[allow(
    clippy::ref_option,
    reason = "the signature serde's serialize_with calls"
)]
fn opt_ms<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => ms(d, s),
        None => s.serialize_none(),
    }
}

/// Final answer classes of one grab request, as the service names them.
pub const OUTCOMES: [&str; 6] = [
    "ordered",
    "sold_out",
    "already_purchased",
    "busy",
    "rejected",
    "error",
];

/// Counters shared by every goose user of one run, read live by the
/// progress bar and at the end by the report.
#[derive(Debug)]
pub struct Live {
    outcomes: [AtomicU64; 6],
    ordered_units: AtomicU64,
    /// Every grab request.
    latency: Latencies,
    /// Every buyer, first send to final answer.
    buyer: Latencies,
    /// The lock wait of every grab that waited for a lock, exact, as the
    /// service answers it (`Server-Timing: lock;dur=<ms>`).
    lock_wait: Latencies,
    /// How long each batched order waited for its batch to start, exact,
    /// as the service answers it (`Server-Timing: batch;dur=<ms>`).
    batch_wait: Latencies,
    next_user: AtomicU64,
    slot: AtomicU64,
    sold_out: Mutex<HashSet<u64>>,
    gate_arrived: AtomicU64,
    gate_open: AtomicBool,
    gate: Notify,
    started: Mutex<Option<Instant>>,
    finished: Mutex<Option<Instant>>,
}

impl Default for Live {
    fn default() -> Self {
        Self {
            outcomes: Default::default(),
            ordered_units: AtomicU64::new(0),
            latency: Latencies::default(),
            buyer: Latencies::default(),
            lock_wait: Latencies::default(),
            batch_wait: Latencies::default(),
            next_user: AtomicU64::new(1),
            slot: AtomicU64::new(0),
            sold_out: Mutex::new(HashSet::new()),
            gate_arrived: AtomicU64::new(0),
            gate_open: AtomicBool::new(false),
            gate: Notify::new(),
            started: Mutex::new(None),
            finished: Mutex::new(None),
        }
    }
}

impl Live {
    /// Requests answered so far.
    pub fn grabs(&self) -> u64 {
        self.outcomes
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
    }

    /// Count of one outcome.
    pub fn outcome(&self, name: &str) -> u64 {
        OUTCOMES
            .iter()
            .position(|o| *o == name)
            .map_or(0, |i| self.outcomes[i].load(Ordering::Relaxed))
    }

    /// Units the service said it sold.
    pub fn ordered_units(&self) -> u64 {
        self.ordered_units.load(Ordering::Relaxed)
    }

    /// Seconds since the first grab was sent.
    pub fn elapsed(&self) -> Duration {
        let start = *lock(&self.started);
        let end = *lock(&self.finished);
        match (start, end) {
            (Some(s), Some(e)) => e.duration_since(s),
            (Some(s), None) => s.elapsed(),
            _ => Duration::ZERO,
        }
    }

    /// Latency quantile (0..1) of every grab request, in milliseconds.
    pub fn latency_ms(&self, q: f64) -> f64 {
        self.latency.quantile_ms(q)
    }

    /// Quantile (0..1) of a buyer's whole wait, from the first (scheduled)
    /// send to the final answer, busy/rejected retries included, in ms.
    pub fn buyer_latency_ms(&self, q: f64) -> f64 {
        self.buyer.quantile_ms(q)
    }

    /// Quantile (0..1) of the lock waits the service reported, in ms;
    /// `None` when no grab reported one (no lock, or an older service).
    pub fn lock_wait_ms(&self, q: f64) -> Option<f64> {
        let empty = lock(&self.lock_wait.0).is_empty();
        (!empty).then(|| self.lock_wait.quantile_ms(q))
    }

    /// Quantile (0..1) of the batch waits the service reported, in ms;
    /// `None` when no grab reported one (the strategy does not batch).
    pub fn batch_wait_ms(&self, q: f64) -> Option<f64> {
        let empty = lock(&self.batch_wait.0).is_empty();
        (!empty).then(|| self.batch_wait.quantile_ms(q))
    }

    fn record_buyer(&self, took: Duration) {
        self.buyer.record(took);
    }

    /// Slowest grab request, in milliseconds.
    pub fn latency_max_ms(&self) -> f64 {
        self.latency.max_ms()
    }

    fn record(&self, outcome: usize, units: u64, took: Duration) {
        self.outcomes[outcome].fetch_add(1, Ordering::Relaxed);
        if outcome == 0 {
            self.ordered_units.fetch_add(units, Ordering::Relaxed);
        }
        self.latency.record(took);
        *lock(&self.finished) = Some(Instant::now());
    }

    fn mark_started(&self) {
        lock(&self.started).get_or_insert_with(Instant::now);
    }
}

/// A latency histogram in µs (1 µs .. 120 s, 3 significant digits),
/// shared by the users of one run.
#[derive(Debug)]
struct Latencies(Mutex<Histogram<u64>>);

impl Default for Latencies {
    fn default() -> Self {
        Self(Mutex::new(
            Histogram::new_with_bounds(1, MAX_US, 3).expect("histogram bounds"),
        ))
    }
}

const MAX_US: u64 = 120_000_000;

impl Latencies {
    fn record(&self, took: Duration) {
        let us = u64::try_from(took.as_micros())
            .unwrap_or(u64::MAX)
            .clamp(1, MAX_US);
        let _ = lock(&self.0).record(us);
    }

    /// Quantile (0..1) in milliseconds; 0 when nothing was recorded.
    fn quantile_ms(&self, q: f64) -> f64 {
        let h = lock(&self.0);
        if h.is_empty() {
            0.0
        } else {
            h.value_at_quantile(q) as f64 / 1000.0
        }
    }

    fn max_ms(&self) -> f64 {
        lock(&self.0).max() as f64 / 1000.0
    }
}

/// The duration of metric `name` of a `Server-Timing` header
/// (`lock;dur=<ms>, batch;dur=<ms>`).
fn server_timing(headers: &reqwest::header::HeaderMap, name: &str) -> Option<Duration> {
    headers
        .get_all("server-timing")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .find_map(|metric| {
            let mut parts = metric.split(';').map(str::trim);
            if parts.next()? != name {
                return None;
            }
            let ms: f64 = parts.find_map(|p| p.strip_prefix("dur="))?.parse().ok()?;
            Some(Duration::from_secs_f64(ms.max(0.0) / 1000.0))
        })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Everything a goose user needs, shared.
#[derive(Debug)]
struct Plan {
    workload: Workload,
    live: Arc<Live>,
}

impl Plan {
    /// An open-ended run (no `--run-time`) ends when every product is sold out.
    fn until_sold_out(&self) -> bool {
        self.workload.run_time.is_none()
    }
}

/// The goose settings every attack of the loadgen shares: `users` started
/// at `increase_rate` per second, quiet (the loadgen prints its own
/// report), no controllers, no gzip (the service answers small JSON:
/// compression would only cost CPU on both sides of the loopback).
fn base_config(urls: &[String], users: usize, increase_rate: f64) -> GooseConfiguration {
    let mut config = GooseConfiguration::default();
    config.host = Some(urls[0].clone());
    config.users = Some(users);
    config.increase_rate = Some(format!("{increase_rate}"));
    config.quiet = 1;
    config.no_print_metrics = true;
    config.no_error_summary = true;
    config.no_telnet = true;
    config.no_gzip = true;
    config
}

/// The on-start transaction that points each goose user at one replica,
/// round-robin by the user's index.
fn pick_replica(urls: &[String]) -> Transaction {
    let urls: Arc<[String]> = Arc::from(urls);
    Transaction::new(Arc::new(move |user: &mut GooseUser| {
        let urls = urls.clone();
        Box::pin(async move {
            let base = &urls[user.weighted_users_index % urls.len()];
            user.set_base_url(base)?;
            Ok(())
        })
    }))
    .set_name("pick replica")
    .set_on_start()
}

/// Run one goose attack against `urls`; returns goose's own metrics and
/// whether it was interrupted (Ctrl-C) rather than finished.
/// `goose_report` is where goose writes its HTML report.
pub async fn run(
    workload: &Workload,
    urls: &[String],
    live: Arc<Live>,
    goose_report: &std::path::Path,
) -> anyhow::Result<(GooseMetrics, bool)> {
    let plan = Arc::new(Plan {
        workload: workload.clone(),
        live,
    });

    let mut config = base_config(urls, workload.users, workload.increase_rate);
    config.report_file = vec![goose_report.display().to_string()];
    if workload.shape == Shape::Burst {
        config.iterations = Some(1);
    }
    if let Some(run_time) = workload.run_time {
        config.run_time = Some(format!("{}", run_time.as_secs().max(1)));
    }

    let on_start = pick_replica(urls);
    let grab = {
        let plan = plan.clone();
        Transaction::new(Arc::new(move |user: &mut GooseUser| {
            let plan = plan.clone();
            Box::pin(async move { buyer(user, &plan).await })
        }))
        .set_name("grab")
    };
    let scenario = scenario!("buyers")
        .register_transaction(on_start)
        .register_transaction(grab);

    // Open-ended runs stop when sold out, or at the safety limit: goose's
    // own length is the start-up ramp plus the run time.
    let ramp = Duration::from_secs_f64(workload.users as f64 / workload.increase_rate.max(1e-3));
    let guard = {
        let limit =
            ramp + workload.run_time.unwrap_or(workload.max_run_time) + Duration::from_secs(2);
        tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            stop_attack("run-time limit reached");
        })
    };
    OURS.store(false, Ordering::SeqCst);
    let metrics = GooseAttack::initialize_with_config(config)?
        .register_scenario(scenario)
        .execute()
        .await;
    guard.abort();
    // A killswitch we did not pull is goose's Ctrl-C handler.
    let interrupted = goose::is_killswitch_triggered() && !OURS.load(Ordering::SeqCst);
    goose::reset_killswitch();
    Ok((metrics?, interrupted))
}

/// Set when the loadgen itself stops an attack (sold out, time limit), so
/// a killswitch pulled by anything else reads as an interruption (Ctrl-C).
static OURS: AtomicBool = AtomicBool::new(false);

fn stop_attack(reason: &str) {
    OURS.store(true, Ordering::SeqCst);
    goose::trigger_killswitch(reason);
}

/// Read-only load: `users` goose users GET `path` (spread over `urls`) for
/// `run_time`, recording each answer in `live` (2xx → "ordered" slot, as a
/// plain success count; anything else → "error"). Used by `probe` to
/// measure the load generator against `wrk` and the service's read path.
pub async fn probe(
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
    let on_start = pick_replica(urls);
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
            live.record(if ok { 0 } else { 5 }, 0, sent.elapsed());
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

/// One buyer: wait for the burst gate or the rate schedule, then grab until
/// a final answer.
async fn buyer(user: &mut GooseUser, plan: &Plan) -> TransactionResult {
    let w = &plan.workload;
    let live = &plan.live;
    if plan.until_sold_out() && all_sold_out(plan) {
        // Nothing left to buy: idle until the attack stops.
        tokio::time::sleep(Duration::from_millis(20)).await;
        return Ok(());
    }
    let mut scheduled = None;
    match w.shape {
        Shape::Burst => burst_gate(plan).await,
        Shape::Rate { per_sec } => {
            live.mark_started();
            let start = (*lock(&live.started)).unwrap_or_else(Instant::now);
            let slot = live.slot.fetch_add(1, Ordering::Relaxed);
            let at = start + Duration::from_secs_f64(slot as f64 / per_sec);
            let now = Instant::now();
            if at > now {
                tokio::time::sleep(at - now).await;
            }
            scheduled = Some(at);
        }
        Shape::ClosedLoop => {}
    }
    live.mark_started();

    let (product, user_id, quantity) = {
        let mut rng = rand::rng();
        let product = if w.products <= 1 || rng.random_bool(w.hot_ratio.clamp(0.0, 1.0)) {
            1
        } else {
            rng.random_range(2..=w.products)
        };
        let issued = live.next_user.load(Ordering::Relaxed);
        let user_id = if issued > 1 && rng.random_bool(w.repeat_ratio.clamp(0.0, 1.0)) {
            rng.random_range(1..issued)
        } else {
            live.next_user.fetch_add(1, Ordering::Relaxed)
        };
        let quantity = rng.random_range(w.quantity_min..=w.quantity_max);
        (product, user_id, quantity)
    };
    let path = format!("/api/v1/products/{product}/grab");
    let body = json!({ "user_id": user_id, "quantity": quantity });
    let first_try = Instant::now();
    let mut first_sent = None;
    loop {
        let sent = scheduled.take().unwrap_or_else(Instant::now);
        first_sent.get_or_insert(sent);
        let mut response = user.post_json(&path, &body).await?;
        let (outcome, status) = match response.response {
            Ok(r) => {
                let status = r.status().as_u16();
                if let Some(waited) = server_timing(r.headers(), "lock") {
                    live.lock_wait.record(waited);
                }
                if let Some(waited) = server_timing(r.headers(), "batch") {
                    live.batch_wait.record(waited);
                }
                let text = r.text().await.unwrap_or_default();
                (classify(status, &text), status)
            }
            Err(_) => (5, 0),
        };
        live.record(outcome, u64::from(quantity), sent.elapsed());
        // Expected business answers are goose successes; only transport
        // failures and 5xx stay failures in goose's own report.
        if (200..500).contains(&status) {
            user.set_success(&mut response.request)?;
        }
        // Sold out for the smallest quantity means sold out for everyone.
        if outcome == 1 && quantity == w.quantity_min {
            lock(&live.sold_out).insert(product);
            if plan.until_sold_out() && all_sold_out(plan) {
                stop_attack("sold out");
            }
        }
        let retryable = outcome == 3 || outcome == 4;
        if !(w.retry && retryable) || first_try.elapsed() > w.give_up_after {
            live.record_buyer(first_sent.unwrap_or(first_try).elapsed());
            return Ok(());
        }
        let jitter = rand::rng().random_range(0..=w.retry_ms / 2 + 1);
        tokio::time::sleep(Duration::from_millis(w.retry_ms + jitter)).await;
    }
}

fn all_sold_out(plan: &Plan) -> bool {
    lock(&plan.live.sold_out).len() as u64 >= plan.workload.products
}

/// Hold every burst user until all have started (or 10 s passed).
async fn burst_gate(plan: &Plan) {
    let live = &plan.live;
    let arrived = live.gate_arrived.fetch_add(1, Ordering::SeqCst) + 1;
    if arrived >= plan.workload.users as u64 {
        live.gate_open.store(true, Ordering::SeqCst);
        live.gate.notify_waiters();
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while !live.gate_open.load(Ordering::SeqCst) && Instant::now() < deadline {
        let notified = live.gate.notified();
        if live.gate_open.load(Ordering::SeqCst) {
            break;
        }
        let _ = tokio::time::timeout(Duration::from_millis(50), notified).await;
    }
}

/// Index into [`OUTCOMES`] of one answer.
fn classify(status: u16, body: &str) -> usize {
    match status {
        200 | 201 => 0,
        409 if body.contains("\"sold_out\"") => 1,
        409 if body.contains("\"already_purchased\"") => 2,
        429 => 3,
        409 if body.contains("\"rejected\"") => 4,
        _ => 5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_the_services_answers() {
        assert_eq!(OUTCOMES[classify(201, "{}")], "ordered");
        assert_eq!(
            OUTCOMES[classify(409, r#"{"error":"sold_out","message":"x"}"#)],
            "sold_out"
        );
        assert_eq!(
            OUTCOMES[classify(409, r#"{"error":"already_purchased"}"#)],
            "already_purchased"
        );
        assert_eq!(OUTCOMES[classify(429, r#"{"error":"busy"}"#)], "busy");
        assert_eq!(
            OUTCOMES[classify(409, r#"{"error":"rejected"}"#)],
            "rejected"
        );
        assert_eq!(
            OUTCOMES[classify(503, r#"{"error":"unavailable"}"#)],
            "error"
        );
        assert_eq!(OUTCOMES[classify(400, "bad")], "error");
    }
}
