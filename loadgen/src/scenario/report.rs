//! `scenarios.{json,md,html}`: every case's row — the terminal table
//! printed at the end, the Markdown table, and the HTML page with a
//! timeline of each case's first overlaps (arbiter time, relative to the
//! case's first overlap).

use std::fmt::Write as _;

use maud::{html, PreEscaped, DOCTYPE};
use serde::Serialize;

use super::case::CaseResult;
use crate::judge::CaseVerdict;
use crate::report::html::{decimals, overlap_timeline, section_timeline, SCENARIOS_CSS};

/// `scenarios.json`.
#[derive(Debug, Serialize)]
pub struct ScenarioReport {
    /// Tool.
    pub tool: &'static str,
    /// Version.
    pub version: &'static str,
    /// `--quick` was used.
    pub quick: bool,
    /// Every case run.
    pub scenarios: Vec<CaseResult>,
    /// Strategies a scenario does not apply to, with the reason.
    pub skipped: Vec<Skipped>,
    /// Wall time of the whole run, seconds.
    pub duration_s: f64,
}

/// A strategy a scenario does not apply to.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    /// Scenario.
    pub name: String,
    /// Strategy.
    pub strategy: String,
    /// Why not.
    pub reason: String,
}

/// Column widths of the terminal table (the verdict, last, is not padded).
const WIDTHS: [usize; 21] = [
    20, 19, 20, 7, 8, 5, 5, 5, 5, 4, 4, 5, 5, 6, 5, 5, 5, 6, 18, 18, 11,
];

impl ScenarioReport {
    /// How many verdicts are `UNEXPECTED`.
    pub fn unexpected(&self) -> usize {
        self.scenarios
            .iter()
            .filter(|c| c.verdict == CaseVerdict::Unexpected)
            .count()
    }

    /// How many cases could not run here.
    pub fn not_run(&self) -> usize {
        self.scenarios
            .iter()
            .filter(|c| c.verdict == CaseVerdict::NotRun)
            .count()
    }

    /// How many verdicts are `inconclusive`.
    pub fn inconclusive(&self) -> usize {
        self.scenarios
            .iter()
            .filter(|c| c.verdict == CaseVerdict::Inconclusive)
            .count()
    }

    /// The terminal table.
    pub fn terminal(&self) -> String {
        let line = |cells: &[String]| {
            let mut out = String::new();
            for (i, cell) in cells.iter().enumerate() {
                match WIDTHS.get(i) {
                    // Names left-aligned, figures right-aligned.
                    Some(&w) if i < 4 => {
                        let _ = write!(out, "{cell:<w$} ");
                    }
                    Some(&w) => {
                        let _ = write!(out, "{cell:>w$} ");
                    }
                    None => {
                        let _ = write!(out, " {cell}");
                    }
                }
            }
            out.push('\n');
            out
        };
        let head: Vec<String> = [
            "scenario",
            "strategy",
            "variant",
            "expect",
            "overlaps",
            "max",
            "over",
            "lost",
            "under",
            "dup",
            "neg",
            "ack-",
            "unack",
            "indet",
            "rej",
            "busy",
            "orders",
            "trials",
            "excl broken",
            "data damaged",
            "standing",
            "verdict",
        ]
        .iter()
        .map(|h| (*h).to_owned())
        .collect();
        let mut out = line(&head);
        for c in &self.scenarios {
            out.push_str(&line(&c.cells()));
        }
        out
    }

    /// `scenarios.md`.
    pub fn markdown(&self) -> String {
        let mut out = format!("| {} |\n|", CaseResult::HEAD.join(" | "));
        for (i, _) in CaseResult::HEAD.iter().enumerate() {
            out.push_str(if (4..21).contains(&i) {
                "---:|"
            } else {
                "---|"
            });
        }
        out.push('\n');
        for c in &self.scenarios {
            let _ = writeln!(out, "| {} |", c.cells().join(" | "));
        }
        out
    }

    /// `scenarios.html`: the table, and a timeline of each case's first
    /// overlaps.
    pub fn html(&self) -> String {
        let report = self;
        let colour = |verdict| match verdict {
            CaseVerdict::AsExpected => "#2e7d32",
            CaseVerdict::Unexpected => "#c62828",
            CaseVerdict::Inconclusive => "#9e9e9e",
            CaseVerdict::NotRun => "#6d4c41",
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
                        tr { @for h in CaseResult::HEAD { th { (h) } } th { "why" } }
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
                    @if report.scenarios.iter().any(|c| c.sweep.is_some()) {
                        h2 { "Sweeps" }
                        p {
                            "Each outcome as k of n injections at every value of the dial swept, \
                             with its Wilson 95 % interval as an error bar. A prediction of \
                             breaks agrees when the whole bar lies above the grey line, holds \
                             when it lies below; a bar across the line is undecided."
                        }
                        @for c in report.scenarios.iter().filter(|c| c.sweep.is_some()).collect::<Vec<_>>().chunk_by(|a, b| a.name == b.name && a.strategy == b.strategy && a.variant == b.variant).filter_map(|g| g.last()) {
                            @if let Some(sweep) = &c.sweep {
                                h3 {
                                    (c.name) " · " (c.strategy)
                                    @if let Some(variant) = &c.variant { " · " (variant) }
                                    " · " (sweep.key)
                                }
                                div.curve { (PreEscaped(super::curve::svg(sweep))) }
                                table {
                                    tr { th { (sweep.key) } th { "exclusion broken" } th { "data damaged" } th { "standing" } th { "verdict" } }
                                    @for point in &sweep.points {
                                        tr {
                                            td { (point.value) }
                                            td { (point.exclusion_broken.map_or("-".into(), |r| r.text())) }
                                            td { (point.data_damaged.map_or("-".into(), |r| r.text())) }
                                            td { (point.standing.map_or("-", super::rate::Standing::as_str)) }
                                            td { (point.verdict.as_str()) }
                                        }
                                    }
                                }
                            }
                        }
                    }
                    h2 { "Injections" }
                    p {
                        "Each fault injected, on the case's clock: its target, its window and the \
                         proof it landed; then what its round showed."
                    }
                    @for c in report.scenarios.iter().filter(|c| !c.injections.is_empty()) {
                        h3 {
                            (c.name) " · " (c.strategy)
                            @if let Some(variant) = &c.variant { " · " (variant) }
                        }
                        (injection_timeline(c))
                    }
                    h2 { "Critical sections" }
                    p {
                        "Each case's sections, one row per replica, as the arbiter timed them; \
                         red: a section that overlapped another."
                    }
                    @for c in report.scenarios.iter().filter(|c| !c.sections.is_empty()) {
                        h3 {
                            (c.name) " · " (c.strategy)
                            @if let Some(variant) = &c.variant { " · " (variant) }
                        }
                        (section_timeline(&c.sections))
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
}

/// One bar per injection on the case's clock, shaded red when exclusion
/// broke, with an orange rim when data was damaged, grey when it was not
/// proven to land.
fn injection_timeline(c: &CaseResult) -> maud::Markup {
    let end = c
        .injections
        .iter()
        .map(|i| i.end_ms)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let width = 640.0;
    let x = |ms: u64| ms as f64 / end * width;
    html! {
        svg xmlns="http://www.w3.org/2000/svg" width=(width + 10.0) height="46" {
            rect x="0" y="8" width=(width) height="22" fill="#f5f5f5" {}
            @for i in &c.injections {
                @let fill = if i.proof.is_none() { "#bdbdbd" } else if i.exclusion_broken { "#c62828" } else { "#2e7d32" };
                @let stroke = if i.data_damaged { "#f57c00" } else { "none" };
                rect x=(decimals(x(i.start_ms), 1)) y="8" width=(decimals((x(i.end_ms) - x(i.start_ms)).max(2.0), 1)) height="22" fill=(fill) stroke=(stroke) stroke-width="3" {
                    title { (i.target) " " (i.start_ms) "–" (i.end_ms) " ms: " (i.proof.as_deref().unwrap_or("not proven")) "; " (if i.data_damaged { i.damage.as_str() } else { "data exact" }) }
                }
            }
            text x="0" y="44" font-size="11" { "0 ms" }
            text x=(width - 40.0) y="44" font-size="11" { (decimals(end, 0)) " ms" }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::api::OverlapEvent;
    use crate::judge::{Expected, Guarantee};
    use crate::report::fixtures::{ESCAPED, HOSTILE};
    use crate::scenario::case::Observed;

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
            first_overlaps: vec![OverlapEvent {
                at_us: 1500,
                strategy: "redlock".into(),
                entered: HOSTILE.into(),
                inside: Vec::new(),
                product: 1,
            }],
            sections: crate::report::fixtures::run(HOSTILE, crate::judge::RunVerdict::Safe, 0)
                .sections,
            duration_s: 1.0,
            trials: None,
            params: json!({}),
            injections: Vec::new(),
            outcomes: None,
            standing: None,
            sweep: None,
            reason: None,
        };
        let report = ScenarioReport {
            tool: "seckill-loadgen",
            version: "0",
            quick: true,
            scenarios: vec![case],
            skipped: Vec::new(),
            duration_s: 2.4,
        };
        let page = report.html();
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
