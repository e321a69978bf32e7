//! Just enough of the Prometheus text format to diff two scrapes of the
//! service's `/metrics`: counters and histogram buckets, summed over
//! replicas, then read by metric name and label filter.
//!
//! Why not a crate: `prometheus-parse` 0.2 (the parser most crates use)
//! splits a label set on every `,` and `=` without honouring quotes or
//! escapes, so a value such as a Redlock node `redis://h:1/?protocol=resp3`
//! or a fault reason with a comma is dropped or cut; no crate computes
//! `histogram_quantile` from bucket deltas summed over replicas, which is
//! the part of this file that matters. The test `reads_the_prometheus_crates_own_output`
//! holds this parser to what the service's encoder (the `prometheus`
//! crate) writes, escapes included.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One scrape (or the sum of several): `name{labels}` → value. In JSON (a
/// prepared run's record keeps the scrape its run is measured from) a list
/// of samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "Vec<Sample>", into = "Vec<Sample>")]
pub struct Scrape {
    samples: BTreeMap<(String, Vec<(String, String)>), f64>,
}

/// One sample of a [`Scrape`] in JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

impl From<Vec<Sample>> for Scrape {
    fn from(samples: Vec<Sample>) -> Self {
        let mut scrape = Scrape::default();
        for s in samples {
            *scrape.samples.entry((s.name, s.labels)).or_insert(0.0) += s.value;
        }
        scrape
    }
}

impl From<Scrape> for Vec<Sample> {
    fn from(scrape: Scrape) -> Self {
        scrape
            .samples
            .into_iter()
            .map(|((name, labels), value)| Sample {
                name,
                labels,
                value,
            })
            .collect()
    }
}

impl Scrape {
    /// Parse the text exposition format; comments and junk lines are skipped.
    pub fn parse(text: &str) -> Self {
        let mut samples = BTreeMap::new();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some((key, value)) = parse_line(line) {
                *samples.entry(key).or_insert(0.0) += value;
            }
        }
        Self { samples }
    }

    /// Add another scrape's samples (another replica).
    pub fn add(&mut self, other: &Scrape) {
        for (key, value) in &other.samples {
            *self.samples.entry(key.clone()).or_insert(0.0) += value;
        }
    }

    /// `self − before`, sample by sample (a sample new since `before` counts whole).
    pub fn since(&self, before: &Scrape) -> Scrape {
        let samples = self
            .samples
            .iter()
            .map(|(key, value)| {
                let old = before.samples.get(key).copied().unwrap_or(0.0);
                (key.clone(), value - old)
            })
            .collect();
        Scrape { samples }
    }

    fn matching<'a>(
        &'a self,
        name: &'a str,
        filter: &'a [(&'a str, &'a str)],
    ) -> impl Iterator<Item = (&'a [(String, String)], f64)> + 'a {
        self.samples
            .iter()
            .filter(move |((n, labels), _)| {
                n == name
                    && filter
                        .iter()
                        .all(|(k, v)| labels.iter().any(|(lk, lv)| lk == k && lv == v))
            })
            .map(|((_, labels), value)| (labels.as_slice(), *value))
    }

    /// Sum of every sample of `name` whose labels include `filter`.
    pub fn sum(&self, name: &str, filter: &[(&str, &str)]) -> f64 {
        self.matching(name, filter).map(|(_, v)| v).sum()
    }

    /// The `q` quantile (0..1) of histogram `name` (without `_bucket`),
    /// interpolated inside the bucket as Prometheus' `histogram_quantile`
    /// does. None when the histogram saw nothing.
    pub fn quantile(&self, name: &str, filter: &[(&str, &str)], q: f64) -> Option<f64> {
        let bucket_name = format!("{name}_bucket");
        let mut buckets: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
        for (labels, value) in self.matching(&bucket_name, filter) {
            let le = labels.iter().find(|(k, _)| k == "le")?.1.as_str();
            let bound = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            if value < 0.0 {
                // A replica restarted between the scrapes: its buckets went
                // back to 0, so this delta means nothing.
                return None;
            }
            let entry = buckets.entry(bound.to_bits()).or_insert((bound, 0.0));
            entry.1 += value;
        }
        let mut sorted: Vec<(f64, f64)> = buckets.into_values().collect();
        sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
        let total = sorted.last()?.1;
        if total <= 0.0 {
            return None;
        }
        let rank = q * total;
        let (mut lower_bound, mut lower_count) = (0.0, 0.0);
        for (bound, count) in sorted {
            if count >= rank {
                if bound.is_infinite() {
                    return Some(lower_bound);
                }
                let width = count - lower_count;
                let fraction = if width > 0.0 {
                    (rank - lower_count) / width
                } else {
                    1.0
                };
                return Some(lower_bound + (bound - lower_bound) * fraction);
            }
            lower_bound = bound;
            lower_count = count;
        }
        Some(lower_bound)
    }
}

type Key = (String, Vec<(String, String)>);

fn parse_line(line: &str) -> Option<(Key, f64)> {
    let (series, value) = match line.find('{') {
        Some(open) => {
            let close = line.rfind('}')?;
            let name = &line[..open];
            let labels = parse_labels(&line[open + 1..close])?;
            let value = line[close + 1..].split_whitespace().next()?;
            ((name.to_owned(), labels), value)
        }
        None => {
            let mut parts = line.split_whitespace();
            let name = parts.next()?;
            ((name.to_owned(), Vec::new()), parts.next()?)
        }
    };
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some((series, value))
}

fn parse_labels(text: &str) -> Option<Vec<(String, String)>> {
    let mut labels = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let eq = rest.find('=')?;
        let key = rest[..eq].trim().to_owned();
        let after = rest[eq + 1..].strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, other)) => value.push(other),
                    None => return None,
                },
                '"' => {
                    end = Some(i);
                    break;
                }
                other => value.push(other),
            }
        }
        let end = end?;
        labels.push((key, value));
        rest = after[end + 1..].trim_start_matches(',').trim();
    }
    labels.sort();
    Some(labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"
# HELP seckill_lock_retries_total Retries.
# TYPE seckill_lock_retries_total counter
seckill_lock_retries_total{strategy="redlock"} 7
seckill_lock_retries_total{strategy="watchdog"} 3
seckill_lock_acquire_duration_seconds_bucket{result="acquired",strategy="redlock",le="0.001"} 50
seckill_lock_acquire_duration_seconds_bucket{result="acquired",strategy="redlock",le="0.01"} 90
seckill_lock_acquire_duration_seconds_bucket{result="acquired",strategy="redlock",le="+Inf"} 100
"#;

    /// Round trip through the encoder the service uses: every escape the
    /// text format has (`\\`, `\"`, `\n`) and the `,` / `=` / `{}` a naive
    /// split would cut on.
    #[test]
    fn reads_the_prometheus_crates_own_output() {
        use prometheus::{Encoder, HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};
        let registry = Registry::new();
        let counter = IntCounterVec::new(
            Opts::new("seckill_test_total", "Test."),
            &["node", "reason"],
        )
        .expect("counter");
        let histogram = HistogramVec::new(
            HistogramOpts::new("seckill_test_seconds", "Test.").buckets(vec![0.001, 0.01]),
            &["strategy"],
        )
        .expect("histogram");
        registry
            .register(Box::new(counter.clone()))
            .expect("register");
        registry
            .register(Box::new(histogram.clone()))
            .expect("register");
        let node = "redis://:p=w@h:1/?protocol=resp3,x={y}";
        let reason = "a \"quoted\" back\\slash\nnew line";
        counter.with_label_values(&[node, reason]).inc_by(7);
        counter.with_label_values(&["other", "plain"]).inc_by(2);
        for v in [0.0005, 0.0005, 0.005, 0.02] {
            histogram.with_label_values(&["redlock"]).observe(v);
        }
        let mut text = Vec::new();
        prometheus::TextEncoder::new()
            .encode(&registry.gather(), &mut text)
            .expect("encode");
        let scrape = Scrape::parse(std::str::from_utf8(&text).expect("utf-8"));
        assert_eq!(
            scrape.sum("seckill_test_total", &[("node", node), ("reason", reason)]),
            7.0
        );
        assert_eq!(scrape.sum("seckill_test_total", &[]), 9.0);
        assert_eq!(scrape.sum("seckill_test_seconds_count", &[]), 4.0);
        let p50 = scrape
            .quantile("seckill_test_seconds", &[("strategy", "redlock")], 0.5)
            .expect("p50");
        assert!((p50 - 0.001).abs() < 1e-9, "{p50}");
    }

    #[test]
    fn sums_and_diffs_counters() {
        let before = Scrape::parse(TEXT);
        let mut after = Scrape::parse(TEXT);
        after.add(&Scrape::parse(
            "seckill_lock_retries_total{strategy=\"redlock\"} 5",
        ));
        let delta = after.since(&before);
        assert_eq!(
            delta.sum("seckill_lock_retries_total", &[("strategy", "redlock")]),
            5.0
        );
        assert_eq!(
            delta.sum("seckill_lock_retries_total", &[("strategy", "watchdog")]),
            0.0
        );
        assert_eq!(after.sum("seckill_lock_retries_total", &[]), 15.0);
    }

    #[test]
    fn quantiles_interpolate_like_prometheus() {
        let scrape = Scrape::parse(TEXT);
        let filter = [("strategy", "redlock")];
        let p50 = scrape
            .quantile("seckill_lock_acquire_duration_seconds", &filter, 0.5)
            .expect("p50");
        assert!((p50 - 0.001).abs() < 1e-9, "{p50}");
        let p70 = scrape
            .quantile("seckill_lock_acquire_duration_seconds", &filter, 0.7)
            .expect("p70");
        assert!((p70 - 0.0055).abs() < 1e-9, "{p70}");
        // Beyond the last finite bucket: its bound, as Prometheus answers.
        let p99 = scrape
            .quantile("seckill_lock_acquire_duration_seconds", &filter, 0.99)
            .expect("p99");
        assert!((p99 - 0.01).abs() < 1e-9, "{p99}");
        assert!(scrape
            .quantile(
                "seckill_lock_acquire_duration_seconds",
                &[("strategy", "x")],
                0.5
            )
            .is_none());
        // A replica restarted between the scrapes: the delta goes negative,
        // and there is no quantile rather than a garbage one.
        // (50, 90, 100) before; after the restart and 120 new observations:
        // (80, 85, 120): the middle bucket's delta is negative.
        let restarted = Scrape::parse(
            &TEXT
                .replace("le=\"0.001\"} 50", "le=\"0.001\"} 80")
                .replace("le=\"0.01\"} 90", "le=\"0.01\"} 85")
                .replace("le=\"+Inf\"} 100", "le=\"+Inf\"} 120"),
        )
        .since(&scrape);
        assert!(restarted
            .quantile("seckill_lock_acquire_duration_seconds", &filter, 0.5)
            .is_none());
    }
}
