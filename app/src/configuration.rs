//! One typed [`Settings`] struct for the whole service.
//!
//! Sources, later ones win:
//! 1. the defaults of [`Settings::default`] — a local demo on loopback;
//! 2. an optional TOML file named by `SECKILL_CONFIG` (or `seckill.toml` in
//!    the working directory when it exists);
//! 3. `SECKILL_*` environment variables, one per field: `SECKILL_LISTEN`,
//!    `SECKILL_LOCK_TTL_MS`, `SECKILL_REDLOCK_URLS=redis://a,redis://b`, ...
//!
//! A value of the wrong type or out of range stops the start with a message
//! that names the setting as the user wrote it (`SECKILL_LOCK_TTL_MS`), see
//! [`Settings::validate`].

use std::net::SocketAddr;
use std::time::Duration;

use documented::DocumentedFields;
use seckill_wire::strategies::StrategyName;

pub use crate::setting_types::{AnyRedis, Positive, Postgres, Redis, StoreUrl};
use serde::{Deserialize, Deserializer, Serialize};

/// The admin token that loopback-only demos use when `SECKILL_ADMIN_TOKEN`
/// is not set. It is printed in the README; it is never accepted when the
/// service listens on a non-loopback address.
pub const DEMO_ADMIN_TOKEN: &str = seckill_wire::admin::DEMO_TOKEN;

/// The largest `fault_delay_max_ms`: ten minutes.
pub const FAULT_DELAY_MAX_MS: u64 = 600_000;

/// Every setting of the service. Field `foo_bar` is `SECKILL_FOO_BAR` in the
/// environment and `foo_bar = ...` in the TOML file. The doc comments below
/// are also `seckill-app --help` ([`settings_help`]): keep them for users.
#[derive(Debug, Clone, Serialize, Deserialize, DocumentedFields)]
#[serde(default)]
pub struct Settings {
    /// Address the HTTP server binds, `host:port`. Port 0 picks a free port.
    pub listen: String,
    /// PostgreSQL connection URL; the database must exist.
    pub database_url: StoreUrl<Postgres>,
    /// Upper bound of the PostgreSQL connection pool.
    pub database_max_connections: Positive<u32>,
    /// How long a request waits for a pooled connection. Then a grab answers
    /// `busy` (429) when every connection is taken and the server answers
    /// (a pool starved by the lock's own waiters), `unavailable` (503) when
    /// the server does not.
    pub database_acquire_timeout_ms: Positive<u64>,
    /// The session's `synchronous_commit` (`on`, `off`, `local`,
    /// `remote_write`, `remote_apply`). `off` takes the commit's fsync out of
    /// every grab, so the comparison measures the locks rather than the disk.
    #[serde(deserialize_with = "by_word")]
    pub synchronous_commit: SynchronousCommit,
    /// Redis used for Redis locks, the shared active strategy and faults.
    pub redis_url: StoreUrl<AnyRedis>,
    /// Independent Redis nodes for the `redlock` strategy (comma list in env).
    pub redlock_urls: Vec<StoreUrl<Redis>>,
    /// The strategy a fresh deployment starts with; once an admin switches,
    /// the choice stored in Redis wins for every replica.
    #[serde(deserialize_with = "by_word")]
    pub strategy: StrategyName,
    /// TTL of every expiring lock, and the watchdog's lease.
    pub lock_ttl_ms: Positive<u64>,
    /// Per-node timeout of one Redlock request, far below the TTL: a slow
    /// or dead node costs at most this much.
    pub redlock_node_timeout_ms: Positive<u64>,
    /// Redlock's clock-drift allowance, a fraction of the TTL: validity =
    /// TTL − elapsed − (TTL × factor + 2 ms). The Redis docs' 0.01; 0 keeps
    /// only the 2 ms (the `clock-slew` scenario sweeps it).
    pub redlock_drift_factor: f64,
    /// Offset added to this replica's wall clock by `setnx-getset` only —
    /// the one strategy whose safety depends on clocks. Negative or positive.
    pub clock_skew_ms: i64,
    /// How long a grab waits to acquire its lock before answering `busy` (429).
    /// Also PostgreSQL's `lock_timeout` for the database strategies.
    pub lock_wait_ms: Positive<u64>,
    /// Base interval between two attempts of a polling lock (jittered ±50%).
    pub lock_retry_ms: Positive<u64>,
    /// Retries of a `pg-optimistic` grab whose version check lost, before `busy`.
    pub optimistic_max_retries: u32,
    /// Bearer token for `/admin/*`. Unset: loopback listeners accept
    /// [`DEMO_ADMIN_TOKEN`], any other listener refuses admin calls.
    pub admin_token: Option<String>,
    /// A file whose first line is the admin token, read once at start
    /// (docker-compose's per-stack token, in a shared volume). Not together
    /// with `SECKILL_ADMIN_TOKEN`; a missing or blank file stops the start.
    pub admin_token_file: Option<String>,
    /// Largest `quantity` a single grab may ask for.
    pub max_quantity: Positive<u32>,
    /// Simulated work inside the critical section (between read and write),
    /// until an admin changes it through `PUT /admin/faults`.
    pub work_delay_ms: u64,
    /// Longest delay `PUT /admin/faults` accepts for each `*_ms` fault (at
    /// most 600000, ten minutes); the OpenAPI document states it as each
    /// field's `maximum`. `make fuzz-api` lowers it, so a fuzzer cannot
    /// switch on ten-minute pauses.
    pub fault_delay_max_ms: Positive<u64>,
    /// Products created at start when missing, `id:stock` comma list.
    pub seed_products: String,
    /// How often each replica re-reads the shared strategy and faults from Redis.
    pub control_refresh_ms: Positive<u64>,
    /// `text` or `json` log lines.
    #[serde(deserialize_with = "by_word")]
    pub log_format: LogFormat,
    /// Redis server that arbitrates the mutual-exclusion history (see
    /// `history.rs`); unset: the service's own Redis. The scenario runner
    /// points every replica at a dedicated server it never breaks.
    pub history_url: Option<StoreUrl<Redis>>,
    /// A section the history arbiter has held inside for longer than this
    /// is taken for one whose exit was lost (a failed call): the next entry
    /// of its product drops it, counts it as `stale`, and does not count it
    /// as a holder. Keep it above the longest section you want judged.
    pub history_stale_ms: Positive<u64>,
    /// This replica's name in the history and in logs; unset:
    /// `{hostname}-{pid}` (in containers every replica is pid 1: the
    /// hostname, the container's id, tells them apart).
    pub instance_id: Option<String>,
    /// After a Redis lock write (`set-nx-px*`), `WAIT` for this many
    /// replicas to acknowledge it before entering; 0 = don't wait (Redis's
    /// default: a failover can lose the lock). See the `failover` scenario.
    pub redis_wait_replicas: u32,
    /// How long that `WAIT` may take; fewer acknowledgements = not acquired.
    pub redis_wait_timeout_ms: Positive<u64>,
    /// MariaDB/MySQL server for `mysql-get-lock` (`mysql://user@host:3306/db`);
    /// unset or empty: that strategy is listed with `available: false`.
    pub mysql_url: Option<String>,
    /// etcd client URLs for `etcd-lease` (comma list in env, e.g.
    /// `http://127.0.0.1:2379`); empty: `etcd-lease` is unavailable.
    pub etcd_urls: Vec<String>,
    /// ZooKeeper connect string for `zk-ephemeral-seq` (`host:port[,host:port]`);
    /// unset or empty: that strategy is unavailable.
    pub zookeeper_url: Option<String>,
    /// Most orders `redis-lua-stock` writes in one multi-row `INSERT` (one
    /// commit); a grab is answered after its batch committed. 1 = one
    /// `INSERT` per order (no batching).
    pub order_batch_max: usize,
    /// Order batches of `redis-lua-stock` committing at once; the orders
    /// that arrive meanwhile form the next batch.
    pub order_batch_commits: usize,
    /// Most orders of `redis-lua-stock` waiting for their batch. A grab
    /// that finds the queue full answers `busy` (429, `Retry-After`) before
    /// it reserves any stock, so a rush the database cannot keep up with
    /// costs retries, not memory and ever longer waits.
    pub order_batch_queue: usize,
    /// `pg-2pc`'s second PostgreSQL database, the stock side of its
    /// two-phase commit (`postgres://user@host:5432/seckill_stock`: a second
    /// database on the same server, or another cluster); the orders stay
    /// in `SECKILL_DATABASE_URL`. Unset or empty: `pg-2pc` is unavailable.
    /// Both servers need `max_prepared_transactions` > 0.
    pub stock_database_url: Option<String>,
    /// Whether `pg-2pc`'s coordinator writes its commit decision to its
    /// durable log (the `two_pc_decisions` table) before the second phase.
    /// Off, a coordinator that restarts finds no decision for its in-doubt
    /// transactions and rolls them back (presumed abort): the workshop's
    /// lesson of a coordinator without a log.
    pub two_pc_decision_log: bool,
    /// `pg-3pc`'s participant in front of the stock database (`host:port`
    /// of a `seckill-app participant --side stock`). Unset: this replica
    /// runs the participant in its own process, on a loopback port — it
    /// then dies with its coordinator, so a crash proves nothing about
    /// blocking (the scenarios start participants of their own).
    pub three_pc_stock_participant: Option<String>,
    /// `pg-3pc`'s participant in front of the order database (`host:port`
    /// of a `seckill-app participant --side order`); unset: in-process, as
    /// above.
    pub three_pc_order_participant: Option<String>,
    /// A `pg-3pc` participant's own timeout: pre-committed this long with
    /// no word from the coordinator, it commits on its own (3PC's rule,
    /// what keeps it from blocking); having voted yes, it waits this long
    /// plus `lock_wait_ms` for the pre-commit, then aborts. The
    /// coordinator waits as long for each answer. Above 0: a participant
    /// that never waits commits before the coordinator has asked everyone.
    pub three_pc_timeout_ms: Positive<u64>,
    /// The scenario runner's hooks (`POST /admin/freeze`: the process
    /// stops itself at a named point of its next critical section, until
    /// a `SIGCONT`). Off, those routes answer 403: a replica nobody will
    /// continue must never stop itself.
    pub scenario_hooks: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".into(),
            database_url: StoreUrl::parse("postgres://postgres@127.0.0.1:5432/seckill")
                .expect("a PostgreSQL URL"),
            database_max_connections: Positive::new(32),
            database_acquire_timeout_ms: Positive::new(3_000),
            synchronous_commit: SynchronousCommit::On,
            redis_url: StoreUrl::parse("redis://127.0.0.1:6379").expect("a Redis URL"),
            redlock_urls: Vec::new(),
            strategy: StrategyName::SetNxPxToken,
            lock_ttl_ms: Positive::new(30_000),
            redlock_node_timeout_ms: Positive::new(50),
            redlock_drift_factor: 0.01,
            clock_skew_ms: 0,
            lock_wait_ms: Positive::new(3_000),
            lock_retry_ms: Positive::new(4),
            optimistic_max_retries: 200,
            admin_token: None,
            admin_token_file: None,
            max_quantity: Positive::new(5),
            work_delay_ms: 2,
            fault_delay_max_ms: Positive::new(FAULT_DELAY_MAX_MS),
            seed_products: "1:100".into(),
            control_refresh_ms: Positive::new(250),
            log_format: LogFormat::Text,
            history_url: None,
            history_stale_ms: Positive::new(60_000),
            instance_id: None,
            redis_wait_replicas: 0,
            redis_wait_timeout_ms: Positive::new(250),
            mysql_url: None,
            etcd_urls: Vec::new(),
            zookeeper_url: None,
            order_batch_max: 256,
            order_batch_commits: 2,
            order_batch_queue: 4_096,
            stock_database_url: None,
            two_pc_decision_log: true,
            three_pc_stock_participant: None,
            three_pc_order_participant: None,
            three_pc_timeout_ms: Positive::new(2_000),
            scenario_hooks: false,
        }
    }
}

/// PostgreSQL's `synchronous_commit` for the service's sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SynchronousCommit {
    /// Wait for the commit's flush (PostgreSQL's default).
    On,
    /// Do not wait for the flush: a crash may lose the last commits.
    Off,
    /// Wait for the local flush only.
    Local,
    /// Wait for a standby's write.
    RemoteWrite,
    /// Wait for a standby to apply it.
    RemoteApply,
}

impl SynchronousCommit {
    /// Every value, in PostgreSQL's order.
    pub const ALL: [Self; 5] = [
        Self::On,
        Self::Off,
        Self::Local,
        Self::RemoteWrite,
        Self::RemoteApply,
    ];

    /// As PostgreSQL spells it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::On => "on",
            Self::Off => "off",
            Self::Local => "local",
            Self::RemoteWrite => "remote_write",
            Self::RemoteApply => "remote_apply",
        }
    }
}

impl std::str::FromStr for SynchronousCommit {
    type Err = String;

    fn from_str(word: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|v| v.as_str() == word)
            .ok_or_else(|| {
                format!("{word:?} is none of on, off, local, remote_write, remote_apply")
            })
    }
}

/// How the service writes its log lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    /// One readable line per event.
    Text,
    /// One JSON object per line.
    Json,
}

impl std::str::FromStr for LogFormat {
    type Err = String;

    fn from_str(word: &str) -> Result<Self, Self::Err> {
        match word {
            "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            _ => Err(format!("{word:?} is neither text nor json")),
        }
    }
}

/// A setting that could not be read or is out of range.
#[derive(Debug, thiserror::Error)]
#[error("invalid setting {name}: {message}")]
pub struct SettingsError {
    /// The environment name of the setting, e.g. `SECKILL_LOCK_TTL_MS`.
    pub name: String,
    /// What is wrong with it.
    pub message: String,
}

impl SettingsError {
    fn new(field: &str, message: impl Into<String>) -> Self {
        Self {
            name: env_name(field),
            message: message.into(),
        }
    }
}

/// A setting that is one of a few words, read by its type's `FromStr`,
/// whose error lists the words it takes (config's own error for an enum
/// names none of them). No backquote in those errors: [`Settings::load_from`]
/// finds the setting's name between the first two.
fn by_word<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    let word = String::deserialize(d)?;
    word.parse().map_err(serde::de::Error::custom)
}

fn env_name(field: &str) -> String {
    format!("SECKILL_{}", field.to_ascii_uppercase())
}

/// A product to create at start when it does not exist yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeedProduct {
    /// Product id.
    pub id: i64,
    /// Its stock (and initial stock).
    pub stock: i64,
}

/// The settings part of `seckill-app --help`: every `SECKILL_*` variable
/// with its default and its meaning, from [`Settings`]' own doc comments.
pub fn settings_help() -> String {
    let defaults = serde_json::to_value(Settings::default()).unwrap_or_default();
    let mut out = String::from(
        "Settings (environment variables; the same names in lower case in a TOML file\n\
         given by --config / SECKILL_CONFIG, or ./seckill.toml; variables win):\n",
    );
    for (name, doc) in Settings::FIELD_NAMES.iter().zip(Settings::FIELD_DOCS) {
        let default = match &defaults[*name] {
            serde_json::Value::Null => "unset".to_owned(),
            serde_json::Value::String(s) if s.is_empty() => "empty".to_owned(),
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Array(items) if items.is_empty() => "empty".to_owned(),
            serde_json::Value::Array(items) => items
                .iter()
                .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(","),
            other => other.to_string(),
        };
        // Rustdoc links read as plain code in a terminal.
        let text = doc
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .replace("[`", "`")
            .replace("`]", "`");
        out.push_str(&format!(
            "\n  SECKILL_{}  [default: {default}]\n",
            name.to_uppercase()
        ));
        let mut line = String::from("     ");
        for word in text.split(' ') {
            if line.len() + word.len() > 78 {
                out.push_str(line.trim_end());
                out.push('\n');
                line = String::from("     ");
            }
            line.push(' ');
            line.push_str(word);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

impl Settings {
    /// Defaults, then the optional file, then `SECKILL_*` variables; validated.
    pub fn load() -> Result<Self, SettingsError> {
        Self::load_from(std::env::vars())
    }

    /// Like [`Settings::load`] with an explicit environment (used by tests).
    pub fn load_from(
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, SettingsError> {
        let vars: std::collections::HashMap<String, String> = vars
            .into_iter()
            .filter(|(key, _)| key.starts_with("SECKILL_"))
            .collect();
        let defaults = config::Config::try_from(&Settings::default())
            .map_err(|e| SettingsError::new("config", e.to_string()))?;
        let mut builder = config::Config::builder().add_source(defaults);
        match vars.get("SECKILL_CONFIG") {
            Some(path) => {
                builder = builder.add_source(config::File::with_name(path).required(true));
            }
            None => {
                builder = builder.add_source(config::File::with_name("seckill").required(false));
            }
        }
        let env = config::Environment::with_prefix("SECKILL")
            .prefix_separator("_")
            .try_parsing(true)
            .list_separator(",")
            .with_list_parse_key("redlock_urls")
            .with_list_parse_key("etcd_urls")
            .source(Some(
                vars.into_iter()
                    .filter(|(key, _)| key != "SECKILL_CONFIG")
                    .collect(),
            ));
        let settings: Settings = builder
            .add_source(env)
            .build()
            .and_then(|c| c.try_deserialize())
            .map_err(|e| {
                let text = e.to_string();
                // config names the key in lower case ("for key `lock_ttl_ms`");
                // point the user at the variable they actually set.
                // A list's item is named with its index (`redlock_urls[1]`):
                // the variable is the list's.
                let field = text
                    .split('`')
                    .nth(1)
                    .and_then(|key| key.split('[').next())
                    .map(str::to_owned)
                    .unwrap_or_else(|| "config".into());
                SettingsError::new(&field, text)
            })?;
        let settings = settings.with_token_file_read()?;
        settings.validate()?;
        Ok(settings)
    }

    /// `admin_token` taken from `admin_token_file` when that is set.
    fn with_token_file_read(mut self) -> Result<Self, SettingsError> {
        let Some(path) = self.admin_token_file.as_deref() else {
            return Ok(self);
        };
        if self.admin_token.is_some() {
            return Err(SettingsError::new(
                "admin_token_file",
                "set SECKILL_ADMIN_TOKEN or SECKILL_ADMIN_TOKEN_FILE, not both",
            ));
        }
        let token = seckill_wire::admin::read_token_file(std::path::Path::new(path))
            .map_err(|e| SettingsError::new("admin_token_file", e.to_string()))?;
        self.admin_token = Some(token);
        Ok(self)
    }

    /// Range and shape checks that types alone cannot express, each
    /// naming its `SECKILL_*` variable in its error.
    pub fn validate(&self) -> Result<(), SettingsError> {
        self.listen_addr()?;
        self.check_stock_database_url()?;
        self.check_coordinator_urls()?;
        self.check_order_batching()?;
        self.check_redlock_and_fault_bounds()?;
        self.check_admin_token()?;
        self.seed_products()?;
        Ok(())
    }

    /// The stock database's scheme (the other URLs are typed: `StoreUrl`;
    /// this one may be set empty, which means unset).
    fn check_stock_database_url(&self) -> Result<(), SettingsError> {
        if let Some(url) = self.stock_database_url() {
            StoreUrl::<Postgres>::parse(url)
                .map_err(|e| SettingsError::new("stock_database_url", e))?;
        }
        Ok(())
    }

    /// The shapes of the MySQL, etcd and ZooKeeper addresses.
    fn check_coordinator_urls(&self) -> Result<(), SettingsError> {
        if let Some(url) = self.mysql_url() {
            if !url.starts_with("mysql://") && !url.starts_with("mariadb://") {
                return Err(SettingsError::new(
                    "mysql_url",
                    format!("`{url}` must start with mysql:// or mariadb://"),
                ));
            }
        }
        for url in self.etcd_urls() {
            if url.contains("://") && !url.starts_with("http://") {
                return Err(SettingsError::new(
                    "etcd_urls",
                    format!("`{url}` must be host:port or start with http://"),
                ));
            }
        }
        if self.zookeeper_url().is_some_and(|url| url.contains("://")) {
            return Err(SettingsError::new(
                "zookeeper_url",
                "must be a connect string like 127.0.0.1:2181 (no scheme)",
            ));
        }
        Ok(())
    }

    /// Order-batch sizes and the batch queue.
    fn check_order_batching(&self) -> Result<(), SettingsError> {
        for (field, value) in [
            ("order_batch_max", self.order_batch_max),
            ("order_batch_commits", self.order_batch_commits),
        ] {
            if !(1..=10_000).contains(&value) {
                return Err(SettingsError::new(field, "must be between 1 and 10000"));
            }
        }
        if !(1..=1_000_000).contains(&self.order_batch_queue) {
            return Err(SettingsError::new(
                "order_batch_queue",
                "must be between 1 and 1000000",
            ));
        }
        Ok(())
    }

    /// The Redlock drift factor and the fault-delay ceiling stay in range.
    fn check_redlock_and_fault_bounds(&self) -> Result<(), SettingsError> {
        if !(0.0..=0.5).contains(&self.redlock_drift_factor) {
            return Err(SettingsError::new(
                "redlock_drift_factor",
                "must be between 0 and 0.5 (a fraction of the TTL)",
            ));
        }
        if self.fault_delay_max_ms.get() > FAULT_DELAY_MAX_MS {
            return Err(SettingsError::new(
                "fault_delay_max_ms",
                format!("must be at most {FAULT_DELAY_MAX_MS} (ten minutes)"),
            ));
        }
        Ok(())
    }

    /// A set admin token is not blank.
    fn check_admin_token(&self) -> Result<(), SettingsError> {
        if matches!(&self.admin_token, Some(t) if t.trim().is_empty()) {
            return Err(SettingsError::new(
                "admin_token",
                "must not be empty when set",
            ));
        }
        Ok(())
    }

    /// The parsed listen address.
    pub fn listen_addr(&self) -> Result<SocketAddr, SettingsError> {
        self.listen.parse().map_err(|_| {
            SettingsError::new(
                "listen",
                format!("`{}` is not an address like 127.0.0.1:8080", self.listen),
            )
        })
    }

    /// The parsed `seed_products` list.
    pub fn seed_products(&self) -> Result<Vec<SeedProduct>, SettingsError> {
        let bad = |item: &str| {
            SettingsError::new(
                "seed_products",
                format!("`{item}` is not `id:stock` with id > 0 and stock >= 0"),
            )
        };
        self.seed_products
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(|item| {
                let (id, stock) = item.split_once(':').ok_or_else(|| bad(item))?;
                let id: i64 = id.trim().parse().map_err(|_| bad(item))?;
                let stock: i64 = stock.trim().parse().map_err(|_| bad(item))?;
                if id <= 0 || stock < 0 {
                    return Err(bad(item));
                }
                Ok(SeedProduct { id, stock })
            })
            .collect()
    }

    /// The admin token in force, if any (see [`Settings::admin_token`]).
    pub fn effective_admin_token(&self) -> Option<String> {
        match &self.admin_token {
            Some(token) => Some(token.clone()),
            None => match self.listen_addr() {
                Ok(addr) if addr.ip().is_loopback() => Some(DEMO_ADMIN_TOKEN.to_owned()),
                _ => None,
            },
        }
    }

    /// `lock_ttl_ms` as a duration.
    pub fn lock_ttl(&self) -> Duration {
        self.lock_ttl_ms.ms()
    }

    /// This replica's instance id.
    pub fn instance(&self) -> String {
        self.instance_id
            .clone()
            .filter(|id| !id.trim().is_empty())
            .unwrap_or_else(|| {
                let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                    .map(|h| h.trim().to_owned())
                    .ok()
                    .filter(|h| !h.is_empty())
                    .unwrap_or_else(|| "pid".to_owned());
                format!("{host}-{}", std::process::id())
            })
    }

    /// `mysql_url` when set and not blank.
    pub fn mysql_url(&self) -> Option<&str> {
        self.mysql_url
            .as_deref()
            .map(str::trim)
            .filter(|url| !url.is_empty())
    }

    /// `stock_database_url` when set and not blank.
    pub fn stock_database_url(&self) -> Option<&str> {
        self.stock_database_url
            .as_deref()
            .map(str::trim)
            .filter(|url| !url.is_empty())
    }

    /// `pg-3pc`'s participants (stock side, order side) when both are set
    /// and not blank.
    pub fn three_pc_participants(&self) -> Option<(&str, &str)> {
        let stock = self.three_pc_stock_participant.as_deref().map(str::trim);
        let order = self.three_pc_order_participant.as_deref().map(str::trim);
        match (stock, order) {
            (Some(s), Some(o)) if !s.is_empty() && !o.is_empty() => Some((s, o)),
            _ => None,
        }
    }

    /// `etcd_urls` without blank entries.
    pub fn etcd_urls(&self) -> Vec<String> {
        self.etcd_urls
            .iter()
            .map(|url| url.trim())
            .filter(|url| !url.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// `zookeeper_url` when set and not blank.
    pub fn zookeeper_url(&self) -> Option<&str> {
        self.zookeeper_url
            .as_deref()
            .map(str::trim)
            .filter(|url| !url.is_empty())
    }

    /// `lock_wait_ms` as a duration.
    pub fn lock_wait(&self) -> Duration {
        self.lock_wait_ms.ms()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(vars: &[(&str, &str)]) -> Result<Settings, SettingsError> {
        Settings::load_from(vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())))
    }

    #[test]
    fn defaults_are_valid_and_loopback() {
        let s = load(&[]).expect("defaults load");
        assert!(s.listen_addr().expect("addr").ip().is_loopback());
        assert_eq!(s.effective_admin_token().as_deref(), Some(DEMO_ADMIN_TOKEN));
    }

    #[test]
    fn environment_overrides_defaults() {
        let s = load(&[
            ("SECKILL_LOCK_TTL_MS", "1234"),
            (
                "SECKILL_REDLOCK_URLS",
                "redis://127.0.0.1:1,redis://127.0.0.1:2",
            ),
            ("SECKILL_STRATEGY", "pg-atomic"),
        ])
        .expect("loads");
        assert_eq!(s.lock_ttl_ms, 1234);
        assert_eq!(s.redlock_urls.len(), 2);
        assert_eq!(s.strategy, StrategyName::PgAtomic);
    }

    #[test]
    fn bad_values_name_the_setting() {
        let err = load(&[("SECKILL_LOCK_TTL_MS", "soon")]).expect_err("must fail");
        assert_eq!(err.name, "SECKILL_LOCK_TTL_MS", "{err}");
        let err = load(&[("SECKILL_LOCK_WAIT_MS", "0")]).expect_err("must fail");
        assert_eq!(err.name, "SECKILL_LOCK_WAIT_MS");
        assert!(err.message.contains("greater than 0"), "{err}");
        let err = load(&[("SECKILL_MAX_QUANTITY", "0")]).expect_err("must fail");
        assert_eq!(err.name, "SECKILL_MAX_QUANTITY", "{err}");
        let err = load(&[("SECKILL_REDIS_URL", "http://127.0.0.1:6379")]).expect_err("must fail");
        assert_eq!(err.name, "SECKILL_REDIS_URL", "{err}");
        assert!(
            err.message.contains("redis:// or rediss:// or unix://"),
            "{err}"
        );
        let err = load(&[("SECKILL_REDLOCK_URLS", "redis://127.0.0.1:1,rediss://h:2")])
            .expect_err("must fail");
        assert_eq!(err.name, "SECKILL_REDLOCK_URLS", "{err}");
        let err = load(&[("SECKILL_DATABASE_URL", "mysql://h/db")]).expect_err("must fail");
        assert_eq!(err.name, "SECKILL_DATABASE_URL", "{err}");
        let err = load(&[("SECKILL_STRATEGY", "yolo")]).expect_err("must fail");
        assert_eq!(err.name, "SECKILL_STRATEGY");
        assert!(
            err.message.contains("pg-atomic"),
            "lists valid names: {err}"
        );
        let err = load(&[("SECKILL_SYNCHRONOUS_COMMIT", "sometimes")]).expect_err("must fail");
        assert_eq!(err.name, "SECKILL_SYNCHRONOUS_COMMIT", "{err}");
        assert!(
            err.message.contains("remote_apply"),
            "lists the values: {err}"
        );
        let err = load(&[("SECKILL_LOG_FORMAT", "xml")]).expect_err("must fail");
        assert_eq!(err.name, "SECKILL_LOG_FORMAT", "{err}");
        let s = load(&[("SECKILL_SYNCHRONOUS_COMMIT", "remote_write")]).expect("loads");
        assert_eq!(s.synchronous_commit, SynchronousCommit::RemoteWrite);
        assert_eq!(s.synchronous_commit.as_str(), "remote_write");
        let err = load(&[("SECKILL_SEED_PRODUCTS", "1:x")]).expect_err("must fail");
        assert_eq!(err.name, "SECKILL_SEED_PRODUCTS");
        let err = load(&[("SECKILL_LISTEN", "nowhere")]).expect_err("must fail");
        assert_eq!(err.name, "SECKILL_LISTEN");
        let err = load(&[("SECKILL_ORDER_BATCH_QUEUE", "0")]).expect_err("must fail");
        assert_eq!(err.name, "SECKILL_ORDER_BATCH_QUEUE");
        let s = load(&[("SECKILL_ORDER_BATCH_QUEUE", "8")]).expect("loads");
        assert_eq!(s.order_batch_queue, 8);
    }

    #[test]
    fn coordination_services_are_optional_and_blank_means_unset() {
        let s = load(&[]).expect("defaults load");
        assert_eq!(s.mysql_url(), None);
        assert!(s.etcd_urls().is_empty());
        assert_eq!(s.zookeeper_url(), None);
        let s = load(&[
            ("SECKILL_MYSQL_URL", "mysql://root@127.0.0.1:3306/test"),
            (
                "SECKILL_ETCD_URLS",
                "http://127.0.0.1:2379,http://127.0.0.1:22379",
            ),
            ("SECKILL_ZOOKEEPER_URL", "127.0.0.1:2181"),
        ])
        .expect("loads");
        assert_eq!(s.mysql_url(), Some("mysql://root@127.0.0.1:3306/test"));
        assert_eq!(s.etcd_urls().len(), 2);
        assert_eq!(s.zookeeper_url(), Some("127.0.0.1:2181"));
        let s = load(&[("SECKILL_MYSQL_URL", " "), ("SECKILL_ETCD_URLS", "")]).expect("loads");
        assert_eq!(s.mysql_url(), None);
        assert!(s.etcd_urls().is_empty());
        let err = load(&[("SECKILL_MYSQL_URL", "postgres://x")]).expect_err("must fail");
        assert_eq!(err.name, "SECKILL_MYSQL_URL");
    }

    #[test]
    fn non_loopback_listener_has_no_default_admin_token() {
        let s = load(&[("SECKILL_LISTEN", "0.0.0.0:8080")]).expect("loads");
        assert_eq!(s.effective_admin_token(), None);
    }

    #[test]
    fn the_token_file_sets_the_token_beyond_loopback() {
        let path = std::env::temp_dir().join(format!("seckill-app-token-{}", std::process::id()));
        std::fs::write(&path, "per-stack-token\n").expect("write");
        let file = path.to_str().expect("utf-8 path");
        let s = load(&[
            ("SECKILL_LISTEN", "0.0.0.0:8080"),
            ("SECKILL_ADMIN_TOKEN_FILE", file),
        ])
        .expect("loads");
        assert_eq!(
            s.effective_admin_token().as_deref(),
            Some("per-stack-token")
        );
        let err = load(&[
            ("SECKILL_ADMIN_TOKEN_FILE", file),
            ("SECKILL_ADMIN_TOKEN", "another"),
        ])
        .expect_err("both");
        assert_eq!(err.name, "SECKILL_ADMIN_TOKEN_FILE", "{err}");
        std::fs::write(&path, "\n").expect("write");
        let err = load(&[("SECKILL_ADMIN_TOKEN_FILE", file)]).expect_err("blank");
        assert!(err.message.contains("holds no token"), "{err}");
        std::fs::remove_file(&path).expect("remove");
        let err = load(&[("SECKILL_ADMIN_TOKEN_FILE", file)]).expect_err("missing");
        assert_eq!(err.name, "SECKILL_ADMIN_TOKEN_FILE", "{err}");
    }
}
