//! The one quantile of the bench crate: every median and p99 that
//! `lock-bench` and `audit-bench` print comes from [`quantile`].
//!
//! Exact, not a histogram: a lock-bench figure is the median of a few
//! rounds (1 to 30), and the printed figure should be one of the rounds
//! measured, not a bucket's edge.

/// The nearest-rank quantile `q` (0 to 1, clamped) of `samples`, in any
/// order: the smallest sample with at least a fraction `q` of the samples
/// at or below it. `None` when there are no samples.
///
/// `q = 0.5` of an even count is the lower of the two middle samples.
pub fn quantile(samples: &[f64], q: f64) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    // A NaN `q` casts to rank 0, read as the smallest sample.
    let rank = (sorted.len() as f64 * q.clamp(0.0, 1.0)).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::quantile;

    #[test]
    fn no_samples_have_no_quantile() {
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&[], 0.99), None);
    }

    #[test]
    fn one_sample_is_every_quantile() {
        for q in [0.0, 0.01, 0.5, 0.99, 1.0] {
            assert_eq!(quantile(&[4.2], q), Some(4.2));
        }
    }

    #[test]
    fn known_quantiles_of_one_to_a_hundred() {
        let shuffled: Vec<f64> = (0..100).map(|i| f64::from((i * 37) % 100 + 1)).collect();
        assert_eq!(quantile(&shuffled, 0.0), Some(1.0));
        assert_eq!(quantile(&shuffled, 0.5), Some(50.0));
        assert_eq!(quantile(&shuffled, 0.9), Some(90.0));
        assert_eq!(quantile(&shuffled, 0.99), Some(99.0));
        assert_eq!(quantile(&shuffled, 1.0), Some(100.0));
    }

    #[test]
    fn median_of_an_odd_count_is_the_middle_one() {
        assert_eq!(quantile(&[3.0, 1.0, 2.0], 0.5), Some(2.0));
        assert_eq!(
            quantile(&[9.0, 1.0, 5.0, 7.0, 3.0, 2.0, 8.0], 0.5),
            Some(5.0)
        );
    }

    #[test]
    fn median_of_an_even_count_is_the_lower_middle() {
        assert_eq!(quantile(&[4.0, 1.0, 3.0, 2.0], 0.5), Some(2.0));
    }

    #[test]
    fn out_of_range_q_is_clamped() {
        let xs = [2.0, 1.0, 3.0];
        assert_eq!(quantile(&xs, -1.0), Some(1.0));
        assert_eq!(quantile(&xs, 2.0), Some(3.0));
        assert_eq!(quantile(&xs, f64::NAN), Some(1.0));
    }
}
