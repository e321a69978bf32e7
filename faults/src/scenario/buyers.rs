//! The scenarios' load: closed-loop buyers of product 1, each grab by a
//! fresh user id, aimed at a set of replicas that the scenario can change
//! while they run (a killed replica leaves it, a survivor takes over) —
//! the crate's one [`Driver`], counted in the case's [`Live`] tally, whose
//! answer times tell when a design recovered.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

pub use seckill_load::load::{retarget, targets, Targets};
use seckill_load::load::{Driver, Grab, Live, Pace, Plan, Users};

/// Running buyers.
pub type Buyers = Driver;

/// Targets of one replica.
pub fn retargeted(url: String) -> Targets {
    targets(vec![url])
}

/// Start `users` buyers of product 1 over `targets`, user ids from
/// `next_user` (shared so two loads of one case never reuse an id); each
/// waits `think` after an answer before its next grab.
pub fn start(
    http: &reqwest::Client,
    targets: &Targets,
    users: usize,
    think: Duration,
    next_user: &Arc<AtomicU64>,
    tally: &Arc<Live>,
) -> Buyers {
    Driver::start(
        Plan {
            http: http.clone(),
            targets: Arc::clone(targets),
            product: 1,
            users: Users::fresh(next_user),
            pace: Pace::Closed { think },
            buyers: users,
            log: None,
        },
        tally,
    )
}

/// One grab by a fresh user on `url`, answered in the background.
pub fn grab_once(
    http: &reqwest::Client,
    url: &str,
    next_user: &Arc<AtomicU64>,
    tally: &Arc<Live>,
) -> JoinHandle<()> {
    let (http, tally, url) = (http.clone(), Arc::clone(tally), url.to_owned());
    let grab = Grab::one(1, Users::fresh(next_user).pick());
    tokio::spawn(async move {
        tally.record_sent();
        let sent = std::time::Instant::now();
        let answer = grab.send(&http, &url).await;
        grab.settle(&tally, answer, sent).await;
    })
}
