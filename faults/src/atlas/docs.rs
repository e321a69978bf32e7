//! The atlas's commands and its file in docs/: each cell's rerun and
//! check commands, the merge of a run of some cells into
//! `docs/atlas.json`, the closing line.

use std::path::Path;

use super::cell::{AtlasJson, Cell, CellJson};
use super::faults::{Fault, FAULTS};
use seckill_load::api::StrategyName;

/// How the cells were measured: what their commands repeat.
#[derive(Debug, Clone, Copy)]
pub(super) struct Measured {
    /// Injections at every probe.
    pub injections: u32,
    /// The scenarios' `--quick` dials.
    pub quick: bool,
}

/// `seckill-loadgen atlas --cells S:F …`: reruns the cell as measured.
pub(super) fn rerun_command(how: Measured, strategy: StrategyName, fault: &Fault) -> String {
    format!(
        "seckill-loadgen atlas --cells {}:{} --injections {}{} --out loadgen-report/atlas-{}-{}",
        strategy.as_str(),
        fault.id,
        how.injections,
        if how.quick { " --quick" } else { "" },
        strategy.as_str(),
        fault.id
    )
}

/// The scenario sweep over the two ends of the cell's first bracket (the
/// exclusion's, else the data's, else the stall's), or over the range's
/// ends.
pub(super) fn check_command(
    how: Measured,
    strategy: StrategyName,
    f: &Fault,
    exclusion: &Cell,
    data: &Cell,
    stalled: Option<&Cell>,
) -> String {
    let ends = [Some(exclusion), Some(data), stalled]
        .into_iter()
        .flatten()
        .find_map(|c| match c {
            Cell::Bracket { bracket, .. } => Some((bracket.below.clone(), bracket.above.clone())),
            _ => None,
        })
        .unwrap_or_else(|| (f.lo.to_owned(), f.hi.to_owned()));
    let mut text = crate::scenario::command_line(
        f.scenario,
        strategy,
        f.variant,
        how.quick,
        f.sets.iter().copied(),
    );
    text.push_str(&format!(
        " --set injections={} --sweep {}={},{}",
        how.injections, f.dial, ends.0, ends.1
    ));
    text
}

/// `docs/`, where the pages of a whole atlas go.
pub(super) fn docs_dir() -> &'static Path {
    Path::new("docs")
}

/// `docs/atlas.json` read back (`None`: there is none yet).
pub(super) fn read_docs_json() -> anyhow::Result<Option<AtlasJson>> {
    let path = docs_dir().join("atlas.json");
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(serde_json::from_str(&text).map_err(|e| {
            anyhow::anyhow!("{} cannot be read back: {e}", path.display())
        })?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(anyhow::anyhow!("read {}: {e}", path.display())),
    }
}

/// This run's cells over those `docs/atlas.json` holds (every cell, in
/// order; a pair neither measured says so and names its command). A run
/// of every cell replaces the file.
pub(super) fn merged_with_docs(doc: &AtlasJson, every: bool) -> anyhow::Result<AtlasJson> {
    if every {
        return Ok(doc.clone());
    }
    let earlier = read_docs_json()?;
    let mut merged = doc.clone();
    // The file's time is every run's that measured its cells.
    merged.duration_s += earlier.as_ref().map_or(0.0, |e| e.duration_s);
    merged.cells = StrategyName::ALL
        .into_iter()
        .flat_map(|s| FAULTS.iter().map(move |f| (s, f)))
        .map(|(s, f)| {
            let same = |c: &&CellJson| c.strategy == s.as_str() && c.fault == f.id;
            doc.cells
                .iter()
                .find(same)
                .or_else(|| earlier.as_ref().and_then(|e| e.cells.iter().find(same)))
                .cloned()
                .unwrap_or_else(|| not_measured(doc, s, f))
        })
        .collect();
    Ok(merged)
}

/// A pair no run has measured yet, with the command that would.
fn not_measured(doc: &AtlasJson, strategy: StrategyName, fault: &Fault) -> CellJson {
    let command = format!(
        "seckill-loadgen atlas --cells {}:{} --injections {} --write-docs",
        strategy.as_str(),
        fault.id,
        doc.injections_per_probe
    );
    let none = Cell::Undecided {
        undecided: format!("not measured yet: {command}"),
        probes: Vec::new(),
    };
    CellJson::unmeasured(strategy, fault, None, none, command)
}

/// The closing line.
pub(super) fn summary(doc: &AtlasJson, out: &Path, into_docs: bool) -> String {
    let na = doc
        .cells
        .iter()
        .filter(|c| matches!(c.exclusion, Cell::NotApplicable { .. }))
        .count();
    let excl = doc.cells.iter().filter(|c| c.exclusion.seen()).count();
    let data = doc.cells.iter().filter(|c| c.data.seen()).count();
    format!(
        "{} cells in {:.0} s: {} measured ({} break exclusion somewhere, {} damage data somewhere), {} not applicable. Written under {}{}",
        doc.cells.len(),
        doc.duration_s,
        doc.cells.len() - na,
        excl,
        data,
        na,
        out.display(),
        if into_docs { " and docs/" } else { "" }
    )
}
