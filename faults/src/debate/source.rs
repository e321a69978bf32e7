//! The source's side of a row's judgement: its claim, as the source states
//! it, against the probes where it applies ([`SourceStanding`]), with one
//! sentence of evidence in English and in Chinese from the same numbers.

use serde::{Deserialize, Serialize};

use super::measured::Measured;
use super::rows::{Kind, Row};
use crate::scenario::Rate;

/// The language of a text: the English page's or the Chinese page's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    En,
    Zh,
}

/// What the data say of the source's claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceStanding {
    /// As the source states it, the data bear it out.
    Supported,
    /// The data contradict it (a "never" claim: one violation).
    Refuted,
    /// The data cannot tell.
    Undecided,
}

impl SourceStanding {
    /// As written in the page.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceStanding::Supported => "supported",
            SourceStanding::Refuted => "refuted",
            SourceStanding::Undecided => "undecided",
        }
    }

    /// 中文。
    pub fn zh(self) -> &'static str {
        match self {
            SourceStanding::Supported => "成立",
            SourceStanding::Refuted => "被推翻",
            SourceStanding::Undecided => "未定",
        }
    }
}

/// `k of n at key=value` for the probes in `of`, by value: all of them
/// when three or fewer, else the first three and how many in all; in
/// `lang` (`key=value 时 n 次中 k 次`, `共 m 个探测点`).
fn at_each(key: &str, row: &Row, of: &[&Measured], lang: Lang) -> String {
    let mut sorted: Vec<&&Measured> = of.iter().collect();
    sorted.sort_by(|a, b| a.probe.resolved.total_cmp(&b.probe.resolved));
    let each: Vec<String> = sorted
        .iter()
        .take(3)
        .map(|m| {
            let value = &m.probe.value;
            match (m.probe.rate(row.outcome), lang) {
                (Some(r), Lang::En) => format!("{} of {} at {key}={value}", r.k, r.n),
                (None, Lang::En) => format!("nothing landed at {key}={value}"),
                (Some(r), Lang::Zh) => format!("{key}={value} 时 {} 次中 {} 次", r.n, r.k),
                (None, Lang::Zh) => format!("{key}={value} 时没有注入生效"),
            }
        })
        .collect();
    match (sorted.len() > 3, lang) {
        (true, Lang::En) => format!("{}, … ({} probes in all)", each.join(", "), sorted.len()),
        (true, Lang::Zh) => format!("{}……（共 {} 个探测点）", each.join("，"), sorted.len()),
        (false, Lang::En) => each.join(", "),
        (false, Lang::Zh) => each.join("，"),
    }
}

/// The 95 % upper bound on the rate after 0 of `n`, in %.
fn upper(n: u64) -> u64 {
    Rate::of(0, n).upper_pct()
}

/// The source's claim against the probes where it applies.
/// A source's verdict: its standing, its evidence in English and in
/// Chinese, and the value whose violation refutes it.
pub(super) type Verdict = (SourceStanding, String, String, Option<String>);

pub(super) fn judge_source(row: &Row, measured: &[Measured]) -> Verdict {
    let relevant: Vec<&Measured> = measured
        .iter()
        .filter(|m| (row.states.applies)(&m.params))
        .collect();
    let (where_en, where_zh) = (row.states.applies_text, row.states.applies_zh);
    if relevant.is_empty() {
        return (
            SourceStanding::Undecided,
            format!("no probe lies where the claim applies ({where_en})"),
            format!("没有任何探测点落在论断适用的范围内（{where_zh}）"),
            None,
        );
    }
    // By value: a refuted claim's counterexample is its violation closest
    // to the low end of the dial.
    let mut seen: Vec<&Measured> = relevant
        .iter()
        .copied()
        .filter(|m| m.probe.seen(row.outcome) == Some(true))
        .collect();
    seen.sort_by(|a, b| a.probe.resolved.total_cmp(&b.probe.resolved));
    let clean: Vec<&Measured> = relevant
        .iter()
        .copied()
        .filter(|m| m.probe.seen(row.outcome) == Some(false))
        .collect();
    verdict(row, &seen, &clean)
}

/// The source's verdict from the probes where its claim applies: those
/// where the outcome was seen, and those where it was not.
fn verdict(row: &Row, seen: &[&Measured], clean: &[&Measured]) -> Verdict {
    let standing = match (row.states.kind, seen.is_empty(), clean.is_empty()) {
        (_, true, true) => SourceStanding::Undecided,
        (Kind::Never, false, _) => SourceStanding::Refuted,
        (Kind::Never, true, _) => SourceStanding::Supported,
        (Kind::CanHappen, false, _) => SourceStanding::Supported,
        (Kind::CanHappen, true, _) => SourceStanding::Undecided,
    };
    let refuted_at = match (row.states.kind, seen.first()) {
        (Kind::Never, Some(first)) => Some(first.probe.value.clone()),
        _ => None,
    };
    (
        standing,
        evidence(row, seen, clean, Lang::En),
        evidence(row, seen, clean, Lang::Zh),
        refuted_at,
    )
}

/// The source's verdict in one sentence, in `lang`: both languages read
/// the same probes and the same numbers.
fn evidence(row: &Row, seen: &[&Measured], clean: &[&Measured], lang: Lang) -> String {
    let key = row.run.sweep.0;
    let outcome = outcome_text(row, lang);
    let applies = match lang {
        Lang::En => row.states.applies_text,
        Lang::Zh => row.states.applies_zh,
    };
    if seen.is_empty() && clean.is_empty() {
        return match lang {
            Lang::En => format!("no injection landed {applies}: nothing to judge"),
            Lang::Zh => format!("在{applies}没有任何注入生效：无从判断"),
        };
    }
    let clean_n: u64 = clean
        .iter()
        .filter_map(|m| m.probe.rate(row.outcome))
        .map(|r| r.n)
        .sum();
    let points = clean.len();
    let bound = upper(clean_n);
    let each = at_each(key, row, seen, lang);
    match (row.states.kind, seen.is_empty(), lang) {
        (Kind::Never, false, Lang::En) => format!(
            "{outcome} {each} — {applies} the claim says never, and one violation refutes it (its trace is kept)"
        ),
        (Kind::Never, false, Lang::Zh) => format!(
            "{outcome}：{each}——论断说{applies}永远不会发生，一次违例就足以推翻（轨迹已保存）"
        ),
        (Kind::Never, true, Lang::En) => format!(
            "0 of {clean_n} injections {applies} ({points} points) showed {outcome}: the rate is below {bound} % at 95 %"
        ),
        (Kind::Never, true, Lang::Zh) => format!(
            "在{applies}（{points} 个点）共 {clean_n} 次注入，0 次{outcome}：95% 置信上界低于 {bound}%"
        ),
        (Kind::CanHappen, false, Lang::En) if !clean.is_empty() => format!(
            "{outcome} seen at {} of the {} probes where the claim applies ({}): {each}; not seen: {}",
            seen.len(),
            seen.len() + points,
            applies.strip_prefix("at ").unwrap_or(applies),
            at_each(key, row, clean, lang)
        ),
        (Kind::CanHappen, false, Lang::Zh) if !clean.is_empty() => format!(
            "在论断适用的范围内（{applies}）的 {} 个探测点中，{} 个观察到{outcome}：{each}；未观察到：{}",
            seen.len() + points,
            seen.len(),
            at_each(key, row, clean, lang)
        ),
        (Kind::CanHappen, false, Lang::En) => format!("{outcome} seen {applies}: {each}"),
        (Kind::CanHappen, false, Lang::Zh) => format!("在{applies}观察到{outcome}：{each}"),
        (Kind::CanHappen, true, Lang::En) => format!(
            "{outcome} not seen {applies}: 0 of {clean_n} injections, the rate below {bound} % at 95 % — a \"can happen\" claim is not refuted by absence"
        ),
        (Kind::CanHappen, true, Lang::Zh) => format!(
            "在{applies}没有观察到{outcome}：{clean_n} 次注入中 0 次，95% 置信上界低于 {bound}%——“可能发生”的论断不会因为没看到而被推翻"
        ),
    }
}

/// The row's outcome in words, in `lang`.
fn outcome_text(row: &Row, lang: Lang) -> &'static str {
    match lang {
        Lang::En => row.outcome.as_str(),
        Lang::Zh => zh_outcome(row),
    }
}

fn zh_outcome(row: &Row) -> &'static str {
    match row.outcome {
        crate::scenario::Outcome::ExclusionBroken => "互斥被破坏",
        crate::scenario::Outcome::DataDamaged => "数据被损坏",
        crate::scenario::Outcome::Stalled => "停滞",
        crate::scenario::Outcome::Refused => "较新的持有者被 fencing 拒绝",
    }
}
