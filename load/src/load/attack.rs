//! The goose attack: one buyer per goose user, spread over the replicas,
//! each grabbing until a final answer (busy/rejected retried), recorded in
//! [`Live`] as it happens.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use goose::config::GooseConfiguration;
use goose::metrics::GooseMetrics;
use goose::prelude::*;
use rand::Rng;

use super::driver::pick_user;
use super::grab::{Answered, Grab};
use super::live::{lock, Live};
use super::outcome::Outcome;
use super::shard::Shard;
use super::workload::{Shape, Workload};

/// Everything a goose user needs, shared.
#[derive(Debug)]
struct Plan {
    /// This process's part of the load (the whole, unsharded).
    workload: Workload,
    shard: Shard,
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
pub(super) fn base_config(urls: &[String], users: usize, increase_rate: f64) -> GooseConfiguration {
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
/// round-robin by the user's index, starting `offset` places round.
pub(super) fn pick_replica(urls: &[String], offset: usize) -> Transaction {
    let urls: Arc<[String]> = Arc::from(urls);
    Transaction::new(Arc::new(move |user: &mut GooseUser| {
        let urls = urls.clone();
        Box::pin(async move {
            let base = &urls[(user.weighted_users_index + offset) % urls.len()];
            user.set_base_url(base)?;
            Ok(())
        })
    }))
    .set_name("pick replica")
    .set_on_start()
}

/// Run `shard`'s part of one goose attack against `urls` ([`Shard::WHOLE`]:
/// all of it); returns goose's own metrics and whether it was interrupted
/// (Ctrl-C) rather than finished. `goose_report` is where goose writes its
/// HTML report.
pub async fn run(
    whole: &Workload,
    shard: Shard,
    urls: &[String],
    live: Arc<Live>,
    goose_report: &std::path::Path,
) -> anyhow::Result<(GooseMetrics, bool)> {
    let workload = &shard.workload(whole);
    let plan = Arc::new(Plan {
        workload: workload.clone(),
        shard,
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

    let on_start = pick_replica(urls, shard.replica_offset());
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
        let user_id = plan
            .shard
            .user_id(pick_user(&live.next_user, w.repeat_ratio));
        let quantity = rng.random_range(w.quantity_min..=w.quantity_max);
        (product, user_id, quantity)
    };
    let grab = Grab {
        product,
        user: user_id,
        quantity,
    };
    let (path, body) = (grab.path(), grab.body());
    let first_try = Instant::now();
    let mut first_sent = None;
    loop {
        let sent = scheduled.take().unwrap_or_else(Instant::now);
        first_sent.get_or_insert(sent);
        live.record_sent();
        let mut response = user.post_json(&path, &body).await?;
        let Answered { outcome, status } = grab.settle(live, response.response, sent).await;
        // Expected business answers are goose successes; only transport
        // failures and 5xx stay failures in goose's own report.
        if (200..500).contains(&status) {
            user.set_success(&mut response.request)?;
        }
        // Sold out for the smallest quantity means sold out for everyone.
        if outcome == Outcome::SoldOut && quantity == w.quantity_min {
            lock(&live.sold_out).insert(product);
            if plan.until_sold_out() && all_sold_out(plan) {
                stop_attack("sold out");
            }
        }
        if !(w.retry && outcome.retryable()) || first_try.elapsed() > w.give_up_after {
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
