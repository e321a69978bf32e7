//! The debate's rows and their sources: each claim as its source states
//! it (a quote of at most 25 words a reader finds in the linked text, the
//! claim's kind — "never" or "can happen" — and where along the sweep it
//! applies), our model's prediction beside it, and the sweep that tests
//! both (a scenario, a strategy, a variant, dials held fixed and one
//! swept across the boundary).
//!
//! The model is the scenarios' own ([`crate::scenario::predictions`]):
//! the functions here only say which of its rules a row reads.

use serde::Serialize;

use crate::scenario::{Outcome, Params, Scenario};
use seckill_load::api::{StrategyName, Variant};
use seckill_load::judge::Expected;

/// Where a claim comes from.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Source {
    /// Who.
    pub author: &'static str,
    /// The text's title.
    pub title: &'static str,
    /// When.
    pub year: u16,
    /// Where to read it.
    pub url: &'static str,
}

pub const KLEPPMANN: Source = Source {
    author: "Martin Kleppmann",
    title: "How to do distributed locking",
    year: 2016,
    url: "https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html",
};

pub const ANTIREZ: Source = Source {
    author: "Salvatore Sanfilippo (antirez)",
    title: "Is Redlock safe?",
    year: 2016,
    url: "http://antirez.com/news/101",
};

pub const REDIS_DOCS: Source = Source {
    author: "the Redis documentation",
    title: "Distributed Locks with Redis",
    // First published May 2014 (redis-doc, topics/distlock.md); the
    // quotes are the living page's.
    year: 2014,
    url: "https://redis.io/docs/latest/develop/use/patterns/distributed-locks/",
};

pub const REDIS_WAIT: Source = Source {
    author: "the Redis documentation",
    title: "WAIT",
    year: 2015,
    url: "https://redis.io/docs/latest/commands/wait/",
};

pub const DERIVED: Source = Source {
    author: "derived by this project",
    title: "seckill-lab",
    year: 2026,
    url: "",
};

/// What kind of claim a source makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// The outcome never happens where the claim applies: supported only
    /// by 0 of n; one violation refutes it.
    Never,
    /// The outcome can happen where the claim applies: supported by k ≥ 1
    /// proven injections; 0 of n leaves it undecided (with its bound).
    CanHappen,
}

/// A source's claim, as the source states it.
#[derive(Debug, Clone, Copy)]
pub struct Claim {
    pub kind: Kind,
    /// The points of the sweep the claim speaks of.
    pub applies: fn(&Params) -> bool,
    /// The same, in words ("at every pause longer than the TTL").
    pub applies_text: &'static str,
    /// 同上，中文。
    pub applies_zh: &'static str,
}

/// One sweep that rows read: a scenario, a strategy, a variant, the dials
/// held fixed and the one swept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// Its name (the report folder `<out>/<id>/`).
    pub id: &'static str,
    /// The scenario.
    pub scenario: Scenario,
    /// The strategy.
    pub strategy: StrategyName,
    /// The variant (`None`: the scenario has one).
    pub variant: Option<Variant>,
    /// Dials held fixed.
    pub sets: &'static [(&'static str, &'static str)],
    /// The dial swept and its values, on both sides of the boundary.
    pub sweep: (&'static str, &'static [&'static str]),
}

/// One claim of the debate.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// Stable id.
    pub id: &'static str,
    /// Who made it.
    pub source: Source,
    /// Their words, at most 25 (empty for a derived claim).
    pub quote: &'static str,
    /// 引文的中文译文（空：本项目自己的论断）。
    pub quote_zh: &'static str,
    /// The claim, in our words.
    pub claim: &'static str,
    /// 论断，中文。
    pub claim_zh: &'static str,
    /// What the source claims, judged against the data.
    pub states: Claim,
    /// What really happens, to which process, node or link.
    pub mechanism: &'static str,
    /// 机制，中文。
    pub mechanism_zh: &'static str,
    /// The sweep that tests it.
    pub run: Run,
    /// The outcome the claim is about.
    pub outcome: Outcome,
    /// What our model predicts at a point of the sweep.
    pub predicts: fn(&Params) -> Expected,
    /// The same, in words.
    pub predicts_text: &'static str,
    /// 同上，中文。
    pub predicts_text_zh: &'static str,
}
