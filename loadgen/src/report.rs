//! The side-by-side report: one [`Run`] per strategy, written as a terminal
//! table, Markdown, JSON (schema in the README, keys of DESIGN.md's "Wire
//! shapes" kept) and one self-contained HTML page with charts; also
//! `scenarios.html` ([`scenarios_html`]). The HTML is written with maud's
//! `html!`, which escapes every string it interpolates (strategy names, skip
//! and verdict reasons, overlap members: `&`, `<`, `>`, `"`; attribute values
//! are always double-quoted, so `'` needs none).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use maud::{html, Markup, PreEscaped, DOCTYPE};
use serde::Serialize;

use crate::service::AuditRow;
use crate::workload::Workload;

/// What a strategy's numbers mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// Classed safe, and the database shows no violation.
    #[serde(rename = "safe")]
    Safe,
    /// Classed safe, yet it oversold, lost an update or duplicated an order.
    #[serde(rename = "VIOLATION")]
    Violation,
    /// Not classed safe here (`none`; `local-mutex` on 2+ replicas): its
    /// violations are the lesson, not a failure.
    #[serde(rename = "expected-unsafe")]
    ExpectedUnsafe,
}

impl Verdict {
    /// Its colour in the report's charts: blue safe, orange expected to
    /// break, red a strategy classed safe that broke.
    fn colour(self) -> &'static str {
        match self {
            Verdict::Violation => "#d32f2f",
            Verdict::ExpectedUnsafe => "#f5a623",
            Verdict::Safe => "#4a90d9",
        }
    }

    /// As printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Safe => "safe",
            Verdict::Violation => "VIOLATION",
            Verdict::ExpectedUnsafe => "expected-unsafe",
        }
    }
}

/// Lock figures: deltas of the replicas' `/metrics` over the run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LockFigures {
    pub attempts: u64,
    pub retries: u64,
    pub acquire_wait_p99_ms: Option<f64>,
    pub hold_p99_ms: Option<f64>,
    pub renewals: u64,
    pub lost: u64,
    pub releases_not_owner: u64,
    pub fence_rejections: u64,
    pub redlock_quorum_failures: u64,
}

/// How the run's orders were batched (from the service's
/// `seckill_order_batch_*` histograms, and each grab's exact
/// `Server-Timing: batch;dur`).
#[derive(Debug, Clone, Serialize)]
pub struct BatchFigures {
    /// Batches committed (or failed) during the run.
    pub batches: u64,
    /// Orders per batch, on average.
    pub mean_size: f64,
    /// Median and 99th percentile batch size (bucket-interpolated).
    pub p50_size: Option<f64>,
    pub p99_size: Option<f64>,
    /// What batching added to a grab: the time its order waited for its
    /// batch to start, exact.
    pub wait_p50_ms: Option<f64>,
    pub wait_p99_ms: Option<f64>,
    /// One batch's `INSERT` and commit, 99th percentile (bucket-interpolated).
    pub commit_p99_ms: Option<f64>,
}

impl BatchFigures {
    /// One line: `orders in 812 batches of 7.6 on average (p50 6, p99 15); ...`.
    pub fn line(&self) -> String {
        let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2} ms"));
        let n = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.0}"));
        format!(
            "orders in {} batches of {:.1} on average (p50 {}, p99 {}); wait for a batch p50 {}, p99 {}; commit p99 {}",
            self.batches,
            self.mean_size,
            n(self.p50_size),
            n(self.p99_size),
            ms(self.wait_p50_ms),
            ms(self.wait_p99_ms),
            ms(self.commit_p99_ms),
        )
    }
}

/// One strategy's run.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    pub strategy: String,
    pub safety: String,
    pub guarantee: String,
    pub verdict: Verdict,
    pub violations: bool,
    pub duration_s: f64,
    pub grabs: u64,
    pub grabs_per_sec: f64,
    /// Orders in the database (ground truth, all products).
    pub orders: i64,
    pub orders_per_sec: f64,
    pub ordered_units: i64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub outcomes: BTreeMap<String, u64>,
    pub initial_stock: i64,
    pub stock_left: i64,
    pub oversold: i64,
    pub lost_updates: i64,
    /// Units gone from the stock column with no order for them (a lost
    /// reservation, a write that went wrong): summed per product, like
    /// `lost_updates`, never netted against it.
    pub undersold: i64,
    pub duplicates: i64,
    pub negative_stock: bool,
    /// A buyer's whole wait, first send (or scheduled time) to final answer,
    /// busy/rejected retries included.
    pub buyer_p50_ms: f64,
    pub buyer_p99_ms: f64,
    pub lock: LockFigures,
    /// Orders committed in batches (`redis-lua-stock`): sizes and waits;
    /// absent when the strategy wrote no batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<BatchFigures>,
    /// With `--history`: critical sections that began while another was
    /// inside, across every replica (the arbiter's count).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overlaps: Option<u64>,
    /// With `--history`: the most sections inside at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_holders: Option<u64>,
    /// With `--history`: the arbiter's first overlaps.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub first_overlaps: Vec<serde_json::Value>,
    /// Why the strategy was expected to break under the faults in force.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_to_break: Option<String>,
    /// Product 1's stock during the run: `[seconds since the first grab,
    /// stock]`, sampled every 250 ms; the last point is the audit's.
    pub stock_over_time: Vec<(f64, i64)>,
    pub audit: Vec<AuditRow>,
    /// goose's own HTML report, relative to the output folder.
    pub goose_report: String,
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub tool: &'static str,
    pub version: &'static str,
    pub replicas: Vec<String>,
    pub synchronous_commit: Option<String>,
    /// `GET /admin/faults` while the runs ran (work delay, pauses,
    /// unlock-before-commit…): a "safe" lock can break under them.
    pub faults: Option<serde_json::Value>,
    pub workload: Workload,
    pub runs: Vec<Run>,
    /// Strategies listed but not run, with the reason.
    pub skipped: Vec<Skipped>,
    /// Strategies whose run failed (the reason says why); exit code 3.
    pub failed: Vec<Skipped>,
    /// Stopped by Ctrl-C: `runs` holds what finished.
    pub interrupted: bool,
}

/// A strategy the service cannot run.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub strategy: String,
    pub reason: String,
}

impl Report {
    /// Runs classed safe that showed a violation.
    pub fn violations(&self) -> Vec<&Run> {
        self.runs
            .iter()
            .filter(|r| r.verdict == Verdict::Violation)
            .collect()
    }

    /// The runs that committed their orders in batches.
    fn batched(&self) -> impl Iterator<Item = (&str, &BatchFigures)> {
        self.runs
            .iter()
            .filter_map(|r| Some((r.strategy.as_str(), r.batch.as_ref()?)))
    }

    fn header(&self) -> String {
        let w = &self.workload;
        let shape = match w.shape {
            crate::workload::Shape::ClosedLoop => format!("{} closed-loop users", w.users),
            crate::workload::Shape::Burst => format!("burst of {} users", w.users),
            crate::workload::Shape::Rate { per_sec } => {
                format!("{per_sec} grabs/s open rate, {} users", w.users)
            }
        };
        let length = w.run_time.map_or("until sold out".to_owned(), |d| {
            format!("{} s", d.as_secs())
        });
        // The faults that are on (non-zero, true), e.g. "work_delay_ms=5".
        let faults: Vec<String> = self
            .faults
            .as_ref()
            .and_then(serde_json::Value::as_object)
            .map(|map| {
                let pausing = map.get("pause_ms").and_then(serde_json::Value::as_u64) > Some(0);
                map.iter()
                    .filter(|(k, _)| pausing || k.as_str() != "pause_every")
                    .filter(|(_, v)| v.as_u64().is_some_and(|n| n > 0) || v.as_bool() == Some(true))
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect()
            })
            .unwrap_or_default();
        format!(
            "{shape}, {length}; stock {} on {} product(s); {} replica(s); synchronous_commit={}; faults: {}",
            w.stock,
            w.products,
            self.replicas.len(),
            self.synchronous_commit.as_deref().unwrap_or("?"),
            if faults.is_empty() { "none".to_owned() } else { faults.join(", ") }
        )
    }

    /// Rows of the table, shared by the terminal and Markdown forms.
    fn rows(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let head = vec![
            "strategy",
            "grabs/s",
            "orders/s",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "ordered",
            "sold_out",
            "already",
            "busy",
            "rejected",
            "error",
            "wait p99 ms",
            "retries",
            "oversold",
            "lost",
            "dup",
            "overlaps",
            "verdict",
        ];
        let rows = self
            .runs
            .iter()
            .map(|r| {
                let o = |k: &str| r.outcomes.get(k).copied().unwrap_or(0).to_string();
                vec![
                    r.strategy.clone(),
                    format!("{:.0}", r.grabs_per_sec),
                    format!("{:.0}", r.orders_per_sec),
                    format!("{:.1}", r.p50_ms),
                    format!("{:.1}", r.p95_ms),
                    format!("{:.1}", r.p99_ms),
                    o("ordered"),
                    o("sold_out"),
                    o("already_purchased"),
                    o("busy"),
                    o("rejected"),
                    o("error"),
                    r.lock
                        .acquire_wait_p99_ms
                        .map_or("-".into(), |v| format!("{v:.1}")),
                    r.lock.retries.to_string(),
                    r.oversold.to_string(),
                    r.lost_updates.to_string(),
                    r.duplicates.to_string(),
                    r.overlaps.map_or("-".into(), |o| o.to_string()),
                    r.verdict.as_str().to_owned(),
                ]
            })
            .collect();
        (head, rows)
    }

    /// The results as a comfy-table with `preset`'s borders: strategy and
    /// verdict left, the figures right.
    fn table(
        &self,
        style: comfy_table::TableStyle,
        cell: impl Fn(String) -> String,
    ) -> comfy_table::Table {
        let (head, rows) = self.rows();
        let mut table = comfy_table::Table::new();
        table
            .load_style(style)
            .set_header(head.iter().copied())
            .add_rows(rows.into_iter().map(|row| row.into_iter().map(&cell)));
        let last = head.len() - 1;
        for (i, column) in table.column_iter_mut().enumerate() {
            if i != 0 && i != last {
                column.set_cell_alignment(comfy_table::CellAlignment::Right);
            }
        }
        table
    }

    /// A plain-text table for the terminal.
    pub fn terminal(&self) -> String {
        let mut out = format!("{}\n", self.header());
        // No borders: columns two spaces apart (each cell's padding).
        for line in self.table(comfy_table::presets::NOTHING, |c| c).lines() {
            out.push_str(line.strip_prefix(' ').unwrap_or(&line).trim_end());
            out.push('\n');
        }
        for (strategy, batch) in self.batched() {
            let _ = writeln!(out, "{strategy}: {}", batch.line());
        }
        for s in &self.skipped {
            let _ = writeln!(out, "skipped {}: {}", s.strategy, s.reason);
        }
        for s in &self.failed {
            let _ = writeln!(out, "FAILED {}: {}", s.strategy, s.reason);
        }
        if self.interrupted {
            out.push_str("interrupted (Ctrl-C): the strategies after the last row did not run\n");
        }
        out
    }

    /// A GitHub-flavoured Markdown table.
    pub fn markdown(&self) -> String {
        let mut out = format!("# seckill-loadgen report\n\n{}\n\n", self.header());
        let table = self.table(comfy_table::presets::ASCII_MARKDOWN, |c| {
            if c == "VIOLATION" {
                "**VIOLATION**".into()
            } else {
                c
            }
        });
        let _ = writeln!(out, "{table}");
        for (strategy, batch) in self.batched() {
            let _ = writeln!(out, "\n`{strategy}`: {}", batch.line());
        }
        for s in &self.skipped {
            let _ = writeln!(out, "\nSkipped `{}`: {}", s.strategy, s.reason);
        }
        for s in &self.failed {
            let _ = writeln!(out, "\n**Failed** `{}`: {}", s.strategy, s.reason);
        }
        out.push_str(
            "\nGrabs/s count every answered request (retries of `busy`/`rejected` included); \
             orders, oversold, lost and dup come from the database audit; wait p99 and retries \
             from the replicas' `/metrics`.\n",
        );
        out
    }

    /// The JSON report.
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// One self-contained HTML page, 1280 pixels wide at most (a
    /// projector): the lesson (oversold units, lost updates, duplicate
    /// orders per strategy), product 1's stock over each run, throughput
    /// and p99 latency bars, the table; violations in red. No scripts, no
    /// fetches.
    pub fn html(&self) -> String {
        let violations = self.violations();
        let (head, rows) = self.rows();
        let overlapping: Vec<&Run> = self
            .runs
            .iter()
            .filter(|r| !r.first_overlaps.is_empty())
            .collect();
        let mut page = html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    title { "seckill-loadgen report" }
                    style { (PreEscaped(REPORT_CSS)) }
                }
                body {
                    h1 { "seckill-loadgen report" }
                    p #workload { (self.header()) }
                    @if violations.is_empty() {
                        p #summary { "No strategy classed safe showed a violation." }
                    } @else {
                        p #summary style="color:#b00;font-weight:bold" {
                            "VIOLATION: "
                            @for (i, run) in violations.iter().enumerate() {
                                @if i > 0 { ", " }
                                (run.strategy)
                            }
                        }
                    }
                    (self.lesson_chart())
                    (self.stock_charts())
                    (self.bar_chart(
                        "chart-throughput",
                        "Throughput (grabs/s; orders/s darker)",
                        |r| r.grabs_per_sec,
                        Some(|r: &Run| r.orders_per_sec),
                    ))
                    (self.bar_chart("chart-p99", "p99 grab latency (ms)", |r| r.p99_ms, None))
                    table #results {
                        thead { tr { @for h in head { th { (h) } } } }
                        tbody {
                            @for (row, run) in rows.iter().zip(&self.runs) {
                                tr class=(run.verdict.as_str()) {
                                    @if let Some((strategy, figures)) = row.split_first() {
                                        td { a href=(run.goose_report) { (strategy) } }
                                        @for cell in figures { td { (cell) } }
                                    }
                                }
                            }
                        }
                    }
                    @for (strategy, batch) in self.batched() {
                        p.batch { code { (strategy) } ": " (batch.line()) }
                    }
                    @for s in &self.skipped {
                        p { "Skipped " code { (s.strategy) } ": " (s.reason) }
                    }
                    @if !overlapping.is_empty() {
                        h2 { "First overlaps (--history)" }
                        p {
                            "Critical sections that began while another was inside, as the \
                             history arbiter recorded them: "
                            code { "replica:section" }
                            ", the arbiter's clock from the run's first overlap."
                        }
                        @for run in overlapping {
                            h3 { (run.strategy) }
                            ol { (overlap_timeline(&run.first_overlaps)) }
                        }
                    }
                    p {
                        "Rows: red = a strategy classed safe broke; yellow = expected to break. \
                         Each strategy name links to goose's own report of its run."
                    }
                }
            }
        }
        .into_string();
        page.push('\n');
        page
    }

    /// The headline: what each strategy let through, three bars per row
    /// (each column scaled to its own largest value), an exact run marked
    /// "exact" in green.
    fn lesson_chart(&self) -> Markup {
        type Column = (&'static str, fn(&Run) -> i64);
        const COLUMNS: [Column; 3] = [
            ("oversold units", |r| r.oversold),
            ("lost updates", |r| r.lost_updates),
            ("duplicate orders", |r| r.duplicates),
        ];
        let maxima =
            COLUMNS.map(|(_, value)| self.runs.iter().map(value).max().unwrap_or(0).max(1) as f64);
        let (label_w, col_w, row_h) = (170.0, 320.0, 22.0);
        let width = label_w + col_w * 3.0 + 20.0;
        let height = 28.0 + row_h * self.runs.len() as f64;
        html! {
            figure.chart #chart-lesson {
                figcaption {
                    b { "The lesson" }
                    ": what each strategy let through (audit of the database after its run; \
                     0 everywhere = exact)"
                }
                svg xmlns=(SVG_NS) width=(width) height=(height)
                    viewBox={ "0 0 " (width) " " (height) } role="img" {
                    @for (c, (title, _)) in COLUMNS.iter().enumerate() {
                        text x=(label_w + c as f64 * col_w) y="14" font-size="13"
                            font-weight="bold" {
                            (title)
                        }
                    }
                    @for (i, run) in self.runs.iter().enumerate() {
                        @let y = 24.0 + i as f64 * row_h;
                        text x=(label_w - 6.0) y=(y + 13.0) text-anchor="end" font-size="12" {
                            (run.strategy)
                        }
                        // Something went through: red for a broken promise,
                        // orange otherwise (never the blue of a safe bar).
                        @let colour = if run.verdict == Verdict::Violation {
                            Verdict::Violation.colour()
                        } else {
                            Verdict::ExpectedUnsafe.colour()
                        };
                        @for (c, ((title, value), max)) in COLUMNS.iter().zip(maxima).enumerate() {
                            @let x = label_w + c as f64 * col_w;
                            @let v = value(run);
                            @if v == 0 {
                                text x=(x) y=(y + 13.0) font-size="12" fill="#2e7d32" {
                                    "0 · exact"
                                }
                            } @else {
                                @let w = (v as f64 / max * (col_w - 70.0)).max(2.0);
                                rect.lesson-bar x=(x) y=(y + 2.0) width=(decimals(w, 1)) height="15"
                                    fill=(colour) {
                                    title { (run.strategy) ": " (v) " " (title) }
                                }
                                text x=(decimals(x + w + 4.0, 1)) y=(y + 13.0) font-size="12" {
                                    (v)
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Product 1's stock during each run, one small chart per strategy on
    /// a shared time axis; below zero is shaded red (oversold stock).
    fn stock_charts(&self) -> Markup {
        let runs: Vec<&Run> = self
            .runs
            .iter()
            .filter(|r| r.stock_over_time.len() >= 2)
            .collect();
        if runs.is_empty() {
            return html! {};
        }
        let (w, h, pad) = (280.0, 110.0, 24.0);
        let t_max = runs
            .iter()
            .flat_map(|r| r.stock_over_time.iter().map(|p| p.0))
            .fold(0.1_f64, f64::max);
        let (bottom, top) = runs
            .iter()
            .flat_map(|r| r.stock_over_time.iter().map(|p| p.1))
            .fold((0_i64, 1_i64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let (bottom, top) = (bottom as f64, top as f64);
        let x = |t: f64| pad + t / t_max * (w - pad - 8.0);
        let y = |v: f64| 8.0 + (top - v) / (top - bottom) * (h - 8.0 - 18.0);
        let zero = decimals(y(0.0), 1);
        let right = decimals(w - 8.0, 1);
        html! {
            figure.chart #chart-stock {
                figcaption {
                    "Stock of product 1 during each run (0–" (decimals(t_max, 1)) " s, "
                    (decimals(bottom, 0)) "–" (decimals(top, 0))
                    " units; sampled every 250 ms, the last point from the audit)"
                }
                div.charts {
                    @for run in runs {
                        @let points: Vec<String> = run
                            .stock_over_time
                            .iter()
                            .map(|&(t, v)| format!("{:.1},{:.1}", x(t), y(v as f64)))
                            .collect();
                        figure.small {
                            figcaption {
                                (run.strategy) " — ends at "
                                (run.stock_over_time.last().map_or(0, |p| p.1))
                            }
                            svg.stock xmlns=(SVG_NS) width=(w) height=(h) role="img" {
                                // SVG shapes get an end tag (`{}`): maud's `;`
                                // writes no `/>`, and in an HTML page's SVG a
                                // bare `<rect>` would hold what follows it.
                                rect x=(pad) y=(zero) width=(decimals(w - pad - 8.0, 1))
                                    height=(decimals((y(bottom) - y(0.0)).max(0.0), 1))
                                    fill="#fdd" {}
                                line x1=(pad) x2=(right) y1=(zero) y2=(zero) stroke="#999"
                                    stroke-dasharray="3 3" {}
                                text x=(pad - 3.0) y=(decimals(y(top) + 8.0, 1)) font-size="10"
                                    text-anchor="end" { (decimals(top, 0)) }
                                text x=(pad - 3.0) y=(decimals(y(0.0) + 3.0, 1)) font-size="10"
                                    text-anchor="end" { "0" }
                                text x=(right) y=(h - 4.0) font-size="10" text-anchor="end" {
                                    (decimals(t_max, 1)) " s"
                                }
                                polyline fill="none" stroke=(run.verdict.colour()) stroke-width="2"
                                    points=(points.join(" ")) {}
                            }
                        }
                    }
                }
            }
        }
    }

    fn bar_chart(
        &self,
        id: &str,
        title: &str,
        value: fn(&Run) -> f64,
        inner: Option<fn(&Run) -> f64>,
    ) -> Markup {
        let bar_h = 18.0;
        let label_w = 170.0;
        let plot_w = 520.0;
        let height = bar_h * 1.4 * self.runs.len() as f64 + 30.0;
        let max = self
            .runs
            .iter()
            .map(value)
            .fold(0.0_f64, f64::max)
            .max(f64::MIN_POSITIVE);
        html! {
            figure.chart #(id) {
                figcaption { (title) }
                svg xmlns=(SVG_NS) width=(label_w + plot_w + 90.0) height=(height) role="img" {
                    @for (i, run) in self.runs.iter().enumerate() {
                        @let y = 10.0 + i as f64 * bar_h * 1.4;
                        @let v = value(run);
                        @let w = (v / max * plot_w).max(1.0);
                        text x=(label_w - 6.0) y=(y + bar_h * 0.75) text-anchor="end"
                            font-size="12" {
                            (run.strategy)
                        }
                        rect.bar x=(label_w) y=(y) width=(decimals(w, 1)) height=(bar_h)
                            fill=(run.verdict.colour()) {
                            title { (run.strategy) ": " (decimals(v, 1)) }
                        }
                        @if let Some(inner) = inner {
                            rect x=(label_w) y=(y + bar_h * 0.25)
                                width=(decimals((inner(run) / max * plot_w).clamp(0.0, w), 1))
                                height=(bar_h * 0.5) fill="#000" fill-opacity="0.35" {}
                        }
                        text x=(decimals(label_w + w + 4.0, 1)) y=(y + bar_h * 0.75)
                            font-size="12" {
                            (decimals(v, 1))
                        }
                    }
                }
            }
        }
    }
}

/// The report page's style sheet.
const REPORT_CSS: &str = "\
body{font-family:system-ui,sans-serif;margin:1rem 1.25rem;color:#222;max-width:1240px}\
table{border-collapse:collapse;font-size:.8rem}\
td,th{border:1px solid #ccc;padding:.2rem .35rem;text-align:right}\
td:first-child,th:first-child{text-align:left}\
tr.VIOLATION{background:#fdd}tr.expected-unsafe{background:#fff3cd}\
.chart{margin:1.25rem 0}.chart svg{max-width:100%;height:auto}\
.charts{display:flex;flex-wrap:wrap;gap:.75rem 1.25rem}\
.small{margin:0}.small figcaption{font-size:.85rem}";

/// The scenarios page's style sheet.
const SCENARIOS_CSS: &str =
    "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}\
td,th{border:1px solid #ccc;padding:4px 8px}";

/// The SVG namespace, on every chart (the page stands alone).
const SVG_NS: &str = "http://www.w3.org/2000/svg";

/// `v` with `places` decimals, as the charts write their coordinates.
fn decimals(v: f64, places: usize) -> String {
    format!("{v:.places$}")
}

/// `scenarios.html`: the table, and a timeline of each case's first
/// overlaps (arbiter time, relative to the case's first overlap).
pub fn scenarios_html(report: &crate::scenario::ScenarioReport) -> String {
    use crate::scenario::Verdict;
    const HEAD: [&str; 14] = [
        "scenario",
        "strategy",
        "variant",
        "expected",
        "overlaps",
        "max holders",
        "oversold",
        "lost updates",
        "duplicates",
        "rejected",
        "busy",
        "orders",
        "verdict",
        "why",
    ];
    let colour = |verdict| match verdict {
        Verdict::AsExpected => "#2e7d32",
        Verdict::Unexpected => "#c62828",
        Verdict::Inconclusive => "#9e9e9e",
    };
    html! {
        (DOCTYPE)
        html {
            head {
                meta charset="utf-8";
                title { "seckill-lab scenarios" }
                style { (PreEscaped(SCENARIOS_CSS)) }
            }
            body {
                h1 { "Fault scenarios" }
                p {
                    (report.scenarios.len()) " cases in " (decimals(report.duration_s, 0)) " s"
                    @if report.quick { " (--quick)" }
                    ". Overlaps are counted by the history arbiter (sections that began while \
                     another was inside); the rest is the database's audit."
                }
                // One row a line in the page's source.
                table {
                    tr { @for h in HEAD { th { (h) } } }
                    "\n"
                    @for c in &report.scenarios {
                        tr {
                            // The last cell is the verdict, in its colour.
                            @if let Some((_, cells)) = c.cells().split_last() {
                                @for cell in cells { td { (cell) } }
                                td style={ "color:" (colour(c.verdict)) ";font-weight:bold" } {
                                    (c.verdict.as_str())
                                }
                            }
                            td { (c.verdict_reason) }
                        }
                        "\n"
                    }
                }
                h2 { "First overlaps" }
                p {
                    "Member names are " code { "replica:section" } "; times are the arbiter's \
                     clock from the first overlap of the case."
                }
                @for c in report.scenarios.iter().filter(|c| !c.first_overlaps.is_empty()) {
                    h3 {
                        (c.name) " · " (c.strategy)
                        @if let Some(variant) = &c.variant { " · " (variant) }
                    }
                    ol { (overlap_timeline(&c.first_overlaps)) }
                }
            }
        }
    }
    .into_string()
}

/// The arbiter's first overlaps as HTML list items: time from the first
/// one, who entered, who was inside.
fn overlap_timeline(events: &[serde_json::Value]) -> Markup {
    let t0 = events
        .first()
        .and_then(|e| e["at_us"].as_i64())
        .unwrap_or(0);
    html! {
        @for event in events {
            @let at = event["at_us"].as_i64().unwrap_or(0) - t0;
            @let inside: Vec<&str> = event["inside"]
                .as_array()
                .map(|a| a.iter().filter_map(serde_json::Value::as_str).collect())
                .unwrap_or_default();
            li {
                code { "+" (decimals(at as f64 / 1000.0, 1)) " ms" } " "
                b { (event["entered"].as_str().unwrap_or("?")) }
                " entered while inside: " (inside.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::scenario::{
        CaseResult, Expected, Guarantee, Observed, ScenarioReport, Verdict as CaseVerdict,
    };
    use crate::workload::{Shape, Workload};

    const HOSTILE: &str = "<script>\"'&";
    const ESCAPED: &str = "&lt;script&gt;&quot;'&amp;";

    fn run(strategy: &str, verdict: Verdict, oversold: i64) -> Run {
        Run {
            strategy: strategy.into(),
            safety: "safe".into(),
            guarantee: "exclusion".into(),
            verdict,
            violations: verdict == Verdict::Violation,
            duration_s: 1.0,
            grabs: 40,
            grabs_per_sec: 40.0,
            orders: 20 + oversold,
            orders_per_sec: 20.0,
            ordered_units: 20 + oversold,
            p50_ms: 1.0,
            p95_ms: 2.0,
            p99_ms: 3.0,
            max_ms: 4.0,
            outcomes: BTreeMap::from([("ordered".to_owned(), 20)]),
            initial_stock: 20,
            stock_left: -oversold,
            oversold,
            lost_updates: 0,
            undersold: 0,
            duplicates: 0,
            negative_stock: oversold > 0,
            buyer_p50_ms: 1.0,
            buyer_p99_ms: 3.0,
            lock: LockFigures::default(),
            batch: None,
            overlaps: Some(1),
            max_holders: Some(2),
            first_overlaps: vec![
                json!({"at_us": 10, "entered": format!("r1:{HOSTILE}"), "inside": [HOSTILE]}),
            ],
            expected_to_break: None,
            stock_over_time: vec![(0.0, 20), (0.5, -oversold)],
            audit: Vec::new(),
            goose_report: format!("goose/{HOSTILE}.html"),
        }
    }

    #[test]
    fn a_violation_is_reported_first_and_wins_over_a_failing_service() {
        let mut failing = run("redlock", Verdict::Safe, 0);
        failing.outcomes.insert("error".into(), 30);
        let broken = run("set-nx-px", Verdict::Violation, 2);
        let mut report = report_of(vec![failing.clone(), broken]);
        let (code, lines) = crate::cli::outcome(&report);
        assert_eq!(code, 1, "{lines:?}");
        assert!(lines[0].starts_with("VIOLATION: set-nx-px"), "{lines:?}");
        assert!(
            lines[1].contains("failed 30 of 40 grabs under redlock"),
            "{lines:?}"
        );
        report.runs = vec![failing];
        assert_eq!(crate::cli::outcome(&report).0, 3);
        report.runs = vec![run("pg-atomic", Verdict::Safe, 0)];
        assert_eq!(crate::cli::outcome(&report), (0, Vec::new()));
        report.interrupted = true;
        assert_eq!(crate::cli::outcome(&report).0, 130);
    }

    fn report_of(runs: Vec<Run>) -> Report {
        Report {
            tool: "seckill-loadgen",
            version: "0",
            replicas: vec!["http://127.0.0.1:1".into()],
            synchronous_commit: None,
            faults: None,
            workload: Workload {
                shape: Shape::Burst,
                users: 40,
                increase_rate: 800.0,
                run_time: None,
                max_run_time: Duration::from_secs(30),
                stock: 20,
                products: 1,
                hot_ratio: 1.0,
                repeat_ratio: 0.0,
                quantity_min: 1,
                quantity_max: 1,
                retry: true,
                retry_ms: 10,
                give_up_after: Duration::from_secs(5),
            },
            runs,
            skipped: Vec::new(),
            failed: Vec::new(),
            interrupted: false,
        }
    }

    #[test]
    fn html_escapes_every_interpolated_string() {
        let mut report = report_of(vec![
            run(HOSTILE, Verdict::Violation, 3),
            run("pg-atomic", Verdict::Safe, 0),
        ]);
        report.synchronous_commit = Some(HOSTILE.into());
        report.skipped = vec![Skipped {
            strategy: HOSTILE.into(),
            reason: format!("not built: {HOSTILE}"),
        }];
        let page = report.html();
        assert!(
            page.starts_with("<!DOCTYPE html><html lang=\"en\">"),
            "{page}"
        );
        assert!(!page.contains("<script"), "no raw <script> tag: {page}");
        assert!(!page.contains(HOSTILE), "{page}");
        for (what, escaped) in [
            ("workload line", format!("synchronous_commit={ESCAPED}")),
            ("summary", format!("VIOLATION: {ESCAPED}</p>")),
            (
                "lesson bar",
                format!("<title>{ESCAPED}: 3 oversold units</title>"),
            ),
            ("bar chart", format!("<title>{ESCAPED}: 40.0</title>")),
            (
                "stock chart",
                format!("<figcaption>{ESCAPED} — ends at -3</figcaption>"),
            ),
            (
                "table link",
                format!("<a href=\"goose/{ESCAPED}.html\">{ESCAPED}</a>"),
            ),
            (
                "skip reason",
                format!("<code>{ESCAPED}</code>: not built: {ESCAPED}</p>"),
            ),
            ("timeline", format!("<h3>{ESCAPED}</h3>")),
            (
                "timeline",
                format!("<b>r1:{ESCAPED}</b> entered while inside: {ESCAPED}</li>"),
            ),
        ] {
            assert!(page.contains(&escaped), "{what}: {escaped} in {page}");
        }
        // The markup the tests and the Chromium check look for is unchanged.
        for marker in [
            "<p id=\"workload\">",
            "<p id=\"summary\" style=\"color:#b00;font-weight:bold\">",
            "<figure class=\"chart\" id=\"chart-lesson\">",
            "<figure class=\"chart\" id=\"chart-stock\">",
            "<figure class=\"chart\" id=\"chart-throughput\">",
            "<figure class=\"chart\" id=\"chart-p99\">",
            "<table id=\"results\">",
            "<tr class=\"VIOLATION\">",
            "<tr class=\"safe\">",
            concat!(
                "<rect class=\"lesson-bar\" x=\"170\" y=\"26\" width=\"250.0\" ",
                "height=\"15\" fill=\"#d32f2f\">"
            ),
            "<svg class=\"stock\" ",
            "<rect class=\"bar\" ",
            "0 · exact",
            "</body></html>\n",
        ] {
            assert!(page.contains(marker), "{marker} in {page}");
        }
    }

    #[test]
    fn scenarios_html_escapes_every_interpolated_string() {
        let case = CaseResult {
            name: HOSTILE.into(),
            strategy: format!("redlock{HOSTILE}"),
            variant: Some(HOSTILE.into()),
            faults: json!({}),
            expected: Expected::Breaks,
            why: String::new(),
            guarantee: Guarantee::Exclusion,
            observed: Observed::default(),
            verdict: CaseVerdict::Unexpected,
            verdict_reason: format!("because {HOSTILE}"),
            steps: Vec::new(),
            first_overlaps: vec![json!({"at_us": 1500, "entered": HOSTILE, "inside": []})],
            duration_s: 1.0,
        };
        let report = ScenarioReport {
            tool: "seckill-loadgen",
            version: "0",
            quick: true,
            scenarios: vec![case],
            skipped: Vec::new(),
            duration_s: 2.4,
        };
        let page = scenarios_html(&report);
        assert!(!page.contains("<script"), "no raw <script> tag: {page}");
        assert!(!page.contains(HOSTILE), "{page}");
        for escaped in [
            format!("<tr><td>{ESCAPED}</td><td>redlock{ESCAPED}</td><td>{ESCAPED}</td>"),
            format!(
                "<td style=\"color:#c62828;font-weight:bold\">UNEXPECTED</td>\
                 <td>because {ESCAPED}</td></tr>\n"
            ),
            format!("<h3>{ESCAPED} · redlock{ESCAPED} · {ESCAPED}</h3>"),
            format!("<li><code>+0.0 ms</code> <b>{ESCAPED}</b> entered while inside: </li>"),
            "<p>1 cases in 2 s (--quick).".to_owned(),
        ] {
            assert!(page.contains(&escaped), "{escaped} in {page}");
        }
    }
}
