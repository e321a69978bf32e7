//! `seckill-loadgen scenario all --quick` end to end: real replicas,
//! redis-servers, proxies and faults started by the scenario runner itself,
//! against the test PostgreSQL. Every case must match what its design
//! predicts, and the headline failures must be *measured*: the watchdog's
//! frozen holder and Redlock's clock jump overlap, fencing keeps the stock
//! exact through the same pause; Redlock's validity check refuses a quorum
//! gathered across a pause (and without it, overlaps); every fault is
//! proven to land.

use std::process::Command;

use seckill_testkit::{admin_database_url, mysql_test_url, workspace_binary};
use serde_json::Value;

fn case<'a>(cases: &'a [Value], name: &str, strategy: &str, variant: Option<&str>) -> &'a Value {
    cases
        .iter()
        .find(|c| {
            c["name"] == name
                && c["strategy"] == strategy
                && variant.is_none_or(|v| c["variant"] == v)
        })
        .unwrap_or_else(|| panic!("no case {name} / {strategy} / {variant:?}"))
}

#[test]
fn every_scenario_ends_as_its_design_predicts() {
    let loadgen = workspace_binary("seckill-loadgen", "seckill-loadgen");
    let app = workspace_binary("seckill-app", "seckill-app");

    let list = Command::new(&loadgen)
        .args(["scenario", "--list"])
        .output()
        .expect("run scenario --list");
    assert!(list.status.success());
    let names: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect();
    for name in [
        "gc-pause",
        "slow-network",
        "clock-jump",
        "redlock-restart",
        "failover",
        "crash-holder",
        "clock-skew",
        "unlock-before-commit",
        "dependency-loss",
        "acquire-pause",
        "clock-slew",
        "coordinator-crash",
        "connection-cut",
        "partition-precommit",
        "order-insert-fails",
        "rolling-restart",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} listed: {names:?}");
    }

    let out = std::env::temp_dir().join(format!("seckill-scenarios-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let run = Command::new(&loadgen)
        .args(["scenario", "all", "--quick", "--quiet", "--out"])
        .arg(&out)
        .arg("--app-bin")
        .arg(&app)
        .arg("--database-url")
        .arg(admin_database_url())
        .arg("--mysql-url")
        .arg(mysql_test_url())
        .output()
        .expect("run scenario all");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        // stderr first: it names each case that did not end as predicted.
        "scenario all failed ({:?})\n{stderr}\n{stdout}",
        run.status
    );
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("scenarios.json")).expect("scenarios.json written"),
    )
    .expect("valid JSON");
    let cases = report["scenarios"].as_array().expect("scenarios array");
    for name in &names {
        assert!(cases.iter().any(|c| &c["name"] == name), "{name} ran");
    }
    for c in cases {
        assert_eq!(c["verdict"], "as-expected", "{c}\n{stdout}");
        for key in [
            "overlaps",
            "max_holders",
            "oversold",
            "lost_updates",
            "duplicates",
            "rejected",
            "busy",
            "orders",
        ] {
            assert!(c["observed"][key].is_number(), "observed.{key} in {c}");
        }
        // Whatever the fault, no acknowledged order vanished and no order
        // appeared that no answer explains; the history had no gap.
        assert_eq!(c["observed"]["acknowledged_missing"], 0, "{c}");
        assert_eq!(c["observed"]["unacknowledged_present"], 0, "{c}");
        assert!(c["observed"]["indeterminate"]["found"].is_u64(), "{c}");
        assert_eq!(c["observed"]["history_errors"], 0, "{c}");
    }
    // The headline failures, measured.
    let watchdog = case(cases, "gc-pause", "watchdog", None);
    assert!(
        watchdog["observed"]["overlaps"].as_u64() > Some(0),
        "{watchdog}"
    );
    let jump = case(cases, "clock-jump", "redlock", Some("partition+jump"));
    assert!(jump["observed"]["overlaps"].as_u64() > Some(0), "{jump}");
    let control = case(cases, "clock-jump", "redlock", Some("partition"));
    assert_eq!(control["observed"]["overlaps"], 0, "{control}");
    // antirez's reply: the validity check refuses a quorum gathered across
    // a pause; switched off, the paused client overlaps.
    let check = case(cases, "acquire-pause", "redlock", Some("check"));
    assert_eq!(check["observed"]["overlaps"], 0, "{check}");
    let no_check = case(cases, "acquire-pause", "redlock", Some("no-check"));
    assert!(
        no_check["observed"]["overlaps"].as_u64() > Some(0),
        "{no_check}"
    );
    // Every case proved its fault landed, and says how.
    for c in cases {
        let steps = c["steps"].as_array().expect("steps");
        assert!(
            steps
                .iter()
                .any(|s| s.as_str().is_some_and(|s| s.contains("proof: "))),
            "no proof in {c}"
        );
    }
    let fenced = case(cases, "gc-pause", "fenced", None);
    assert_eq!(fenced["observed"]["lost_updates"], 0, "{fenced}");
    assert_eq!(fenced["observed"]["oversold"], 0, "{fenced}");
    // The consensus locks lose their lease/session under the same freeze.
    for strategy in ["etcd-lease", "zk-ephemeral-seq"] {
        let frozen = case(cases, "gc-pause", strategy, None);
        assert!(
            frozen["observed"]["overlaps"].as_u64() > Some(0),
            "{frozen}"
        );
    }
    // A lock key without a TTL stalls every kill; one with a TTL sells
    // again after each.
    let setnx = case(cases, "crash-holder", "setnx", None);
    assert!(setnx["observed"]["recovered_after_ms"].is_null(), "{setnx}");
    assert_eq!(
        setnx["outcomes"]["stalled"]["k"], setnx["outcomes"]["stalled"]["n"],
        "{setnx}"
    );
    let ttl = case(cases, "crash-holder", "set-nx-px-token", None);
    assert!(ttl["observed"]["recovered_after_ms"].is_number(), "{ttl}");
    assert_eq!(ttl["outcomes"]["stalled"]["k"], 0, "{ttl}");
    // Every scenario injects its fault a fixed number of times, each
    // injection proven and judged on its own, and the verdict follows
    // from where the interval lies (a case that could not run would have
    // made the run exit 4, failing the assertion on its status above).
    for c in cases {
        let injections = c["injections"].as_array().expect("injections");
        // 12 under --quick; partition-precommit injects 14 (a round whose
        // grab is not caught between its sides' prepares is not proven).
        let fixed = if c["name"] == "partition-precommit" {
            14
        } else {
            12
        };
        if c["name"] == "connection-cut" || c["name"] == "coordinator-crash" {
            // A cut or crash not counted (an overrun on a busy machine, a
            // kill that caught the next grab) is injected again, up to a
            // third more rounds: 12 proven whenever it can.
            assert!((fixed..=fixed + 4).contains(&injections.len()), "{c}");
        } else {
            assert_eq!(injections.len(), fixed, "{c}");
        }
        // A crash can land while the holder is between its SETs (node 3
        // held no key yet): that round is recorded, not counted.
        let proven = injections.iter().filter(|i| i["proof"].is_string()).count();
        // Every injection that broke something keeps its trace (the
        // counterexample to a "never" claim): the overlapping sections,
        // the first overlaps, the audit row and the orders of its round.
        for i in injections {
            let broke = i["exclusion_broken"] == true || i["data_damaged"] == true;
            assert_eq!(i["trace"].is_object(), broke, "{i}");
            if i["exclusion_broken"] == true {
                assert!(
                    !i["trace"]["first_overlaps"]
                        .as_array()
                        .expect("first overlaps")
                        .is_empty(),
                    "{i}"
                );
            }
            if broke {
                assert!(i["trace"]["audit"]["product_id"] == 1, "{i}");
            }
        }
        assert!(proven >= 10, "{proven} of {fixed} proven: {c}");
        // A commit protocol (2PC, 3PC) is judged on its data, its stall
        // measured beside it; a killed lock holder's stall is judged.
        let (stalled, refused) = (
            c["outcomes"]["stalled"].is_object(),
            c["outcomes"]["refused"].is_object(),
        );
        let data = c["guarantee"] == "data";
        let judged = match (stalled, refused, data) {
            (true, _, true) => "data_damaged",
            (true, _, false) => "stalled",
            (false, true, _) => "refused",
            (false, false, false) => "exclusion_broken",
            (false, false, true) => "data_damaged",
        };
        let rate = &c["outcomes"][judged];
        assert_eq!(rate["n"], proven, "{c}");
        assert_eq!(c["standing"], "agrees", "{c}");
        let [lo, hi] = [rate["ci95"][0].as_f64(), rate["ci95"][1].as_f64()];
        let (lo, hi) = (lo.expect("lo"), hi.expect("hi"));
        if c["expected"] == "breaks" {
            assert!(lo > 0.25, "{c}");
        } else {
            assert!(hi < 0.25, "{c}");
        }
    }
    // A power cut loses the AOF's unsynced bytes, and appendfsync always
    // has none to lose: every fsync-always crash kept node 3's key.
    let always = case(cases, "redlock-restart", "redlock", Some("fsync-always"));
    for i in always["injections"].as_array().expect("injections") {
        let proof = i["proof"].as_str().unwrap_or("");
        assert!(
            proof.is_empty()
                || proof.contains("still holds it") && proof.contains("lost 0 unsynced"),
            "{i}"
        );
    }
    // 2PC's coordinator killed between the phases: everyone waits (busy)
    // until it restarts; recovery from its log leaves the stock exact, and
    // without the log a crash inside phase two loses a unit's decrement.
    for variant in [
        "decision-log",
        "decision-log-mid-commit",
        "no-decision-log",
        "no-decision-log-mid-commit",
    ] {
        let c = case(cases, "coordinator-crash", "pg-2pc", Some(variant));
        // Each counted crash blocked b: busy answers, no order (2PC's
        // stall, k of n).
        let stalled = &c["outcomes"]["stalled"];
        assert!(stalled["n"].as_u64() > Some(0), "{c}");
        assert_eq!(stalled["k"], stalled["n"], "2PC blocks at every crash: {c}");
        assert!(c["observed"]["recovered_after_ms"].is_number(), "{c}");
        // A unit's decrement lost at every counted crash inside phase two
        // without the log; at none otherwise (a crash that also caught
        // another grab mid-commit is not counted, and may lose one).
        let damaged = &c["outcomes"]["data_damaged"];
        if variant == "no-decision-log-mid-commit" {
            assert_eq!(damaged["k"], damaged["n"], "{c}");
            assert!(
                c["observed"]["lost_updates"].as_u64() >= damaged["k"].as_u64(),
                "{c}"
            );
        } else {
            assert_eq!(damaged["k"], 0, "{variant}: {c}");
        }
        assert_eq!(c["observed"]["oversold"], 0, "{c}");
    }
    // 3PC, the same kill after both pre-commits: the participants commit
    // at their timeout, b sells on, nothing is half-written.
    for variant in ["decision-log", "decision-log-mid-commit"] {
        let c = case(cases, "coordinator-crash", "pg-3pc", Some(variant));
        let stalled = &c["outcomes"]["stalled"];
        assert!(stalled["n"].as_u64() > Some(0), "{c}");
        assert!(
            stalled["k"].as_u64() < stalled["n"].as_u64(),
            "3PC sells on while its coordinator is dead: {c}"
        );
        assert_eq!(c["outcomes"]["data_damaged"]["k"], 0, "{c}");
    }
    // The partition during pre-commit: 3PC splits (a unit gone with no
    // order), 2PC blocks and keeps the data.
    let split = case(cases, "partition-precommit", "pg-3pc", None);
    let damaged = &split["outcomes"]["data_damaged"];
    assert!(damaged["n"].as_u64() > Some(0), "{split}");
    assert_eq!(
        damaged["k"], damaged["n"],
        "3PC splits at every cut: {split}"
    );
    assert!(
        split["observed"]["undersold"].as_u64() >= damaged["k"].as_u64(),
        "{split}"
    );
    let sold_on = &split["outcomes"]["stalled"];
    assert!(
        sold_on["k"].as_u64() < sold_on["n"].as_u64(),
        "3PC sells on through the cut: {split}"
    );
    let blocked = case(cases, "partition-precommit", "pg-2pc", None);
    assert_eq!(blocked["outcomes"]["data_damaged"]["k"], 0, "{blocked}");
    let stalled = &blocked["outcomes"]["stalled"];
    assert_eq!(
        stalled["k"], stalled["n"],
        "2PC waits out the cut: {blocked}"
    );
    assert!(out.join("scenarios.html").exists());
    let _ = std::fs::remove_dir_all(&out);
}
