//! The dials of a scenario: `--set NAME=VALUE`, `--sweep NAME=v1,v2,…`
//! and `scenario NAME --params`.
//!
//! Every scenario declares the dials it reads ([`Spec`]: name, unit,
//! default, meaning); a name it does not declare is refused, never
//! ignored. Durations are milliseconds (`600`, `600ms`) or a multiple of
//! the case's TTL (`1.5ttl`), resolved against `ttl_ms` after every
//! `--set` is read, so `--set pause=2ttl --set ttl_ms=300` is a 600 ms
//! pause whatever the order.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::in_force::{DialValue, InForce};

/// What a dial's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Milliseconds, or a multiple of `ttl_ms` (`1.5ttl`).
    Ms,
    /// As [`Unit::Ms`], or `fill`: the validity less `margin_ms`.
    MsOrFill,
    /// A whole number.
    Count,
    /// A number (a percentage, a factor).
    Number,
    /// One of a few words.
    Choice(&'static [&'static str]),
}

impl Unit {
    /// The unit as `--params` prints it.
    pub fn describe(self) -> String {
        match self {
            Unit::Ms => "ms or Nttl".into(),
            Unit::MsOrFill => "ms, Nttl or fill".into(),
            Unit::Count => "count".into(),
            Unit::Number => "number".into(),
            Unit::Choice(words) => words.join(" | "),
        }
    }
}

/// One dial a scenario reads.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Its name (`--set NAME=…`).
    pub name: &'static str,
    /// Its unit.
    pub unit: Unit,
    /// Its default, as it would be typed.
    pub default: &'static str,
    /// What it sets.
    pub meaning: &'static str,
}

/// A dial's value, resolved by its unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Resolved<'a> {
    /// A duration, ms.
    Ms(u64),
    /// A whole number.
    Count(u64),
    /// A number.
    Number(f64),
    /// A word.
    Word(&'a str),
}

/// The dials' values of one case, every one resolved.
#[derive(Debug, Clone)]
pub struct Params {
    specs: &'static [Spec],
    raw: BTreeMap<&'static str, String>,
}

/// Dials written as literals (`--quick`'s, a variant's, a debate run's),
/// as `--set` pairs.
pub fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// `NAME=VALUE` split, for clap.
pub fn parse_set(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=VALUE, got {text:?}"))?;
    let (name, value) = (name.trim(), value.trim());
    if name.is_empty() || value.is_empty() {
        return Err(format!("expected NAME=VALUE, got {text:?}"));
    }
    Ok((name.to_owned(), value.to_owned()))
}

/// `NAME=v1,v2,…` split, for clap.
pub fn parse_sweep(text: &str) -> Result<(String, Vec<String>), String> {
    let (name, values) = parse_set(text)?;
    let values: Vec<String> = values
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
        .collect();
    if values.is_empty() {
        return Err(format!("--sweep {name}= needs at least one value"));
    }
    Ok((name, values))
}

impl Params {
    /// The defaults of `specs` with `sets` applied (later wins); an unknown
    /// name or a value its unit cannot read is refused, naming the dials.
    pub fn new(
        scenario: &str,
        specs: &'static [Spec],
        sets: &[(String, String)],
    ) -> Result<Self, String> {
        let mut raw: BTreeMap<&'static str, String> = specs
            .iter()
            .map(|s| (s.name, s.default.to_owned()))
            .collect();
        for (name, value) in sets {
            // `failover` counts its injections as promotions.
            let name = if name == "injections"
                && !specs.iter().any(|s| s.name == "injections")
                && specs.iter().any(|s| s.name == "promotions")
            {
                "promotions"
            } else {
                name.as_str()
            };
            let Some(spec) = specs.iter().find(|s| s.name == name) else {
                let known: Vec<&str> = specs.iter().map(|s| s.name).collect();
                return Err(format!(
                    "{scenario} has no dial {name:?}; its dials: {} (see `scenario {scenario} --params`)",
                    known.join(", ")
                ));
            };
            raw.insert(spec.name, value.clone());
        }
        let params = Self { specs, raw };
        for spec in specs {
            params.check(spec)?;
        }
        Ok(params)
    }

    fn check(&self, spec: &Spec) -> Result<(), String> {
        let value = &self.raw[spec.name];
        let bad = |why: &str| Err(format!("{}={value}: {why}", spec.name));
        match spec.unit {
            Unit::Ms | Unit::MsOrFill => {
                if value == "fill" && spec.unit == Unit::Ms {
                    return bad("`fill` is for clock-slew's work_ms only");
                }
                if self.try_ms(value).is_none() {
                    return bad(
                        "expected milliseconds (600, 600ms) or a multiple of the TTL (1.5ttl)",
                    );
                }
            }
            Unit::Count => {
                if value.parse::<u64>().is_err() {
                    return bad("expected a whole number");
                }
                if matches!(spec.name, "injections" | "promotions") && value == "0" {
                    return bad("at least 1");
                }
            }
            Unit::Number => {
                if !value.parse::<f64>().is_ok_and(f64::is_finite) {
                    return bad("expected a number");
                }
            }
            Unit::Choice(words) => {
                if !words.contains(&value.as_str()) {
                    return bad(&format!("expected one of {}", words.join(", ")));
                }
            }
        }
        Ok(())
    }

    fn try_ms(&self, value: &str) -> Option<u64> {
        if value == "fill" {
            return self.fill_ms();
        }
        if let Some(times) = value.strip_suffix("ttl") {
            let times: f64 = times.trim().parse().ok()?;
            let ttl = self.raw.get("ttl_ms")?.parse::<u64>().ok()? as f64;
            if !(times.is_finite() && times >= 0.0) {
                return None;
            }
            return Some((times * ttl).round() as u64);
        }
        value
            .strip_suffix("ms")
            .unwrap_or(value)
            .trim()
            .parse()
            .ok()
    }

    /// `fill`: Redlock's validity (TTL − TTL × `drift_factor` − 2 ms) less
    /// `margin_ms` — work that nearly fills the time the client trusts its
    /// lock. Only where the scenario declares both dials.
    fn fill_ms(&self) -> Option<u64> {
        let ttl = self.raw.get("ttl_ms")?.parse::<u64>().ok()?;
        let factor: f64 = self.raw.get("drift_factor")?.parse().ok()?;
        let margin = self.raw.get("margin_ms")?.parse::<u64>().ok()?;
        let drift = (ttl as f64 * factor).round() as u64 + 2;
        Some(ttl.saturating_sub(drift + margin))
    }

    /// The declared dial `name`, resolved by its unit (a dial struct's
    /// field reads it: `scenario/dials.rs`).
    pub fn resolved(&self, name: &str) -> Resolved<'_> {
        let spec = self
            .specs
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("dial {name} is not declared"));
        match spec.unit {
            Unit::Ms | Unit::MsOrFill => Resolved::Ms(self.ms(name)),
            Unit::Count => Resolved::Count(self.count(name)),
            Unit::Number => Resolved::Number(self.number(name)),
            Unit::Choice(_) => Resolved::Word(self.choice(name)),
        }
    }

    /// A duration dial, in ms.
    fn ms(&self, name: &str) -> u64 {
        self.raw
            .get(name)
            .and_then(|v| self.try_ms(v))
            .unwrap_or_else(|| panic!("dial {name} is not declared as a duration"))
    }

    /// A count dial.
    fn count(&self, name: &str) -> u64 {
        self.raw
            .get(name)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("dial {name} is not declared as a count"))
    }

    /// A number dial.
    fn number(&self, name: &str) -> f64 {
        self.raw
            .get(name)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("dial {name} is not declared as a number"))
    }

    /// A choice dial.
    fn choice(&self, name: &str) -> &str {
        self.raw
            .get(name)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("dial {name} is not declared"))
    }

    /// The TTL of the case, ms (`None`: the scenario has none, as
    /// `coordinator-crash`).
    pub fn ttl_ms(&self) -> Option<u64> {
        self.has("ttl_ms").then(|| self.count("ttl_ms"))
    }

    /// How long a grab waits for the lock, ms (`None`: not a dial of the
    /// scenario).
    pub fn lock_wait_ms(&self) -> Option<u64> {
        self.has("lock_wait_ms").then(|| self.ms("lock_wait_ms"))
    }

    /// Injections per trial (`failover`: its promotions; `None`: the
    /// scenario does not count them).
    pub fn injections(&self) -> Option<u64> {
        ["injections", "promotions"]
            .into_iter()
            .find(|name| self.has(name))
            .map(|name| self.count(name))
    }

    /// The longest duration dial in force, ms (0 when none is).
    pub fn max_ms(&self) -> u64 {
        self.specs
            .iter()
            .filter(|s| matches!(s.unit, Unit::Ms | Unit::MsOrFill))
            .map(|s| self.ms(s.name))
            .max()
            .unwrap_or(0)
    }

    /// Whether the dial was declared by the scenario.
    fn has(&self, name: &str) -> bool {
        self.raw.contains_key(name)
    }

    /// Every dial in force as `scenarios.json` writes it: durations in ms
    /// (a TTL multiple also as typed), counts and numbers as numbers.
    pub fn in_force(&self) -> InForce {
        let mut out = InForce::default();
        for spec in self.specs {
            let raw = &self.raw[spec.name];
            let value = match spec.unit {
                Unit::Ms | Unit::MsOrFill => DialValue::Whole(self.ms(spec.name)),
                Unit::Count => DialValue::Whole(self.count(spec.name)),
                Unit::Number => DialValue::Number(self.number(spec.name)),
                Unit::Choice(_) => DialValue::Word(raw.clone()),
            };
            let as_typed = (matches!(spec.unit, Unit::Ms | Unit::MsOrFill)
                && (raw.ends_with("ttl") || raw == "fill"))
                .then(|| raw.clone());
            out.insert(spec.name, value, as_typed);
        }
        out
    }

    /// The value of `name` as typed (`1.5ttl`, `after-check`, `20`).
    pub fn typed(&self, name: &str) -> Option<&str> {
        self.raw.get(name).map(String::as_str)
    }
}

/// `--locate KEY=LO..HI`, as typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locate {
    /// The dial.
    pub key: String,
    /// The low end, as typed (`1`, `0.2ttl`, `150ms`).
    pub lo: String,
    /// The high end, as typed.
    pub hi: String,
}

/// Parse `KEY=LO..HI`.
pub fn parse_locate(text: &str) -> Result<Locate, String> {
    let (key, range) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?}: expected KEY=LO..HI (e.g. slew_pct=1..20)"))?;
    let (lo, hi) = range
        .split_once("..")
        .ok_or_else(|| format!("{text:?}: expected KEY=LO..HI (e.g. slew_pct=1..20)"))?;
    let (key, lo, hi) = (key.trim(), lo.trim(), hi.trim());
    if key.is_empty() || lo.is_empty() || hi.is_empty() {
        return Err(format!(
            "{text:?}: expected KEY=LO..HI (e.g. slew_pct=1..20)"
        ));
    }
    Ok(Locate {
        key: key.to_owned(),
        lo: lo.to_owned(),
        hi: hi.to_owned(),
    })
}

/// `scenario NAME --params`: one dial a line.
pub fn describe(scenario: &str, specs: &[Spec]) -> String {
    let mut out = format!("{scenario}: dials (--set NAME=VALUE, --sweep NAME=v1,v2,…)\n");
    for spec in specs {
        let _ = writeln!(
            out,
            "  {:<16} {:<34} default {:<12} {}",
            spec.name,
            spec.unit.describe(),
            spec.default,
            spec.meaning
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[Spec] = &[
        Spec {
            name: "ttl_ms",
            unit: Unit::Count,
            default: "400",
            meaning: "",
        },
        Spec {
            name: "work_ms",
            unit: Unit::Ms,
            default: "40",
            meaning: "",
        },
        Spec {
            name: "injections",
            unit: Unit::Count,
            default: "12",
            meaning: "",
        },
        Spec {
            name: "pause",
            unit: Unit::Ms,
            default: "2.5ttl",
            meaning: "",
        },
        Spec {
            name: "where",
            unit: Unit::Choice(&["before-check", "after-check", "anywhere"]),
            default: "before-check",
            meaning: "",
        },
    ];

    fn set(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    }

    #[test]
    fn ttl_multiples_resolve_against_the_final_ttl_whatever_the_order() {
        let p = Params::new("x", SPECS, &set(&[("pause", "1.5ttl"), ("ttl_ms", "300")]))
            .expect("valid");
        assert_eq!(p.ms("pause"), 450);
        let p = Params::new("x", SPECS, &[]).expect("valid");
        assert_eq!(p.ms("pause"), 1000);
        let p = Params::new("x", SPECS, &set(&[("pause", "250ms")])).expect("valid");
        assert_eq!(p.ms("pause"), 250);
        assert_eq!(p.in_force().u64("pause"), Some(250));
        let p = Params::new("x", SPECS, &set(&[("pause", "0.3ttl")])).expect("valid");
        assert_eq!(p.ms("pause"), 120);
        assert_eq!(p.in_force().typed("pause").as_deref(), Some("0.3ttl"));
    }

    #[test]
    fn unknown_dials_and_bad_values_are_refused_by_name() {
        let e = Params::new("gc-pause", SPECS, &set(&[("paws", "1")])).expect_err("refused");
        assert!(e.contains("no dial \"paws\"") && e.contains("pause"), "{e}");
        let e = Params::new("x", SPECS, &set(&[("where", "inside")])).expect_err("refused");
        assert!(e.contains("before-check, after-check, anywhere"), "{e}");
        let e = Params::new("x", SPECS, &set(&[("pause", "soon")])).expect_err("refused");
        assert!(e.contains("pause=soon"), "{e}");
        let e = Params::new("x", SPECS, &set(&[("injections", "0")])).expect_err("refused");
        assert!(e.contains("at least 1"), "{e}");
        assert_eq!(parse_set("a=b").expect("valid"), ("a".into(), "b".into()));
        assert!(parse_set("a").is_err());
        assert_eq!(
            parse_sweep("pause=0.5ttl, 1ttl,2ttl").expect("valid").1,
            vec!["0.5ttl", "1ttl", "2ttl"]
        );
    }
}
