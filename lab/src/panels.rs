//! `make check-panels` (`seckill-lab check-panels`): every dashboard query
//! proven against a real Prometheus.
//!
//! 1. The replicas of a running `make demo` are reused; otherwise a stack
//!    of our own (lock TTL 1 s, no balancer, no console) starts under
//!    `.demo/check-panels/` and stops at the end.
//! 2. A Prometheus of our own scrapes them every second, alerts loaded.
//! 3. `promtool check metrics` on a live `/metrics`.
//! 4. A short `seckill-loadgen compare` (the order batches' panels too);
//!    then, on our own stack, a pause past the TTL before the write of one
//!    grab in three over redlock and fenced: the first lost lease and the
//!    first fence rejection, which the panels on them must show (not just
//!    a 0 series). Every load must exit 0.
//! 5. [`check`] (also `seckill-lab panels`, which the Docker check runs
//!    against the compose stack's Prometheus) evaluates every query.
//!
//! [`check`] sends every `panels[].targets[].expr` of every
//! dashboards/*.json (rows' nested panels included) to `/api/v1/query`
//! once with every variable at Grafana's "All" (`.*`) and once with one
//! concrete strategy and replica, formatted as Grafana formats a
//! multi-value variable for a Prometheus regex; `$__rate_interval` and the
//! like get fixed windows. Each annotation goes to `/api/v1/query_range`
//! over the load, each `label_values(metric, label)` variable to
//! `/api/v1/label/<label>/values`. A query error, an unresolved variable,
//! an empty result or one of only NaN fails; with `--positive METRIC`, a
//! panel on that metric must show a value above 0 in the "All" pass.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context as _};
use regex::Regex;
use serde_json::Value;

use crate::stack::Stack;
use crate::util::say;

/// What one check of the dashboards is asked.
#[derive(Debug, Clone, clap::Args)]
pub struct Check {
    /// Prometheus' URL.
    #[arg(long)]
    pub prometheus: String,
    /// Start of the load (Unix seconds); now minus a minute by default.
    #[arg(long)]
    pub since: Option<f64>,
    /// The load's end (Unix seconds). The panel queries are evaluated ten
    /// seconds after it (two scrapes at 5 s) or now, whichever is sooner:
    /// a slow step after the load must not slide the one-minute rate
    /// windows past it (seen in CI on a busy machine: every latency panel
    /// "only NaN"). Default: now.
    #[arg(long)]
    pub at: Option<f64>,
    /// The concrete `$strategy` of the second pass.
    #[arg(long, default_value = "redlock")]
    pub strategy: String,
    /// The concrete `$instance` of the second pass (default: the first up target).
    #[arg(long)]
    pub instance: Option<String>,
    /// Fail unless this many `seckill` targets are up, each scraped twice
    /// since `--since` (waited for, up to 30 s).
    #[arg(long, default_value_t = 0)]
    pub replicas: usize,
    /// Panel queries on this metric must show a value > 0.
    #[arg(long)]
    pub positive: Vec<String>,
    /// The dashboards (default: dashboards/*.json).
    pub dashboards: Vec<PathBuf>,
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Prometheus' HTTP API.
struct Api {
    base: String,
    client: reqwest::Client,
}

impl Api {
    /// The API of the Prometheus at `url`, each request within 15 s.
    fn new(url: &str) -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(15))
            .build()?;
        Ok(Self {
            base: url.trim_end_matches('/').to_owned(),
            client,
        })
    }

    async fn get(&self, path: &str, params: &[(&str, String)]) -> Value {
        let answer = self
            .client
            .get(format!("{}{path}", self.base))
            .query(params)
            .send()
            .await;
        match answer {
            // 400/422 (bad PromQL) carry the error as JSON too.
            Ok(response) => response
                .json()
                .await
                .unwrap_or_else(|e| serde_json::json!({"status": "error", "error": e.to_string()})),
            Err(e) => serde_json::json!({"status": "error", "error": e.to_string()}),
        }
    }

    async fn query(&self, query: &str) -> Value {
        self.query_at(query, None).await
    }

    /// An instant query at `at` (Unix seconds), now when `None`.
    async fn query_at(&self, query: &str, at: Option<f64>) -> Value {
        self.get(
            "/api/v1/query",
            &[
                ("query", query.to_owned()),
                ("time", format!("{:.3}", at.unwrap_or_else(now))),
            ],
        )
        .await
    }

    /// Every `seckill` target scraped `count` times since `since`.
    async fn wait_scrapes(&self, since: f64, count: usize, replicas: usize) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let window = (now() - since).max(0.0) as u64 + 1;
            let answer = self
                .query(&format!(
                    "count_over_time(up{{job=\"seckill\"}}[{window}s])"
                ))
                .await;
            let result = answer["data"]["result"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let scraped = |r: &Value| {
                r["value"][1]
                    .as_str()
                    .and_then(|v| v.parse::<f64>().ok())
                    .is_some_and(|v| v >= count as f64)
            };
            if result.len() >= replicas && result.iter().all(scraped) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        bail!("Prometheus did not scrape {replicas} replicas {count} times within 30 s")
    }
}

const FIXED: [(&str, &str); 5] = [
    ("__rate_interval", "1m"),
    ("__interval", "15s"),
    ("__range", "5m"),
    ("__range_s", "300"),
    ("__interval_ms", "15000"),
];

/// One value of a multi-value variable as Grafana puts it into a
/// Prometheus regex: escaped, in a group, backslashes doubled for PromQL.
fn grafana_regex(value: &str) -> String {
    let escaped: String = value
        .chars()
        .flat_map(|c| {
            let meta = "\\^$*+?.()|{}[]".contains(c);
            meta.then_some('\\').into_iter().chain([c])
        })
        .collect();
    format!("({})", escaped.replace('\\', "\\\\"))
}

/// `$name`, `${name}` / `${name:format}` and `[[name]]` replaced.
fn substitute(expr: &str, values: &[(&str, String)]) -> String {
    let re = Regex::new(r"\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)").expect("a valid regex");
    re.replace_all(expr, |c: &regex::Captures| {
        let name = c
            .get(1)
            .or(c.get(2))
            .or(c.get(3))
            .map_or("", |m| m.as_str());
        FIXED
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| (*v).to_owned())
            .or_else(|| {
                values
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.clone())
            })
            .unwrap_or_else(|| c[0].to_owned())
    })
    .into_owned()
}

/// The tally of one check.
#[derive(Default)]
struct Tally {
    checked: usize,
    failures: Vec<String>,
}

impl Tally {
    fn report(&mut self, ok: bool, count: usize, where_: &str, expr: &str, note: &str) {
        self.checked += 1;
        println!(
            "{} [{count:>3}] {where_}{note}\n           {expr}",
            if ok { "ok  " } else { "FAIL" }
        );
        if !ok {
            let why = if note.trim().is_empty() {
                "empty result"
            } else {
                note.trim()
            };
            self.failures.push(format!("{where_}: {why} — {expr}"));
        }
    }
}

/// The panel queries of one dashboard: (where, expr).
fn queries(dashboard: &Value, file: &str, tally: &mut Tally) -> Vec<(String, String)> {
    let panels = crate::dashboards::panels(dashboard);
    let mut out = Vec::new();
    for panel in panels {
        for target in panel["targets"].as_array().into_iter().flatten() {
            if target["hide"].as_bool() == Some(true) {
                continue;
            }
            let where_ = format!(
                "panel {} \"{}\" {}",
                panel["id"],
                panel["title"].as_str().unwrap_or(""),
                target["refId"].as_str().unwrap_or("")
            );
            match target["expr"].as_str() {
                Some(expr) if !expr.is_empty() => out.push((where_, expr.to_owned())),
                _ => tally
                    .failures
                    .push(format!("{file} {where_}: target without expr")),
            }
        }
    }
    if out.is_empty() {
        tally.failures.push(format!("{file}: no panel queries"));
    }
    out
}

/// Each query's checks, in the order a reader of a failure wants them.
async fn check_queries(
    api: &Api,
    args: &Check,
    list: &[(String, String)],
    passes: &[(String, Vec<(&str, String)>)],
    tally: &mut Tally,
) {
    let leftover_re = Regex::new(r"\$\{?\w+|\[\[\w+\]\]").expect("a valid regex");
    // One evaluation time for every query (see `Check::at`).
    let at = args.at.map(|end| (end + 10.0).min(now()));
    for (label, values) in passes {
        println!("-- panels, variables: {label}");
        for (where_, expr) in list {
            let query = substitute(expr, values);
            if let Some(left) = leftover_re.find(&query) {
                tally.report(
                    false,
                    0,
                    where_,
                    &query,
                    &format!("  unresolved variable {}", left.as_str()),
                );
                continue;
            }
            let answer = match read_answer(&api.query_at(&query, at).await) {
                Ok(answer) => answer,
                Err(e) => {
                    tally.report(false, 0, where_, &query, &format!("  {e}"));
                    continue;
                }
            };
            judge_answer(args, label, where_, expr, &query, answer, tally);
        }
    }
}

/// One query's answer judged: not empty, not only NaN, and above 0 where `--positive` asks it.
fn judge_answer(
    args: &Check,
    label: &str,
    where_: &str,
    expr: &str,
    query: &str,
    answer: Answer,
    tally: &mut Tally,
) {
    let (series, scalar) = match answer {
        Answer::Series(series) => (series, None),
        Answer::Scalar(v) => (Vec::new(), Some(v)),
    };
    let count = if scalar.is_some() { 1 } else { series.len() };
    let value = |r: &Value| r["value"][1].as_str().unwrap_or("").to_owned();
    // All NaN (a quantile of nothing) draws nothing either.
    let nan = !series.is_empty() && series.iter().all(|r| value(r) == "NaN");
    if nan || count == 0 {
        tally.report(
            false,
            count,
            where_,
            query,
            if nan {
                "  only NaN: no observations in the window"
            } else {
                ""
            },
        );
        return;
    }
    let wanted = args.positive.iter().find(|m| {
        Regex::new(&format!(r"\b{}\b", regex::escape(m))).is_ok_and(|re| re.is_match(expr))
    });
    if let (Some(metric), true) = (wanted, label == "All") {
        let top = match largest(&series, scalar) {
            Ok(top) => top,
            Err(unreadable) => {
                tally.report(
                    false,
                    count,
                    where_,
                    query,
                    &format!("  a value that is not a number: {unreadable:?}"),
                );
                return;
            }
        };
        tally.report(
            top > 0.0,
            count,
            where_,
            query,
            &format!("  max {top} (must be > 0: the load provoked {metric})"),
        );
        return;
    }
    tally.report(true, count, where_, query, "");
}

/// The largest value of an answer: its scalar, or the largest of its
/// series' values. A value that is not a number is an error (the value),
/// never left out.
fn largest(series: &[Value], scalar: Option<f64>) -> Result<f64, String> {
    if let Some(v) = scalar {
        return Ok(v);
    }
    series
        .iter()
        .map(|r| {
            let v = r["value"][1].as_str().unwrap_or("");
            v.parse::<f64>().map_err(|_| v.to_owned())
        })
        .try_fold(f64::MIN, |top, v| Ok(top.max(v?)))
}

/// What Prometheus answered a query: its series, or one scalar.
#[derive(Debug, Clone, PartialEq)]
enum Answer {
    Series(Vec<Value>),
    Scalar(f64),
}

/// A query's answer read, or why it cannot be: an error status, an answer
/// without `data.result`, a scalar whose value is not a number. None of
/// these is "no series" or 0: the caller reports each as a failure.
fn read_answer(answer: &Value) -> Result<Answer, String> {
    if answer["status"] != "success" {
        return Err(format!("error: {}", answer["error"]));
    }
    match &answer["data"]["result"] {
        Value::Array(items) if answer["data"]["resultType"] == "scalar" => items
            .get(1)
            .and_then(Value::as_str)
            .and_then(|v| v.parse::<f64>().ok())
            .map(Answer::Scalar)
            .ok_or_else(|| format!("a scalar that is not a number: {}", answer["data"])),
        Value::Array(series) => Ok(Answer::Series(series.clone())),
        _ => Err(format!(
            "an answer without data.result: {}",
            serde_json::to_string(answer).unwrap_or_default()
        )),
    }
}

async fn check_annotations(
    api: &Api,
    dashboard: &Value,
    since: f64,
    all: &[(&str, String)],
    tally: &mut Tally,
) {
    println!("-- annotations, over the load");
    for annotation in crate::dashboards::annotations(dashboard) {
        let Some(expr) = crate::dashboards::annotation_expr(annotation) else {
            continue;
        };
        let where_ = format!(
            "annotation \"{}\"",
            annotation["name"].as_str().unwrap_or("")
        );
        let query = substitute(expr, all);
        let params = [
            ("query", query.clone()),
            ("start", format!("{:.3}", since - 1.0)),
            ("end", format!("{:.3}", now())),
            ("step", "1s".into()),
        ];
        let series = match read_answer(&api.get("/api/v1/query_range", &params).await) {
            Ok(Answer::Series(series)) => series,
            Ok(Answer::Scalar(_)) => {
                tally.report(
                    false,
                    0,
                    &where_,
                    &query,
                    "  a scalar where a range was asked",
                );
                continue;
            }
            Err(e) => {
                tally.report(false, 0, &where_, &query, &format!("  {e}"));
                continue;
            }
        };
        let mut names: Vec<String> = series
            .iter()
            .map(|s| s["metric"]["strategy"].as_str().unwrap_or("?").to_owned())
            .collect();
        names.sort();
        names.dedup();
        let note = if names.is_empty() {
            String::new()
        } else {
            format!("  ({})", names.join(", "))
        };
        tally.report(!series.is_empty(), series.len(), &where_, &query, &note);
    }
}

async fn check_variables(
    api: &Api,
    dashboard: &Value,
    since: f64,
    all: &[(&str, String)],
    tally: &mut Tally,
) {
    println!("-- template variables");
    let label_values =
        Regex::new(r"^\s*label_values\((?:(.*),)?\s*(\w+)\s*\)\s*$").expect("a valid regex");
    for variable in dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let query = variable["query"]["query"]
            .as_str()
            .or(variable["query"].as_str())
            .unwrap_or("");
        if variable["type"] != "query" || query.is_empty() {
            continue;
        }
        let where_ = format!("variable ${}", variable["name"].as_str().unwrap_or(""));
        let Some(found) = label_values.captures(query) else {
            tally.report(
                false,
                0,
                &where_,
                query,
                "  not a label_values(...) query this check understands",
            );
            continue;
        };
        let mut params = vec![
            ("start", format!("{:.3}", since - 60.0)),
            ("end", format!("{:.3}", now())),
        ];
        let selector = found.get(1).map_or("", |m| m.as_str().trim());
        if !selector.is_empty() {
            params.push(("match[]", substitute(selector, all)));
        }
        let answer = api
            .get(&format!("/api/v1/label/{}/values", &found[2]), &params)
            .await;
        if answer["status"] != "success" {
            tally.report(
                false,
                0,
                &where_,
                query,
                &format!("  error: {}", answer["error"]),
            );
            continue;
        }
        let values: Vec<String> = answer["data"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        tally.report(
            !values.is_empty(),
            values.len(),
            &where_,
            query,
            &format!("  ({})", values.join(", ")),
        );
    }
}

/// Every query of the dashboards against the Prometheus of `args`.
pub async fn check(args: &Check) -> anyhow::Result<()> {
    let api = Api::new(&args.prometheus)?;
    let since = args.since.unwrap_or_else(|| now() - 60.0);
    let mut tally = Tally::default();
    if args.replicas > 0 {
        api.wait_scrapes(now(), 2, args.replicas).await?;
    }
    let targets = targets_up(&api, args, &mut tally).await?;
    let all = vec![("strategy", ".*".to_owned()), ("instance", ".*".to_owned())];
    let passes = variable_passes(args, &targets, &all);
    let files = if args.dashboards.is_empty() {
        crate::dashboards::files(Path::new("."))?
    } else {
        args.dashboards.clone()
    };
    for path in &files {
        check_dashboard(&api, args, path, since, &all, &passes, &mut tally).await?;
    }
    summary(&tally)
}

/// The `seckill` targets Prometheus has up, sorted and printed; too few
/// (under `--replicas`) is a failure in `tally`.
async fn targets_up(api: &Api, args: &Check, tally: &mut Tally) -> anyhow::Result<Vec<String>> {
    let up = api.query("up{job=\"seckill\"} == 1").await;
    // An answer that cannot be read is an error, not "no target up".
    let mut targets: Vec<String> = match read_answer(&up).map_err(anyhow::Error::msg)? {
        Answer::Series(series) => series
            .iter()
            .filter_map(|r| r["metric"]["instance"].as_str().map(str::to_owned))
            .collect(),
        Answer::Scalar(v) => anyhow::bail!("up{{job=\"seckill\"}} answered a scalar ({v})"),
    };
    targets.sort();
    println!(
        "seckill targets up: {}",
        if targets.is_empty() {
            "none".into()
        } else {
            targets.join(", ")
        }
    );
    if targets.len() < args.replicas {
        tally.failures.push(format!(
            "only {} of {} replicas are up in Prometheus",
            targets.len(),
            args.replicas
        ));
    }
    Ok(targets)
}

/// The two passes' variable values: every variable at "All", then one
/// concrete strategy and instance (`--instance`, else the first target up).
fn variable_passes(
    args: &Check,
    targets: &[String],
    all: &[(&'static str, String)],
) -> Vec<(String, Vec<(&'static str, String)>)> {
    let instance = args
        .instance
        .clone()
        .or(targets.first().cloned())
        .unwrap_or_else(|| "127.0.0.1:0".into());
    vec![
        ("All".to_owned(), all.to_vec()),
        (
            format!("strategy={} instance={instance}", args.strategy),
            vec![
                ("strategy", grafana_regex(&args.strategy)),
                ("instance", grafana_regex(&instance)),
            ],
        ),
    ]
}

/// One dashboard file read and its panel queries, annotations and
/// variables checked.
async fn check_dashboard(
    api: &Api,
    args: &Check,
    path: &Path,
    since: f64,
    all: &[(&str, String)],
    passes: &[(String, Vec<(&str, String)>)],
    tally: &mut Tally,
) -> anyhow::Result<()> {
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?,
    )
    .with_context(|| format!("parse {}", path.display()))?;
    println!(
        "\n== {} ({})",
        path.display(),
        dashboard["title"].as_str().unwrap_or("?")
    );
    let file = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let list = queries(&dashboard, &file, tally);
    check_queries(api, args, &list, passes, tally).await;
    check_annotations(api, &dashboard, since, all, tally).await;
    check_variables(api, &dashboard, since, all, tally).await;
    Ok(())
}

/// The failures listed and the check failed, or the all-clear printed.
fn summary(tally: &Tally) -> anyhow::Result<()> {
    println!();
    if !tally.failures.is_empty() {
        for failure in &tally.failures {
            eprintln!("  {failure}");
        }
        bail!(
            "check-panels: {} of {} checks failed",
            tally.failures.len(),
            tally.checked
        );
    }
    println!("check-panels: all {} queries returned data", tally.checked);
    Ok(())
}

/// `seckill-lab prometheus-up URL REPLICAS` (the Docker check): job
/// `seckill` has that many targets, all up (within 60 s), and alert rules
/// are loaded.
pub fn prometheus_up(url: &str, replicas: usize) -> anyhow::Result<()> {
    let api = Api::new(url)?;
    crate::util::runtime()?.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let targets = api.get("/api/v1/targets", &[]).await;
            let ours: Vec<&Value> = targets["data"]["activeTargets"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|t| t["labels"]["job"] == "seckill")
                .collect();
            let mut up: Vec<&str> = ours
                .iter()
                .filter(|t| t["health"] == "up")
                .filter_map(|t| t["labels"]["instance"].as_str())
                .collect();
            up.sort_unstable();
            if ours.len() == replicas && up.len() == replicas {
                println!(
                    "ok   Prometheus: job seckill has {replicas} targets, all up: {}",
                    up.join(", ")
                );
                break;
            }
            if Instant::now() > deadline {
                bail!(
                    "Prometheus targets of job seckill: {} of {replicas} up ({})",
                    up.len(),
                    up.join(", ")
                );
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        let rules = api.get("/api/v1/rules", &[]).await;
        if rules["status"] != "success" {
            bail!("Prometheus' rules: {}", rules["error"]);
        }
        let alerts: Vec<&str> = rules["data"]["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|g| g["rules"].as_array().into_iter().flatten())
            .filter(|r| r["type"] == "alerting")
            .filter_map(|r| r["name"].as_str())
            .collect();
        if alerts.is_empty() {
            bail!("Prometheus loaded no alert rule (prometheus/alerts.yml)");
        }
        let first: Vec<&str> = alerts.iter().take(4).copied().collect();
        println!(
            "ok   Prometheus: {} alert rules loaded ({}, ...)",
            alerts.len(),
            first.join(", ")
        );
        Ok(())
    })
}

/// `seckill-lab panels`: [`check`] alone.
pub fn run_check(args: &Check) -> anyhow::Result<()> {
    crate::util::runtime()?.block_on(check(args))
}

/// `seckill-loadgen compare` over the stack's replicas; fails unless it exits 0.
fn compare(
    stack: &Stack,
    strategies: &str,
    users: &str,
    run_time: &str,
    out: &Path,
    extra: &[&str],
) -> anyhow::Result<()> {
    let status = stack
        .compare(strategies)
        .args([
            "--stock",
            "40",
            "--users",
            users,
            "--run-time",
            run_time,
            "--quiet",
            "--out",
        ])
        .arg(out)
        .args(extra)
        .status()
        .context("run seckill-loadgen")?;
    if !status.success() {
        bail!("seckill-loadgen compare failed ({status}): a violation or a failing service must not pass this check");
    }
    Ok(())
}

async fn faults(stack: &Stack, body: Value) -> anyhow::Result<()> {
    let url = format!("{}/admin/faults", stack.replica_urls()[0]);
    reqwest::Client::new()
        .put(&url)
        .bearer_auth(&stack.token)
        .json(&body)
        .send()
        .await?
        .error_for_status()
        .with_context(|| format!("PUT {url}"))?;
    Ok(())
}

/// `make check-panels`: see the module doc.
pub fn check_panels() -> anyhow::Result<()> {
    let started = Instant::now();
    let runtime = crate::util::runtime()?;
    let demo = Stack::new(Path::new(".demo"), 3)?;
    let own = !demo.healthy();
    let stack = if own {
        let mut stack = Stack::new(Path::new(".demo/check-panels"), 3)?;
        stack.lb = false;
        stack.console = false;
        // Short enough that a pause can outlive it within the check's seconds.
        stack.settings.push("SECKILL_LOCK_TTL_MS=1000".into());
        if !stack.app_bin().is_file() || !stack.loadgen_bin().is_file() {
            stack.build()?;
        }
        runtime.block_on(stack.up())?;
        stack
    } else {
        say("reusing the running demo's replicas, Redis and PostgreSQL (.demo/)");
        demo
    };
    let result = runtime.block_on(panels_on(&stack, own));
    let _ = stack.state.stop(&[("prometheus-check", "prometheus")]);
    if own {
        runtime.block_on(stack.down())?;
    }
    result?;
    say(&format!(
        "check-panels passed in {} s",
        started.elapsed().as_secs()
    ));
    Ok(())
}

/// The check on a stack, its steps in order: Prometheus, the live
/// metrics, the load, the queries.
async fn panels_on(stack: &Stack, own: bool) -> anyhow::Result<()> {
    let prometheus = stack.prometheus("prometheus-check", "1s")?;
    say(&format!("Prometheus: {prometheus} (scrape every 1 s)"));
    check_live_metrics(stack).await?;
    let api = Api::new(&prometheus)?;
    // A first scrape of every replica before the load, so that rate() sees
    // each counter's first increase.
    api.wait_scrapes(now(), 1, stack.replicas).await?;
    let since = now();
    run_load(stack)?;
    let positive = if own {
        provoke_lost_lease(stack).await?
    } else {
        say("a running demo (lock TTL 30 s) is reused: the lost-lease and fence-rejection panels are checked for series, not for events");
        Vec::new()
    };
    // Two more scrapes of every replica after the last grab.
    api.wait_scrapes(now(), 2, stack.replicas).await?;
    let instance = stack.replica_urls()[0]
        .trim_start_matches("http://")
        .to_owned();
    let args = Check {
        prometheus,
        since: Some(since),
        at: None,
        strategy: std::env::var("CHECK_PANELS_STRATEGY")
            .unwrap_or_else(|_| seckill_load::api::StrategyName::Redlock.as_str().into()),
        instance: Some(instance),
        replicas: 0,
        positive,
        dashboards: Vec::new(),
    };
    check(&args).await
}

/// `promtool check metrics` on the first replica's live `/metrics` (a copy
/// kept in the stack's folder).
async fn check_live_metrics(stack: &Stack) -> anyhow::Result<()> {
    let replica = &stack.replica_urls()[0];
    let metrics = reqwest::get(format!("{replica}/metrics"))
        .await?
        .error_for_status()?
        .text()
        .await?;
    let copy = stack.state.path.join("metrics.txt");
    std::fs::write(&copy, &metrics)?;
    let promtool = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(&copy)?)
        .status()?;
    if !promtool.success() {
        bail!(
            "promtool check metrics found problems in {replica}/metrics (copy in {})",
            copy.display()
        );
    }
    println!(
        "ok   promtool check metrics ({} seckill_ samples)",
        metrics
            .lines()
            .filter(|l| l.starts_with("seckill_"))
            .count()
    );
    Ok(())
}

/// The load: a short compare of `CHECK_PANELS_STRATEGIES` over the replicas.
fn run_load(stack: &Stack) -> anyhow::Result<()> {
    let strategies = std::env::var("CHECK_PANELS_STRATEGIES")
        .unwrap_or_else(|_| "none,set-nx-px-token,watchdog,redlock,fenced,redis-lua-stock".into());
    let run_time = std::env::var("CHECK_PANELS_RUN_TIME").unwrap_or_else(|_| "4s".into());
    say(&format!(
        "load: {strategies} over {}",
        stack.replica_urls().join(" ")
    ));
    compare(
        stack,
        &strategies,
        "20",
        &run_time,
        &stack.state.path.join("panels-report"),
        &["--work-delay-ms", "2"],
    )
}

/// On our own stack: a pause past the TTL before the write of one grab in
/// three over redlock and fenced; the metrics that must then be above 0.
async fn provoke_lost_lease(stack: &Stack) -> anyhow::Result<Vec<String>> {
    let pause = 1400;
    say(&format!("provoking a lost lease and a fence rejection: pause {pause} ms (TTL 1000 ms) before the write of one grab in 3, redlock and fenced"));
    faults(
        stack,
        serde_json::json!({"pause_ms": pause, "pause_every": 3, "pause_at": "before-write"}),
    )
    .await?;
    let paused = compare(
        stack,
        "redlock,fenced",
        "8",
        "4s",
        &stack.state.path.join("panels-pause-report"),
        &[],
    );
    faults(
        stack,
        serde_json::json!({"pause_ms": 0, "pause_every": 1, "pause_at": "before-read"}),
    )
    .await?;
    paused?;
    Ok(vec![
        "seckill_lock_lost_total".to_owned(),
        "seckill_fence_rejections_total".to_owned(),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_that_cannot_be_read_is_an_error_not_zero_or_no_series() {
        let series = serde_json::json!({"status": "success", "data": {"resultType": "vector", "result": [
            {"metric": {"strategy": "redlock"}, "value": [1.0, "2"]}
        ]}});
        assert!(matches!(read_answer(&series), Ok(Answer::Series(s)) if s.len() == 1));
        let empty = serde_json::json!({"status": "success", "data": {"resultType": "vector", "result": []}});
        assert_eq!(read_answer(&empty), Ok(Answer::Series(Vec::new())));
        let scalar = serde_json::json!({"status": "success", "data": {"resultType": "scalar", "result": [1.0, "3.5"]}});
        assert_eq!(read_answer(&scalar), Ok(Answer::Scalar(3.5)));
        let unreadable = serde_json::json!({"status": "success", "data": {"resultType": "scalar", "result": [1.0, "x"]}});
        assert!(read_answer(&unreadable)
            .expect_err("not a number")
            .contains("not a number"));
        let missing = serde_json::json!({"status": "success", "data": {}});
        assert!(read_answer(&missing)
            .expect_err("no result")
            .contains("without data.result"));
        let failed = serde_json::json!({"status": "error", "error": "parse error"});
        assert!(read_answer(&failed)
            .expect_err("error")
            .contains("parse error"));
        // A series value that is not a number fails; it is not left out.
        let series = |v: &str| serde_json::json!({"metric": {}, "value": [1.0, v]});
        assert_eq!(largest(&[series("2"), series("7.5")], None), Ok(7.5));
        assert_eq!(
            largest(&[series("2"), series("x")], None),
            Err("x".to_owned())
        );
        assert_eq!(largest(&[], Some(3.0)), Ok(3.0));
    }

    #[test]
    fn variables_are_substituted_as_grafana_does() {
        let values = vec![
            ("strategy", grafana_regex("set-nx-px-token")),
            ("instance", grafana_regex("127.0.0.1:80")),
        ];
        let got = substitute(
            "rate(x{strategy=~\"$strategy\",instance=~\"${instance}\"}[$__rate_interval]) $missing",
            &values,
        );
        assert_eq!(
            got,
            r#"rate(x{strategy=~"(set-nx-px-token)",instance=~"(127\\.0\\.0\\.1:80)"}[1m]) $missing"#
        );
    }
}
