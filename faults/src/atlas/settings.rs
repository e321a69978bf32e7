//! What one atlas run was asked for ([`Settings`]), and what each cell's
//! scenario runs with.

use std::path::PathBuf;

use super::faults::Fault;
use crate::scenario;
use seckill_load::api::StrategyName;

/// The settings of `seckill-loadgen atlas`.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Injections at every probe.
    pub injections: u32,
    /// The sample of `QUICK`, with the scenarios' `--quick` dials.
    pub quick: bool,
    /// `STRATEGY:FAULT` patterns (`*` for any); empty: every cell.
    pub cells: Vec<String>,
    /// Where everything goes.
    pub out: PathBuf,
    /// Write the pages into `docs/` even for some cells.
    pub write_docs: bool,
    /// Print the plan (each cell measured, or why not) and stop.
    pub plan: bool,
    /// Read back what an earlier run left under `out` and go on from
    /// there (an interrupted atlas resumes).
    pub reuse: bool,
    /// The starting sizes only: no bisection (with `--reuse`, the pages
    /// from what is there).
    pub no_locate: bool,
    /// Run both ends of every chosen cell's bracket in `docs/atlas.json`
    /// again and say whether each kept its side (`recheck.rs`).
    pub recheck: bool,
    /// What every scenario run needs (database, binary, lanes, …).
    pub scenario: scenario::Options,
}

/// The options of one cell: its strategy, its variant, its fixed dials
/// and the injections, its own folder.
pub(super) fn cell_options(
    settings: &Settings,
    strategy: StrategyName,
    fault: &Fault,
) -> scenario::Options {
    let mut options = settings.scenario.clone();
    options.strategies = vec![strategy];
    options.variants = fault.variant.into_iter().collect();
    options.sets = scenario::owned_sets(fault.sets);
    options
        .sets
        .push(("injections".into(), settings.injections.to_string()));
    options.quick = settings.quick;
    options.trials = 1;
    options.sweep = None;
    options.locate = None;
    options.out = settings
        .out
        .join("cells")
        .join(format!("{}-{}", strategy.as_str(), fault.id));
    options
}
