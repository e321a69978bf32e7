//! The service as the load generator sees it: its replicas' public and
//! admin endpoints, every answer decoded into its typed shape (a missing or
//! renamed field fails loudly, never reads as 0), every failure turned into
//! a message a person can act on.

use std::time::Duration;

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Serialize;

mod error;
pub mod metrics;
mod shapes;

pub use error::ServiceError;
pub use metrics::Scrape;
pub use shapes::*;

/// How long a pooled connection to a replica may sit idle before it is
/// dropped: below the service's HTTP keep-alive (actix-web's 5 s), so a
/// request never goes out on a connection the replica is closing at that
/// moment ("connection closed before message completed": a scenario case
/// in a debate run failed so, after a pause of about 5 s between calls).
pub const IDLE_BELOW_KEEP_ALIVE: Duration = Duration::from_secs(3);

/// The replicas of one service.
#[derive(Debug, Clone)]
pub struct Service {
    /// Base URLs, without a trailing slash.
    pub urls: Vec<String>,
    token: String,
    http: reqwest::Client,
}

impl Service {
    /// A client for these replicas.
    pub fn new(urls: Vec<String>, token: String) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(15))
            .connect_timeout(Duration::from_secs(3))
            .pool_idle_timeout(IDLE_BELOW_KEEP_ALIVE)
            .build()
            .unwrap_or_default();
        let urls = urls
            .into_iter()
            .map(|u| u.trim_end_matches('/').to_owned())
            .collect();
        Self { urls, token, http }
    }

    fn first(&self) -> &str {
        &self.urls[0]
    }

    async fn call(
        &self,
        what: &'static str,
        request: reqwest::RequestBuilder,
        url: &str,
    ) -> Result<(u16, String), ServiceError> {
        let response = request
            .send()
            .await
            .map_err(|e| ServiceError::Unreachable {
                url: url.to_owned(),
                reason: short_reason(&e),
            })?;
        let status = response.status().as_u16();
        let body = response.text().await.unwrap_or_default();
        if status == 401 || status == 403 {
            return Err(ServiceError::Unauthorized {
                url: url.to_owned(),
                status,
            });
        }
        if !(200..300).contains(&status) {
            return Err(ServiceError::Unexpected {
                what,
                url: url.to_owned(),
                status,
                body,
            });
        }
        Ok((status, body))
    }

    /// An admin request to `base`, its answer decoded into `T`: an answer
    /// that does not fit the shape (a field missing or renamed) is an error
    /// naming the endpoint, never a default.
    async fn admin<T: DeserializeOwned, B: Serialize + Sync>(
        &self,
        what: &'static str,
        method: reqwest::Method,
        base: &str,
        path: &str,
        body: Option<&B>,
    ) -> Result<T, ServiceError> {
        let url = format!("{base}{path}");
        let mut request = self.http.request(method, &url).bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.json(body);
        }
        let (_, text) = self.call(what, request, base).await?;
        decode(what, base, &text)
    }

    /// Every replica answers `/health/ready`, and the admin token works.
    pub async fn check(&self) -> Result<StrategiesBody, ServiceError> {
        for base in &self.urls {
            let url = format!("{base}/health/ready");
            self.call("readiness", self.http.get(&url), base).await?;
        }
        self.strategies().await
    }

    /// `GET /admin/strategies` of the first replica.
    pub async fn strategies(&self) -> Result<StrategiesBody, ServiceError> {
        self.admin_get("GET /admin/strategies", "/admin/strategies")
            .await
    }

    /// An admin GET of the first replica, decoded into `T`.
    async fn admin_get<T: DeserializeOwned>(
        &self,
        what: &'static str,
        path: &str,
    ) -> Result<T, ServiceError> {
        let base = self.first();
        // A dependency that just came back (a fault scenario, a restarted
        // database) leaves dead pooled connections: each fails one statement
        // with 503 "retry later". A read is safe to retry, so do, for a while:
        // at once a few times (each retry spends one dead connection and
        // fails fast), then every 250 ms while the dependency is still away.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        let mut tries = 0u32;
        loop {
            match self
                .admin(what, reqwest::Method::GET, base, path, None::<&()>)
                .await
            {
                Err(ServiceError::Unexpected { status: 503, .. })
                    if tokio::time::Instant::now() < deadline =>
                {
                    tries += 1;
                    let wait = if tries <= 12 { 10 } else { 250 };
                    tokio::time::sleep(Duration::from_millis(wait)).await;
                }
                other => return other,
            }
        }
    }

    /// Reset a product to `stock` (orders, fence, Redis keys too).
    pub async fn reset(&self, product: u64, stock: u64) -> Result<(), ServiceError> {
        let base = self.first();
        let path = format!("/admin/products/{product}/reset");
        match self
            .admin::<IgnoredAny, _>(
                "reset",
                reqwest::Method::POST,
                base,
                &path,
                Some(&ResetBody {
                    stock: i64::try_from(stock).unwrap_or(i64::MAX),
                }),
            )
            .await
        {
            Err(ServiceError::Unexpected { status: 404, .. }) => {
                Err(ServiceError::UnknownProduct {
                    id: product,
                    url: base.to_owned(),
                })
            }
            other => other.map(|_| ()),
        }
    }

    /// The faults in force (`GET /admin/faults`).
    pub async fn faults(&self) -> Result<Faults, ServiceError> {
        self.admin_get("GET /admin/faults", "/admin/faults").await
    }

    /// Change the faults every replica applies (`PUT /admin/faults`, a
    /// patch: the keys not named stay as they are); the faults now in force.
    pub async fn set_faults(&self, patch: FaultsPatch) -> Result<Faults, ServiceError> {
        self.admin(
            "PUT /admin/faults",
            reqwest::Method::PUT,
            self.first(),
            "/admin/faults",
            Some(&patch),
        )
        .await
    }

    /// Arm the scenario hook of the *first* replica (`POST /admin/freeze`):
    /// its next section that reaches `at` stops the process until SIGCONT.
    pub async fn arm_freeze(&self, at: FreezeAt) -> Result<FreezeArmed, ServiceError> {
        self.admin(
            "POST /admin/freeze",
            reqwest::Method::POST,
            self.first(),
            "/admin/freeze",
            Some(&FreezeBody { at }),
        )
        .await
    }

    /// Disarm the first replica's hook (`DELETE /admin/freeze`).
    pub async fn disarm_freeze(&self) -> Result<FreezeArmed, ServiceError> {
        self.admin::<FreezeArmed, ()>(
            "DELETE /admin/freeze",
            reqwest::Method::DELETE,
            self.first(),
            "/admin/freeze",
            None,
        )
        .await
    }

    /// Switch the strategy, then wait until every replica reports it.
    pub async fn switch(
        &self,
        strategy: StrategyName,
        probe_product: u64,
    ) -> Result<(), ServiceError> {
        self.admin::<IgnoredAny, _>(
            "PUT /admin/strategy",
            reqwest::Method::PUT,
            self.first(),
            "/admin/strategy",
            Some(&SwitchBody {
                strategy: strategy.to_string(),
            }),
        )
        .await?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        for base in &self.urls {
            loop {
                let seen = self.product(base, probe_product).await?.strategy;
                if seen == strategy {
                    break;
                }
                if tokio::time::Instant::now() > deadline {
                    return Err(ServiceError::NotSwitched {
                        url: base.clone(),
                        seen: seen.to_string(),
                        wanted: strategy.to_string(),
                    });
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Ok(())
    }

    /// `GET /api/v1/products/{id}` of one replica.
    pub async fn product(&self, base: &str, id: u64) -> Result<ProductBody, ServiceError> {
        let url = format!("{base}/api/v1/products/{id}");
        match self.call("GET product", self.http.get(&url), base).await {
            Ok((_, text)) => decode("GET product", base, &text),
            Err(ServiceError::Unexpected { status: 404, .. }) => {
                Err(ServiceError::UnknownProduct {
                    id,
                    url: base.to_owned(),
                })
            }
            Err(e) => Err(e),
        }
    }

    /// `GET /admin/audit?recount=true`: the database's ground truth, every
    /// order counted (so the trigger-kept tallies are checked too).
    pub async fn audit(&self) -> Result<AuditBody, ServiceError> {
        self.admin_get("GET /admin/audit", "/admin/audit?recount=true")
            .await
    }

    /// Every order of `product` since its last reset, read page by page
    /// (`GET /admin/products/{id}/orders`).
    pub async fn orders(&self, product: u64) -> Result<Vec<OrderRow>, ServiceError> {
        let mut all = Vec::new();
        let mut after = 0;
        loop {
            let page: OrdersPage = self
                .admin_get(
                    "GET /admin/products/{id}/orders",
                    &format!("/admin/products/{product}/orders?after={after}&limit=5000"),
                )
                .await?;
            all.extend(page.orders);
            match page.next_after {
                Some(next) if next > after => after = next,
                _ => return Ok(all),
            }
        }
    }

    /// The current history run's sections (`GET /admin/history/sections`).
    pub async fn sections(&self) -> Result<SectionsBody, ServiceError> {
        self.admin_get("GET /admin/history/sections", "/admin/history/sections")
            .await
    }

    /// Start a new mutual-exclusion history run (`PUT /admin/history`) and
    /// wait until every replica records it. Returns the run id.
    pub async fn history_start(&self) -> Result<String, ServiceError> {
        let switched: HistorySwitched = self
            .admin(
                "PUT /admin/history",
                reqwest::Method::PUT,
                self.first(),
                "/admin/history",
                Some(&HistorySwitch { enabled: true }),
            )
            .await?;
        let run = switched.run.ok_or_else(|| ServiceError::Unexpected {
            what: "PUT /admin/history",
            url: self.first().to_owned(),
            status: 200,
            body: "the answer names no run although one was started".into(),
        })?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        for base in &self.urls {
            loop {
                let seen = self.history_of(base).await?.run;
                if seen.as_deref() == Some(run.as_str()) {
                    break;
                }
                if tokio::time::Instant::now() > deadline {
                    return Err(ServiceError::NotSwitched {
                        url: base.clone(),
                        seen: seen.unwrap_or_else(|| "no run".into()),
                        wanted: format!("history run {run}"),
                    });
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        Ok(run)
    }

    /// `GET /admin/history` of one replica.
    pub async fn history_of(&self, base: &str) -> Result<HistoryReport, ServiceError> {
        self.admin(
            "GET /admin/history",
            reqwest::Method::GET,
            base,
            "/admin/history",
            None::<&()>,
        )
        .await
    }

    /// The history as the first replica reads it from the arbiter.
    pub async fn history(&self) -> Result<HistoryReport, ServiceError> {
        self.history_of(self.first()).await
    }

    /// The history as the first replica reads it, with `errors` summed over
    /// every replica (each counts its own failed arbiter calls of the run):
    /// an error anywhere makes the run's history incomplete.
    pub async fn history_all(&self) -> Result<HistoryReport, ServiceError> {
        let mut report = self.history().await?;
        for base in self.urls.iter().skip(1) {
            report.errors += self.history_of(base).await?.errors;
        }
        Ok(report)
    }

    /// Drop the sections a killed replica left inside.
    pub async fn forget(&self, instance: &str) -> Result<Forgotten, ServiceError> {
        self.admin(
            "POST /admin/history/forget",
            reqwest::Method::POST,
            self.first(),
            "/admin/history/forget",
            Some(&ForgetBody {
                instance: instance.to_owned(),
            }),
        )
        .await
    }

    /// Clear every fault (`DELETE /admin/faults`: the shared set, so every
    /// replica); the faults now in force.
    pub async fn clear_faults(&self) -> Result<Faults, ServiceError> {
        self.admin(
            "DELETE /admin/faults",
            reqwest::Method::DELETE,
            self.first(),
            "/admin/faults",
            None::<&()>,
        )
        .await
    }

    /// `GET /admin/faults` of one replica (each reads the shared set).
    pub async fn faults_of(&self, base: &str) -> Result<Faults, ServiceError> {
        self.admin(
            "GET /admin/faults",
            reqwest::Method::GET,
            base,
            "/admin/faults",
            None::<&()>,
        )
        .await
    }

    /// Stop recording the history (`PUT /admin/history {"enabled": false}`).
    pub async fn history_stop(&self) -> Result<(), ServiceError> {
        self.admin::<IgnoredAny, _>(
            "PUT /admin/history",
            reqwest::Method::PUT,
            self.first(),
            "/admin/history",
            Some(&HistorySwitch { enabled: false }),
        )
        .await
        .map(|_| ())
    }

    /// The most recent `last` finished sections of the current history run,
    /// then those inside now (`GET /admin/history/sections?last=`).
    pub async fn recent_sections(&self, last: u64) -> Result<SectionsBody, ServiceError> {
        self.admin(
            "GET /admin/history/sections",
            reqwest::Method::GET,
            self.first(),
            &format!("/admin/history/sections?last={last}"),
            None::<&()>,
        )
        .await
    }

    /// `GET /api/v1/status?product=` of one replica: what its status page
    /// shows (its own grabs/s among them).
    pub async fn status_of(&self, base: &str, product: u64) -> Result<StatusBody, ServiceError> {
        let url = format!("{base}/api/v1/status?product={product}");
        let (_, text) = self.call("GET status", self.http.get(&url), base).await?;
        decode("GET status", base, &text)
    }

    /// The HTTP client every call of this service goes through (timeouts
    /// set): loads send their grabs on it too.
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// `/metrics` of every replica, summed.
    pub async fn scrape(&self) -> Result<Scrape, ServiceError> {
        let mut total = Scrape::default();
        for base in &self.urls {
            let url = format!("{base}/metrics");
            let (_, text) = self.call("GET /metrics", self.http.get(&url), base).await?;
            total.add(&Scrape::parse(&text));
        }
        Ok(total)
    }
}

/// `text` decoded into `T`, or an error naming the endpoint and the field.
fn decode<T: DeserializeOwned>(
    what: &'static str,
    base: &str,
    text: &str,
) -> Result<T, ServiceError> {
    serde_json::from_str(text).map_err(|e| ServiceError::Unexpected {
        what,
        url: base.to_owned(),
        status: 200,
        body: format!("the answer does not fit its shape ({e}): {text}"),
    })
}

/// The innermost cause of a transport error, which names the real problem
/// ("Connection refused", "dns error", …) rather than reqwest's wrapper.
fn short_reason(error: &reqwest::Error) -> String {
    let mut source: &dyn std::error::Error = error;
    while let Some(next) = source.source() {
        source = next;
    }
    source.to_string()
}
