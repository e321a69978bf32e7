//! The scenarios' load: closed-loop buyers, each grab by a fresh user id,
//! aimed at a set of replicas that the scenario can change while they run
//! (a killed replica leaves it, a survivor takes over). Plain reqwest, not
//! goose: a scenario starts and stops its load around faults many times a
//! minute, and needs every answer's time to tell when a design recovered.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde_json::json;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::load::{Answer, Ledger, Outcome};

/// Counts of every answer, and when orders happened.
#[derive(Debug, Default)]
pub struct Tally {
    /// `201`.
    pub ordered: AtomicU64,
    /// `409 sold_out`.
    pub sold_out: AtomicU64,
    /// `409 already_purchased`.
    pub already_purchased: AtomicU64,
    /// `429 busy`.
    pub busy: AtomicU64,
    /// `409 rejected` (a lost lease, an expired validity, a stale fence).
    pub rejected: AtomicU64,
    /// `503` (a dependency down).
    pub unavailable: AtomicU64,
    /// Anything else: other statuses, timeouts, refused connections.
    pub error: AtomicU64,
    order_times: Mutex<Vec<Instant>>,
    /// Every acknowledged and indeterminate grab, checked against the
    /// database's orders after the case.
    pub ledger: Ledger,
}

impl Tally {
    /// Count one answer of a grab of one unit of product 1 by `user`.
    fn answer(&self, user: u64, answer: &Result<(u16, Vec<u8>), reqwest::Error>) -> Outcome {
        match answer {
            Ok((status, body)) => {
                self.ledger
                    .record(1, user as i64, 1, Answer::Http(*status, body));
                self.record(*status, body)
            }
            Err(e) => {
                self.ledger.record(1, user as i64, 1, Answer::lost(e));
                self.record(0, b"")
            }
        }
    }

    /// Count one answer (`status` 0: no answer at all).
    pub(crate) fn record(&self, status: u16, body: &[u8]) -> Outcome {
        let outcome = Outcome::of(status, body);
        let counter = match outcome {
            Outcome::Ordered => {
                self.order_times
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(Instant::now());
                &self.ordered
            }
            Outcome::SoldOut => &self.sold_out,
            Outcome::AlreadyPurchased => &self.already_purchased,
            Outcome::Rejected => &self.rejected,
            Outcome::Busy => &self.busy,
            Outcome::Error if status == 503 => &self.unavailable,
            Outcome::Error => &self.error,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        outcome
    }

    pub fn first_order_after(&self, since: Instant) -> Option<Instant> {
        self.order_times
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .copied()
            .filter(|t| *t > since)
            .min()
    }

    /// A counter's value.
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// Running buyers.
#[derive(Debug)]
pub struct Buyers {
    /// `true` once stopped: a buyer asleep between grabs wakes at once,
    /// one inside a grab finishes it first.
    stop: tokio::sync::watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

/// The replicas buyers aim at; change it while they run.
pub type Targets = Arc<RwLock<Vec<String>>>;

/// New targets.
pub fn targets(urls: Vec<String>) -> Targets {
    Arc::new(RwLock::new(urls))
}

/// Targets of one replica.
pub fn retargeted(url: String) -> Targets {
    targets(vec![url])
}

/// Replace the targets.
pub fn retarget(targets: &Targets, urls: Vec<String>) {
    *targets
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = urls;
}

impl Buyers {
    /// Start `users` buyers of product 1 over `targets`, user ids from
    /// `next_user` (shared so two loads of one case never reuse an id);
    /// each waits `think` after an answer before its next grab.
    pub fn start(
        http: &reqwest::Client,
        targets: &Targets,
        users: usize,
        think: Duration,
        next_user: &Arc<AtomicU64>,
        tally: &Arc<Tally>,
    ) -> Self {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let tasks = (0..users)
            .map(|i| {
                let (http, targets, next_user, tally, mut stopped) = (
                    http.clone(),
                    targets.clone(),
                    next_user.clone(),
                    tally.clone(),
                    stopped.clone(),
                );
                tokio::spawn(async move {
                    let mut n = i;
                    while !*stopped.borrow() {
                        let url = {
                            let urls = targets
                                .read()
                                .unwrap_or_else(std::sync::PoisonError::into_inner);
                            if urls.is_empty() {
                                None
                            } else {
                                Some(urls[n % urls.len()].clone())
                            }
                        };
                        n += 1;
                        let Some(url) = url else {
                            idle(&mut stopped, Duration::from_millis(20)).await;
                            continue;
                        };
                        let user = next_user.fetch_add(1, Ordering::Relaxed);
                        let answer = grab(&http, &url, user).await;
                        let outcome = tally.answer(user, &answer);
                        let rest = if answer.is_err() {
                            Duration::from_millis(20)
                        } else if outcome == Outcome::SoldOut {
                            Duration::from_millis(50) + think
                        } else {
                            think
                        };
                        idle(&mut stopped, rest).await;
                    }
                })
            })
            .collect();
        Self { stop, tasks }
    }

    /// Stop and wait for the grabs in flight to be answered.
    pub async fn stop(self) {
        self.stop.send_replace(true);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// Sleep `rest` between two grabs, or less: until the buyers are stopped.
async fn idle(stopped: &mut tokio::sync::watch::Receiver<bool>, rest: Duration) {
    if rest.is_zero() {
        return;
    }
    tokio::select! {
        () = tokio::time::sleep(rest) => {}
        _ = stopped.wait_for(|stop| *stop) => {}
    }
}

/// One grab by a fresh user on `url`, answered in the background.
pub fn grab_once(
    http: &reqwest::Client,
    url: &str,
    next_user: &Arc<AtomicU64>,
    tally: &Arc<Tally>,
) -> JoinHandle<()> {
    let (http, tally) = (http.clone(), tally.clone());
    let user = next_user.fetch_add(1, Ordering::Relaxed);
    let url = url.to_owned();
    tokio::spawn(async move {
        let answer = grab(&http, &url, user).await;
        tally.answer(user, &answer);
    })
}

/// One grab of one unit of product 1 by `user` on `url`: the status and
/// body, or the transport error.
async fn grab(
    http: &reqwest::Client,
    url: &str,
    user: u64,
) -> Result<(u16, Vec<u8>), reqwest::Error> {
    let response = http
        .post(format!("{url}/api/v1/products/1/grab"))
        .json(&json!({ "user_id": user }))
        .send()
        .await?;
    let status = response.status().as_u16();
    Ok((status, response.bytes().await?.to_vec()))
}
