//! The load that runs until stopped: buyers grabbing one product over a
//! set of replicas, each grab sent and counted as every load of this crate
//! does it ([`Grab`], into one [`Live`]). Goose's attack (`run`, `compare`)
//! is a measurement of a fixed size; this is the load a scenario starts and
//! stops around its faults many times a minute, and the one the console's
//! room watches and turns up and down.
//!
//! Two paces:
//! - **closed loop** ([`Pace::Closed`]): each buyer grabs again `think`
//!   after its answer — the scenarios' buyers;
//! - **paced** ([`Pace::Rate`]): a dispatcher hands out tickets at `per_sec`
//!   on average, in random (exponential) gaps as a crowd arrives, to the
//!   buyers, who are then only the concurrency cap: when every buyer is
//!   waiting for an answer the ticket waits too, so a slow lock lowers the
//!   rate rather than piling up requests — the console's load.
//!
//! [`Driver::adjust`] changes the rate and the number of buyers of a
//! running load: new buyers start at once; a retired buyer finishes the
//! grab it has in flight and leaves (a paced one holding a ticket drops
//! it). The replicas aimed at change while it runs too ([`retarget`]):
//! a killed replica leaves the set, a survivor takes over.
//!
//! Stopping lets the grabs in flight finish (each buyer ends after its
//! answer), so once [`Driver::stop`] returns nothing of this load reaches
//! the service any more: a reset right after a stop is never followed by a
//! late order.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rand::Rng;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::grab::Grab;
use super::live::{lock, Live};
use super::log::GrabLog;
use super::outcome::Outcome;

/// How the buyers' grabs are spaced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// Each buyer grabs again `think` after its answer (a little longer
    /// after a transport error or a sold-out answer).
    Closed { think: Duration },
    /// Grabs started at `per_sec` on average, a Poisson process.
    Rate { per_sec: f64 },
}

/// The replicas buyers aim at; change it while they run ([`retarget`]).
pub type Targets = Arc<RwLock<Vec<String>>>;

/// New targets.
pub fn targets(urls: Vec<String>) -> Targets {
    Arc::new(RwLock::new(urls))
}

/// Replace the targets.
pub fn retarget(targets: &Targets, urls: Vec<String>) {
    *targets
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = urls;
}

/// Who buys: fresh user ids from `next` (shared, so two loads of one case
/// never reuse an id), or — one grab in `repeat_ratio` — a buyer seen
/// before, so `already_purchased` (and, under a broken lock, duplicate
/// orders) can appear.
#[derive(Debug, Clone)]
pub struct Users {
    pub next: Arc<AtomicU64>,
    pub repeat_ratio: f64,
}

impl Users {
    /// Fresh ids only, from `next`.
    pub fn fresh(next: &Arc<AtomicU64>) -> Self {
        Self {
            next: Arc::clone(next),
            repeat_ratio: 0.0,
        }
    }

    /// A new buyer, or one who already tried.
    pub fn pick(&self) -> u64 {
        pick_user(&self.next, self.repeat_ratio)
    }
}

/// A fresh user id from `next`, or — one grab in `repeat_ratio` — one it
/// handed out before: the buyers of every load, goose's attack included.
pub fn pick_user(next: &AtomicU64, repeat_ratio: f64) -> u64 {
    let mut rng = rand::rng();
    let seen = next.load(Ordering::Relaxed);
    if seen > 1 && repeat_ratio > 0.0 && rng.random_bool(repeat_ratio.min(1.0)) {
        rng.random_range(1..seen)
    } else {
        next.fetch_add(1, Ordering::Relaxed)
    }
}

/// What a driver is started with.
#[derive(Debug, Clone)]
pub struct Plan {
    pub http: reqwest::Client,
    pub targets: Targets,
    pub product: u64,
    pub users: Users,
    pub pace: Pace,
    pub buyers: usize,
    /// Where each answered grab is written, one row (the console's charts).
    pub log: Option<Arc<GrabLog>>,
}

/// A running load.
#[derive(Debug)]
pub struct Driver {
    shared: Arc<Shared>,
    /// The rate the dispatcher follows (paced only).
    rate: watch::Sender<f64>,
    dispatcher: Mutex<Option<JoinHandle<()>>>,
    /// The buyers, in order: `adjust` retires from the end.
    buyers: Mutex<Vec<Buyer>>,
    /// Retired buyers finishing their grab in flight.
    leaving: Mutex<Vec<JoinHandle<()>>>,
    stopping: AtomicBool,
    started: Instant,
}

/// What every buyer of one driver shares.
#[derive(Debug)]
struct Shared {
    plan: Plan,
    live: Arc<Live>,
    /// Tickets from the dispatcher (paced only).
    inbox: Option<tokio::sync::Mutex<mpsc::Receiver<()>>>,
    stop: watch::Sender<bool>,
}

#[derive(Debug)]
struct Buyer {
    retired: Arc<AtomicBool>,
    task: JoinHandle<()>,
}

impl Driver {
    /// Start `plan.buyers` buyers, counted in `live`.
    pub fn start(plan: Plan, live: &Arc<Live>) -> Self {
        live.mark_started();
        let (rate, rates) = watch::channel(match plan.pace {
            Pace::Rate { per_sec } => per_sec,
            Pace::Closed { .. } => 0.0,
        });
        let (dispatcher, inbox) = match plan.pace {
            Pace::Rate { .. } => {
                let (tickets, inbox) = mpsc::channel::<()>(1);
                (
                    Some(tokio::spawn(dispatch(tickets, rates))),
                    Some(tokio::sync::Mutex::new(inbox)),
                )
            }
            Pace::Closed { .. } => (None, None),
        };
        let buyers = plan.buyers;
        let driver = Self {
            shared: Arc::new(Shared {
                plan,
                live: Arc::clone(live),
                inbox,
                stop: watch::channel(false).0,
            }),
            rate,
            dispatcher: Mutex::new(dispatcher),
            buyers: Mutex::new(Vec::new()),
            leaving: Mutex::new(Vec::new()),
            stopping: AtomicBool::new(false),
            started: Instant::now(),
        };
        driver.set_buyers(buyers);
        driver
    }

    /// The tally its grabs are counted in.
    pub fn live(&self) -> &Arc<Live> {
        &self.shared.live
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

    /// Buyers running now.
    pub fn buyers(&self) -> usize {
        lock(&self.buyers).len()
    }

    /// The rate followed now (paced), or `None` (closed loop).
    pub fn rate(&self) -> Option<f64> {
        matches!(self.shared.plan.pace, Pace::Rate { .. }).then(|| *self.rate.borrow())
    }

    /// Change the rate (paced only; ignored in a closed loop) and the
    /// number of buyers of the running load.
    pub fn adjust(&self, rate: Option<f64>, buyers: Option<usize>) {
        if let (Some(rate), Some(_)) = (rate, self.rate()) {
            self.rate.send_replace(rate);
        }
        if let Some(buyers) = buyers {
            self.set_buyers(buyers);
        }
    }

    fn set_buyers(&self, n: usize) {
        if self.stopping() {
            return;
        }
        let mut buyers = lock(&self.buyers);
        while buyers.len() > n {
            let buyer = buyers.pop().expect("more than n");
            buyer.retired.store(true, Ordering::Relaxed);
            lock(&self.leaving).push(buyer.task);
        }
        while buyers.len() < n {
            let retired = Arc::new(AtomicBool::new(false));
            let task = tokio::spawn(buy(
                Arc::clone(&self.shared),
                buyers.len(),
                Arc::clone(&retired),
            ));
            buyers.push(Buyer { retired, task });
        }
    }

    /// Stop: no new grab starts; the grabs in flight are answered and
    /// counted, so once this returns nothing of this load reaches the
    /// service any more. A grab still unanswered after [`STOP_WAIT`] is
    /// abandoned.
    pub async fn stop(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        self.shared.stop.send_replace(true);
        if let Some(dispatcher) = lock(&self.dispatcher).take() {
            dispatcher.abort();
        }
        let mut tasks: Vec<JoinHandle<()>> = lock(&self.buyers)
            .drain(..)
            .map(|b| {
                b.retired.store(true, Ordering::Relaxed);
                b.task
            })
            .collect();
        tasks.append(&mut lock(&self.leaving));
        let deadline = Instant::now() + STOP_WAIT;
        for task in tasks {
            let abort = task.abort_handle();
            if tokio::time::timeout_at(deadline, task).await.is_err() {
                abort.abort();
            }
        }
    }
}

/// How long [`Driver::stop`] waits for the grabs in flight (a request
/// times out after 15 s).
pub const STOP_WAIT: Duration = Duration::from_secs(20);

impl Drop for Driver {
    fn drop(&mut self) {
        self.shared.stop.send_replace(true);
        if let Some(dispatcher) = lock(&self.dispatcher).take() {
            dispatcher.abort();
        }
        for buyer in lock(&self.buyers).drain(..) {
            buyer.task.abort();
        }
        for task in lock(&self.leaving).drain(..) {
            task.abort();
        }
    }
}

/// One buyer, the `turn`-th: grabs until stopped or retired, aimed
/// round-robin over the targets.
async fn buy(shared: Arc<Shared>, turn: usize, retired: Arc<AtomicBool>) {
    let plan = &shared.plan;
    let mut stopped = shared.stop.subscribe();
    let mut n = turn;
    loop {
        if retired.load(Ordering::Relaxed) || *stopped.borrow() {
            return;
        }
        if let Some(inbox) = &shared.inbox {
            let ticket = tokio::select! {
                ticket = async { inbox.lock().await.recv().await } => ticket,
                _ = stopped.wait_for(|stop| *stop) => None,
            };
            if ticket.is_none() || retired.load(Ordering::Relaxed) {
                return;
            }
        }
        let url = {
            let urls = plan
                .targets
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            (!urls.is_empty()).then(|| urls[n % urls.len()].clone())
        };
        n += 1;
        let Some(url) = url else {
            idle(&mut stopped, Duration::from_millis(20)).await;
            continue;
        };
        let grab = Grab::one(plan.product, plan.users.pick());
        shared.live.record_sent();
        let sent = std::time::Instant::now();
        let answer = grab.send(&plan.http, &url).await;
        let answered = grab.settle(&shared.live, answer, sent).await;
        if let Some(log) = &plan.log {
            log.push(sent, &url, answered.outcome, sent.elapsed());
        }
        if let Pace::Closed { think } = plan.pace {
            let rest = if answered.status == 0 {
                Duration::from_millis(20)
            } else if answered.outcome == Outcome::SoldOut {
                Duration::from_millis(50) + think
            } else {
                think
            };
            idle(&mut stopped, rest).await;
        }
    }
}

/// Sleep `rest` between two grabs, or less: until the load is stopped.
async fn idle(stopped: &mut watch::Receiver<bool>, rest: Duration) {
    if rest.is_zero() {
        return;
    }
    tokio::select! {
        () = tokio::time::sleep(rest) => {}
        _ = stopped.wait_for(|stop| *stop) => {}
    }
}

/// Tickets at the rate `rates` holds, on average, arriving as a crowd
/// does: a Poisson process (exponential gaps), not a metronome. Evenly
/// spaced grabs never meet when a section is shorter than the gap — a
/// console dry run at 30 grabs/s with 20 ms of work saw `none` hold with 0
/// overlaps; random gaps bring two grabs together as often as the rate and
/// the section length say. A ticket nobody takes waits; a schedule more
/// than a second behind starts again from now (no catch-up burst); a new
/// rate takes effect at once (the gap being waited is drawn again).
async fn dispatch(tickets: mpsc::Sender<()>, mut rates: watch::Receiver<f64>) {
    let mut next = Instant::now();
    let mut from = next;
    loop {
        next = from + exponential_gap(*rates.borrow_and_update());
        let now = Instant::now();
        if next > now {
            tokio::select! {
                () = tokio::time::sleep_until(next) => {}
                changed = rates.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    continue; // `from` kept: the gap is drawn again at the new rate
                }
            }
        } else if now - next > Duration::from_secs(1) {
            next = now;
        }
        from = next;
        if tickets.send(()).await.is_err() {
            return;
        }
    }
}

/// One gap of a Poisson process of `rate` events per second.
fn exponential_gap(rate: f64) -> Duration {
    let u: f64 = rand::rng().random_range(f64::MIN_POSITIVE..1.0);
    Duration::from_secs_f64(-u.ln() / rate.max(1e-6))
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// Tickets taken as they come for `secs`.
    async fn count(inbox: &mut mpsc::Receiver<()>, secs: f64) -> u32 {
        let end = Instant::now() + Duration::from_secs_f64(secs);
        let mut n = 0;
        while let Ok(Some(())) = tokio::time::timeout_at(end, inbox.recv()).await {
            n += 1;
        }
        n
    }

    #[tokio::test]
    async fn a_new_rate_is_followed_at_once() {
        let (tickets, mut inbox) = mpsc::channel(1);
        let (rate, rates) = watch::channel(400.0);
        let dispatcher = tokio::spawn(dispatch(tickets, rates));
        let fast = count(&mut inbox, 0.5).await;
        rate.send_replace(10.0);
        let slow = count(&mut inbox, 2.0).await;
        dispatcher.abort();
        eprintln!("{fast} tickets in 0.5 s at 400/s, {slow} in 2 s at 10/s");
        // Poisson counts: 200 ± 14 and 20 ± 4.5 (one standard deviation).
        assert!(
            (120..=280).contains(&fast),
            "{fast} tickets in 0.5 s at 400/s"
        );
        assert!((5..=45).contains(&slow), "{slow} tickets in 2 s at 10/s");
    }

    #[test]
    fn repeat_ratio_zero_always_takes_a_new_buyer_and_one_never_does() {
        let next = Arc::new(AtomicU64::new(1));
        let fresh = Users::fresh(&next);
        let ids: Vec<u64> = (0..5).map(|_| fresh.pick()).collect();
        assert_eq!(ids, vec![1, 2, 3, 4, 5]);
        let again = Users {
            repeat_ratio: 1.0,
            ..fresh
        };
        for _ in 0..50 {
            let user = again.pick();
            assert!((1..=5).contains(&user), "{user} is a buyer seen before");
        }
        assert_eq!(next.load(Ordering::Relaxed), 6);
    }
}
