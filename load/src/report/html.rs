//! The report as one self-contained HTML page, 1280 pixels wide at most (a
//! projector), written with maud's `html!`, which escapes every string it
//! interpolates (strategy names, skip and verdict reasons, overlap members:
//! `&`, `<`, `>`, `"`; attribute values are always double-quoted, so `'`
//! needs none). Also the pieces the scenarios' page shares.

use maud::{html, Markup, PreEscaped, DOCTYPE};

use super::{Report, Run};
use crate::api::{OverlapEvent, Section};

impl Report {
    /// One self-contained HTML page, 1280 pixels wide at most (a
    /// projector): the lesson (oversold units, lost updates, duplicate
    /// orders per strategy), product 1's stock over each run, throughput
    /// and p99 latency bars, the table; violations in red. No scripts, no
    /// fetches.
    ///
    /// Over 80 lines on purpose: one page's markup (maud), in the order it
    /// reads.
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
                    div.wide {
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
                    }
                    @for (strategy, batch) in self.batched() {
                        p.batch { code { (strategy) } ": " (batch.line()) }
                    }
                    @for s in &self.skipped {
                        p { "Skipped " code { (s.strategy) } ": " (s.reason) }
                    }
                    @if !self.thresholds.is_empty() {
                        h2 { "Thresholds" }
                        ul {
                            @for c in &self.thresholds {
                                li class=(if c.ok { "passed" } else { "breached" }) { (c.line()) }
                            }
                        }
                    }
                    @if self.runs.iter().any(|r| !r.sections.is_empty()) {
                        h2 { "Critical sections (--history)" }
                        @for run in self.runs.iter().filter(|r| !r.sections.is_empty()) {
                            h3 { (run.strategy) }
                            (section_timeline(&run.sections))
                        }
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
}

/// The report page's style sheet.
const REPORT_CSS: &str = "\
body{font-family:system-ui,sans-serif;margin:1rem 1.25rem;color:#222;max-width:1240px}\
table{border-collapse:collapse;font-size:.72rem}\
td,th{border:1px solid #ccc;padding:.15rem .25rem;text-align:right}\
.wide{overflow-x:auto;max-width:100%}\
td:first-child,th:first-child{text-align:left}\
tr.VIOLATION{background:#fdd}tr.expected-unsafe{background:#fff3cd}\
.chart{margin:1.25rem 0}.chart svg{max-width:100%;height:auto}\
.charts{display:flex;flex-wrap:wrap;gap:.75rem 1.25rem}\
.small{margin:0}.small figcaption{font-size:.85rem}";

/// The scenarios page's style sheet.
pub const SCENARIOS_CSS: &str =
    "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}\
td,th{border:1px solid #ccc;padding:4px 8px}";

/// The SVG namespace, on every chart (the page stands alone).
pub(super) const SVG_NS: &str = "http://www.w3.org/2000/svg";

/// `v` with `places` decimals, as the charts write their coordinates.
pub fn decimals(v: f64, places: usize) -> String {
    format!("{v:.places$}")
}

/// The arbiter's first overlaps as HTML list items: time from the first
/// one, who entered, who was inside.
pub fn overlap_timeline(events: &[OverlapEvent]) -> Markup {
    let t0 = events.first().map_or(0, |e| e.at_us);
    html! {
        @for event in events {
            li {
                code { "+" (decimals((event.at_us - t0) as f64 / 1000.0, 1)) " ms" } " "
                b { (event.entered) }
                " entered while inside: " (event.inside.join(", "))
            }
        }
    }
}

/// The most sections one timeline draws: a window of the run, around its
/// first overlap when there is one.
const TIMELINE_MAX: usize = 600;

/// A timeline of critical sections, one row per replica, each section a
/// bar from its entry to its exit on the arbiter's clock; sections that
/// overlapped another are red. A section still inside runs to the end.
/// Long runs show a window of 600 sections, starting a little
/// before the first overlap.
pub fn section_timeline(sections: &[Section]) -> Markup {
    let mut all: Vec<&Section> = sections.iter().collect();
    all.sort_by_key(|s| (s.entered_us, s.member.clone()));
    let start = all
        .iter()
        .position(|s| s.overlap)
        .map_or(0, |i| i.saturating_sub(TIMELINE_MAX / 4))
        .min(all.len().saturating_sub(TIMELINE_MAX));
    let shown = &all[start..all.len().min(start + TIMELINE_MAX)];
    let mut replicas: Vec<&str> = shown.iter().map(|s| s.instance.as_str()).collect();
    replicas.sort_unstable();
    replicas.dedup();
    let t0 = shown.first().map_or(0, |s| s.entered_us);
    let t1 = shown
        .iter()
        .map(|s| s.exited_us.unwrap_or(s.entered_us))
        .max()
        .unwrap_or(t0)
        .max(t0 + 1);
    let (label_w, plot_w, row_h) = (110.0, 1090.0, 26.0);
    let x = |us: i64| label_w + (us - t0) as f64 / (t1 - t0) as f64 * plot_w;
    let height = 24.0 + row_h * replicas.len() as f64;
    let overlapped = shown.iter().filter(|s| s.overlap).count();
    html! {
        figure.chart.timeline {
            figcaption {
                b { "Critical sections per replica" }
                " (the arbiter's clock; red: overlapped another section): "
                (shown.len()) " of " (sections.len()) " sections shown, "
                (overlapped) " of them overlapping, over "
                (decimals((t1 - t0) as f64 / 1000.0, 1)) " ms"
            }
            svg xmlns=(SVG_NS) width=(decimals(label_w + plot_w + 10.0, 0)) height=(decimals(height, 0))
                viewBox={ "0 0 " (decimals(label_w + plot_w + 10.0, 0)) " " (decimals(height, 0)) } {
                @for (row, replica) in replicas.iter().enumerate() {
                    @let y = 4.0 + row_h * row as f64;
                    text x="4" y=(decimals(y + 15.0, 1)) font-size="12" { (replica) }
                    line x1=(decimals(label_w, 1)) x2=(decimals(label_w + plot_w, 1))
                        y1=(decimals(y + row_h / 2.0, 1)) y2=(decimals(y + row_h / 2.0, 1))
                        stroke="#eee" {}
                    @for s in shown.iter().filter(|s| s.instance == *replica) {
                        @let end = s.exited_us.unwrap_or(t1);
                        rect x=(decimals(x(s.entered_us), 2)) y=(decimals(y + 3.0, 1))
                            width=(decimals((x(end) - x(s.entered_us)).max(1.0), 2))
                            height=(decimals(row_h - 8.0, 1))
                            fill=(if s.overlap { "#d32f2f" } else { "#4a90d9" })
                            data-replica=(s.instance) data-overlap=(s.overlap) {
                            title {
                                (s.member) ": "
                                (decimals((end - s.entered_us) as f64 / 1000.0, 2)) " ms"
                                @if s.exited_us.is_none() { " (still inside)" }
                            }
                        }
                    }
                }
                text x=(decimals(label_w, 1)) y=(decimals(height - 2.0, 1)) font-size="11" fill="#666" { "0 ms" }
                text x=(decimals(label_w + plot_w, 1)) y=(decimals(height - 2.0, 1)) font-size="11" fill="#666" text-anchor="end" {
                    (decimals((t1 - t0) as f64 / 1000.0, 1)) " ms"
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{report_of, run, ESCAPED, HOSTILE};
    use super::super::Skipped;
    use crate::api::StrategyName;
    use crate::judge::RunVerdict;

    #[test]
    fn html_escapes_every_interpolated_string() {
        let mut report = report_of(vec![
            run(StrategyName::Redlock, RunVerdict::Violation, 3),
            run(StrategyName::PgAtomic, RunVerdict::Safe, 0),
        ]);
        report.synchronous_commit = Some(HOSTILE.into());
        report.skipped = vec![Skipped {
            strategy: StrategyName::Setnx,
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
            ("summary", "VIOLATION: redlock</p>".to_owned()),
            (
                "lesson bar",
                "<title>redlock: 3 oversold units</title>".to_owned(),
            ),
            ("bar chart", "<title>redlock: 40.0</title>".to_owned()),
            (
                "stock chart",
                "<figcaption>redlock — ends at -3</figcaption>".to_owned(),
            ),
            (
                "table link",
                format!("<a href=\"goose/{ESCAPED}.html\">redlock</a>"),
            ),
            (
                "skip reason",
                format!("<code>setnx</code>: not built: {ESCAPED}</p>"),
            ),
            ("timeline", "<h3>redlock</h3>".to_owned()),
            (
                "timeline",
                format!("<b>r1:{ESCAPED}</b> entered while inside: {ESCAPED}</li>"),
            ),
            (
                "section timeline: a replica's row",
                format!("font-size=\"12\">{ESCAPED}</text>"),
            ),
            (
                "section timeline: an overlapping bar",
                format!("fill=\"#d32f2f\" data-replica=\"{ESCAPED}\" data-overlap=\"true\"><title>{ESCAPED}:1: 4.00 ms</title>"),
            ),
            (
                "section timeline: one still inside",
                "<title>r2:1: 2.00 ms (still inside)</title>".to_owned(),
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
}
