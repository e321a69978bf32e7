//! What both of a row's judges read: one measured point of the row (its
//! dials and both outcomes, k of n).

use crate::scenario::locate::Probe;
use crate::scenario::Params;

/// One measured point of a row: the value, its dials, both outcomes.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The dials in force there (the row's sets and the swept value).
    pub params: Params,
    /// Both outcomes, k of n.
    pub probe: Probe,
    /// One of the sweep's fixed points (not a bisection probe).
    pub swept: bool,
    /// The case's own verdict line.
    pub case_verdict: String,
}
