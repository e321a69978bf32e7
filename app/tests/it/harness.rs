//! The test harness: real PostgreSQL, real `redis-server`, real HTTP.
//!
//! - [`RedisServer`] starts a `redis-server` on a free port (no persistence)
//!   and can stop and restart it on the same port.
//! - [`fresh_database`] creates a new database on the PostgreSQL named by
//!   `SECKILL_TEST_DATABASE_URL` (default: the local server as `postgres`).
//! - [`PgProxy`] sits between an app and PostgreSQL and can cut every
//!   connection, which makes the real database unreachable for that app
//!   only — the shared server itself is never stopped.
//! - [`TestApp`] is the service built with [`Application::build`] on port 0.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use seckill_app::configuration::{Positive, Settings};
use seckill_app::startup::Application;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

pub use seckill_testkit::{fresh_database, mysql_test_url, EtcdServer, RedisServer, ZkServer};

/// A TCP proxy in front of PostgreSQL that can cut every connection, or
/// hold new ones open without an answer (a server that does not answer).
#[derive(Debug, Clone)]
pub struct PgProxy {
    pub port: u16,
    cut: Arc<AtomicBool>,
    silent: Arc<AtomicBool>,
    held: Arc<Mutex<Vec<TcpStream>>>,
    links: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl PgProxy {
    /// Proxy to the host and port of `target_url`.
    pub async fn start(target_url: &str) -> Self {
        let after_at = target_url
            .rsplit_once('@')
            .map_or(target_url, |(_, rest)| rest);
        let after_scheme = after_at
            .rsplit_once("://")
            .map_or(after_at, |(_, rest)| rest);
        let hostport = after_scheme.split('/').next().expect("host:port");
        let target = if hostport.contains(':') {
            hostport.to_owned()
        } else {
            format!("{hostport}:5432")
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let proxy = Self {
            port,
            cut: Arc::new(AtomicBool::new(false)),
            silent: Arc::new(AtomicBool::new(false)),
            held: Arc::new(Mutex::new(Vec::new())),
            links: Arc::new(Mutex::new(Vec::new())),
        };
        let accept = proxy.clone();
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if accept.cut.load(Ordering::SeqCst) {
                    let _ = inbound.shutdown().await;
                    continue;
                }
                if accept.silent.load(Ordering::SeqCst) {
                    accept.held.lock().expect("held").push(inbound);
                    continue;
                }
                let target = target.clone();
                let link = tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(&target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                accept.links.lock().expect("links").push(link);
            }
        });
        proxy
    }

    /// The database URL as seen through the proxy.
    pub fn url_for(&self, database_url: &str) -> String {
        let (scheme_user, rest) = database_url.rsplit_once('@').expect("url with user@host");
        let path = rest.split_once('/').map_or("", |(_, p)| p);
        format!("{scheme_user}@127.0.0.1:{}/{path}", self.port)
    }

    /// Drop every connection and refuse new ones.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for link in self.links.lock().expect("links").drain(..) {
            link.abort();
        }
    }

    /// Drop every connection; accept new ones but never answer them: a
    /// connect waits until the client gives up, as with a server that is
    /// frozen or behind a network that drops everything.
    pub fn go_silent(&self) {
        self.silent.store(true, Ordering::SeqCst);
        for link in self.links.lock().expect("links").drain(..) {
            link.abort();
        }
    }

    /// Accept and forward connections again.
    pub fn restore(&self) {
        self.cut.store(false, Ordering::SeqCst);
        self.silent.store(false, Ordering::SeqCst);
        self.held.lock().expect("held").clear();
    }
}

/// Options for [`TestApp::spawn`].
#[derive(Debug, Clone)]
pub struct AppOptions {
    pub database_url: String,
    pub redis_url: String,
    pub strategy: &'static str,
    pub work_delay_ms: u64,
    pub lock_wait_ms: u64,
    pub lock_ttl_ms: u64,
    pub seed: &'static str,
    pub redlock_urls: Vec<String>,
    pub mysql_url: Option<String>,
    pub etcd_urls: Vec<String>,
    pub zookeeper_url: Option<String>,
    pub order_batch_max: usize,
    pub order_batch_commits: usize,
    pub database_max_connections: u32,
    pub database_acquire_timeout_ms: u64,
}

impl AppOptions {
    pub fn new(database_url: &str, redis_url: &str) -> Self {
        Self {
            database_url: database_url.to_owned(),
            redis_url: redis_url.to_owned(),
            strategy: "set-nx-px-token",
            work_delay_ms: 0,
            lock_wait_ms: 5_000,
            lock_ttl_ms: 10_000,
            seed: "1:100",
            redlock_urls: Vec::new(),
            mysql_url: None,
            etcd_urls: Vec::new(),
            zookeeper_url: None,
            order_batch_max: Settings::default().order_batch_max,
            order_batch_commits: Settings::default().order_batch_commits,
            database_max_connections: Settings::default().database_max_connections.get(),
            database_acquire_timeout_ms: 1_500,
        }
    }

    pub fn strategy(mut self, s: &'static str) -> Self {
        self.strategy = s;
        self
    }

    pub fn work_delay_ms(mut self, ms: u64) -> Self {
        self.work_delay_ms = ms;
        self
    }
}

pub const ADMIN_TOKEN: &str = "test-admin-token";

/// A running service.
#[derive(Debug)]
pub struct TestApp {
    pub address: String,
    pub client: reqwest::Client,
    pub handle: actix_web::dev::ServerHandle,
    pub state: actix_web::web::Data<seckill_app::state::AppState>,
}

impl TestApp {
    pub async fn spawn(options: AppOptions) -> Self {
        let settings = Settings {
            listen: "127.0.0.1:0".into(),
            database_url: options.database_url.parse().expect("a PostgreSQL URL"),
            redis_url: options.redis_url.parse().expect("a Redis URL"),
            strategy: options.strategy.parse().expect("a strategy name"),
            work_delay_ms: options.work_delay_ms,
            lock_wait_ms: Positive::new(options.lock_wait_ms),
            lock_ttl_ms: Positive::new(options.lock_ttl_ms),
            admin_token: Some(ADMIN_TOKEN.into()),
            redlock_urls: options
                .redlock_urls
                .iter()
                .map(|u| u.parse().expect("a Redis URL"))
                .collect(),
            mysql_url: options.mysql_url,
            etcd_urls: options.etcd_urls,
            zookeeper_url: options.zookeeper_url,
            order_batch_max: options.order_batch_max,
            order_batch_commits: options.order_batch_commits,
            database_max_connections: Positive::new(options.database_max_connections),
            database_acquire_timeout_ms: Positive::new(options.database_acquire_timeout_ms),
            seed_products: options.seed.into(),
            control_refresh_ms: Positive::new(50),
            ..Settings::default()
        };
        Self::start(settings).await
    }

    /// The settings every test replica starts from: `strategy` on
    /// `database_url` and `redis_url`, no work delay, roomy waits, the test
    /// admin token, product 1 with 100 units.
    pub fn base_settings(database_url: &str, redis_url: &str, strategy: &str) -> Settings {
        Settings {
            listen: "127.0.0.1:0".into(),
            database_url: database_url.parse().expect("a PostgreSQL URL"),
            redis_url: redis_url.parse().expect("a Redis URL"),
            strategy: strategy.parse().expect("a strategy name"),
            work_delay_ms: 0,
            lock_wait_ms: Positive::new(5_000),
            lock_ttl_ms: Positive::new(10_000),
            admin_token: Some(ADMIN_TOKEN.into()),
            database_acquire_timeout_ms: Positive::new(1_500),
            seed_products: "1:100".into(),
            control_refresh_ms: Positive::new(50),
            ..Settings::default()
        }
    }

    /// Validate `settings`, start the service on them, and a client for it.
    pub async fn start(settings: Settings) -> Self {
        settings.validate().expect("valid test settings");
        let app = Application::build(settings).await.expect("app builds");
        let address = format!("http://127.0.0.1:{}", app.port());
        let handle = app.handle();
        let state = app.state();
        tokio::spawn(app.run_until_stopped());
        // Idle connections are dropped well before the server's 5 s
        // keep-alive closes them: a request on a connection the server is
        // closing ends in `IncompleteMessage` (seen once under a full
        // `make test`, in the status page's paced load).
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(256)
            .pool_idle_timeout(Duration::from_secs(2))
            .timeout(Duration::from_secs(60))
            .build()
            .expect("client");
        Self {
            address,
            client,
            handle,
            state,
        }
    }

    /// `GET /metrics` as text.
    pub async fn metrics(&self) -> String {
        self.client
            .get(format!("{}/metrics", self.address))
            .send()
            .await
            .expect("sent")
            .text()
            .await
            .expect("text")
    }

    pub async fn grab(&self, product: i64, user: i64, quantity: i64) -> (u16, Value) {
        self.post_json(
            &format!("/api/v1/products/{product}/grab"),
            &json!({ "user_id": user, "quantity": quantity }),
        )
        .await
    }

    /// A grab sent in the background (one a fault will hold): its task,
    /// to ask whether it has answered, or to abort.
    pub fn grab_in_background(
        &self,
        product: i64,
        user: i64,
        quantity: i64,
    ) -> tokio::task::JoinHandle<reqwest::Result<reqwest::Response>> {
        let request = self
            .client
            .post(format!("{}/api/v1/products/{product}/grab", self.address))
            .json(&json!({ "user_id": user, "quantity": quantity }));
        tokio::spawn(request.send())
    }

    pub async fn post_json(&self, path: &str, body: &Value) -> (u16, Value) {
        let response = self
            .client
            .post(format!("{}{path}", self.address))
            .json(body)
            .send()
            .await
            .expect("request sent");
        read(response).await
    }

    pub async fn admin(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.address))
            .bearer_auth(ADMIN_TOKEN);
        if let Some(body) = body {
            request = request.json(&body);
        }
        read(request.send().await.expect("request sent")).await
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        read(
            self.client
                .get(format!("{}{path}", self.address))
                .send()
                .await
                .expect("request sent"),
        )
        .await
    }

    pub async fn switch(&self, strategy: &str) {
        let (status, body) = self
            .admin(
                reqwest::Method::PUT,
                "/admin/strategy",
                Some(json!({ "strategy": strategy })),
            )
            .await;
        assert_eq!(status, 200, "switch to {strategy}: {body}");
    }

    pub async fn reset(&self, product: i64, stock: i64) {
        let (status, body) = self
            .admin(
                reqwest::Method::POST,
                &format!("/admin/products/{product}/reset"),
                Some(json!({ "stock": stock })),
            )
            .await;
        assert_eq!(status, 200, "reset: {body}");
    }

    pub async fn set_faults(&self, faults: Value) {
        let (status, body) = self
            .admin(reqwest::Method::PUT, "/admin/faults", Some(faults))
            .await;
        assert_eq!(status, 200, "faults: {body}");
    }

    /// The audit row of one product.
    pub async fn audit(&self, product: i64) -> Value {
        let (status, body) = self.admin(reqwest::Method::GET, "/admin/audit", None).await;
        assert_eq!(status, 200, "audit: {body}");
        body["products"]
            .as_array()
            .expect("products")
            .iter()
            .find(|p| p["product_id"] == product)
            .cloned()
            .expect("product in audit")
    }

    pub async fn stop(&self) {
        self.handle.stop(true).await;
    }
}

async fn read(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, value)
}

/// Outcome counts of a run, by HTTP status (and error code).
pub type Outcomes = BTreeMap<String, u64>;

/// `users` distinct buyers (ids `first_user..`) grab `product` once each,
/// all at once, spread round-robin over `apps`. A `busy` (429) answer is
/// retried (testkit's poll), as a real client would, until a final answer
/// — within 60 s, longer than a lock's TTL (10 s in tests), so a lock left
/// behind by a holder whose release failed on a saturated host (a Redis
/// reply past its 2 s timeout) has expired before a buyer gives up: a
/// buyer still busy then fails the test.
pub async fn hammer(apps: &[&TestApp], product: i64, first_user: i64, users: i64) -> Outcomes {
    let mut tasks = Vec::new();
    for (i, user) in (first_user..first_user + users).enumerate() {
        let app = apps[i % apps.len()];
        let client = app.client.clone();
        let url = format!("{}/api/v1/products/{product}/grab", app.address);
        tasks.push(tokio::spawn(async move {
            let what = format!("buyer {user} gets an answer other than busy");
            seckill_testkit::eventually(&what, Duration::from_secs(60), || async {
                let response = client
                    .post(&url)
                    .json(&json!({ "user_id": user, "quantity": 1 }))
                    .send()
                    .await;
                let (status, body) = match response {
                    Ok(r) => read(r).await,
                    Err(e) => return Ok(format!("transport: {e}")),
                };
                let code = body["error"].as_str().unwrap_or("");
                if status == 429 {
                    return Err(format!("{status} {code}"));
                }
                Ok(match (code, body["message"].as_str()) {
                    ("", _) => status.to_string(),
                    // Which dependency failed, for the failure message.
                    (code, Some(message)) if status == 503 => {
                        format!("{status} {code} ({message})")
                    }
                    (code, _) => format!("{status} {code}"),
                })
            })
            .await
        }));
    }
    let mut outcomes = Outcomes::new();
    for task in tasks {
        *outcomes.entry(task.await.expect("task")).or_default() += 1;
    }
    outcomes
}

/// One grab's answer as a client saw it.
#[derive(Debug, Clone)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// The error code (`busy`, `unavailable`, …); empty for a `201`.
    pub code: String,
    /// The `Retry-After` header, if any.
    pub retry_after: Option<String>,
    /// How long the answer took.
    pub took: Duration,
}

/// Users `users` grab `product` once each, all at once, without retrying:
/// every answer, in user order.
pub async fn grab_once_each(
    app: &TestApp,
    product: i64,
    users: std::ops::Range<i64>,
) -> Vec<Answer> {
    let grabs: Vec<_> = users
        .map(|user| {
            let client = app.client.clone();
            let url = format!("{}/api/v1/products/{product}/grab", app.address);
            tokio::spawn(async move {
                let started = tokio::time::Instant::now();
                let response = client
                    .post(&url)
                    .json(&json!({ "user_id": user, "quantity": 1 }))
                    .send()
                    .await
                    .expect("request sent");
                let retry_after = response
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let (status, body) = read(response).await;
                Answer {
                    status,
                    code: body["error"].as_str().unwrap_or_default().to_owned(),
                    retry_after,
                    took: started.elapsed(),
                }
            })
        })
        .collect();
    let mut answers = Vec::new();
    for grab in grabs {
        answers.push(grab.await.expect("grab task"));
    }
    answers
}

/// Wait until a session of this test's database waits on a lock
/// (`pg_stat_activity`), read from PostgreSQL rather than guessed from a
/// sleep; how many wait.
pub async fn until_lock_waiters(pool: &sqlx::PgPool, within: Duration) -> i64 {
    seckill_testkit::eventually("a session waits on a lock", within, || async {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(pool)
        .await
        .expect("pg_stat_activity");
        if waiting > 0 {
            Ok(waiting)
        } else {
            Err(waiting)
        }
    })
    .await
}
