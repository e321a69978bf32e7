//! `scenarios.{json,md,html}`: every case's row — the terminal table
//! printed at the end, the Markdown table, and the HTML page with a
//! timeline of each case's first overlaps (arbiter time, relative to the
//! case's first overlap).

use seckill_load::api::StrategyName;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context as _;

use maud::{html, PreEscaped, DOCTYPE};
use serde::{Deserialize, Serialize};

use super::case::CaseResult;
use seckill_load::judge::CaseVerdict;
use seckill_load::report::html::{decimals, overlap_timeline, section_timeline, SCENARIOS_CSS};

/// `scenarios.json`, written and read back (`scenario-table`) through
/// this one type.
#[derive(Debug, Serialize, Deserialize)]
pub struct ScenarioReport {
    /// Tool.
    pub tool: String,
    /// Version.
    pub version: String,
    /// `--quick` was used.
    pub quick: bool,
    /// Every case run.
    pub scenarios: Vec<CaseResult>,
    /// Strategies a scenario does not apply to, with the reason.
    pub skipped: Vec<Skipped>,
    /// Wall time of the whole run, seconds.
    pub duration_s: f64,
    /// With `--locate`: each line's probes and brackets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub located: Vec<super::locate::Located>,
}

/// A strategy a scenario does not apply to.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Skipped {
    /// Scenario.
    pub name: String,
    /// Strategy.
    pub strategy: StrategyName,
    /// Why not.
    pub reason: String,
}

/// Column widths of the terminal table (the verdict, last, is not padded).
const WIDTHS: [usize; 21] = [
    20, 19, 20, 7, 8, 5, 5, 5, 5, 4, 4, 5, 5, 6, 5, 5, 5, 6, 18, 18, 11,
];

/// `seckill-loadgen scenario-table`: every `scenarios.json` one folder
/// under `root`, read back through [`ScenarioReport`], oldest first; the
/// newest run of each case (scenario, strategy, variant) wins. Returns
/// the merged report and the folders it read, oldest first.
pub fn merged(root: &Path) -> anyhow::Result<(ScenarioReport, Vec<String>)> {
    let mut files = Vec::new();
    let entries = std::fs::read_dir(root).with_context(|| format!("read {}", root.display()))?;
    for entry in entries {
        let file = entry?.path().join("scenarios.json");
        if let Ok(meta) = std::fs::metadata(&file) {
            files.push((meta.modified()?, file));
        }
    }
    files.sort();
    if files.is_empty() {
        anyhow::bail!(
            "no scenario report under {}/: run make scenarios S=<name> first",
            root.display()
        );
    }
    let mut cases: Vec<CaseResult> = Vec::new();
    let mut read = Vec::new();
    let mut last: Option<ScenarioReport> = None;
    for (_, file) in files {
        let text =
            std::fs::read_to_string(&file).with_context(|| format!("read {}", file.display()))?;
        let report: ScenarioReport = serde_json::from_str(&text).with_context(|| {
            format!("{} is not a scenarios.json of this version", file.display())
        })?;
        for case in &report.scenarios {
            let same = |c: &CaseResult| {
                (&c.name, &c.strategy, &c.variant) == (&case.name, &case.strategy, &case.variant)
            };
            match cases.iter_mut().find(|c| same(c)) {
                Some(kept) => *kept = case.clone(),
                None => cases.push(case.clone()),
            }
        }
        let folder = file.parent().and_then(Path::file_name);
        read.push(folder.map_or_else(String::new, |f| f.to_string_lossy().into_owned()));
        last = Some(report);
    }
    let mut merged = last.context("no report read")?;
    merged.scenarios = cases;
    merged.skipped.clear();
    merged.duration_s = merged.scenarios.iter().map(|c| c.duration_s).sum();
    Ok((merged, read))
}

impl ScenarioReport {
    /// Write `scenarios.{json,md,html}` into `out` (created if missing).
    pub fn write(&self, out: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(out).with_context(|| format!("create {}", out.display()))?;
        std::fs::write(
            out.join("scenarios.json"),
            serde_json::to_string_pretty(self)?,
        )?;
        std::fs::write(out.join("scenarios.md"), self.markdown())?;
        std::fs::write(out.join("scenarios.html"), self.html())?;
        Ok(())
    }

    /// The cases of the `scenarios.json` that [`ScenarioReport::write`]
    /// left in `out`; `None` when there is none or it cannot be read (a
    /// run that reads back earlier work measures those cases again).
    pub fn read_cases(out: &Path) -> Option<Vec<super::case::CaseResult>> {
        let text = std::fs::read_to_string(out.join("scenarios.json")).ok()?;
        serde_json::from_str::<ScenarioReport>(&text)
            .ok()
            .map(|r| r.scenarios)
    }

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
    ///
    /// Over 80 lines on purpose: one page's markup (maud), in the order it
    /// reads.
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
                                    (c.name.name()) " · " (c.strategy)
                                    @if let Some(variant) = &c.variant { " · " (variant) }
                                    " · " (sweep.key)
                                }
                                div.curve { (PreEscaped(super::curve::svg(sweep))) }
                                table {
                                    tr { th { (sweep.key) } th { "exclusion broken" } th { "data damaged" } th { "standing" } th { "verdict" } }
                                    @for point in &sweep.points {
                                        tr {
                                            td { (point.value.as_deref().unwrap_or("unknown")) }
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
                            (c.name.name()) " · " (c.strategy)
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
                            (c.name.name()) " · " (c.strategy)
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
                            (c.name.name()) " · " (c.strategy)
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
    use crate::scenario::case::Observed;
    use crate::scenario::in_force::{FaultRecord, InForce};
    use crate::scenario::name::Scenario;
    use seckill_load::api::OverlapEvent;
    use seckill_load::api::Variant;
    use seckill_load::judge::{Expected, Guarantee};
    use seckill_load::load::ledger::Accounting;
    use seckill_load::report::fixtures::{ESCAPED, HOSTILE};

    /// A case of `name` under `strategy`, with an overlap and the
    /// acknowledgement check, as the runner writes one; `text` is every
    /// free text of it (the reason, the member who entered, the sections).
    fn case_with(name: Scenario, strategy: StrategyName, text: &str) -> CaseResult {
        CaseResult {
            name,
            strategy,
            variant: Some(Variant::Restart),
            faults: Some(FaultRecord::default()),
            expected: Expected::Breaks,
            why: String::new(),
            guarantee: Guarantee::Exclusion,
            observed: Observed {
                accounting: Some(Accounting {
                    acknowledged: 3,
                    ..Accounting::default()
                }),
                ..Observed::default()
            },
            verdict: CaseVerdict::Unexpected,
            verdict_reason: format!("because {text}"),
            steps: Vec::new(),
            first_overlaps: vec![OverlapEvent {
                at_us: 1500,
                strategy: "redlock".into(),
                entered: text.into(),
                inside: Vec::new(),
                product: 1,
            }],
            sections: seckill_load::report::fixtures::run(
                strategy,
                seckill_load::judge::RunVerdict::Safe,
                0,
            )
            .sections,
            duration_s: 1.0,
            trials: None,
            params: InForce::default(),
            injections: Vec::new(),
            outcomes: None,
            standing: None,
            sweep: None,
            reason: None,
            entry: None,
        }
    }

    fn case(name: Scenario, strategy: StrategyName) -> CaseResult {
        case_with(name, strategy, name.name())
    }

    fn report(cases: Vec<CaseResult>) -> ScenarioReport {
        ScenarioReport {
            tool: "seckill-loadgen".into(),
            version: "0".into(),
            quick: true,
            scenarios: cases,
            skipped: Vec::new(),
            duration_s: 2.4,
            located: Vec::new(),
        }
    }

    #[test]
    fn scenarios_json_reads_back_as_it_was_written() {
        let mut written = case(Scenario::GcPause, StrategyName::Redlock);
        written.observed.overlaps = 4;
        let json = serde_json::to_value(report(vec![written])).expect("serialises");
        let read: ScenarioReport = serde_json::from_value(json.clone()).expect("reads back");
        assert_eq!(read.scenarios[0].observed.overlaps, 4);
        assert_eq!(
            read.scenarios[0]
                .observed
                .accounting
                .map(|a| a.acknowledged),
            Some(3)
        );
        assert_eq!(serde_json::to_value(&read).expect("serialises"), json);
        let mut renamed = json;
        renamed["scenarios"][0]["verdict"] = json!("as expected");
        assert!(
            serde_json::from_value::<ScenarioReport>(renamed).is_err(),
            "an unknown verdict fails"
        );
    }

    #[test]
    fn the_table_keeps_the_newest_run_of_each_case() {
        let root = std::env::temp_dir().join(format!("scenario-table-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let written = std::cell::Cell::new(0u64);
        let write = |folder: &str, cases: Vec<CaseResult>| {
            let dir = root.join(folder);
            std::fs::create_dir_all(&dir).expect("a folder");
            let json = serde_json::to_string(&report(cases)).expect("serialises");
            let file = dir.join("scenarios.json");
            std::fs::write(&file, json).expect("written");
            // Distinct modification times, oldest first: a second apart.
            written.set(written.get() + 1);
            std::fs::File::options()
                .write(true)
                .open(&file)
                .expect("open")
                .set_modified(
                    std::time::UNIX_EPOCH
                        + std::time::Duration::from_secs(1_700_000_000 + written.get()),
                )
                .expect("set its modification time");
        };
        write(
            "all",
            vec![
                case(Scenario::GcPause, StrategyName::Redlock),
                case(Scenario::Failover, StrategyName::Fenced),
            ],
        );
        let mut newer = case(Scenario::GcPause, StrategyName::Redlock);
        newer.verdict = CaseVerdict::AsExpected;
        write("gc-pause", vec![newer]);
        std::fs::create_dir_all(root.join("empty")).expect("a folder without a report");
        let (merged, read) = merged(&root).expect("merged");
        std::fs::remove_dir_all(&root).expect("cleaned up");
        assert_eq!(read, ["all", "gc-pause"]);
        let rows: Vec<(&str, CaseVerdict)> = merged
            .scenarios
            .iter()
            .map(|c| (c.name.name(), c.verdict))
            .collect();
        assert_eq!(
            rows,
            [
                ("gc-pause", CaseVerdict::AsExpected),
                ("failover", CaseVerdict::Unexpected)
            ]
        );
    }

    #[test]
    fn scenarios_html_escapes_every_interpolated_string() {
        let case = case_with(Scenario::GcPause, StrategyName::Redlock, HOSTILE);
        let page = report(vec![case]).html();
        assert!(!page.contains("<script"), "no raw <script> tag: {page}");
        assert!(!page.contains(HOSTILE), "{page}");
        for escaped in [
            "<tr><td>gc-pause</td><td>redlock</td><td>restart</td>".to_owned(),
            format!(
                "<td style=\"color:#c62828;font-weight:bold\">UNEXPECTED</td>\
                 <td>because {ESCAPED}</td></tr>\n"
            ),
            "<h3>gc-pause · redlock · restart</h3>".to_owned(),
            format!("<li><code>+0.0 ms</code> <b>{ESCAPED}</b> entered while inside: </li>"),
            "<p>1 cases in 2 s (--quick).".to_owned(),
        ] {
            assert!(page.contains(&escaped), "{escaped} in {page}");
        }
    }
}
