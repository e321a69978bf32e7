//! The debate's document: `redlock-debate.json`'s shapes, what the runner
//! measured, and the trace kept for a refuted claim — read by the runner
//! that fills them and the pages that print them.

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use super::judge::{self, Judged};
use super::rows::{self, Source};
use crate::scenario::{self, CaseResult, Outcome, Scenario, Standing};
use seckill_load::api::{StrategyName, Variant};

/// Each run's cases so far: (value as run, case, one of the sweep's
/// fixed points).
pub type Measurements = Vec<(rows::Run, Vec<Measured>)>;

/// One case of a run: its value as run, the case, whether it is one of the
/// sweep's fixed points.
pub type Measured = (String, CaseResult, bool);

pub use super::judge::Text;

/// A row's source, as the JSON has it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SourceJson {
    pub author: Text,
    pub title: Text,
    pub year: u16,
    pub url: Text,
}

impl From<Source> for SourceJson {
    fn from(s: Source) -> Self {
        Self {
            author: s.author.into(),
            title: s.title.into(),
            year: s.year,
            url: s.url.into(),
        }
    }
}

/// One row of `redlock-debate.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RowJson {
    pub id: Text,
    pub source: SourceJson,
    pub quote: Text,
    pub quote_zh: Text,
    pub claim: Text,
    pub claim_zh: Text,
    /// `never` or `can-happen`.
    pub claim_kind: rows::Kind,
    /// Where along the sweep the source's claim applies.
    pub claim_applies: Text,
    pub mechanism: Text,
    /// 机制，中文（较早的 JSON 没有这一项：中文页退回英文）。
    #[serde(default)]
    pub mechanism_zh: Text,
    pub scenario: Scenario,
    pub strategy: StrategyName,
    pub variant: Option<Variant>,
    pub fixed: Vec<(String, String)>,
    pub outcome: Outcome,
    /// Our model's prediction, in words (the first edition's field).
    pub predicts: Text,
    /// 同上，中文（较早的 JSON 没有这一项：中文页退回英文）。
    #[serde(default)]
    pub predicts_zh: Text,
    /// The fixed points of the sweep, with the model's prediction at each.
    pub sweep: SweepJson,
    /// The model's standing (the first edition's field).
    pub standing: Standing,
    /// Between which probes the row's outcome flips (`null`: never).
    pub flips_at: Option<String>,
    #[serde(flatten)]
    pub judged: Judged,
    /// The command that reruns the row as measured here (sweep and
    /// bisection), and the scenario command of its fixed points.
    pub command: String,
    pub scenario_command: String,
    /// The trace of the violation that refutes a "never" claim.
    pub counterexample: Option<String>,
    /// The row's curve (SVG), beside the page.
    pub curve: String,
    /// The reports of its runs.
    pub report: String,
}

/// Each verdict counted over the rows.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tally {
    pub supported: usize,
    pub refuted: usize,
    pub undecided: usize,
    pub agrees: usize,
    pub contradicts: usize,
    pub model_undecided: usize,
}

impl DebateJson {
    /// The sources' and the model's verdicts, counted.
    pub fn tally(&self) -> Tally {
        let mut t = Tally::default();
        for r in &self.rows {
            match r.judged.source_standing {
                judge::SourceStanding::Supported => t.supported += 1,
                judge::SourceStanding::Refuted => t.refuted += 1,
                judge::SourceStanding::Undecided => t.undecided += 1,
            }
            match r.judged.model_standing {
                Standing::Agrees => t.agrees += 1,
                Standing::Contradicts => t.contradicts += 1,
                Standing::Undecided => t.model_undecided += 1,
            }
        }
        t
    }
}

/// The first edition's `sweep`: the dial and its fixed points.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepJson {
    pub key: Text,
    pub points: Vec<judge::Point>,
}

/// `redlock-debate.json`.
#[derive(Debug, Serialize, Deserialize)]
pub struct DebateJson {
    pub tool: Text,
    pub version: Text,
    /// The build that measured: `release` (`make debate`) or `debug`.
    pub profile: Text,
    pub injections_per_point: u32,
    pub decision_rate: f64,
    /// Runs read back from an earlier debate's reports (`--reuse`), not
    /// measured by this one.
    pub reused: Vec<Text>,
    /// Rows not measured by this run: kept as an earlier run measured them
    /// (`debate --rows ID --write-docs` measures only its rows).
    #[serde(default)]
    pub kept: Vec<Text>,
    /// Every verdict judged again from the probes an earlier run kept, by
    /// this build's claims, rules and words (`debate --rejudge`): nothing
    /// of it measured by this run.
    #[serde(default)]
    pub rejudged: bool,
    pub duration_s: f64,
    pub rows: Vec<RowJson>,
}

/// An earlier `redlock-debate.json`.
pub fn read(path: &std::path::Path) -> anyhow::Result<DebateJson> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parse {}", path.display()))
}

/// The page of every row in `order`: the rows `now` measured, and every
/// other one as `earlier` has it (listed in `kept`); a row neither has is
/// an error naming it. The head is `now`'s (its duration is this run's:
/// the page says which rows an earlier run measured); the two must agree
/// on the build and the injections per point.
pub fn merge<'a>(
    earlier: &DebateJson,
    now: &DebateJson,
    order: impl Iterator<Item = &'a str>,
) -> anyhow::Result<DebateJson> {
    anyhow::ensure!(
        earlier.profile == now.profile,
        "the page in docs/ was measured by a {} build, this run by a {} build: one page, one build",
        earlier.profile,
        now.profile
    );
    anyhow::ensure!(
        earlier.injections_per_point == now.injections_per_point,
        "the page in docs/ was measured with {} injections per point, this run with {}: one page, one n",
        earlier.injections_per_point,
        now.injections_per_point
    );
    let mut rows = Vec::new();
    let mut kept = Vec::new();
    for id in order {
        if let Some(row) = now.rows.iter().find(|r| r.id == id) {
            rows.push(row.clone());
        } else if let Some(row) = earlier.rows.iter().find(|r| r.id == id) {
            rows.push(row.clone());
            kept.push(Text::Owned(id.to_owned()));
        } else {
            anyhow::bail!("row {id} is on neither the page nor this run: measure it (--rows {id})");
        }
    }
    // The runs read back: this run's, and the earlier run's for the rows
    // it kept.
    let mut reused = now.reused.clone();
    reused.extend(
        earlier
            .reused
            .iter()
            .filter(|r| !reused.contains(r))
            .cloned()
            .collect::<Vec<_>>(),
    );
    Ok(DebateJson {
        rows,
        kept,
        reused,
        // The kept rows keep the words they were judged with: a page
        // judged again from its probes stays marked so.
        rejudged: earlier.rejudged || now.rejudged,
        ..now.clone_head()
    })
}

impl DebateJson {
    /// Everything but the rows and the lists of rows.
    fn clone_head(&self) -> Self {
        Self {
            tool: self.tool.clone(),
            version: self.version.clone(),
            profile: self.profile.clone(),
            injections_per_point: self.injections_per_point,
            decision_rate: self.decision_rate,
            reused: Vec::new(),
            rejudged: self.rejudged,
            kept: Vec::new(),
            duration_s: self.duration_s,
            rows: Vec::new(),
        }
    }
}

/// The counterexample of a refuted row: the first injection at
/// `refuted_at` whose outcome broke, with its trace and its case's steps.
pub fn counterexample(
    row: &RowJson,
    measurements: &Measurements,
) -> anyhow::Result<Option<serde_json::Value>> {
    let Some(at) = &row.judged.refuted_at else {
        return Ok(None);
    };
    let run = super::table::ROWS
        .iter()
        .find(|r| r.id == row.id)
        .map(|r| r.run)
        .context("the row")?;
    let (_, cases) = measurements
        .iter()
        .find(|(r, _)| *r == run)
        .context("the row's run")?;
    let Some((_, case, _)) = cases.iter().find(|(value, _, _)| value == at) else {
        return Ok(None);
    };
    let broke = |i: &&scenario::Injection| {
        i.proof.is_some()
            && match row.outcome {
                Outcome::ExclusionBroken => i.exclusion_broken,
                Outcome::DataDamaged => i.data_damaged,
                Outcome::Stalled => i.stalled == Some(true),
                Outcome::Refused => i.refused == Some(true),
            }
    };
    let injection = case.injections.iter().find(broke);
    Ok(Some(serde_json::json!({
        "row": row.id,
        "claim": row.claim,
        "source": row.source,
        "quote": row.quote,
        "outcome": row.outcome,
        "at": {"key": run.sweep.0, "value": at},
        "params": case.params,
        "injection": injection,
        "steps": case.steps,
        "command": format!(
            "{} --set {}={at}",
            scenario_command_at(&run),
            run.sweep.0
        ),
    })))
}

/// The scenario command of `run` without its sweep (nor its injections).
pub fn scenario_command_at(run: &rows::Run) -> String {
    scenario::command_line(
        run.scenario,
        run.strategy,
        run.variant,
        false,
        run.sets.iter().copied(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page in docs/, as committed (tests run in the crate's folder).
    fn committed() -> DebateJson {
        read(std::path::Path::new("../docs/redlock-debate.json")).expect("docs/ JSON reads back")
    }

    #[test]
    fn a_rerun_of_some_rows_replaces_them_and_keeps_every_other_row_of_the_page() {
        let earlier = committed();
        let ids: Vec<String> = earlier.rows.iter().map(|r| r.id.to_string()).collect();
        assert!(ids.len() > 2, "{ids:?}");
        let mut now = earlier.clone_head();
        let mut remeasured = earlier.rows[1].clone();
        remeasured.judged.source_evidence = "measured again".into();
        now.rows = vec![remeasured];
        let merged = merge(&earlier, &now, ids.iter().map(String::as_str)).expect("merges");
        let merged_ids: Vec<&str> = merged.rows.iter().map(|r| &*r.id).collect();
        assert_eq!(merged_ids, ids, "every row, in the rows' order");
        assert_eq!(merged.rows[1].judged.source_evidence, "measured again");
        assert_eq!(
            merged.rows[0].judged.source_evidence,
            earlier.rows[0].judged.source_evidence
        );
        assert_eq!(merged.kept.len(), ids.len() - 1);
        assert!(!merged.kept.iter().any(|k| *k == ids[1]));
        // A row on neither side is named; one n per page.
        let e = merge(&earlier, &now, ["no-such-row"].into_iter()).expect_err("unknown");
        assert!(format!("{e}").contains("no-such-row"), "{e}");
        now.injections_per_point += 1;
        let e = merge(&earlier, &now, ids.iter().map(String::as_str)).expect_err("n differs");
        assert!(format!("{e}").contains("injections per point"), "{e}");
    }
}
