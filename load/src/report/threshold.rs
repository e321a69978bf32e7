//! `--threshold`: a limit on what a run measured, k6's idea in a smaller
//! language. A breached threshold fails `run`/`compare` with its own exit
//! code (5), below every correctness code: a violation still wins.
//!
//! The language, one limit per flag:
//!
//! ```text
//! [STRATEGY:]METRIC OP NUMBER[UNIT]
//! METRIC  p50 | p95 | p99 | max            (grab latency: ms or s; bare = ms)
//!         buyer_p50 | buyer_p99            (a buyer's whole wait, retries included)
//!         error_rate                       (503/5xx and transport errors / grabs: % or a fraction)
//!         busy_rate                        (busy + rejected answers / grabs: % or a fraction)
//!         grabs_per_s | orders_per_s       (per second; /s may follow the number)
//! OP      <  <=  >  >=
//! ```
//!
//! `p99<400ms` holds every strategy of the run to it; `redlock:p99<400ms`
//! only `redlock` (a strategy the run does not run is refused before the
//! first request, exit 2). Spaces are allowed around the operator.

use crate::api::StrategyName;
use std::fmt;

use serde::{Deserialize, Serialize};

/// What a threshold limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    P50,
    P95,
    P99,
    Max,
    BuyerP50,
    BuyerP99,
    ErrorRate,
    BusyRate,
    GrabsPerS,
    OrdersPerS,
}

/// Every metric, by its name in the language.
const METRICS: &[(&str, Metric)] = &[
    ("p50", Metric::P50),
    ("p95", Metric::P95),
    ("p99", Metric::P99),
    ("max", Metric::Max),
    ("buyer_p50", Metric::BuyerP50),
    ("buyer_p99", Metric::BuyerP99),
    ("error_rate", Metric::ErrorRate),
    ("busy_rate", Metric::BusyRate),
    ("grabs_per_s", Metric::GrabsPerS),
    ("orders_per_s", Metric::OrdersPerS),
];

/// How a metric's numbers are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    Ms,
    Ratio,
    PerSec,
}

impl Metric {
    pub(crate) fn unit(self) -> Unit {
        match self {
            Metric::ErrorRate | Metric::BusyRate => Unit::Ratio,
            Metric::GrabsPerS | Metric::OrdersPerS => Unit::PerSec,
            _ => Unit::Ms,
        }
    }
}

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
}

impl Op {
    pub fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            Op::Lt => value < limit,
            Op::Le => value <= limit,
            Op::Gt => value > limit,
            Op::Ge => value >= limit,
        }
    }
}

/// One `--threshold`, parsed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    /// As the user wrote it.
    pub expr: String,
    /// Only this strategy's run (`None`: every run).
    pub strategy: Option<StrategyName>,
    pub metric: Metric,
    pub op: Op,
    /// In the metric's base unit: ms, a fraction (1 % = 0.01), per second.
    pub limit: f64,
}

impl Threshold {
    /// Parse `[STRATEGY:]METRIC OP NUMBER[UNIT]` (the module's language).
    pub fn parse(text: &str) -> Result<Threshold, String> {
        let expr = text.trim();
        let (strategy, rest) = match expr.split_once(':') {
            Some((s, rest)) if !s.trim().is_empty() => (
                Some(s.trim().parse().map_err(|e| format!("{expr:?}: {e}"))?),
                rest,
            ),
            Some(_) => return Err(format!("{expr:?}: nothing before ':' (a strategy name)")),
            None => (None, expr),
        };
        let at = rest
            .find(['<', '>'])
            .ok_or_else(|| format!("{expr:?}: no comparison (<, <=, > or >=), e.g. p99<400ms"))?;
        let name = rest[..at].trim();
        let (op, number) = match (&rest[at..at + 1], rest[at + 1..].strip_prefix('=')) {
            ("<", Some(n)) => (Op::Le, n),
            ("<", None) => (Op::Lt, &rest[at + 1..]),
            (_, Some(n)) => (Op::Ge, n),
            (_, None) => (Op::Gt, &rest[at + 1..]),
        };
        let metric = METRICS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, m)| *m)
            .ok_or_else(|| {
                let known: Vec<&str> = METRICS.iter().map(|(n, _)| *n).collect();
                format!(
                    "{expr:?}: unknown metric {name:?} (known: {})",
                    known.join(", ")
                )
            })?;
        let limit =
            parse_limit(number.trim(), metric.unit()).map_err(|why| format!("{expr:?}: {why}"))?;
        Ok(Threshold {
            expr: expr.to_owned(),
            strategy,
            metric,
            op,
            limit,
        })
    }

    /// Whether it applies to `strategy`'s run.
    pub fn applies_to(&self, strategy: StrategyName) -> bool {
        self.strategy.is_none_or(|s| s == strategy)
    }
}

/// `1.5s` as its number and what follows it (`"s"`); `None` when it does
/// not start with a number. The flags' durations and limits read it alike.
pub fn number_and_unit(text: &str) -> Option<(f64, &str)> {
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    Some((number.parse().ok()?, unit))
}

/// The number and its unit, in the metric's base unit.
fn parse_limit(text: &str, unit: Unit) -> Result<f64, String> {
    let (n, suffix) =
        number_and_unit(text).ok_or_else(|| format!("{text:?} does not start with a number"))?;
    let value = match (unit, suffix.trim()) {
        (Unit::Ms, "" | "ms") => n,
        (Unit::Ms, "s") => n * 1000.0,
        (Unit::Ratio, "%") => n / 100.0,
        (Unit::Ratio, "") if n <= 1.0 => n,
        (Unit::Ratio, "") => {
            return Err(format!(
                "{n} is not a fraction: write {n}% or a number up to 1"
            ))
        }
        (Unit::PerSec, "" | "/s") => n,
        (_, other) => return Err(format!("unit {other:?} does not fit this metric")),
    };
    Ok(value)
}

/// One threshold checked against one run (in `report.json` under
/// `"thresholds"`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Checked {
    /// The threshold as written (`redlock:p99<400ms`).
    pub expr: String,
    /// The run it was held to.
    pub strategy: StrategyName,
    pub metric: Metric,
    pub op: Op,
    /// The limit and the measured value, in the metric's base unit (ms, a
    /// fraction, per second); `value` is `null` when the run had no grab
    /// to measure (which fails the threshold: nothing shows it holds).
    pub limit: f64,
    pub value: Option<f64>,
    /// The run met it.
    pub ok: bool,
}

impl Checked {
    /// `redlock: p99<400ms measured 512.3 ms: BREACHED`.
    pub fn line(&self) -> String {
        let value = match (self.value, self.metric.unit()) {
            (None, _) => "nothing to measure (no grab)".to_owned(),
            (Some(v), Unit::Ms) => format!("{v:.1} ms"),
            (Some(v), Unit::Ratio) => format!("{:.2} %", v * 100.0),
            (Some(v), Unit::PerSec) => format!("{v:.1}/s"),
        };
        let verdict = if self.ok { "passed" } else { "BREACHED" };
        format!(
            "{}: {} measured {value}: {verdict}",
            self.strategy, self.expr
        )
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.expr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_language_reads_units_operators_and_strategies() {
        let t = Threshold::parse("redlock:p99<400ms").expect("a threshold");
        assert_eq!(t.strategy, Some(StrategyName::Redlock));
        assert_eq!((t.metric, t.op, t.limit), (Metric::P99, Op::Lt, 400.0));
        let t = Threshold::parse("p99 <= 1.5s").expect("a threshold");
        assert_eq!((t.strategy, t.op, t.limit), (None, Op::Le, 1500.0));
        let t = Threshold::parse("error_rate<1%").expect("a threshold");
        assert!((t.limit - 0.01).abs() < 1e-12);
        assert_eq!(
            Threshold::parse("error_rate<0.02")
                .expect("a threshold")
                .limit,
            0.02
        );
        let t = Threshold::parse("grabs_per_s>=100/s").expect("a threshold");
        assert_eq!(
            (t.metric, t.op, t.limit),
            (Metric::GrabsPerS, Op::Ge, 100.0)
        );
        assert_eq!(Threshold::parse("p50>2").expect("a threshold").op, Op::Gt);
    }

    #[test]
    fn a_malformed_threshold_is_refused_naming_the_fault() {
        for (bad, says) in [
            ("p99", "no comparison"),
            ("p98<3ms", "unknown metric"),
            ("p99<fast", "does not start with a number"),
            ("p99<3%", "does not fit"),
            ("error_rate<5", "not a fraction"),
            (":p99<3ms", "strategy name"),
            ("redlok:p99<3ms", "redlok"),
        ] {
            let e = Threshold::parse(bad).expect_err("refused");
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
