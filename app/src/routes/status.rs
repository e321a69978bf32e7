//! The live status page for a projector, and the numbers behind it.
//!
//! - `GET /` — one self-contained HTML page ([`PAGE`], `app/static/status.html`:
//!   HTML, CSS and vanilla JS, no build step, no external fetch — its
//!   Content-Security-Policy forbids any). It shows the active strategy, the
//!   stock counting down, grabs/s, oversold units and lost updates in large
//!   type, and offers admins a strategy switcher that calls the existing
//!   `/admin/*` routes with the bearer token typed into the page.
//! - `GET /api/v1/status?product=N` — one [`StatusBody`] as JSON (the page
//!   reads it once at load, so the first numbers never wait for the stream;
//!   it is also the polling fallback and what tests read).
//! - `GET /api/v1/status/stream?product=N&events=K` — Server-Sent Events:
//!   one [`StatusBody`] every [`STREAM_INTERVAL`], endless unless `events`
//!   bounds it (a test, a fuzzer, `curl` reading K events and stopping).
//!   The OpenAPI document describes each event as the object a client
//!   parses out of the stream ([`StatusEvent`]): its `event` name and its
//!   `data`, a JSON text whose schema is `contentSchema`.
//!
//! `product` defaults to 1. The correctness numbers (stock, orders, oversold,
//! lost updates, duplicates) are the database's ground truth from
//! [`super::audit_now`], the same rows `/admin/audit` answers with, so the page can
//! never disagree with the audit. `grabs_total` and `grabs_per_sec` are *this
//! replica's* `seckill_grab_requests_total` (every outcome), the rate taken
//! over the last [`RATE_WINDOW`] of samples by [`GrabRate`]; behind a load
//! balancer each replica shows its own share, named by `replica`. `faults`
//! lists the faults set away from a fresh deployment's values (the page's
//! banner) and `history_run`/`overlaps` the history arbiter's overlap count
//! of the current run (`null` when the history is off).

use std::collections::VecDeque;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use actix_web::http::header;
use actix_web::{get, web, HttpRequest, HttpResponse};

use prometheus::core::Collector;
use serde::Deserialize;
use tokio::time::Instant;

use crate::error::{ApiError, ErrorBody, GrabError};
use crate::faults::Faults;
use crate::metrics::Metrics;
use crate::state::AppState;

/// The page, embedded at build time.
pub const PAGE: &str = include_str!("../../static/status.html");

/// Time between two events of the stream.
pub const STREAM_INTERVAL: Duration = Duration::from_millis(500);

/// Span of samples `grabs_per_sec` is averaged over.
pub const RATE_WINDOW: Duration = Duration::from_millis(1_000);

/// Longest a status read may take before the event reports the database
/// as unavailable (the stream keeps going and recovers by itself).
const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// The page may talk to this origin only; inline script and style are its own.
const PAGE_CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; \
     style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Most events one bounded stream (`?events=K`) sends.
pub const MAX_STREAM_EVENTS: u64 = 1_000;

/// What the page shows, for one product, as one replica sees it, and one
/// fault set away from its fresh-deployment value: wire types, shared with
/// the load generator.
pub use seckill_wire::status::{FaultInForce, StatusBody};

/// Samples of this replica's grab counter, for a rate. Shared by every
/// worker (registered once as app data), so the one-shot endpoint and every
/// stream see the same recent history.
#[derive(Debug, Default)]
pub struct GrabRate {
    samples: Mutex<VecDeque<(Instant, u64)>>,
}

impl GrabRate {
    /// Record `total` at `now`; the rate since the oldest sample within
    /// [`RATE_WINDOW`] (or the newest one just before it), 0 with no history.
    pub fn observe(&self, now: Instant, total: u64) -> f64 {
        let mut samples = self
            .samples
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Keep one sample older than the window as its baseline.
        while samples.len() >= 2
            && samples
                .get(1)
                .is_some_and(|(t, _)| now.saturating_duration_since(*t) >= RATE_WINDOW)
        {
            samples.pop_front();
        }
        let rate = match samples.front() {
            Some(&(then, before)) if now > then => {
                let secs = now.duration_since(then).as_secs_f64();
                total.saturating_sub(before) as f64 / secs
            }
            _ => 0.0,
        };
        // Many readers at once: one sample per 50 ms is plenty.
        if samples
            .back()
            .is_none_or(|(t, _)| now.saturating_duration_since(*t) >= Duration::from_millis(50))
        {
            samples.push_back((now, total));
        }
        rate
    }
}

/// Sum of `seckill_grab_requests_total` over every label of this process.
pub fn grabs_total(metrics: &Metrics) -> u64 {
    let sum: f64 = metrics
        .grab_requests
        .collect()
        .iter()
        .flat_map(|family| family.get_metric())
        .map(|m| m.get_counter().get_value())
        .sum();
    sum as u64
}

/// `?product=N`, kept as text so a bad value gets our JSON 400.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StatusQuery {
    /// Product id (1 when absent).
    product: Option<String>,
}

impl StatusQuery {
    fn product_id(&self) -> Result<i64, ApiError> {
        match self.product.as_deref() {
            None | Some("") => Ok(1),
            Some(raw) => super::product_id(raw.trim().parse().map_err(|_| {
                ApiError::bad_request("invalid_product_id", "product must be a positive integer")
            })?),
        }
    }
}

/// `?product=N&events=K` of the stream, kept as text so a bad value gets
/// our JSON 400.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StreamQuery {
    /// Product id (1 when absent).
    product: Option<String>,
    /// End the stream after this many events (1 to 1000); absent: endless.
    #[param(value_type = Option<u64>, minimum = 1, maximum = 1000)]
    events: Option<String>,
}

impl StreamQuery {
    fn product_id(&self) -> Result<i64, ApiError> {
        StatusQuery {
            product: self.product.clone(),
        }
        .product_id()
    }

    /// How many events to send; `None`: until the client goes away.
    fn events(&self) -> Result<Option<u64>, ApiError> {
        let Some(raw) = self.events.as_deref() else {
            return Ok(None);
        };
        match raw.trim().parse::<u64>() {
            Ok(n) if (1..=MAX_STREAM_EVENTS).contains(&n) => Ok(Some(n)),
            _ => Err(ApiError::bad_request(
                "invalid_events",
                format!("events must be an integer between 1 and {MAX_STREAM_EVENTS}"),
            )),
        }
    }
}

/// The faults of `faults` whose value is not `fresh`'s, by field name
/// (alphabetical), each value as text.
pub fn faults_in_force(faults: &Faults, fresh: &Faults) -> Vec<FaultInForce> {
    let (Ok(serde_json::Value::Object(now)), Ok(serde_json::Value::Object(fresh))) =
        (serde_json::to_value(faults), serde_json::to_value(fresh))
    else {
        return Vec::new();
    };
    let mut list: Vec<FaultInForce> = now
        .into_iter()
        .filter(|(name, value)| fresh.get(name) != Some(value))
        .map(|(name, value)| FaultInForce {
            name,
            value: match value {
                serde_json::Value::String(text) => text,
                other => other.to_string(),
            },
        })
        .collect();
    list.sort_by(|a, b| a.name.cmp(&b.name));
    list
}

fn host_name() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| {
        std::env::var("HOSTNAME")
            .ok()
            .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into())
    })
}

/// `host:port` of the replica that serves `req`.
fn replica(req: &HttpRequest) -> String {
    format!("{}:{}", host_name(), req.app_config().local_addr().port())
}

/// The overlaps the arbiter counted in `run`; `None` when the history is
/// off, or the arbiter could not be read in time (it is not the status's
/// ground truth: the numbers still come).
async fn overlaps_of(state: &AppState, run: Option<&str>) -> Option<u64> {
    let run = run?;
    match tokio::time::timeout(READ_TIMEOUT, state.deps.history.overlaps(run)).await {
        Ok(Ok(n)) => Some(n),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "status: the history arbiter could not be read");
            None
        }
        Err(_) => None,
    }
}

/// Read the status of `product_id` now.
pub async fn read(
    state: &AppState,
    rate: &GrabRate,
    product_id: i64,
    replica: String,
) -> Result<StatusBody, GrabError> {
    let history_run = state.deps.history.current_run();
    let (rows, overlaps) = tokio::join!(
        tokio::time::timeout(
            READ_TIMEOUT,
            super::audit_now(state, crate::db::Count::Tally),
        ),
        overlaps_of(state, history_run.as_deref()),
    );
    let rows = rows.map_err(|_| GrabError::Unavailable {
        dependency: crate::error::Dependency::Postgres,
        detail: "status: audit query timed out".into(),
    })??;
    let row = rows
        .into_iter()
        .find(|r| r.product_id == product_id)
        .ok_or(GrabError::NotFound)?;
    let total = grabs_total(&state.deps.metrics);
    let info = state.control.active().info();
    Ok(StatusBody {
        strategy: info.name,
        guarantee: info.guarantee.to_owned(),
        product_id,
        stock: row.stock,
        initial_stock: row.initial_stock,
        orders: row.orders,
        ordered_units: row.ordered_units,
        damage: row.damage,
        grabs_total: total,
        grabs_per_sec: (rate.observe(Instant::now(), total) * 10.0).round() / 10.0,
        replica,
        faults: faults_in_force(
            &state.control.faults(),
            &Faults::with_work_delay(state.settings.work_delay_ms),
        ),
        history_run,
        overlaps,
    })
}

/// The page.
#[utoipa::path(tag = "status", responses((status = 200, description = "The status page (self-contained HTML)", body = String, content_type = "text/html")))]
#[get("/")]
pub async fn page(request: actix_web::HttpRequest) -> HttpResponse {
    // English or Chinese: what `Accept-Language` prefers, until the viewer
    // picks one with the page's toggle (kept in the browser).
    let accept = request
        .headers()
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok());
    let lang = seckill_wire::i18n::Lang::from_accept_language(accept);
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CONTENT_SECURITY_POLICY, PAGE_CSP))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header((header::VARY, "Accept-Language"))
        .body(seckill_wire::i18n::page(PAGE, lang))
}

/// The status once.
#[utoipa::path(
    tag = "status",
    params(StatusQuery),
    responses(
        (status = 200, description = "One product as this replica sees it", body = StatusBody),
        (status = 400, description = "`product` is not a positive integer (`invalid_product_id`, `invalid_query`)", body = ErrorBody),
        (status = 404, description = "No such product (`not_found`)", body = ErrorBody),
        (status = 503, description = "PostgreSQL is down or slow (`unavailable`)", body = ErrorBody),
    )
)]
#[get("/api/v1/status")]
pub async fn status(
    req: HttpRequest,
    state: web::Data<AppState>,
    rate: web::Data<GrabRate>,
    query: web::Query<StatusQuery>,
) -> Result<HttpResponse, ApiError> {
    let product_id = query.product_id()?;
    let body = read(&state, &rate, product_id, replica(&req)).await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(body))
}

/// One SSE frame: `event: <name>` (omitted for the default `message`)
/// and the JSON on one `data:` line.
fn frame(event: Option<&str>, json: &str) -> web::Bytes {
    match event {
        Some(name) => web::Bytes::from(format!("event: {name}\ndata: {json}\n\n")),
        None => web::Bytes::from(format!("data: {json}\n\n")),
    }
}

/// One event of the stream as the OpenAPI document describes it: the
/// object a client parses out of `text/event-stream` — `event` its name
/// (`message` when the frame names none), `data` its text. OpenAPI 3.1
/// describes each event of an event stream with the media type's `schema`
/// (3.2 names it `itemSchema`); the `data` text is JSON, so its own schema
/// is the JSON Schema `contentMediaType` + `contentSchema` pair:
/// [`StatusBody`] for a `message`, [`ErrorBody`] for `unavailable`.
#[derive(Debug)]
pub struct StatusEvent;

impl utoipa::PartialSchema for StatusEvent {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
        let event = |name: &str, body: &str, what: &str| {
            let mut data = ObjectBuilder::new()
                .schema_type(Type::String)
                .content_media_type("application/json")
                .description(Some(format!("{what}: one `{body}` as JSON text")))
                .build();
            data.extensions.get_or_insert_with(Default::default).insert(
                "contentSchema".into(),
                serde_json::json!({ "$ref": format!("#/components/schemas/{body}") }),
            );
            ObjectBuilder::new()
                .property(
                    "event",
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .enum_values(Some([name])),
                )
                .required("event")
                .property("data", data)
                .required("data")
                .description(Some(format!("`event: {name}`: {what}")))
        };
        OneOfBuilder::new()
            .item(event(
                "message",
                "StatusBody",
                "the status now (the frame carries no `event:` line)",
            ))
            .item(event(
                "unavailable",
                "ErrorBody",
                "the status could not be read; the stream carries on",
            ))
            .description(Some(
                "One Server-Sent Event, as parsed out of the stream: its name and its `data` text",
            ))
            .into()
    }
}

impl utoipa::ToSchema for StatusEvent {
    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        use utoipa::PartialSchema;
        schemas.push((StatusBody::name().into_owned(), StatusBody::schema()));
        StatusBody::schemas(schemas);
        schemas.push((ErrorBody::name().into_owned(), ErrorBody::schema()));
        ErrorBody::schemas(schemas);
    }
}

/// The status as Server-Sent Events, every [`STREAM_INTERVAL`], until the
/// client goes away or `?events=K` were sent. A failed read sends an
/// `unavailable` event (the page marks its numbers stale) and the stream
/// carries on.
#[utoipa::path(
    tag = "status",
    params(StreamQuery),
    responses(
        (status = 200, description = "Server-sent events every 500 ms, endless unless `events` bounds them: each a `message` whose `data:` line is a `StatusBody` JSON, or an `unavailable` event whose `data:` is an `ErrorBody`. The schema describes one event as parsed out of the stream", body = StatusEvent, content_type = "text/event-stream"),
        (status = 400, description = "`product` is not a positive integer (`invalid_product_id`), `events` is not an integer from 1 to 1000 (`invalid_events`), or a bad query string (`invalid_query`)", body = ErrorBody),
        (status = 404, description = "No such product (`not_found`)", body = ErrorBody),
        (status = 503, description = "PostgreSQL is down or slow (`unavailable`)", body = ErrorBody),
    )
)]
#[get("/api/v1/status/stream")]
pub async fn status_stream(
    req: HttpRequest,
    state: web::Data<AppState>,
    rate: web::Data<GrabRate>,
    query: web::Query<StreamQuery>,
) -> Result<HttpResponse, ApiError> {
    let product_id = query.product_id()?;
    let limit = query.events()?;
    // Unknown product or a database down: answer now, not as an endless stream.
    let first = read(&state, &rate, product_id, replica(&req)).await?;
    let replica_name = first.replica.clone();
    // The first event is `first`; the next one an interval later.
    let mut ticker = tokio::time::interval_at(Instant::now() + STREAM_INTERVAL, STREAM_INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let events = futures::stream::unfold((ticker, Some(first)), move |(mut ticker, first)| {
        let state = state.clone();
        let rate = rate.clone();
        let replica_name = replica_name.clone();
        async move {
            let bytes = match first {
                Some(body) => frame(None, &serde_json::to_string(&body).unwrap_or_default()),
                None => {
                    ticker.tick().await;
                    match read(&state, &rate, product_id, replica_name).await {
                        Ok(body) => frame(None, &serde_json::to_string(&body).unwrap_or_default()),
                        Err(e) => {
                            tracing::warn!(error = %e, product_id, "status stream: read failed");
                            frame(
                                Some("unavailable"),
                                r#"{"error":"unavailable","message":"status could not be read; retrying"}"#,
                            )
                        }
                    }
                }
            };
            Some((Ok::<_, actix_web::Error>(bytes), (ticker, None)))
        }
    });
    let events = futures::StreamExt::take(
        events,
        limit.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX)),
    );
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        // nginx (the compose stack's balancer) must pass events through at once.
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(events))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_is_zero_without_history_then_follows_the_counter() {
        let rate = GrabRate::default();
        let t0 = Instant::now();
        assert!(rate.observe(t0, 100).abs() < f64::EPSILON);
        let r = rate.observe(t0 + Duration::from_millis(500), 150);
        assert!((r - 100.0).abs() < 1e-6, "{r}");
        let r = rate.observe(t0 + Duration::from_millis(1_000), 250);
        assert!((r - 150.0).abs() < 1e-6, "{r}");
        // t0 leaves the window: the baseline becomes the 500 ms sample.
        let r = rate.observe(t0 + Duration::from_millis(1_600), 250);
        assert!((r - 100.0 / 1.1).abs() < 1e-6, "{r}");
    }

    #[test]
    fn product_defaults_to_one_and_rejects_garbage() {
        let q = |p: Option<&str>| StatusQuery {
            product: p.map(str::to_owned),
        };
        assert_eq!(q(None).product_id().ok(), Some(1));
        assert_eq!(q(Some("7")).product_id().ok(), Some(7));
        assert!(q(Some("0")).product_id().is_err());
        assert!(q(Some("x")).product_id().is_err());
    }

    #[test]
    fn events_are_bounded_or_absent() {
        let q = |e: Option<&str>| StreamQuery {
            product: None,
            events: e.map(str::to_owned),
        };
        assert_eq!(q(None).events().ok(), Some(None));
        assert_eq!(q(Some("3")).events().ok(), Some(Some(3)));
        assert_eq!(q(Some("1000")).events().ok(), Some(Some(1000)));
        for bad in ["0", "1001", "-1", "x", ""] {
            assert!(q(Some(bad)).events().is_err(), "{bad}");
        }
    }

    #[test]
    fn faults_in_force_are_the_fields_away_from_a_fresh_deployment() {
        let fresh = Faults::with_work_delay(2);
        assert!(faults_in_force(&fresh, &fresh).is_empty());
        let mut now = fresh;
        now.pause_ms = 2_000;
        now.pause_at = crate::faults::PauseAt::BeforeWrite;
        now.unlock_before_commit = true;
        let shown: Vec<(String, String)> = faults_in_force(&now, &fresh)
            .into_iter()
            .map(|f| (f.name, f.value))
            .collect();
        assert_eq!(
            shown,
            [
                ("pause_at".to_owned(), "before-write".to_owned()),
                ("pause_ms".to_owned(), "2000".to_owned()),
                ("unlock_before_commit".to_owned(), "true".to_owned()),
            ]
        );
        // The work delay is a fault only away from SECKILL_WORK_DELAY_MS.
        assert_eq!(
            faults_in_force(&Faults::with_work_delay(5), &fresh)[0].value,
            "5"
        );
    }
}
