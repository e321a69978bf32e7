//! The report's charts, hand-drawn SVG (no scripts, no fetches): the
//! lesson (what each strategy let through), product 1's stock over each
//! run, and bars of throughput and latency. Colours follow the verdict.

use maud::{html, Markup};

use super::html::{decimals, SVG_NS};
use super::{Report, Run};
use crate::judge::RunVerdict;

/// A verdict's colour in the charts: blue safe, orange expected to break,
/// red a strategy classed safe that broke, grey a run that could not be
/// judged.
fn colour(verdict: RunVerdict) -> &'static str {
    match verdict {
        RunVerdict::Violation => "#d32f2f",
        RunVerdict::ExpectedUnsafe => "#f5a623",
        RunVerdict::Safe => "#4a90d9",
        RunVerdict::Inconclusive => "#9e9e9e",
    }
}

impl Report {
    /// The headline: what each strategy let through, three bars per row
    /// (each column scaled to its own largest value), an exact run marked
    /// "exact" in green.
    pub(super) fn lesson_chart(&self) -> Markup {
        type Column = (&'static str, fn(&Run) -> i64);
        const COLUMNS: [Column; 3] = [
            ("oversold units", |r| r.damage.oversold),
            ("lost updates", |r| r.damage.lost_updates),
            ("duplicate orders", |r| r.damage.duplicates),
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
                        @let colour = if run.verdict == RunVerdict::Violation {
                            colour(RunVerdict::Violation)
                        } else {
                            colour(RunVerdict::ExpectedUnsafe)
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
    pub(super) fn stock_charts(&self) -> Markup {
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
                                polyline fill="none" stroke=(colour(run.verdict)) stroke-width="2"
                                    points=(points.join(" ")) {}
                            }
                        }
                    }
                }
            }
        }
    }

    pub(super) fn bar_chart(
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
                            fill=(colour(run.verdict)) {
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
