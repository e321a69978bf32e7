//! k of n, with its Wilson 95 % interval, and what it says of a prediction.
//!
//! Each injection of a fault is judged on its own, for two outcomes:
//! *exclusion broken* (an overlap involving the faulted holder) and *data
//! damaged* (a committed stale write: a lost update, an oversold unit,
//! negative stock, a duplicate, an acknowledged order missing). A case
//! reports each as k of n injections with the Wilson score interval at
//! 95 % (z = 1.96), which stays inside [0, 1] and does not collapse to a
//! point at 0 of n or n of n, as the normal approximation does.
//!
//! A prediction names a side of [`DECISION_RATE`]: `breaks` says the
//! outcome happens on more than a quarter of the injections, `holds` on
//! fewer. The case's standing compares the interval with that line:
//! `agrees` when the whole interval lies on the predicted side,
//! `contradicts` when it lies on the other, `undecided` when it straddles
//! — more injections narrow it. 0 of 12 is the fewest that can agree with
//! `holds` (the interval's top is 24 %); 0 of 20 bounds the rate below
//! 16 %, 0 of 5 only below 43 %.

use serde::{Deserialize, Serialize};

use seckill_load::judge::Expected;

/// The rate a prediction is judged against: `breaks` predicts an outcome
/// on more than this share of the injections, `holds` on less.
pub const DECISION_RATE: f64 = 0.25;

/// z for a two-sided 95 % interval.
const Z: f64 = 1.96;

/// k of n, with its Wilson 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    /// Injections that showed the outcome.
    pub k: u64,
    /// Injections judged.
    pub n: u64,
    /// Wilson 95 % interval of the rate, `[lo, hi]` (`[0, 1]` when n = 0).
    pub ci95: [f64; 2],
}

impl Rate {
    /// `k` of `n`.
    pub fn of(k: u64, n: u64) -> Self {
        Self {
            k,
            n,
            ci95: wilson(k, n),
        }
    }

    /// The point estimate k / n (0 when n = 0).
    pub fn share(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.k as f64 / self.n as f64
        }
    }

    /// What this rate says of `predicted`.
    pub fn standing(&self, predicted: Expected) -> Standing {
        let [lo, hi] = self.ci95;
        let (above, below) = (lo > DECISION_RATE, hi < DECISION_RATE);
        match (predicted, above, below) {
            (Expected::Breaks, true, _) | (Expected::Holds, _, true) => Standing::Agrees,
            (Expected::Breaks, _, true) | (Expected::Holds, true, _) => Standing::Contradicts,
            _ => Standing::Undecided,
        }
    }

    /// The 95 % upper bound in whole percent, rounded *up*: "below N %"
    /// must be true (0 of 12 is 24.25 %: below 25 %, not 24).
    pub fn upper_pct(&self) -> u64 {
        ceil_pct(self.ci95[1])
    }

    /// `k of n [lo–hi %]`.
    pub fn text(&self) -> String {
        format!(
            "{} of {} [{:.0}–{:.0} %]",
            self.k,
            self.n,
            self.ci95[0] * 100.0,
            self.ci95[1] * 100.0
        )
    }
}

/// The Wilson score interval of k successes in n trials at 95 %, each
/// bound rounded to four decimals.
pub fn wilson(k: u64, n: u64) -> [f64; 2] {
    if n == 0 {
        return [0.0, 1.0];
    }
    let n_f = n as f64;
    let p = k.min(n) as f64 / n_f;
    let z2 = Z * Z;
    let centre = (p + z2 / (2.0 * n_f)) / (1.0 + z2 / n_f);
    let half = Z / (1.0 + z2 / n_f) * (p * (1.0 - p) / n_f + z2 / (4.0 * n_f * n_f)).sqrt();
    let round = |x: f64| (x.clamp(0.0, 1.0) * 10_000.0).round() / 10_000.0;
    [round(centre - half), round(centre + half)]
}

/// What a measured rate says of a prediction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Standing {
    /// The interval lies on the predicted side of [`DECISION_RATE`].
    Agrees,
    /// It lies on the other side.
    Contradicts,
    /// It straddles the line: not enough injections to tell.
    Undecided,
}

impl Standing {
    /// As written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Standing::Agrees => "agrees",
            Standing::Contradicts => "contradicts",
            Standing::Undecided => "undecided",
        }
    }
}

/// A share as whole percent rounded up (a float's last bit of noise
/// above a whole number does not count): the bound a "below" can state.
pub fn ceil_pct(share: f64) -> u64 {
    ((share * 100.0 - 1e-9).ceil().max(0.0)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_matches_published_values() {
        // 0 of 5: [0, 0.4345]; 0 of 20: [0, 0.1611]; 10 of 20: [0.2993, 0.7007]
        // (Wilson 1927; e.g. Brown, Cai & DasGupta 2001, table values).
        assert_eq!(wilson(0, 5), [0.0, 0.4345]);
        assert_eq!(wilson(0, 20), [0.0, 0.1611]);
        assert_eq!(wilson(10, 20), [0.2993, 0.7007]);
        assert_eq!(wilson(20, 20), [0.8389, 1.0]);
        assert_eq!(wilson(0, 0), [0.0, 1.0]);
    }

    #[test]
    fn a_straddling_interval_is_undecided_never_agrees() {
        use Expected::{Breaks, Holds};
        assert_eq!(Rate::of(0, 12).standing(Holds), Standing::Agrees);
        assert_eq!(Rate::of(0, 5).standing(Holds), Standing::Undecided);
        assert_eq!(Rate::of(0, 12).standing(Breaks), Standing::Contradicts);
        assert_eq!(Rate::of(12, 12).standing(Breaks), Standing::Agrees);
        assert_eq!(Rate::of(12, 12).standing(Holds), Standing::Contradicts);
        assert_eq!(Rate::of(3, 12).standing(Breaks), Standing::Undecided);
        assert_eq!(Rate::of(3, 12).standing(Holds), Standing::Undecided);
        assert_eq!(Rate::of(0, 0).standing(Holds), Standing::Undecided);
        for n in 1..60 {
            for k in 0..=n {
                let rate = Rate::of(k, n);
                for p in [Holds, Breaks] {
                    if rate.standing(p) == Standing::Agrees {
                        let [lo, hi] = rate.ci95;
                        assert!(
                            !(lo <= DECISION_RATE && DECISION_RATE <= hi),
                            "{k}/{n} agrees on a straddling interval"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_stated_upper_bound_is_rounded_up_so_below_is_true() {
        // Wilson's upper bound for 0 of n: 24.25 % at 12, 6.02 % at 60,
        // 8.76 % at 40, 2.09 % at 180.
        assert_eq!(Rate::of(0, 12).upper_pct(), 25);
        assert_eq!(Rate::of(0, 60).upper_pct(), 7);
        assert_eq!(Rate::of(0, 40).upper_pct(), 9);
        assert_eq!(Rate::of(0, 180).upper_pct(), 3);
        assert_eq!(ceil_pct(0.25), 25);
        assert_eq!(ceil_pct(0.0), 0);
    }
}
