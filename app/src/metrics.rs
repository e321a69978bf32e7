//! Prometheus metrics with the names of docs/metrics.md (prefix `seckill_`, base
//! units). One [`Metrics`] per process, registered on its own registry so
//! tests that run several apps in one process do not collide.
//!
//! The audit gauges (`seckill_stock_remaining`, `seckill_oversold_units`,
//! `seckill_lost_updates`, `seckill_duplicate_orders`) are not counted by the
//! service: they are read from the database's ground truth at every scrape,
//! so they are right even when a broken strategy lies to itself.

use prometheus::{
    CounterVec, Encoder, GaugeVec, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, Opts,
    Registry, TextEncoder,
};

use crate::db::AuditRow;

/// Latency buckets from 100 µs (an uncontended Redis lock on loopback) to
/// 5 minutes (past the longest lease, lock wait or pause the lab sets).
const LATENCY_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// Every metric of the service.
#[derive(Debug, Clone)]
pub struct Metrics {
    registry: Registry,
    /// `seckill_grab_requests_total{strategy,outcome}`.
    pub grab_requests: IntCounterVec,
    /// `seckill_grab_duration_seconds{strategy}`.
    pub grab_duration: HistogramVec,
    /// `seckill_lock_acquire_duration_seconds{strategy,result}` — the wait.
    pub lock_acquire_duration: HistogramVec,
    /// `seckill_lock_hold_duration_seconds{strategy}`.
    pub lock_hold_duration: HistogramVec,
    /// `seckill_lock_attempts_total{strategy}`.
    pub lock_attempts: IntCounterVec,
    /// `seckill_lock_retries_total{strategy}`.
    pub lock_retries: IntCounterVec,
    /// `seckill_lock_renewals_total{strategy,result}`.
    pub lock_renewals: IntCounterVec,
    /// `seckill_lock_lost_total{strategy}`.
    pub lock_lost: IntCounterVec,
    /// `seckill_lock_releases_total{strategy,result}` result ∈ released, not_owner, error.
    pub lock_releases: IntCounterVec,
    /// `seckill_redlock_quorum_failures_total`.
    pub redlock_quorum_failures: IntCounter,
    /// `seckill_redlock_node_errors_total{node}`.
    pub redlock_node_errors: IntCounterVec,
    /// `seckill_fence_rejections_total{strategy}`.
    pub fence_rejections: IntCounterVec,
    /// `seckill_db_pool_starved_total{strategy}` — grabs answered `busy`
    /// because no pooled PostgreSQL connection came free in time while the
    /// server answered: the pool starved by the lock's own waiters
    /// (`pg-for-update`, `pg-advisory` hold a connection while they wait).
    /// These grabs are also in `seckill_grab_requests_total{outcome="busy"}`;
    /// this counter tells them from lock waits that ran out. A pool timeout
    /// with the server silent is an `error` (503), not counted here.
    pub db_pool_starved: IntCounterVec,
    /// `seckill_stock_remaining{product}`.
    pub stock_remaining: GaugeVec,
    /// `seckill_oversold_units{product}`.
    pub oversold_units: GaugeVec,
    /// `seckill_lost_updates{product}` (≥ 0).
    pub lost_updates: GaugeVec,
    /// `seckill_undersold_units{product}` (≥ 0).
    pub undersold_units: GaugeVec,
    /// `seckill_duplicate_orders{product}`.
    pub duplicate_orders: GaugeVec,
    /// `seckill_active_strategy{strategy}` — 1 for the active one.
    pub active_strategy: GaugeVec,
    /// `seckill_orders_total{strategy}` — orders written (a convenience for rates).
    pub orders: CounterVec,
    /// `seckill_history_errors_total` — entries/exits the history arbiter missed.
    pub history_errors: IntCounter,
    /// `seckill_order_batch_size{strategy}` — orders per committed batch.
    pub order_batch_size: HistogramVec,
    /// `seckill_order_batch_commit_seconds{strategy}` — one batch's `INSERT` and commit.
    pub order_batch_commit: HistogramVec,
    /// `seckill_order_batch_wait_seconds{strategy}` — an order queued before its batch started.
    pub order_batch_wait: HistogramVec,
    /// `seckill_strategy_products{strategy}` — products this replica keeps
    /// per-product state for: `local-mutex`'s mutexes, `watchdog`'s FIFO
    /// gates and waiter lists, `redis-lua-stock`'s sweep times. Never more
    /// than the products that exist (a grab of an unknown id is answered
    /// `404` before its strategy runs); 0 for the strategies that keep none.
    pub strategy_products: GaugeVec,
    /// `seckill_stock_confirm_conflicts_total` — `redis-lua-stock` orders
    /// that committed after the sweep had given their reservation back and
    /// the unit to someone else (Redis stock below their quantity): the
    /// confirm took nothing (stock never below 0), the order was deleted
    /// again and the grab answered `sold_out` (see
    /// `lock/redis_lua_stock.rs`).
    pub stock_confirm_conflicts: IntCounter,
}

/// Batch sizes: powers of two up to 1,024 orders.
const BATCH_SIZE_BUCKETS: &[f64] = &[
    1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0,
];

fn counter(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let metric = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
    registry
        .register(Box::new(metric.clone()))
        .expect("metric registered once");
    metric
}

fn histogram(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> HistogramVec {
    let metric = HistogramVec::new(
        HistogramOpts::new(name, help).buckets(LATENCY_BUCKETS.to_vec()),
        labels,
    )
    .expect("valid metric");
    registry
        .register(Box::new(metric.clone()))
        .expect("metric registered once");
    metric
}

fn gauge(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> GaugeVec {
    let metric = GaugeVec::new(Opts::new(name, help), labels).expect("valid metric");
    registry
        .register(Box::new(metric.clone()))
        .expect("metric registered once");
    metric
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// `seckill_lock_attempts_total` and `seckill_lock_retries_total` of
    /// strategy `name`: what a lock's wait loop counts.
    pub fn attempt_counters(&self, name: &str) -> (IntCounter, IntCounter) {
        (
            self.lock_attempts.with_label_values(&[name]),
            self.lock_retries.with_label_values(&[name]),
        )
    }

    /// Create and register every metric. Over 80 lines on purpose: one
    /// flat list, metric by metric, so a reader finds each name, help text
    /// and label set in one place.
    #[allow(clippy::expect_used)] // static names and labels: a failure is a bug at start
    pub fn new() -> Self {
        let r = Registry::new();
        let quorum = IntCounter::new(
            "seckill_redlock_quorum_failures_total",
            "Redlock attempts that did not reach a quorum",
        )
        .expect("valid metric");
        r.register(Box::new(quorum.clone()))
            .expect("registered once");
        let orders = CounterVec::new(
            Opts::new("seckill_orders_total", "Orders committed by this replica"),
            &["strategy"],
        )
        .expect("valid metric");
        r.register(Box::new(orders.clone()))
            .expect("registered once");
        let history_errors = IntCounter::new(
            "seckill_history_errors_total",
            "Critical-section entries or exits the history arbiter did not record",
        )
        .expect("valid metric");
        r.register(Box::new(history_errors.clone()))
            .expect("registered once");
        let stock_confirm_conflicts = IntCounter::new(
            "seckill_stock_confirm_conflicts_total",
            "redis-lua-stock orders committed after the sweep gave their unit to someone else: undone, answered sold_out",
        )
        .expect("valid metric");
        r.register(Box::new(stock_confirm_conflicts.clone()))
            .expect("registered once");
        let build_info = prometheus::IntGaugeVec::new(
            Opts::new(
                "seckill_build_info",
                "1, labelled with the version of this build",
            ),
            &["version"],
        )
        .expect("valid metric");
        build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION")])
            .set(1);
        r.register(Box::new(build_info)).expect("registered once");
        // process_cpu_seconds_total, process_resident_memory_bytes, … (Linux).
        #[cfg(target_os = "linux")]
        r.register(Box::new(
            prometheus::process_collector::ProcessCollector::for_self(),
        ))
        .expect("registered once");
        Self {
            grab_requests: counter(
                &r,
                "seckill_grab_requests_total",
                "Grab requests by strategy and outcome",
                &["strategy", "outcome"],
            ),
            grab_duration: histogram(
                &r,
                "seckill_grab_duration_seconds",
                "Time to answer a grab",
                &["strategy"],
            ),
            lock_acquire_duration: histogram(
                &r,
                "seckill_lock_acquire_duration_seconds",
                "Time spent waiting for the lock",
                &["strategy", "result"],
            ),
            lock_hold_duration: histogram(
                &r,
                "seckill_lock_hold_duration_seconds",
                "Time the lock was held",
                &["strategy"],
            ),
            lock_attempts: counter(
                &r,
                "seckill_lock_attempts_total",
                "Lock acquisition attempts",
                &["strategy"],
            ),
            lock_retries: counter(
                &r,
                "seckill_lock_retries_total",
                "Lock acquisition retries after a failed attempt",
                &["strategy"],
            ),
            lock_renewals: counter(
                &r,
                "seckill_lock_renewals_total",
                "Lease renewals by result",
                &["strategy", "result"],
            ),
            lock_lost: counter(
                &r,
                "seckill_lock_lost_total",
                "Locks lost while held",
                &["strategy"],
            ),
            lock_releases: counter(
                &r,
                "seckill_lock_releases_total",
                "Lock releases by result",
                &["strategy", "result"],
            ),
            redlock_quorum_failures: quorum,
            redlock_node_errors: counter(
                &r,
                "seckill_redlock_node_errors_total",
                "Redlock per-node errors",
                &["node"],
            ),
            db_pool_starved: counter(
                &r,
                "seckill_db_pool_starved_total",
                "Grabs answered busy: every pooled database connection was taken while the server answered",
                &["strategy"],
            ),
            fence_rejections: counter(
                &r,
                "seckill_fence_rejections_total",
                "Writes refused by the fencing token check",
                &["strategy"],
            ),
            stock_remaining: gauge(
                &r,
                "seckill_stock_remaining",
                "Stock column of the product (database ground truth)",
                &["product"],
            ),
            oversold_units: gauge(
                &r,
                "seckill_oversold_units",
                "Units ordered beyond the initial stock (database ground truth)",
                &["product"],
            ),
            lost_updates: gauge(
                &r,
                "seckill_lost_updates",
                "Ordered units the stock column never saw (database ground truth)",
                &["product"],
            ),
            undersold_units: gauge(
                &r,
                "seckill_undersold_units",
                "Units gone from the stock column that no order took (database ground truth)",
                &["product"],
            ),
            duplicate_orders: gauge(
                &r,
                "seckill_duplicate_orders",
                "Users holding more than one order of the product (database ground truth)",
                &["product"],
            ),
            active_strategy: gauge(
                &r,
                "seckill_active_strategy",
                "1 for the active strategy, 0 for the others",
                &["strategy"],
            ),
            orders,
            history_errors,
            order_batch_size: {
                let metric = HistogramVec::new(
                    HistogramOpts::new(
                        "seckill_order_batch_size",
                        "Orders written by one committed multi-row INSERT",
                    )
                    .buckets(BATCH_SIZE_BUCKETS.to_vec()),
                    &["strategy"],
                )
                .expect("valid metric");
                r.register(Box::new(metric.clone()))
                    .expect("registered once");
                metric
            },
            order_batch_commit: histogram(
                &r,
                "seckill_order_batch_commit_seconds",
                "One order batch's INSERT and commit",
                &["strategy"],
            ),
            order_batch_wait: histogram(
                &r,
                "seckill_order_batch_wait_seconds",
                "Time an order waited for its batch to start",
                &["strategy"],
            ),
            strategy_products: gauge(
                &r,
                "seckill_strategy_products",
                "Products this replica keeps per-product strategy state for (mutexes, gates, sweep times)",
                &["strategy"],
            ),
            stock_confirm_conflicts,
            registry: r,
        }
    }

    /// Create every labelled series at 0 — each strategy with each outcome
    /// and result, each Redlock node — so the first event is an increase
    /// Prometheus can see (`rate`, `increase`, alerts), and a panel shows 0
    /// because nothing happened, never because the series does not exist.
    /// `batching` names the strategies that commit orders in batches.
    pub fn init_series(&self, strategies: &[&str], redlock_nodes: &[String], batching: &[&str]) {
        for &s in strategies {
            for outcome in crate::error::COUNTED_OUTCOMES {
                self.grab_requests.with_label_values(&[s, outcome]);
            }
            self.grab_duration.with_label_values(&[s]);
            for result in ["acquired", "busy", "error"] {
                self.lock_acquire_duration.with_label_values(&[s, result]);
            }
            self.lock_hold_duration.with_label_values(&[s]);
            self.lock_attempts.with_label_values(&[s]);
            self.lock_retries.with_label_values(&[s]);
            for result in ["renewed", "lost", "error"] {
                self.lock_renewals.with_label_values(&[s, result]);
            }
            self.lock_lost.with_label_values(&[s]);
            for result in ["released", "not_owner", "error"] {
                self.lock_releases.with_label_values(&[s, result]);
            }
            self.fence_rejections.with_label_values(&[s]);
            self.db_pool_starved.with_label_values(&[s]);
            self.orders.with_label_values(&[s]);
            self.strategy_products.with_label_values(&[s]);
        }
        for node in redlock_nodes {
            self.redlock_node_errors.with_label_values(&[node]);
        }
        for &s in batching {
            self.order_batch_size.with_label_values(&[s]);
            self.order_batch_commit.with_label_values(&[s]);
            self.order_batch_wait.with_label_values(&[s]);
        }
    }

    /// Replace the audit gauges with a fresh reading of the database.
    pub fn set_audit(&self, rows: &[AuditRow]) {
        for gauge in [
            &self.stock_remaining,
            &self.oversold_units,
            &self.lost_updates,
            &self.undersold_units,
            &self.duplicate_orders,
        ] {
            gauge.reset();
        }
        for row in rows {
            let product = row.product_id.to_string();
            let labels = [product.as_str()];
            self.stock_remaining
                .with_label_values(&labels)
                .set(row.stock as f64);
            self.oversold_units
                .with_label_values(&labels)
                .set(row.damage.oversold as f64);
            self.lost_updates
                .with_label_values(&labels)
                .set(row.damage.lost_updates as f64);
            self.undersold_units
                .with_label_values(&labels)
                .set(row.damage.undersold as f64);
            self.duplicate_orders
                .with_label_values(&labels)
                .set(row.damage.duplicates as f64);
        }
    }

    /// Mark `active` as the active strategy among `all`.
    pub fn set_active_strategy(&self, all: &[&str], active: &str) {
        for name in all {
            self.active_strategy
                .with_label_values(&[name])
                .set(if *name == active { 1.0 } else { 0.0 });
        }
    }

    /// Text exposition format of every metric.
    pub fn render(&self) -> String {
        let mut buffer = Vec::new();
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut buffer) {
            tracing::error!(error = %e, "encoding metrics failed");
        }
        String::from_utf8(buffer).unwrap_or_default()
    }
}
