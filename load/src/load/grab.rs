//! One grab, as every load of this crate sends and counts it: goose's
//! buyers (`run`, `compare`), the scenarios' buyers and the console's paced
//! load ([`super::Driver`]). The body is the wire's [`GrabBody`]; the
//! answer settles into one [`Live`] tally — the ledger (every acknowledged
//! and indeterminate grab), the outcome, the request's latency and the
//! waits the service reports in `Server-Timing`.

use std::time::{Duration, Instant};

use seckill_wire::grab::GrabBody;

use super::ledger::Answer;
use super::live::Live;
use super::outcome::Outcome;

/// One grab: `quantity` units of `product` for `user`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grab {
    pub product: u64,
    pub user: u64,
    pub quantity: u32,
}

/// How a grab was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answered {
    pub outcome: Outcome,
    /// The HTTP status; 0 when no answer came (refused, reset, timed out).
    pub status: u16,
}

impl Grab {
    /// One unit of `product` for `user`.
    pub fn one(product: u64, user: u64) -> Self {
        Self {
            product,
            user,
            quantity: 1,
        }
    }

    /// The route, relative to a replica's base URL.
    pub fn path(&self) -> String {
        format!("/api/v1/products/{}/grab", self.product)
    }

    /// The request body.
    pub fn body(&self) -> GrabBody {
        GrabBody {
            user_id: self.user as i64,
            quantity: i64::from(self.quantity),
        }
    }

    /// Send it to the replica at `base`.
    pub async fn send(
        &self,
        http: &reqwest::Client,
        base: &str,
    ) -> Result<reqwest::Response, reqwest::Error> {
        http.post(format!("{base}{}", self.path()))
            .json(&self.body())
            .send()
            .await
    }

    /// Count the answer to this grab, sent at `sent`, in `live`: the
    /// ledger first (an order acknowledged is checked against the
    /// database's orders after the run; a lost answer may have ordered),
    /// then the outcome and the latency until the whole body was read.
    pub async fn settle(
        &self,
        live: &Live,
        answer: Result<reqwest::Response, reqwest::Error>,
        sent: Instant,
    ) -> Answered {
        let (user, quantity) = (self.user as i64, i64::from(self.quantity));
        let (outcome, status) = match answer {
            Ok(response) => {
                let status = response.status().as_u16();
                if let Some(waited) = server_timing(response.headers(), "lock") {
                    live.lock_wait.record(waited);
                }
                if let Some(waited) = server_timing(response.headers(), "batch") {
                    live.batch_wait.record(waited);
                }
                match response.bytes().await {
                    Ok(body) => {
                        let answer = Answer::Http(status, &body);
                        live.ledger.record(self.product, user, quantity, answer);
                        (Outcome::of(status, &body), status)
                    }
                    Err(e) => {
                        live.ledger
                            .record(self.product, user, quantity, Answer::lost(&e));
                        (Outcome::Error, 0)
                    }
                }
            }
            Err(e) => {
                live.ledger
                    .record(self.product, user, quantity, Answer::lost(&e));
                (Outcome::Error, 0)
            }
        };
        live.record(outcome, status, u64::from(self.quantity), sent.elapsed());
        Answered { outcome, status }
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
