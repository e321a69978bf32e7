//! The settings of `make debate`: which rows, how many injections, where
//! the files go, whether runs are reused or only rejudged.

use std::path::PathBuf;

use crate::scenario;

/// The settings of `make debate`.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Injections at every point of every sweep and every probe.
    pub injections: u32,
    /// Only these rows (ids; empty: all).
    pub only: Vec<String>,
    /// Where everything goes: each run's reports, the pages, the curves.
    pub out: PathBuf,
    /// Also write the pages into `docs/` (every row only).
    pub write_docs: bool,
    /// No bisection: the sweep's fixed points only.
    pub no_locate: bool,
    /// Read back the runs already measured under `out` instead of running
    /// them again (`--reuse`).
    pub reuse: bool,
    /// Measure nothing: judge the rows of docs/redlock-debate.json again
    /// from the probes it keeps (`--rejudge`).
    pub rejudge: bool,
    /// What every scenario run needs (database, binary, …).
    pub scenario: scenario::Options,
}
