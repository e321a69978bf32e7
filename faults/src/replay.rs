//! `seckill-loadgen scenario replay` — bugs that users of the lock
//! libraries reported, replayed on demand with a rate.
//!
//! A report in an issue tracker is an anecdote: one user, one stack
//! trace, no rate. Each replay names the report it reproduces, and runs
//! one of the lab's scenarios twice with the same fault: once with the
//! reported behaviour switched on (a fault of the service that behaves as
//! the report says the library did: `reported-bug`), once as this service
//! behaves (`ours`). Each variant is a case with its injections, judged
//! k of n on the outcome the report is about; a replay holds when the bug
//! shows (k ≥ 1) and ours does not (0 of n, with the 95 % upper bound).
//!
//! `scenario replay --list` names the cases; `scenario replay [ID …]`
//! runs them (all without an id) and writes `DIR/replays.json` beside each
//! variant's `DIR/<id>/<variant>/scenarios.json`. Exit 0 when every
//! replay held, 1 when one did not (a finding, printed), 3 when a run
//! failed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Serialize;

use crate::scenario::{owned_sets, CaseResult, Options, Outcome, Outcomes, Rate, Scenario};
use seckill_load::api::StrategyName;

/// The report a replay reproduces.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Report {
    /// The project, as `owner/name` (or its site).
    pub project: &'static str,
    /// The number (`null`: an analysis, not an issue).
    pub number: Option<u32>,
    /// Its title, as filed.
    pub title: &'static str,
    /// Where to read it.
    pub url: &'static str,
}

/// One replayed report.
#[derive(Debug)]
pub struct Replay {
    /// Its name on the command line.
    pub id: &'static str,
    /// The report it reproduces.
    pub reproduces: Report,
    /// Reports of the same behaviour.
    pub also: &'static [Report],
    /// What the users saw, in one sentence.
    pub saw: &'static str,
    /// How it happens, in two sentences.
    pub mechanism: &'static str,
    /// The scenario that injects its fault.
    pub scenario: Scenario,
    /// The strategy it runs.
    pub strategy: StrategyName,
    /// The dials both variants share.
    pub sets: &'static [(&'static str, &'static str)],
    /// The dials that switch the reported behaviour on.
    pub bug: &'static [(&'static str, &'static str)],
    /// The dials of ours (the same dials, off).
    pub ours: &'static [(&'static str, &'static str)],
    /// The outcome the report is about.
    pub shows: Outcome,
}

/// The two variants of every replay, in order.
pub const VARIANTS: [&str; 2] = ["reported-bug", "ours"];

const REDISSON_2515: Report = Report {
    project: "redisson/redisson",
    number: Some(2515),
    title: "Lock expiration renewal stops working after connection error/timeout",
    url: "https://github.com/redisson/redisson/issues/2515",
};

const REDISSON_3194: Report = Report {
    project: "redisson/redisson",
    number: Some(3194),
    title: "断线重连后watchdog不再生效",
    url: "https://github.com/redisson/redisson/issues/3194",
};

/// The replayed reports, in the order of `--list`.
pub const REPLAYS: &[Replay] = &[
    Replay {
        id: "redisson-2515",
        reproduces: REDISSON_2515,
        also: &[REDISSON_3194],
        saw: "after a renewal failed (a connection error or timeout, a reconnect), later locks of the same name were never renewed, and expired while still held",
        mechanism: "after a renewal error the watchdog's renewal of that lock name ends for good, and later locks of the name are never renewed. Each then lives one lease, and the next holder enters beside one still at work.",
        scenario: Scenario::ConnectionCut,
        strategy: StrategyName::Watchdog,
        sets: &[("ttl_ms", "1000"), ("work_ms", "3000"), ("cut_ms", "0.25ttl")],
        bug: &[("renewal_stops_on_error", "on"), ("ignore_lost_lease", "on")],
        ours: &[("renewal_stops_on_error", "off"), ("ignore_lost_lease", "off")],
        shows: Outcome::ExclusionBroken,
    },
    Replay {
        id: "redisson-4698",
        reproduces: Report {
            project: "redisson/redisson",
            number: Some(4698),
            title: "Add a callback on lock renewal failure",
            url: "https://github.com/redisson/redisson/issues/4698",
        },
        also: &[],
        saw: "a renewal that failed was only logged: the application had no way to know it, and so to stop the work it was doing (a request for a callback)",
        mechanism: "a renewal that fails is only logged, so the holder works on; here it fails because the holder's process was stopped past its lease, and the next holder has taken the lock and written. The holder, never told, writes the stock it read before: a lost update, unless it checks its lease before it commits.",
        scenario: Scenario::GcPause,
        strategy: StrategyName::Watchdog,
        sets: &[
            ("ttl_ms", "400"),
            ("work_ms", "40"),
            ("pause", "2ttl"),
            ("where", "before-check"),
        ],
        bug: &[("ignore_lost_lease", "on")],
        ours: &[("ignore_lost_lease", "off")],
        shows: Outcome::DataDamaged,
    },
    Replay {
        id: "redsync-149",
        reproduces: Report {
            project: "go-redsync/redsync",
            number: Some(149),
            title: "Improve extending",
            url: "https://github.com/go-redsync/redsync/pull/149",
        },
        also: &[],
        saw: "with three Redis nodes without persistence, a restarted node came back empty and Extend, touching only the nodes that still held the key, kept the lock on two of three; locks were lost. The pull request adds an option (WithSetNXOnExtend) to extend or lock instead; plain Extend keeps the old behaviour",
        mechanism: "a node that restarts empty forgets the holder's key, and an extension that only extends where the key is still its own never gives it back: each restart takes one node from the holder's majority for good. The report speaks of locks lost; here, after a second node restarts, another client builds a majority on the two empty nodes while the holder is still inside.",
        scenario: Scenario::RollingRestart,
        strategy: StrategyName::Redlock,
        sets: &[("down_ms", "1ttl"), ("work_ms", "5ttl")],
        bug: &[("extend", "held-only")],
        ours: &[("extend", "on")],
        shows: Outcome::ExclusionBroken,
    },
    Replay {
        id: "node-redlock-283",
        reproduces: Report {
            project: "mike-marcacci/node-redlock",
            number: Some(283),
            title: "Cannot extend an already-expired lock crashes consumer pods.",
            url: "https://github.com/mike-marcacci/node-redlock/issues/283",
        },
        also: &[Report {
            project: "leandromoreira/redlock-rb",
            number: Some(36),
            title: "Lock extension via lock method allows extending expired locks",
            url: "https://github.com/leandromoreira/redlock-rb/issues/36",
        }],
        saw: "node-redlock refused to extend a lock that had already expired (long-running tasks), and the error restarted the consumers' pods; redlock-rb's extension granted such a lock, 'as if we always had the lock' (a comment in its issue #36, the expiry simulated by deleting the key)",
        mechanism: "in this lab's scenario (the reports name no pause), a holder stopped past its TTL wakes and extends its lock before it writes, while the next holder has taken the keys, written and let them go. Granted where the keys are free again, the extension hands it a fresh validity and it writes the stock it read before the pause (a lost update); refused, as node-redlock and ours do, the grab ends 409 with nothing written, and our process goes on serving.",
        scenario: Scenario::GcPause,
        strategy: StrategyName::Redlock,
        sets: &[
            ("ttl_ms", "400"),
            ("work_ms", "40"),
            ("pause", "2ttl"),
            ("where", "before-check"),
            ("users", "2"),
            ("think_ms", "300"),
        ],
        bug: &[("extend", "expired")],
        ours: &[("extend", "on")],
        shows: Outcome::DataDamaged,
    },
    Replay {
        id: "jepsen-etcd-3.4.3",
        reproduces: Report {
            project: "jepsen.io",
            number: None,
            title: "etcd 3.4.3",
            url: "https://jepsen.io/analyses/etcd-3.4.3",
        },
        also: &[],
        saw: "Jepsen's tests showed lost updates to a set guarded by etcd's lock: a lease could expire while its holder was paused (and etcd 3.4.3 also failed to check a lease after blocking), and another client took the lock",
        mechanism: "the holder stops after its last check, its lease expires, and the next holder takes the lock, writes and commits. The first wakes and writes what it read before; a store that checks the lock key's revision (a growing fencing token) refuses it.",
        scenario: Scenario::GcPause,
        strategy: StrategyName::EtcdLease,
        sets: &[
            ("ttl_ms", "1000"),
            ("work_ms", "40"),
            ("pause", "2ttl"),
            ("where", "after-check"),
        ],
        bug: &[("check_revision", "off")],
        ours: &[("check_revision", "on")],
        shows: Outcome::DataDamaged,
    },
    Replay {
        id: "miaosha-decr",
        reproduces: Report {
            project: "MaJesTySA/miaosha_Shop",
            number: Some(3),
            title: "请问怎么解决“少卖”问题",
            url: "https://github.com/MaJesTySA/miaosha_Shop/issues/3",
        },
        also: &[
            Report {
                project: "techa03/goodsKill",
                number: Some(134),
                title: "秒杀场景八，Redis获取商品及扣库存不是原子操作",
                url: "https://github.com/techa03/goodsKill/issues/134",
            },
            Report {
                project: "haopengmai/dianping",
                number: Some(1),
                title: "秒杀可能出现的问题",
                url: "https://github.com/haopengmai/dianping/issues/1",
            },
        ],
        saw: "the stock was decremented in Redis and then placing the order failed; nothing rolled Redis back, so the unit was never sold (少卖, an undersell), and the demos' authors answered that failures were not handled yet",
        mechanism: "the grab takes its unit in Redis first and inserts the order afterwards; when PostgreSQL refuses the insert, nothing gives the unit back. Redis then holds less stock than the orders explain: sold out with units unsold, unless a cancel gives the unit back once the order surely does not exist.",
        scenario: Scenario::OrderInsertFails,
        strategy: StrategyName::RedisLuaStock,
        sets: &[],
        bug: &[("compensate", "off")],
        ours: &[("compensate", "on")],
        shows: Outcome::DataDamaged,
    },
];

impl Replay {
    /// The dials `variant` (`reported-bug` or `ours`) runs with: the
    /// shared ones, then its own, then the command line's `extra` ones.
    pub fn sets_of(&self, variant: &str, extra: &[(String, String)]) -> Vec<(String, String)> {
        let own = if variant == VARIANTS[0] {
            self.bug
        } else {
            self.ours
        };
        let mut sets = owned_sets(self.sets);
        sets.extend(owned_sets(own));
        sets.extend(extra.iter().cloned());
        sets
    }

    /// The scenario command that reruns `variant` on its own, at `sets`
    /// (its [`Replay::sets_of`]), its report under `out`.
    pub fn command(&self, variant: &str, sets: &[(String, String)], out: &Path) -> String {
        format!(
            "{} --out {}",
            crate::scenario::command_line(
                self.scenario,
                self.strategy,
                None,
                false,
                sets.iter().map(|(k, v)| (k, v)),
            ),
            out.join(self.id).join(variant).display()
        )
    }
}

/// `--list`: one line each, its id first.
pub fn list() -> ExitCode {
    for r in REPLAYS {
        let number = r
            .reproduces
            .number
            .map(|n| format!(" #{n}"))
            .unwrap_or_default();
        println!(
            "{:<20} {}{number} \"{}\" ({}) · {} · {}",
            r.id,
            r.reproduces.project,
            r.reproduces.title,
            r.reproduces.url,
            r.scenario.name(),
            r.strategy
        );
        for also in r.also {
            let number = also.number.map(|n| format!(" #{n}")).unwrap_or_default();
            println!(
                "{:<20} also {}{number} \"{}\" ({})",
                "", also.project, also.title, also.url
            );
        }
    }
    ExitCode::SUCCESS
}

/// One variant's result in `replays.json`.
#[derive(Debug, Serialize)]
pub struct VariantJson {
    /// The dials it ran with.
    pub sets: Vec<(String, String)>,
    /// The command that reruns it.
    pub command: String,
    /// k of n for each outcome (`null`: the case recorded none).
    pub outcomes: Option<Outcomes>,
    /// The replay's outcome, k of n.
    pub shows: Option<Rate>,
    /// Its case's verdict line.
    pub verdict: String,
}

/// One replay's entry in `replays.json`.
#[derive(Debug, Serialize)]
pub struct ReplayJson {
    pub id: &'static str,
    pub reproduces: Report,
    pub also: &'static [Report],
    pub saw: &'static str,
    pub mechanism: &'static str,
    pub scenario: &'static str,
    pub strategy: &'static str,
    /// The outcome the report is about.
    pub outcome: &'static str,
    /// The command that reruns the replay.
    pub command: String,
    /// `reported-bug` and `ours`.
    pub variants: std::collections::BTreeMap<&'static str, VariantJson>,
    /// The bug showed: k ≥ 1 of n.
    pub reproduced: bool,
    /// Ours showed none: 0 of n, n > 0.
    pub ours_holds: bool,
    /// The 95 % upper bound on ours' rate.
    pub ours_upper95: Option<f64>,
}

/// `DIR/replays.json`.
#[derive(Debug, Serialize)]
pub struct ReplaysJson {
    pub profile: &'static str,
    pub replays: Vec<ReplayJson>,
}

fn entry(
    replay: &'static Replay,
    cases: [Option<&CaseResult>; 2],
    options: &Options,
) -> ReplayJson {
    let out = &options.out;
    let mut variants = std::collections::BTreeMap::new();
    let mut rates = [None, None];
    for ((variant, case), rate) in VARIANTS.iter().zip(cases).zip(&mut rates) {
        let outcomes = case.and_then(|c| c.outcomes);
        *rate = outcomes.and_then(|o| replay.shows.of(&o));
        let sets = replay.sets_of(variant, &options.sets);
        variants.insert(
            *variant,
            VariantJson {
                command: replay.command(variant, &sets, out),
                sets,
                outcomes,
                shows: *rate,
                verdict: case.map_or_else(
                    || "did not run".to_owned(),
                    |c| format!("{} ({})", c.verdict.as_str(), c.verdict_reason),
                ),
            },
        );
    }
    let [bug, ours] = rates;
    ReplayJson {
        id: replay.id,
        reproduces: replay.reproduces,
        also: replay.also,
        saw: replay.saw,
        mechanism: replay.mechanism,
        scenario: replay.scenario.name(),
        strategy: replay.strategy.as_str(),
        outcome: replay.shows.as_str(),
        command: format!(
            "seckill-loadgen scenario replay {} --out {}",
            replay.id,
            out.display()
        ),
        variants,
        reproduced: bug.is_some_and(|r| r.k >= 1),
        ours_holds: ours.is_some_and(|r| r.k == 0 && r.n > 0),
        ours_upper95: ours.filter(|r| r.n > 0).map(|r| r.ci95[1]),
    }
}

/// The batches of `chosen`: each replay's two variants, one case each.
fn batches(chosen: &[&'static Replay], options: &Options) -> Vec<(Vec<Scenario>, Options)> {
    chosen
        .iter()
        .flat_map(|replay| {
            VARIANTS.iter().map(move |variant| {
                let mut one = options.clone();
                one.strategies = vec![replay.strategy];
                one.variants = Vec::new();
                one.sets = replay.sets_of(variant, &options.sets);
                one.sweep = None;
                one.locate = None;
                one.trials = 1;
                one.out = options.out.join(replay.id).join(variant);
                (vec![replay.scenario], one)
            })
        })
        .collect()
}

/// Run `ids` (every replay when empty) and write `DIR/replays.json`.
pub fn main<'a>(ids: &'a [&'static Replay], options: Options) -> seckill_load::Boxed<'a, ExitCode> {
    Box::pin(main_here(ids, options))
}

async fn main_here(ids: &[&'static Replay], options: Options) -> ExitCode {
    let chosen: Vec<&'static Replay> = if ids.is_empty() {
        REPLAYS.iter().collect()
    } else {
        ids.to_vec()
    };
    let out = options.out.clone();
    let batches = batches(&chosen, &options);
    let bar = seckill_load::progress::begin(options.quiet);
    let run = crate::scenario::run_batches_and_write(&batches);
    let Some(reports) = crate::scenario::until_interrupted(run, &options.database_url).await else {
        drop(bar);
        return ExitCode::from(130);
    };
    drop(bar);
    let reports = match reports {
        Ok(reports) => reports,
        Err(e) => {
            eprintln!("seckill-loadgen: the replays failed: {e:#}");
            return ExitCode::from(3);
        }
    };
    let mut cases = reports.iter().map(|r| r.scenarios.first());
    let replays: Vec<ReplayJson> = chosen
        .iter()
        .map(|replay| {
            let (bug, ours) = (cases.next().flatten(), cases.next().flatten());
            entry(replay, [bug, ours], &options)
        })
        .collect();
    print_table(&replays);
    let doc = ReplaysJson {
        profile: crate::scenario::profile(),
        replays,
    };
    if let Err(e) = write(&out, &doc) {
        eprintln!("seckill-loadgen: {e:#}");
        return ExitCode::from(3);
    }
    if doc.replays.iter().all(|r| r.reproduced && r.ours_holds) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn write(out: &Path, doc: &ReplaysJson) -> anyhow::Result<PathBuf> {
    use anyhow::Context as _;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let path = out.join("replays.json");
    std::fs::write(&path, serde_json::to_string_pretty(doc)? + "\n")
        .with_context(|| format!("writing {}", path.display()))?;
    println!("replays: {}", path.display());
    Ok(path)
}

fn rate_text(rate: Option<Rate>) -> String {
    rate.map_or_else(
        || "not measured".to_owned(),
        |r| format!("{} of {} (≤ {} % at 95 %)", r.k, r.n, r.upper_pct()),
    )
}

fn print_table(replays: &[ReplayJson]) {
    println!(
        "\n{:<20} {:<18} {:<30} {:<30} holds",
        "replay", "outcome", "reported bug", "ours"
    );
    for r in replays {
        let shows = |v: &str| rate_text(r.variants.get(v).and_then(|v| v.shows));
        println!(
            "{:<20} {:<18} {:<30} {:<30} {}",
            r.id,
            r.outcome,
            shows(VARIANTS[0]),
            shows(VARIANTS[1]),
            if r.reproduced && r.ours_holds {
                "yes"
            } else if !r.reproduced {
                "NO: the bug did not show"
            } else {
                "NO: ours showed it"
            }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_replay_names_its_report_and_switches_only_its_own_dials() {
        let mut ids = std::collections::HashSet::new();
        for r in REPLAYS {
            assert!(ids.insert(r.id), "{} twice", r.id);
            assert!(r.reproduces.url.starts_with("https://"), "{}", r.id);
            // The two variants set the same dials, to different values.
            fn names(sets: &[(&'static str, &'static str)]) -> Vec<&'static str> {
                sets.iter().map(|(k, _)| *k).collect()
            }
            assert_eq!(names(r.bug), names(r.ours), "{}", r.id);
            assert_ne!(r.bug, r.ours, "{}", r.id);
            // Every dial is one its scenario knows.
            for (k, _) in r.sets.iter().chain(r.bug) {
                assert!(
                    r.scenario.params().iter().any(|s| s.name == *k),
                    "{}: {} has no dial {k}",
                    r.id,
                    r.scenario.name()
                );
            }
            // The mechanism is two sentences.
            assert_eq!(r.mechanism.matches(". ").count() + 1, 2, "{}", r.id);
        }
    }

    #[test]
    fn a_variants_command_carries_its_dials_and_its_own_folder() {
        let r = REPLAYS
            .iter()
            .find(|r| r.id == "redisson-4698")
            .expect("listed");
        let extra = [("injections".to_owned(), "3".to_owned())];
        let sets = r.sets_of("reported-bug", &extra);
        let c = r.command("reported-bug", &sets, Path::new("out"));
        assert!(c.contains("--set ignore_lost_lease=on"), "{c}");
        assert!(c.contains("--strategies watchdog"), "{c}");
        assert!(c.ends_with("--out out/redisson-4698/reported-bug"), "{c}");
        // The command line's own dials run too, so the command carries them.
        assert!(c.contains("--set injections=3 --out"), "{c}");
        assert!(r
            .command("ours", &r.sets_of("ours", &[]), Path::new("out"))
            .contains("ignore_lost_lease=off"));
    }
}
