//! The service as the load generator sees it: its replicas' public and
//! admin endpoints (`../shared/DESIGN.md`, "HTTP API"), with every failure
//! turned into a message a person can act on.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::prom::Scrape;

/// What can go wrong talking to the service. Each maps to an exit code.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// Nothing answers at a URL (wrong URL, service down).
    #[error("cannot reach the service at {url}: {reason}. Is it running? (`make demo` starts one; check --url)")]
    Unreachable { url: String, reason: String },
    /// The admin token was refused.
    #[error("the admin token was refused by {url} (HTTP {status}); pass --admin-token or set SECKILL_ADMIN_TOKEN to the service's SECKILL_ADMIN_TOKEN")]
    Unauthorized { url: String, status: u16 },
    /// A strategy the service does not know.
    #[error("unknown strategy {name:?}; the service knows: {known}")]
    UnknownStrategy { name: String, known: String },
    /// A product that is not seeded.
    #[error("product {id} does not exist on {url}; start the service with SECKILL_SEED_PRODUCTS listing it (e.g. 1:100,2:100)")]
    UnknownProduct { id: u64, url: String },
    /// Replicas that did not agree on the strategy in time.
    #[error("replica {url} still runs {seen:?} 10 s after switching to {wanted:?}: do all replicas share one Redis?")]
    NotSwitched {
        url: String,
        seen: String,
        wanted: String,
    },
    /// Any other unexpected answer.
    #[error("{what} at {url} answered HTTP {status}: {body}")]
    Unexpected {
        what: &'static str,
        url: String,
        status: u16,
        body: String,
    },
}

/// One strategy as `GET /admin/strategies` lists it.
#[derive(Debug, Clone, Deserialize)]
pub struct StrategyEntry {
    /// Stable name.
    pub name: String,
    /// One-line guarantee.
    #[serde(default)]
    pub guarantee: String,
    /// Whether this service can run it (Redlock needs its nodes, …).
    #[serde(default = "yes")]
    pub available: bool,
    /// Why it is not available (the setting it lacks), as the service says.
    #[serde(default)]
    pub unavailable_reason: Option<String>,
    /// Class for verdicts: unsafe, single-replica, safe-within-ttl, …
    #[serde(default)]
    pub safety: String,
}

fn yes() -> bool {
    true
}

/// `GET /admin/strategies`.
#[derive(Debug, Clone, Deserialize)]
pub struct Strategies {
    /// The active one.
    pub active: String,
    /// Every strategy, in the service's teaching order.
    pub strategies: Vec<StrategyEntry>,
    /// TTL of the expiring locks (and the watchdog's lease), when the
    /// service says.
    #[serde(default)]
    pub lock_ttl_ms: Option<u64>,
}

impl Strategies {
    /// The entry of `name`, or an error listing the known names.
    pub fn get(&self, name: &str) -> Result<&StrategyEntry, ServiceError> {
        self.strategies
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| ServiceError::UnknownStrategy {
                name: name.to_owned(),
                known: self
                    .strategies
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

/// One product's ground truth from `GET /admin/audit`.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize, PartialEq, Eq)]
pub struct AuditRow {
    pub product_id: i64,
    pub initial_stock: i64,
    pub stock: i64,
    pub orders: i64,
    pub ordered_units: i64,
    pub oversold: i64,
    /// ≥ 0 (a service before `undersold` sent it signed: see [`Self::lost`]).
    pub lost_updates: i64,
    /// Units gone from the stock column that no order took.
    #[serde(default)]
    pub undersold: i64,
    pub duplicates: i64,
    #[serde(default)]
    pub negative_stock: bool,
}

impl AuditRow {
    /// Lost updates, never negative.
    pub fn lost(&self) -> i64 {
        self.lost_updates.max(0)
    }

    /// Undersold units (from the signed `lost_updates` of older services).
    pub fn under(&self) -> i64 {
        self.undersold.max((-self.lost_updates).max(0))
    }
}

/// `GET /admin/audit`.
#[derive(Debug, Clone, Deserialize)]
pub struct Audit {
    pub strategy: String,
    #[serde(default)]
    pub synchronous_commit: Option<String>,
    pub products: Vec<AuditRow>,
}

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

    async fn admin_json(
        &self,
        what: &'static str,
        method: reqwest::Method,
        base: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, ServiceError> {
        let url = format!("{base}{path}");
        let mut request = self.http.request(method, &url).bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let (_, text) = self.call(what, request, base).await?;
        Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Every replica answers `/health/ready`, and the admin token works.
    pub async fn check(&self) -> Result<Strategies, ServiceError> {
        for base in &self.urls {
            let url = format!("{base}/health/ready");
            self.call("readiness", self.http.get(&url), base).await?;
        }
        self.strategies().await
    }

    /// `GET /admin/strategies` of the first replica.
    pub async fn strategies(&self) -> Result<Strategies, ServiceError> {
        self.admin_get("GET /admin/strategies", "/admin/strategies")
            .await
    }

    /// An admin GET of the first replica, decoded into `T`.
    async fn admin_get<T: serde::de::DeserializeOwned>(
        &self,
        what: &'static str,
        path: &str,
    ) -> Result<T, ServiceError> {
        let base = self.first();
        // A dependency that just came back (a fault scenario, a restarted
        // database) leaves dead pooled connections: each fails one statement
        // with 503 "retry later". A read is safe to retry, so do, for a while.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        let value = loop {
            match self
                .admin_json(what, reqwest::Method::GET, base, path, None)
                .await
            {
                Err(ServiceError::Unexpected { status: 503, .. })
                    if tokio::time::Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                other => break other?,
            }
        };
        serde_json::from_value(value.clone()).map_err(|e| ServiceError::Unexpected {
            what,
            url: base.to_owned(),
            status: 200,
            body: format!("{e}: {value}"),
        })
    }

    /// Reset a product to `stock` (orders, fence, Redis keys too).
    pub async fn reset(&self, product: u64, stock: u64) -> Result<(), ServiceError> {
        let base = self.first();
        let path = format!("/admin/products/{product}/reset");
        match self
            .admin_json(
                "reset",
                reqwest::Method::POST,
                base,
                &path,
                Some(json!({ "stock": stock })),
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
    pub async fn faults(&self) -> Result<Value, ServiceError> {
        self.admin_get("GET /admin/faults", "/admin/faults").await
    }

    /// Set the faults every replica applies (`PUT /admin/faults`).
    pub async fn set_faults(&self, faults: Value) -> Result<(), ServiceError> {
        self.admin_json(
            "PUT /admin/faults",
            reqwest::Method::PUT,
            self.first(),
            "/admin/faults",
            Some(faults),
        )
        .await
        .map(|_| ())
    }

    /// Switch the strategy, then wait until every replica reports it.
    pub async fn switch(&self, strategy: &str, probe_product: u64) -> Result<(), ServiceError> {
        self.admin_json(
            "PUT /admin/strategy",
            reqwest::Method::PUT,
            self.first(),
            "/admin/strategy",
            Some(json!({ "strategy": strategy })),
        )
        .await?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        for base in &self.urls {
            loop {
                let seen = self.product(base, probe_product).await?["strategy"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                if seen == strategy {
                    break;
                }
                if tokio::time::Instant::now() > deadline {
                    return Err(ServiceError::NotSwitched {
                        url: base.clone(),
                        seen,
                        wanted: strategy.to_owned(),
                    });
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Ok(())
    }

    /// `GET /api/v1/products/{id}` of one replica.
    pub async fn product(&self, base: &str, id: u64) -> Result<Value, ServiceError> {
        let url = format!("{base}/api/v1/products/{id}");
        match self.call("GET product", self.http.get(&url), base).await {
            Ok((_, text)) => Ok(serde_json::from_str(&text).unwrap_or(Value::Null)),
            Err(ServiceError::Unexpected { status: 404, .. }) => {
                Err(ServiceError::UnknownProduct {
                    id,
                    url: base.to_owned(),
                })
            }
            Err(e) => Err(e),
        }
    }

    /// `GET /admin/audit` (the database's ground truth).
    pub async fn audit(&self) -> Result<Audit, ServiceError> {
        self.admin_get("GET /admin/audit", "/admin/audit").await
    }

    /// Start a new mutual-exclusion history run (`PUT /admin/history`) and
    /// wait until every replica records it. Returns the run id.
    pub async fn history_start(&self) -> Result<String, ServiceError> {
        let answer = self
            .admin_json(
                "PUT /admin/history",
                reqwest::Method::PUT,
                self.first(),
                "/admin/history",
                Some(json!({ "enabled": true })),
            )
            .await?;
        let run = answer["run"].as_str().unwrap_or_default().to_owned();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        for base in &self.urls {
            loop {
                let seen = self.history_of(base).await?;
                if seen["run"].as_str() == Some(run.as_str()) {
                    break;
                }
                if tokio::time::Instant::now() > deadline {
                    return Err(ServiceError::NotSwitched {
                        url: base.clone(),
                        seen: seen["run"].to_string(),
                        wanted: format!("history run {run}"),
                    });
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        }
        Ok(run)
    }

    /// `GET /admin/history` of one replica.
    pub async fn history_of(&self, base: &str) -> Result<Value, ServiceError> {
        self.admin_json(
            "GET /admin/history",
            reqwest::Method::GET,
            base,
            "/admin/history",
            None,
        )
        .await
    }

    /// The history as the first replica reads it from the arbiter.
    pub async fn history(&self) -> Result<Value, ServiceError> {
        self.history_of(self.first()).await
    }

    /// Drop the sections a killed replica left inside.
    pub async fn forget(&self, instance: &str) -> Result<Value, ServiceError> {
        self.admin_json(
            "POST /admin/history/forget",
            reqwest::Method::POST,
            self.first(),
            "/admin/history/forget",
            Some(json!({ "instance": instance })),
        )
        .await
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

/// The innermost cause of a transport error, which names the real problem
/// ("Connection refused", "dns error", …) rather than reqwest's wrapper.
fn short_reason(error: &reqwest::Error) -> String {
    let mut source: &dyn std::error::Error = error;
    while let Some(next) = source.source() {
        source = next;
    }
    source.to_string()
}

/// The counts of `strategy` in a `GET /admin/history` answer (null: none).
pub fn strategy_history<'a>(history: &'a Value, strategy: &str) -> &'a Value {
    history["strategies"]
        .as_array()
        .and_then(|all| all.iter().find(|s| s["strategy"] == strategy))
        .unwrap_or(&Value::Null)
}
