//! The atlas, end to end on three cells: one that breaks past a size (its
//! bracket located to 5 % of the TTL, each end on the side it was found
//! on), one that holds at every size (with the largest size tried and the
//! 95 % upper bound of its rate), and one the fault cannot reach (with the
//! reason) — the JSON, both pages and the map written.

use std::process::Command;

use seckill_testkit::{admin_database_url, workspace_binary};
use serde_json::Value;

fn cell<'a>(doc: &'a Value, strategy: &str, fault: &str) -> &'a Value {
    doc["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .find(|c| c["strategy"] == strategy && c["fault"] == fault)
        .unwrap_or_else(|| panic!("no cell {strategy}:{fault} in {doc}"))
}

/// k of the probe at `value` (resolved) in an outcome's probes.
fn k_at(outcome: &Value, value: f64) -> u64 {
    outcome["probes"]
        .as_array()
        .expect("probes")
        .iter()
        .find(|p| p["resolved"].as_f64() == Some(value))
        .and_then(|p| p["k"].as_u64())
        .unwrap_or_else(|| panic!("no probe at {value}: {outcome}"))
}

/// `atlas --quick --injections 4` on the three cells, under `out_dir`.
fn atlas(out_dir: &std::path::Path, more: &[&str]) -> std::process::Output {
    Command::new(workspace_binary("seckill-loadgen", "seckill-loadgen"))
        .args([
            "atlas",
            "--quick",
            "--quiet",
            "--injections",
            "4",
            "--cells",
            "set-nx-px-token:pause,pg-for-update:pause,mysql-get-lock:failover",
            "--out",
        ])
        .arg(out_dir)
        .arg("--app-bin")
        .arg(workspace_binary("seckill-app", "seckill-app"))
        .arg("--database-url")
        .arg(admin_database_url())
        .args(more)
        .output()
        .expect("run")
}

#[test]
fn three_cells_a_bracket_a_hold_and_a_fault_that_cannot_reach_the_lock() {
    let out_dir = std::env::temp_dir().join(format!("seckill-atlas-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out_dir);
    let out = atlas(&out_dir, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("3 cells in"), "{stdout}");
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("atlas.json")).expect("atlas.json"),
    )
    .expect("json");
    assert_eq!(doc["cells"].as_array().map(Vec::len), Some(3), "{doc}");

    // A TTL lock paused past its TTL: exclusion is first seen within 5 %
    // of the TTL (250 ms with --quick) of a size where it was not; the
    // bracket runs from a clean size 10 % of the TTL below that onset
    // (where one was probed) to one where half the injections or more
    // broke it.
    let lease = cell(&doc, "set-nx-px-token", "pause");
    assert_eq!(lease["dial"], "pause");
    assert_eq!(lease["ttl_ms"], 250, "{lease}");
    let bracket = &lease["exclusion"]["bracket"];
    let (Some(below), Some(above)) = (
        bracket["below_resolved"].as_f64(),
        bracket["above_resolved"].as_f64(),
    ) else {
        panic!("no bracket: {lease}");
    };
    assert!(above > below, "{lease}");
    assert_eq!(bracket["seen_below"], false, "{lease}");
    assert_eq!(k_at(&lease["exclusion"], below), 0, "{lease}");
    let probes = lease["exclusion"]["probes"].as_array().expect("probes");
    let n_above = probes
        .iter()
        .find(|p| p["resolved"].as_f64() == Some(above))
        .and_then(|p| p["n"].as_u64())
        .expect("n at the seen end");
    assert!(2 * k_at(&lease["exclusion"], above) >= n_above, "{lease}");
    let onset = bracket["onset"]["resolved"].as_f64().unwrap_or(above);
    let clean_below_onset: Vec<f64> = probes
        .iter()
        .filter(|p| p["k"] == 0)
        .filter_map(|p| p["resolved"].as_f64())
        .filter(|x| *x < onset)
        .collect();
    let nearest = clean_below_onset.iter().copied().fold(f64::MIN, f64::max);
    assert!(onset - nearest <= 12.5, "{lease}");
    assert!(
        onset - below >= 25.0 || below == nearest,
        "the clean end is 10 % of the TTL from the onset, or the nearest clean size: {lease}"
    );
    assert!(
        lease["command"]
            .as_str()
            .is_some_and(|c| c.contains("atlas --cells set-nx-px-token:pause")),
        "{lease}"
    );
    assert!(
        lease["check"]
            .as_str()
            .is_some_and(|c| c.ends_with(&format!(
                "--sweep pause={},{}",
                bracket["below"].as_str().expect("below"),
                bracket["above"].as_str().expect("above")
            ))),
        "{lease}"
    );

    // A lock of the transaction itself: never broken, up to 3 TTL.
    let row = cell(&doc, "pg-for-update", "pause");
    for outcome in ["exclusion", "data"] {
        let o = &row[outcome];
        assert_eq!(o["holds_up_to"], "3ttl", "{row}");
        assert_eq!(
            (o["k"].as_u64(), o["n"].as_u64()),
            (Some(0), Some(4)),
            "{row}"
        );
        // 0 of 4: the rate is below 49 % at 95 %, no tighter.
        let upper = o["upper95"].as_f64().expect("upper95");
        assert!((0.45..0.55).contains(&upper), "{row}");
    }

    // No Redis to fail over: the reason, in both outcomes, no probe.
    let session = cell(&doc, "mysql-get-lock", "failover");
    for outcome in ["exclusion", "data"] {
        assert!(
            session[outcome]["not_applicable"]
                .as_str()
                .is_some_and(|r| r.contains("single-instance Redis locks")),
            "{session}"
        );
    }

    let page = std::fs::read_to_string(out_dir.join("atlas.md")).expect("atlas.md");
    assert!(page.contains("## The map"), "{page}");
    assert!(page.contains("`set-nx-px-token`"), "{page}");
    let zh = std::fs::read_to_string(out_dir.join("zh").join("atlas.md")).expect("zh");
    assert!(zh.contains("## 图谱"), "{zh}");
    let svg = std::fs::read_to_string(out_dir.join("atlas").join("atlas.svg")).expect("svg");
    assert!(svg.starts_with("<svg"), "{svg}");

    // --reuse: every probe read back, nothing run again, the same cells.
    let again = atlas(&out_dir, &["--reuse"]);
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert_eq!(again.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("set-nx-px-token · pause: ") && stdout.contains("probes read back"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("== atlas set-nx-px-token · pause: pause="),
        "nothing runs again: {stdout}"
    );
    let reread: Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("atlas.json")).expect("atlas.json"),
    )
    .expect("json");
    for (strategy, fault) in [("set-nx-px-token", "pause"), ("pg-for-update", "pause")] {
        let (before, after) = (cell(&doc, strategy, fault), cell(&reread, strategy, fault));
        assert_eq!(
            before["exclusion"], after["exclusion"],
            "{strategy}:{fault}"
        );
        assert_eq!(before["data"], after["data"], "{strategy}:{fault}");
    }
    let _ = std::fs::remove_dir_all(&out_dir);
}
