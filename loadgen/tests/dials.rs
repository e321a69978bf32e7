//! The dials of the fault scenarios, end to end: a dial a scenario does
//! not have is refused by name before anything starts; `--params` lists
//! each dial; a pause placed after the lock's last check damages the data
//! where one shorter than the TTL leaves it exact (Kleppmann's point,
//! measured); and a case that cannot run here is `not-run`, exit 4,
//! naming the setting — never a pass.

use std::process::{Command, Stdio};
use std::time::Duration;

use seckill_testkit::{admin_database_url, free_port, mysql_test_url, workspace_binary};
use serde_json::Value;

fn loadgen() -> Command {
    Command::new(workspace_binary("seckill-loadgen", "seckill-loadgen"))
}

/// The tests that run whole cases take turns: each starts replicas,
/// Redis and a load, and a measured one (a 50 ms pause against a 250 ms
/// TTL must hold) would otherwise share two cores with three others and
/// see a stall of its own making as an overlap.
fn one_case_run_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[test]
fn a_dial_the_scenario_does_not_have_is_refused_by_name() {
    let out = loadgen()
        .args(["scenario", "gc-pause", "--set", "paws=2ttl"])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("gc-pause has no dial \"paws\""), "{stderr}");
    assert!(stderr.contains("pause, where"), "{stderr}");
    let out = loadgen()
        .args([
            "scenario",
            "gc-pause",
            "--sweep",
            "where=inside,after-check",
        ])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("where=inside"), "{stderr}");
}

#[test]
fn params_lists_each_dial_with_its_unit_default_and_meaning() {
    let out = loadgen()
        .args(["scenario", "gc-pause", "slow-network", "--params"])
        .output()
        .expect("run");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "ttl_ms",
        "work_ms",
        "injections",
        "pause            ms or Nttl",
        "where            before-check | after-check | anywhere",
        "node_timeout_ms",
        "delay",
    ] {
        assert!(text.contains(line), "{line} in {text}");
    }
}

fn rate(case: &Value, outcome: &str) -> (u64, u64) {
    let r = &case["outcomes"][outcome];
    (r["k"].as_u64().expect("k"), r["n"].as_u64().expect("n"))
}

#[test]
fn a_pause_after_the_last_check_damages_the_data_and_one_shorter_than_the_ttl_does_not() {
    let _turn = one_case_run_at_a_time();
    let out_dir = std::env::temp_dir().join(format!("seckill-dials-{}", std::process::id()));
    let out = loadgen()
        .args([
            "scenario",
            "gc-pause",
            "--strategies",
            "redlock",
            "--set",
            "where=after-check",
            "--sweep",
            "pause=0.3ttl,2.5ttl",
            "--quick",
            "--quiet",
            "--out",
        ])
        .arg(&out_dir)
        .arg("--app-bin")
        .arg(workspace_binary("seckill-app", "seckill-app"))
        .arg("--database-url")
        .arg(admin_database_url())
        .arg("--mysql-url")
        .arg(mysql_test_url())
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("scenarios.json")).expect("report"),
    )
    .expect("json");
    let cases = report["scenarios"].as_array().expect("cases");
    assert_eq!(cases.len(), 2, "{stdout}");
    // Below the TTL: the key outlives the pause, nobody else enters.
    let short = &cases[0];
    assert_eq!(short["params"]["pause_as_typed"], "0.3ttl");
    // The fault record carries the dials in force under their own names
    // (the pause in ms, the position as typed), and each injection the
    // holder the fault touched.
    assert_eq!(
        short["faults"]["pause"], short["params"]["pause"],
        "{short}"
    );
    assert_eq!(short["faults"]["where"], "after-check", "{short}");
    assert_eq!(short["faults"]["ttl_ms"], 250, "{short}");
    assert!(short["faults"].get("sigstop_ms").is_none(), "{short}");
    let injections = short["injections"].as_array().expect("injections");
    assert!(
        injections.iter().all(|i| i["holder"] == "a"),
        "{injections:?}"
    );
    assert_eq!(rate(short, "exclusion_broken"), (0, 12), "{short}");
    assert_eq!(rate(short, "data_damaged"), (0, 12), "{short}");
    // Past it, after the check: the woken holder writes what it read
    // before the next holder's commit.
    let long = &cases[1];
    let (damaged, n) = rate(long, "data_damaged");
    assert_eq!(n, 12, "{long}");
    assert!(damaged >= 7, "data damaged {damaged} of {n}: {long}");
    // The swept cases carry the curve, and the page draws it.
    assert_eq!(long["sweep"]["key"], "pause");
    assert_eq!(long["sweep"]["points"].as_array().map(Vec::len), Some(2));
    let page = std::fs::read_to_string(out_dir.join("scenarios.html")).expect("html");
    assert!(
        page.contains("<svg") && page.contains("data damaged"),
        "the curve is drawn"
    );
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// A PostgreSQL of its own with `max_prepared_transactions = 0` (the
/// server's default), on a free port; stopped when dropped.
struct BarePostgres {
    dir: std::path::PathBuf,
    child: std::process::Child,
    port: u16,
}

impl BarePostgres {
    fn start() -> Self {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL server binaries under /usr/lib/postgresql")
            .filter_map(Result::ok)
            .map(|e| e.path().join("bin"))
            .find(|b| b.join("initdb").exists())
            .expect("initdb");
        let dir = std::env::temp_dir().join(format!("seckill-bare-pg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        // initdb and postgres refuse to run as root: as `postgres` then.
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"0"));
        let run_as = |program: &std::path::Path| {
            if root {
                let mut c = Command::new("runuser");
                c.args(["-u", "postgres", "--"]).arg(program);
                c
            } else {
                Command::new(program)
            }
        };
        if root {
            let ok = Command::new("chown")
                .args(["-R", "postgres"])
                .arg(&dir)
                .status();
            assert!(ok.is_ok_and(|s| s.success()), "chown the cluster's folder");
        }
        let data = dir.join("data");
        let init = run_as(&bin.join("initdb"))
            .args(["-D"])
            .arg(&data)
            .args(["-U", "postgres", "-A", "trust", "--no-sync"])
            .stdout(Stdio::null())
            .status()
            .expect("initdb");
        assert!(init.success(), "initdb");
        let port = free_port();
        let child = run_as(&bin.join("postgres"))
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-k"])
            .arg(&dir)
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "max_prepared_transactions=0",
                "-c",
                "fsync=off",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("postgres");
        // Up means accepting connections, not only listening (a server
        // still starting answers "the database system is starting up").
        let ready = bin.join("pg_isready");
        seckill_testkit::eventually_blocking(
            "the bare PostgreSQL accepts connections",
            Duration::from_secs(30),
            || {
                Command::new(&ready)
                    .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres"])
                    .stdout(Stdio::null())
                    .status()
                    .map_err(|e| e.to_string())
                    .and_then(|s| s.success().then_some(()).ok_or(s.to_string()))
            },
        );
        Self { dir, child, port }
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for BarePostgres {
    fn drop(&mut self) {
        // SIGINT to the postmaster itself (its pid heads postmaster.pid;
        // a runuser in between does not pass it on): a fast shutdown.
        let pid = std::fs::read_to_string(self.dir.join("data/postmaster.pid"))
            .ok()
            .and_then(|t| t.lines().next().map(str::to_owned));
        if let Some(pid) = pid {
            let _ = Command::new("kill").args(["-INT", &pid]).status();
        }
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn a_case_that_cannot_run_here_is_not_run_and_exits_4_naming_the_setting() {
    let _turn = one_case_run_at_a_time();
    let pg = BarePostgres::start();
    let out_dir = std::env::temp_dir().join(format!("seckill-not-run-{}", std::process::id()));
    let out = loadgen()
        .args(["scenario", "coordinator-crash", "--quiet", "--out"])
        .arg(&out_dir)
        .arg("--app-bin")
        .arg(workspace_binary("seckill-app", "seckill-app"))
        .arg("--database-url")
        .arg(pg.url())
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stdout}\n{stderr}");
    for strategy in ["pg-2pc", "pg-3pc"] {
        assert!(
            stderr.contains(&format!("NOT RUN coordinator-crash · {strategy}")),
            "{stderr}"
        );
    }
    assert!(stderr.contains("max_prepared_transactions"), "{stderr}");
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("scenarios.json")).expect("report"),
    )
    .expect("json");
    let cases = report["scenarios"].as_array().expect("cases");
    // pg-2pc's four variants and pg-3pc's two.
    assert_eq!(cases.len(), 6, "each variant reported");
    assert!(cases.iter().all(|c| c["verdict"] == "not-run"), "{report}");
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// A case that fails midway (here: every replica after the first refuses
/// to start) is recorded `inconclusive` with its reason and the logs of
/// its processes; the run goes on to the next case and writes its report
/// (exit 4: inconclusive is not passed), never losing the finished cases.
#[test]
fn a_case_that_fails_is_inconclusive_with_its_reason_and_logs_and_the_run_goes_on() {
    let _turn = one_case_run_at_a_time();
    use std::os::unix::fs::PermissionsExt as _;
    let dir = std::env::temp_dir().join(format!("seckill-failing-case-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a folder");
    // The probe that lists the strategies runs the real binary; every
    // replica a case starts after it fails at once.
    let count = dir.join("starts");
    let wrapper = dir.join("seckill-app");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nn=$(cat '{count}' 2>/dev/null || echo 0)\necho $((n + 1)) > '{count}'\n\
             if [ \"$n\" = 0 ]; then exec '{real}' \"$@\"; fi\n\
             echo 'wrapper: this replica refuses to start (a failing case, on purpose)' >&2\nexit 1\n",
            count = count.display(),
            real = workspace_binary("seckill-app", "seckill-app").display()
        ),
    )
    .expect("write the wrapper");
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let out_dir = dir.join("report");
    let out = loadgen()
        .args([
            "scenario",
            "gc-pause",
            "--strategies",
            "set-nx-px-token,fenced",
            "--quick",
            "--quiet",
            "--jobs",
            "1",
            "--out",
        ])
        .arg(&out_dir)
        .arg("--app-bin")
        .arg(&wrapper)
        .arg("--database-url")
        .arg(admin_database_url())
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("scenarios.json")).expect("the report is written"),
    )
    .expect("json");
    let cases = report["scenarios"].as_array().expect("cases");
    let strategies: Vec<&str> = cases
        .iter()
        .filter_map(|c| c["strategy"].as_str())
        .collect();
    assert_eq!(
        strategies,
        ["set-nx-px-token", "fenced"],
        "both cases ran: {report}"
    );
    for c in cases {
        assert_eq!(c["verdict"], "inconclusive", "{c}");
        let reason = c["verdict_reason"].as_str().expect("a reason");
        assert!(reason.contains("the case failed"), "{reason}");
        let logs = reason
            .rsplit("the logs of its processes: ")
            .next()
            .expect("the logs' folder");
        let replica = std::fs::read_to_string(std::path::Path::new(logs).join("replica-a.log"))
            .expect("replica a's log kept");
        assert!(replica.contains("refuses to start"), "{replica}");
        assert!(
            stderr.contains(&format!(
                "inconclusive gc-pause · {}",
                c["strategy"].as_str().unwrap_or("?")
            )),
            "{stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--locate`: both ends, then bisection, until the two probes on either
/// side of the flip are at most 5 % of the TTL apart; every probe is a
/// case of its own with the dials that ran, and the bracket's ends fall
/// on the sides they were found on.
#[test]
fn locate_brackets_the_pause_from_which_a_frozen_holder_overlaps() {
    let _turn = one_case_run_at_a_time();
    let out_dir = std::env::temp_dir().join(format!("seckill-locate-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out_dir);
    let out = loadgen()
        .args([
            "scenario",
            "gc-pause",
            "--strategies",
            "set-nx-px-token",
            "--quick",
            "--quiet",
            "--set",
            "injections=6",
            "--locate",
            "pause=0.2ttl..2ttl",
            "--out",
        ])
        .arg(&out_dir)
        .arg("--app-bin")
        .arg(workspace_binary("seckill-app", "seckill-app"))
        .arg("--database-url")
        .arg(admin_database_url())
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("scenarios.json")).expect("report"),
    )
    .expect("json");
    let located = &report["located"][0];
    assert_eq!(located["key"], "pause", "{located}");
    assert_eq!(located["outcome"], "exclusion_broken", "{located}");
    let bracket = &located["bracket"];
    let (below, above) = (
        bracket["below_resolved"].as_f64().expect("below"),
        bracket["above_resolved"].as_f64().expect("above"),
    );
    // TTL 250 ms (--quick): at most 12.5 ms wide.
    assert!(above - below <= 12.5, "{located}");
    assert_eq!(bracket["seen_below"], false, "{located}");
    let probes = located["probes"].as_array().expect("probes");
    assert!(
        probes.len() >= 4,
        "ends and at least two midpoints: {located}"
    );
    let side = |value: f64| {
        let p = probes
            .iter()
            .find(|p| p["resolved"].as_f64() == Some(value))
            .expect("the probe");
        p["exclusion_broken"]["k"].as_u64().expect("k") > 0
    };
    assert!(!side(below) && side(above), "{located}");
    // Every probe is a case with the dials that ran (the pause in ms).
    let cases = report["scenarios"].as_array().expect("cases");
    assert_eq!(cases.len(), probes.len(), "{report}");
    for case in cases {
        assert!(case["params"]["pause"].is_u64(), "{case}");
        assert_eq!(case["params"]["ttl_ms"], 250, "{case}");
    }
    assert!(
        stdout.contains("located gc-pause · set-nx-px-token"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&out_dir);
}
