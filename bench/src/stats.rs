//! What both bench binaries compute from their samples.

/// The nearest-rank quantile `q` of `sorted` (ascending, not empty): the
/// smallest sample with at least `q` of the samples at or below it.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1]
}
