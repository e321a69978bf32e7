//! `seckill-loadgen debate` — the Redlock debate, claim by claim, against
//! what the fault scenarios measured.
//!
//! [`CLAIMS`] is the table: who made each claim (Martin Kleppmann's "How
//! to do distributed locking", 2016; antirez's reply "Is Redlock safe?";
//! the Redis documentation), what it says in our words, the scenario,
//! strategy and variant that tests it, and the outcome the claim predicts.
//! [`main`] reads a `scenarios.json` (best run with `--trials 5`: `make
//! debate`) and writes a Markdown table — one row a claim, with the
//! measured verdict (k of N trials as expected), the overlaps and the
//! damage (oversold units, lost updates) of the case's worst trial. A
//! claim whose case is missing, inconclusive or contradicted says so in
//! capitals, in the table and on stderr.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use serde_json::Value;

/// Who made a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Martin Kleppmann, "How to do distributed locking" (2016).
    Kleppmann,
    /// Salvatore Sanfilippo (antirez), "Is Redlock safe?" (2016).
    Antirez,
    /// The Redis documentation (distributed locks, `WAIT`).
    RedisDocs,
    /// Not a claim: the control run a claim is measured against.
    Control,
}

impl Source {
    /// As the table names it: author and title, no link (the page stands
    /// on its own, like every page of the manual).
    pub fn cite(self) -> &'static str {
        match self {
            Source::Kleppmann => "Kleppmann, \"How to do distributed locking\" (2016)",
            Source::Antirez => "antirez, \"Is Redlock safe?\" (2016)",
            Source::RedisDocs => "the Redis docs (distributed locks; `WAIT`)",
            Source::Control => "control run",
        }
    }
}

/// One claim of the debate and the case that tests it.
#[derive(Debug, Clone, Copy)]
pub struct Claim {
    /// Who made it.
    pub who: Source,
    /// What it says, in our words.
    pub says: &'static str,
    /// The scenario that tests it.
    pub scenario: &'static str,
    /// The strategy under test.
    pub strategy: &'static str,
    /// The scenario's variant (`None`: it has one).
    pub variant: Option<&'static str>,
    /// The outcome the claim predicts: `holds` or `breaks`.
    pub expected: &'static str,
}

const fn claim(
    who: Source,
    says: &'static str,
    scenario: &'static str,
    strategy: &'static str,
    variant: Option<&'static str>,
    expected: &'static str,
) -> Claim {
    Claim {
        who,
        says,
        scenario,
        strategy,
        variant,
        expected,
    }
}

/// The claims, in the order of the debate.
pub const CLAIMS: &[Claim] = &[
    claim(Source::Kleppmann, "A process pause longer than the lock's TTL breaks Redlock: the paused holder wakes and writes beside the next one", "gc-pause", "redlock", None, "breaks"),
    claim(Source::Kleppmann, "The same pause breaks any TTL lock, a single Redis `SET NX PX` with a token included", "gc-pause", "set-nx-px-token", None, "breaks"),
    claim(Source::Kleppmann, "A fencing token checked by the storage keeps the data exact through the same pause", "gc-pause", "fenced", None, "holds"),
    claim(Source::Kleppmann, "Delayed packets: a grant that arrives after its key expired is acted on by a lock that does not check the time", "slow-network", "set-nx-px-token", None, "breaks"),
    claim(Source::Antirez, "Redlock measures the time the votes took (per-node timeouts, TTL − elapsed): a late quorum is refused, delayed packets are harmless", "slow-network", "redlock", None, "holds"),
    claim(Source::Control, "The partition of the clock-jump case alone (node 3 shared by both sides): one holder at a time", "clock-jump", "redlock", Some("partition"), "holds"),
    claim(Source::Kleppmann, "A clock jump on one node expires its key early: both sides of a partition reach a majority", "clock-jump", "redlock", Some("partition+jump"), "breaks"),
    claim(Source::Kleppmann, "A node that restarts without fsync forgets its keys: its vote is given twice, two majorities", "redlock-restart", "redlock", Some("restart"), "breaks"),
    claim(Source::RedisDocs, "Remedy: keep a crashed node down longer than the TTL before it rejoins", "redlock-restart", "redlock", Some("delayed-restart"), "holds"),
    claim(Source::RedisDocs, "Remedy: `appendfsync always` — the node comes back with its keys", "redlock-restart", "redlock", Some("appendfsync-always"), "holds"),
    claim(Source::Antirez, "A pause *during* acquisition is harmless: the elapsed-time check after acquisition refuses the late quorum", "acquire-pause", "redlock", Some("check"), "holds"),
    claim(Source::Antirez, "…and it is that check which saves it: without it the paused client enters on expired keys", "acquire-pause", "redlock", Some("no-check"), "breaks"),
    claim(Source::Antirez, "A clock that runs a little fast (slewed, not jumped) is harmless: the drift factor covers it", "clock-slew", "redlock", None, "holds"),
    claim(Source::RedisDocs, "A single Redis with a replica loses the lock on failover: replication is asynchronous", "failover", "set-nx-px-token", Some("no-wait"), "breaks"),
    claim(Source::RedisDocs, "`WAIT 1` after the lock write: the promoted replica has the key", "failover", "set-nx-px-token", Some("wait-1"), "holds"),
    claim(Source::RedisDocs, "`WAIT` does not make Redis strongly consistent: acknowledged by one replica, the other is promoted without the key", "failover", "set-nx-px-token", Some("wait-1-two-replicas"), "breaks"),
    claim(Source::Kleppmann, "Fencing keeps the data exact through a failover as well", "failover", "fenced", Some("no-wait"), "holds"),
];

/// The scenarios [`CLAIMS`] need, each once, in order.
pub fn scenarios() -> Vec<&'static str> {
    let mut names = Vec::new();
    for c in CLAIMS {
        if !names.contains(&c.scenario) {
            names.push(c.scenario);
        }
    }
    names
}

/// How one claim fared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Every trial as the claim predicts.
    Confirmed,
    /// The case is not in the report.
    Missing,
    /// The case could not tell (no contention, fault not proven, …).
    Inconclusive,
    /// A trial contradicted the scenario's expectation.
    Contradicted,
    /// The scenario expects another outcome than the claim.
    Disagrees,
}

impl Standing {
    fn as_str(&self) -> &'static str {
        match self {
            Standing::Confirmed => "confirmed",
            Standing::Missing => "**MISSING — not run**",
            Standing::Inconclusive => "**INCONCLUSIVE**",
            Standing::Contradicted => "**CONTRADICTED**",
            Standing::Disagrees => "**SCENARIO EXPECTS OTHERWISE**",
        }
    }
}

/// The case of `claim` in a report's `scenarios` array.
fn case_of<'a>(cases: &'a [Value], claim: &Claim) -> Option<&'a Value> {
    cases.iter().find(|c| {
        c["name"] == claim.scenario
            && c["strategy"] == claim.strategy
            && match claim.variant {
                Some(v) => c["variant"] == v,
                None => c["variant"].is_null(),
            }
    })
}

/// A reason as one table cell: no pipes, at most 120 characters.
fn cell(text: &str) -> String {
    let mut out: String = text.replace('|', "/").chars().take(120).collect();
    if text.chars().count() > 120 {
        out.push('…');
    }
    out
}

/// The table of every claim against `report` (a parsed `scenarios.json`),
/// and each claim's standing.
pub fn render(report: &Value) -> (String, Vec<Standing>) {
    let empty = Vec::new();
    let cases = report["scenarios"].as_array().unwrap_or(&empty);
    let mut md = String::new();
    md.push_str("# The Redlock debate, claim by claim\n\n");
    md.push_str("Generated by `seckill-loadgen debate` from a `scenarios.json` ");
    md.push_str("(`make debate`: each case run with `--trials 5`). One row a claim: who made it, ");
    md.push_str("what it says, the case that tests it, the outcome it predicts, and what was ");
    md.push_str("measured — the verdict with k of N trials as expected, the overlapping critical ");
    md.push_str("sections the history arbiter counted, and the damage the database's audit ");
    md.push_str("found (oversold units / lost updates), figures of the case's worst trial.\n\n");
    let _ = writeln!(
        md,
        "Report: quick = {}, {} cases, {} s.\n",
        report["quick"],
        cases.len(),
        report["duration_s"]
    );
    md.push_str("| # | who | claim | case (scenario · strategy · variant) | predicts | measured | trials as expected | overlaps | oversold / lost updates | standing |\n");
    md.push_str("|---:|---|---|---|---|---|---:|---:|---:|---|\n");
    let mut standings = Vec::new();
    let mut notes = Vec::new();
    for (i, claim) in CLAIMS.iter().enumerate() {
        let test = format!(
            "`{}` · `{}` · {}",
            claim.scenario,
            claim.strategy,
            claim.variant.map_or("-".to_owned(), |v| format!("`{v}`"))
        );
        let Some(case) = case_of(cases, claim) else {
            standings.push(Standing::Missing);
            let _ = writeln!(
                md,
                "| {} | {} | {} | {test} | {} | — | — | — | — | {} |",
                i + 1,
                claim.who.cite(),
                claim.says,
                claim.expected,
                Standing::Missing.as_str()
            );
            continue;
        };
        let verdict = case["verdict"].as_str().unwrap_or("?");
        let o = &case["observed"];
        let (runs, ok) = match case["trials"].as_object() {
            Some(t) => (
                t["runs"].as_u64().unwrap_or(1),
                t["as_expected"].as_u64().unwrap_or(0),
            ),
            None => (1, u64::from(verdict == "as-expected")),
        };
        let standing = if case["expected"] != claim.expected {
            Standing::Disagrees
        } else {
            match verdict {
                "as-expected" => Standing::Confirmed,
                "inconclusive" => Standing::Inconclusive,
                _ => Standing::Contradicted,
            }
        };
        if standing != Standing::Confirmed {
            notes.push(format!(
                "- claim {} ({test}): {} — {}",
                i + 1,
                standing.as_str(),
                case["verdict_reason"].as_str().unwrap_or("")
            ));
        }
        let _ = writeln!(
            md,
            "| {} | {} | {} | {test} | {} | {verdict}: {} | {ok} of {runs} | {} | {} / {} | {} |",
            i + 1,
            claim.who.cite(),
            claim.says,
            claim.expected,
            cell(case["verdict_reason"].as_str().unwrap_or("")),
            o["overlaps"],
            o["oversold"],
            o["lost_updates"],
            standing.as_str()
        );
        standings.push(standing);
    }
    let confirmed = standings
        .iter()
        .filter(|s| **s == Standing::Confirmed)
        .count();
    let _ = writeln!(md, "\n{confirmed} of {} claims confirmed.", CLAIMS.len());
    if !notes.is_empty() {
        md.push_str("\n**Not confirmed:**\n\n");
        for note in &notes {
            md.push_str(note);
            md.push('\n');
        }
    }
    (md, standings)
}

/// `seckill-loadgen debate --from DIR/scenarios.json --out FILE`: write
/// the table; exit 1 when a claim was contradicted, 4 when one is missing
/// or inconclusive, 2 when the report cannot be read.
pub fn main(from: &Path, out: &Path) -> ExitCode {
    let report: Value = match std::fs::read_to_string(from)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
    {
        Ok(report) => report,
        Err(e) => {
            eprintln!("seckill-loadgen: cannot read {}: {e}", from.display());
            return ExitCode::from(2);
        }
    };
    let (md, standings) = render(&report);
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("seckill-loadgen: cannot create {}: {e}", dir.display());
            return ExitCode::from(2);
        }
    }
    if let Err(e) = std::fs::write(out, &md) {
        eprintln!("seckill-loadgen: cannot write {}: {e}", out.display());
        return ExitCode::from(2);
    }
    let count = |s: Standing| standings.iter().filter(|x| **x == s).count();
    println!(
        "{} of {} claims confirmed; table: {}",
        count(Standing::Confirmed),
        CLAIMS.len(),
        out.display()
    );
    for (claim, standing) in CLAIMS.iter().zip(&standings) {
        if *standing != Standing::Confirmed {
            eprintln!(
                "seckill-loadgen: {} — {} · {} · {}: {}",
                standing.as_str().trim_matches('*'),
                claim.scenario,
                claim.strategy,
                claim.variant.unwrap_or("-"),
                claim.says
            );
        }
    }
    if count(Standing::Contradicted) + count(Standing::Disagrees) > 0 {
        ExitCode::from(1)
    } else if count(Standing::Missing) + count(Standing::Inconclusive) > 0 {
        ExitCode::from(4)
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_claim_is_found_judged_or_reported_missing() {
        let report = json!({
            "quick": true,
            "duration_s": 12.0,
            "scenarios": [
                {"name": "gc-pause", "strategy": "redlock", "variant": null, "expected": "breaks",
                 "verdict": "as-expected", "verdict_reason": "broke",
                 "observed": {"overlaps": 3, "oversold": 0, "lost_updates": 1},
                 "trials": {"runs": 5, "as_expected": 5}},
                {"name": "acquire-pause", "strategy": "redlock", "variant": "check", "expected": "holds",
                 "verdict": "inconclusive", "verdict_reason": "nothing was sold",
                 "observed": {"overlaps": 0, "oversold": 0, "lost_updates": 0}},
            ]
        });
        let (md, standings) = render(&report);
        assert_eq!(standings.len(), CLAIMS.len());
        assert_eq!(standings[0], Standing::Confirmed);
        assert!(md.contains("| 5 of 5 | 3 | 0 / 1 | confirmed |"), "{md}");
        let check = CLAIMS
            .iter()
            .position(|c| c.variant == Some("check"))
            .expect("the acquire-pause claim");
        assert_eq!(standings[check], Standing::Inconclusive);
        assert!(md.contains("nothing was sold"), "{md}");
        assert!(standings.contains(&Standing::Missing));
        assert!(md.contains("MISSING"));
    }

    #[test]
    fn the_claims_name_known_scenarios() {
        use crate::scenario::Scenario;
        use clap::ValueEnum as _;
        for name in scenarios() {
            assert!(
                Scenario::value_variants().iter().any(|s| s.name() == name),
                "{name}"
            );
        }
    }
}
