//! The console's paced load: grabs at a set average rate, long enough to watch,
//! spread round-robin over the replicas, with a share of buyers who come
//! back (so `already_purchased` — and under a broken lock, duplicate
//! orders — can appear). Every answer is classed by [`Outcome::of`]; busy
//! and rejected grabs are counted, not retried: the room sees them.
//!
//! A dispatcher hands out tickets at the rate, in random (exponential)
//! gaps as a crowd arrives, each to one of `buyers`
//! tasks (the concurrency cap); when every buyer is waiting for an answer,
//! the ticket waits too, so a slow lock lowers the rate rather than piling
//! up requests. Stopping lets the grabs in flight finish, so a reset right
//! after a stop is never followed by a late order.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, Mutex};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::api::Service;
use crate::load::{lock, Outcome};

/// What the room asked for (`POST /api/load/start`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSettings {
    /// Grabs started per second (0.1 to 5000).
    pub rate: f64,
    /// Grabs in flight at most (1 to 1000).
    pub buyers: usize,
    /// The product is reset to this stock when the load starts (1 to 10⁹).
    pub stock: u64,
    /// Share of grabs by a buyer who already tried (0 to 1).
    pub repeat_ratio: f64,
    /// The simulated work inside the critical section, set on every
    /// replica when the load starts (the `work_delay_ms` of
    /// `/admin/faults`); absent: left as it is. Sections long beside the
    /// gap between grabs are what lets a broken lock show its overlaps at
    /// a rate a room can watch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_delay_ms: Option<u64>,
}

impl Default for LoadSettings {
    fn default() -> Self {
        Self {
            rate: 30.0,
            buyers: 20,
            stock: 1000,
            repeat_ratio: 0.1,
            work_delay_ms: Some(20),
        }
    }
}

impl LoadSettings {
    /// The settings, or what is wrong with them (a 400 for the page).
    pub fn check(&self) -> Result<(), String> {
        if !(0.1..=5000.0).contains(&self.rate) {
            return Err("rate must be between 0.1 and 5000 grabs per second".into());
        }
        if !(1..=1000).contains(&self.buyers) {
            return Err("buyers must be between 1 and 1000".into());
        }
        if !(1..=1_000_000_000).contains(&self.stock) {
            return Err("stock must be between 1 and 1000000000".into());
        }
        if !(0.0..=1.0).contains(&self.repeat_ratio) {
            return Err("repeat_ratio must be between 0 and 1".into());
        }
        if self.work_delay_ms.is_some_and(|ms| ms > 10_000) {
            return Err("work_delay_ms must be at most 10000".into());
        }
        Ok(())
    }
}

/// Answers counted so far, by outcome ([`Outcome::ALL`] order).
#[derive(Debug, Default)]
pub struct Counts {
    sent: AtomicU64,
    by_outcome: [AtomicU64; 6],
}

/// A snapshot of [`Counts`] for the page.
#[derive(Debug, Clone, Serialize)]
pub struct CountsView {
    /// Grabs sent.
    pub sent: u64,
    /// Answers by outcome name (`ordered`, `sold_out`, … `error`).
    pub outcomes: std::collections::BTreeMap<&'static str, u64>,
}

impl Counts {
    fn count(&self, outcome: Outcome) {
        self.by_outcome[outcome.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// What was counted until now.
    pub fn view(&self) -> CountsView {
        CountsView {
            sent: self.sent.load(Ordering::Relaxed),
            outcomes: Outcome::ALL
                .iter()
                .map(|o| {
                    (
                        o.as_str(),
                        self.by_outcome[o.index()].load(Ordering::Relaxed),
                    )
                })
                .collect(),
        }
    }
}

/// A load that runs until stopped (or dropped).
#[derive(Debug)]
pub struct Pacer {
    /// What it was started with.
    pub settings: LoadSettings,
    /// Its answers.
    pub counts: Arc<Counts>,
    started: Instant,
    dispatcher: std::sync::Mutex<Option<JoinHandle<()>>>,
    buyers: std::sync::Mutex<Vec<JoinHandle<()>>>,
    stopping: AtomicBool,
}

impl Pacer {
    /// Start grabbing `product` through `service` at `settings`' pace.
    pub fn start(service: &Service, product: u64, settings: LoadSettings) -> Self {
        let counts = Arc::new(Counts::default());
        let next_user = Arc::new(AtomicI64::new(1));
        let (tickets, inbox) = mpsc::channel::<()>(1);
        let inbox = Arc::new(Mutex::new(inbox));
        let dispatcher = tokio::spawn(dispatch(tickets, settings.rate));
        let mut buyers = Vec::with_capacity(settings.buyers);
        for buyer in 0..settings.buyers {
            let (service, counts, next_user, inbox) = (
                service.clone(),
                Arc::clone(&counts),
                Arc::clone(&next_user),
                Arc::clone(&inbox),
            );
            buyers.push(tokio::spawn(async move {
                let mut turn = buyer;
                loop {
                    if inbox.lock().await.recv().await.is_none() {
                        return;
                    }
                    let user = pick_user(&next_user, settings.repeat_ratio);
                    let base = &service.urls[turn % service.urls.len()];
                    turn += settings.buyers;
                    counts.sent.fetch_add(1, Ordering::Relaxed);
                    let outcome = match service.grab(base, product, user, 1).await {
                        Ok((status, body)) => Outcome::of(status, &body),
                        Err(_) => Outcome::Error,
                    };
                    counts.count(outcome);
                }
            }));
        }
        Self {
            settings,
            counts,
            started: Instant::now(),
            dispatcher: std::sync::Mutex::new(Some(dispatcher)),
            buyers: std::sync::Mutex::new(buyers),
            stopping: AtomicBool::new(false),
        }
    }

    /// Seconds since it started.
    pub fn seconds(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Whether a stop was asked for (its grabs in flight may still be
    /// answered).
    pub fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }

    /// Stop: no new grab starts; the grabs in flight are answered and
    /// counted (each buyer ends after its answer), so once this returns
    /// nothing of this load reaches the service any more. A grab still
    /// unanswered after [`STOP_WAIT`] is abandoned.
    pub async fn stop(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        if let Some(dispatcher) = lock(&self.dispatcher).take() {
            dispatcher.abort();
        }
        let buyers = std::mem::take(&mut *lock(&self.buyers));
        let deadline = Instant::now() + STOP_WAIT;
        for buyer in buyers {
            let abort = buyer.abort_handle();
            if tokio::time::timeout_at(deadline, buyer).await.is_err() {
                abort.abort();
            }
        }
    }
}

/// How long [`Pacer::stop`] waits for the grabs in flight (the client's
/// own request timeout is 15 s).
pub const STOP_WAIT: Duration = Duration::from_secs(20);

impl Drop for Pacer {
    fn drop(&mut self) {
        if let Some(dispatcher) = lock(&self.dispatcher).take() {
            dispatcher.abort();
        }
        for buyer in lock(&self.buyers).drain(..) {
            buyer.abort();
        }
    }
}

/// Tickets at `rate` per second on average, arriving as a crowd does: a
/// Poisson process (exponential gaps), not a metronome. Evenly spaced
/// grabs never meet when a section is shorter than the gap — a console
/// dry run at 30 grabs/s with 20 ms of work saw `none` hold with 0
/// overlaps; random gaps bring two grabs together as often as the rate
/// and the section length say. A ticket nobody takes waits; a schedule
/// more than a second behind starts again from now (no catch-up burst).
async fn dispatch(tickets: mpsc::Sender<()>, rate: f64) {
    let mut next = Instant::now();
    loop {
        next += exponential_gap(rate);
        let now = Instant::now();
        if next > now {
            tokio::time::sleep_until(next).await;
        } else if now - next > Duration::from_secs(1) {
            next = now;
        }
        if tickets.send(()).await.is_err() {
            return;
        }
    }
}

/// One gap of a Poisson process of `rate` events per second.
fn exponential_gap(rate: f64) -> Duration {
    let u: f64 = rand::rng().random_range(f64::MIN_POSITIVE..1.0);
    Duration::from_secs_f64(-u.ln() / rate)
}

/// A new buyer, or — one grab in `repeat_ratio` — one who already tried.
fn pick_user(next_user: &AtomicI64, repeat_ratio: f64) -> i64 {
    let mut rng = rand::rng();
    let seen = next_user.load(Ordering::Relaxed);
    if seen > 1 && rng.random_bool(repeat_ratio) {
        rng.random_range(1..seen)
    } else {
        next_user.fetch_add(1, Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_out_of_range_are_refused_with_the_field_named() {
        let ok = LoadSettings::default();
        assert_eq!(ok.check(), Ok(()));
        for (bad, field) in [
            (LoadSettings { rate: 0.0, ..ok }, "rate"),
            (LoadSettings { buyers: 0, ..ok }, "buyers"),
            (LoadSettings { stock: 0, ..ok }, "stock"),
            (
                LoadSettings {
                    work_delay_ms: Some(60_000),
                    ..ok
                },
                "work_delay_ms",
            ),
            (
                LoadSettings {
                    repeat_ratio: 1.5,
                    ..ok
                },
                "repeat_ratio",
            ),
        ] {
            let message = bad.check().expect_err("refused");
            assert!(message.starts_with(field), "{message}");
        }
    }

    #[test]
    fn gaps_average_one_over_the_rate_and_vary() {
        let gaps: Vec<f64> = (0..20_000)
            .map(|_| exponential_gap(50.0).as_secs_f64())
            .collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        assert!((mean - 0.02).abs() < 0.002, "mean gap {mean} s at 50/s");
        // Exponential: about e^-1 of the gaps are longer than the mean.
        let longer = gaps.iter().filter(|g| **g > 0.02).count() as f64 / gaps.len() as f64;
        assert!(
            (longer - (-1.0f64).exp()).abs() < 0.03,
            "{longer} longer than the mean"
        );
    }

    #[test]
    fn repeat_ratio_zero_always_takes_a_new_buyer_and_one_never_does() {
        let next = AtomicI64::new(1);
        let fresh: Vec<i64> = (0..5).map(|_| pick_user(&next, 0.0)).collect();
        assert_eq!(fresh, vec![1, 2, 3, 4, 5]);
        for _ in 0..50 {
            let user = pick_user(&next, 1.0);
            assert!((1..=5).contains(&user), "{user} is a buyer seen before");
        }
        assert_eq!(next.load(Ordering::Relaxed), 6);
    }
}
