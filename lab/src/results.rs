//! `seckill-lab results` (`make results`): the one run the README's and
//! the workshop's figures come from, written to docs/results.md — dated,
//! with the commit and the machine:
//!
//! 1. `make demo` (scripts/demo.sh): the release build, the stack and the
//!    demo's side-by-side comparison — the README's table, rewritten from
//!    it between its `results:demo` markers;
//! 2. the workshop's exercise 1, its first shell block run as
//!    docs/workshop.md writes it (after `source .demo/env`);
//! 3. every fault scenario, as `make scenarios` runs them (the workshop's
//!    exercises 2–8 and the wrap-up), its report read back through the
//!    load generator's own [`ScenarioReport`].
//!
//! Every step's output is kept in loadgen-report/results/. The demo stays
//! up afterwards, as after `make demo`. Knobs: `SECKILL_BIN_DIR` (other
//! binaries, e.g. target/debug: the file then says so — a debug build's
//! figures are not the ones to publish), `RESULTS_OUT` (docs/results.md),
//! `SCENARIO_FLAGS`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context};
use regex::Regex;
use seckill_faults::scenario::ScenarioReport;
use seckill_load::judge::CaseVerdict;

use crate::docs;
use seckill_load::progress;

/// Where each step's output is kept.
const OUT: &str = "loadgen-report/results";
/// The README's table sits between these.
const MARKERS: (&str, &str) = ("<!-- results:demo -->", "<!-- /results:demo -->");

/// Run `program args` from `root` with its stdout and stderr shown and
/// kept in `log`; its exit code (`None`: killed) and seconds taken.
fn logged(
    root: &Path,
    log: &Path,
    program: &str,
    args: &[&str],
    envs: &[(&str, &str)],
) -> anyhow::Result<(Option<i32>, u64)> {
    let started = Instant::now();
    // `sh -c 'exec "$@" 2>&1'`: both streams through one pipe, in order.
    let mut child = Command::new("sh")
        .args(["-c", "exec \"$@\" 2>&1", "sh", program])
        .args(args)
        .envs(envs.iter().copied())
        .current_dir(root)
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("run {program}"))?;
    let mut file =
        std::fs::File::create(log).with_context(|| format!("create {}", log.display()))?;
    let stdout = child.stdout.take().context("the child's output")?;
    let verdict = Regex::new(r"^\s*\S+ \S+\s+\S+\s+(as-expected|UNEXPECTED|inconclusive|not-run) ")
        .expect("a valid regex");
    for line in BufReader::new(stdout).lines() {
        let line = line.with_context(|| format!("read {program}'s output"))?;
        // The scenarios' own count and each case's verdict line move the
        // bar (drawn on a terminal only).
        if let Some(n) = line.strip_prefix(seckill_faults::scenario::PLANNED) {
            progress::planned(n.trim().parse().with_context(|| {
                format!("{program}: a planned count that is not a number: {n:?}")
            })?);
        } else if let Some(case) = line.strip_prefix("== ") {
            progress::started(case);
        } else if verdict.is_match(&line) {
            progress::finished_any();
        }
        progress::line(&line);
        writeln!(file, "{line}").with_context(|| format!("write {}", log.display()))?;
    }
    let status = child
        .wait()
        .with_context(|| format!("wait for {program}"))?;
    Ok((status.code(), started.elapsed().as_secs()))
}

/// Copy the folder `from` to `to`, subfolders too.
fn copy_folder(from: &Path, to: &Path) -> anyhow::Result<()> {
    for file in crate::util::files_under(from)? {
        let target = to.join(file.strip_prefix(from)?);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(&file, &target).with_context(|| format!("copy {}", file.display()))?;
    }
    Ok(())
}

/// `N cores (model), M GiB, Linux release`, from this machine.
fn machine() -> String {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    machine_from(
        std::thread::available_parallelism().map_or(0, usize::from),
        &read("/proc/cpuinfo"),
        &read("/proc/meminfo"),
        &read("/proc/sys/kernel/osrelease"),
    )
}

/// The machine line from what `/proc` said; what it did not say reads
/// "unknown", never 0.
fn machine_from(cores: usize, cpuinfo: &str, meminfo: &str, release: &str) -> String {
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map_or("unknown CPU", |(_, m)| m.trim());
    // Unread, the memory says so: never "0 GiB".
    let memory = crate::util::number_after(meminfo, "MemTotal:").map_or_else(
        || "memory unknown".to_owned(),
        |kib| format!("{} GiB", (kib / (1024.0 * 1024.0)).floor()),
    );
    let cores = if cores == 0 {
        "cores unknown".to_owned()
    } else {
        format!("{cores} cores")
    };
    let release = match release.trim() {
        "" => "release unknown",
        known => known,
    };
    format!("{cores} ({model}), {memory}, Linux {release}")
}

/// The commit, and whether the code measured differs from it.
fn commit(root: &Path) -> String {
    let short = crate::util::first_line("git", &["rev-parse", "--short", "HEAD"], "unknown");
    let clean = Command::new("git")
        .args(["diff", "--quiet", "HEAD", "--"])
        .args([
            "app",
            "loadgen",
            "wire",
            "proxy",
            "testkit",
            "migrations",
            "Cargo.lock",
        ])
        .current_dir(root)
        .status()
        .is_ok_and(|s| s.success());
    if clean {
        short
    } else {
        format!("{short} + uncommitted changes")
    }
}

/// A loadgen report.md without its title, its headings one level down.
fn report_md(folder: &Path) -> anyhow::Result<String> {
    let path = folder.join("report.md");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
    let body = text.split_once('\n').map_or("", |(_, rest)| rest).trim();
    Ok(Regex::new(r"(?m)^#")?.replace_all(body, "###").into_owned())
}

/// The demo's "run again" command as a reader types it after `source
/// .demo/env`: no path or port of this machine.
fn demo_command(log: &str) -> String {
    let Some(line) = log.lines().find(|l| l.contains("run again")) else {
        return String::new();
    };
    let command = line.split_once("run again").map_or("", |(_, c)| c).trim();
    let urls = Regex::new(r"--url \S+").expect("a valid regex");
    let loadgen = Regex::new(r"\S*/seckill-loadgen\b").expect("a valid regex");
    let command = urls.replace_all(command, "--url $$A,$$B,$$C");
    loadgen.replace_all(&command, "$$L").into_owned()
}

/// The `--out` folders a shell block names, in its order.
fn out_folders(block: &str) -> Vec<String> {
    let re = Regex::new(r"--out (\S+)").expect("a valid regex");
    re.captures_iter(block).map(|c| c[1].to_owned()).collect()
}

/// The README's table between [`MARKERS`], replaced by `table`.
fn with_table(readme: &str, table: &str) -> Option<String> {
    let (start, end) = MARKERS;
    let a = readme.find(start)? + start.len();
    let b = readme.find(end)?;
    (a <= b).then(|| format!("{}\n{table}\n{}", &readme[..a], &readme[b..]))
}

/// What the run measured, for [`page`].
struct Run {
    date: String,
    commit: String,
    machine: String,
    build: String,
    demo_s: u64,
    exercise_s: u64,
    scenarios_s: u64,
    demo_command: String,
    demo_report: String,
    exercise: String,
    exercise_reports: Vec<(String, String)>,
    scenarios: ScenarioReport,
    scenarios_md: String,
}

/// docs/results.md.
///
/// Over 80 lines on purpose: one document's Markdown, in the order it reads.
fn page(run: &Run) -> String {
    let cases = &run.scenarios.scenarios;
    let off = cases
        .iter()
        .filter(|c| c.verdict != CaseVerdict::AsExpected)
        .count();
    let quoted = Regex::new(r"sold again|never sold|503").expect("a valid regex");
    let steps: Vec<String> = cases
        .iter()
        .flat_map(|c| {
            c.steps
                .iter()
                .filter(|s| quoted.is_match(s))
                .map(move |s| format!("- `{}` / `{}`: {s}", c.name, c.strategy))
        })
        .collect();
    let mut md = format!(
        "# Results: the figures the README and the workshop quote

One run, **{date}**, commit `{commit}`, on {machine}; build: {build}.
`make results` (`seckill-lab results`) makes this run again and rewrites
this file and the README's table; every process shares the machine's
cores. Counts vary from run to run; verdicts do not. The step outputs are
kept in `loadgen-report/results/`.

- [The demo's comparison](#the-demos-comparison) — the README's table
- [Workshop exercise 1](#workshop-exercise-1)
- [Every fault scenario](#every-fault-scenario) — workshop exercises 2–8 and the wrap-up

## The demo's comparison

`make demo`: the stack (its own PostgreSQL, Redis, five Redlock nodes,
etcd, ZooKeeper, MariaDB, three replicas), then a comparison over the three
replicas — 50 closed-loop buyers started at once, until sold out, stock
100, 5 ms of simulated work inside the critical section ({demo_s} s for the
whole demo, build included). The same comparison again:
`{demo_command}` with the demo's strategies and `--work-delay-ms 5`.

{demo_report}

## Workshop exercise 1

The block of [the workshop's exercise 1](workshop.md#1-why-lock-at-all-10-min--the-naive-read-modify-write-every-post-starts-from),
run as written after `source .demo/env` ({exercise_s} s):

```sh
{exercise}
```
",
        date = run.date,
        commit = run.commit,
        machine = run.machine,
        build = run.build,
        demo_s = run.demo_s,
        demo_command = run.demo_command,
        demo_report = run.demo_report,
        exercise_s = run.exercise_s,
        exercise = run.exercise.trim(),
    );
    for (folder, report) in &run.exercise_reports {
        md.push_str(&format!("\n`{folder}`:\n\n{report}\n"));
    }
    md.push_str(&format!(
        "
## Every fault scenario

`make scenarios` (every scenario; {} s with the build step): {} cases in
{:.0} s, {} `as-expected`, {off} not.

{}
",
        run.scenarios_s,
        cases.len(),
        run.scenarios.duration_s,
        cases.len() - off,
        run.scenarios_md.trim()
    ));
    if !steps.is_empty() {
        md.push_str("\nStep lines quoted by the workshop (recovery after a crash, answers while a dependency was gone):\n\n");
        md.push_str(&steps.join("\n"));
        md.push('\n');
    }
    md
}

/// `make results`.
pub fn make() -> anyhow::Result<()> {
    let root = docs::root()?;
    let started = Instant::now();
    let out = root.join(OUT);
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).with_context(|| format!("create {}", out.display()))?;
    let target: PathBuf =
        std::env::var_os("RESULTS_OUT").map_or_else(|| root.join("docs/results.md"), PathBuf::from);
    let date = crate::util::first_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"], "an unknown date");

    // A bar on a terminal: the demo, the exercise, then every case.
    let _bar = progress::begin(false);
    progress::planned(2);
    let demo_s = run_demo(&root, &out)?;
    let (exercise, exercise_s) = run_exercise_1(&root, &out)?;
    let (code, scenarios_s, scenarios) = run_scenarios(&root, &out)?;

    let build = build_note();
    let demo_log = std::fs::read_to_string(out.join("demo.log")).unwrap_or_default();
    let exercise_reports = read_exercise_reports(&root, &exercise)?;
    let run = Run {
        date,
        commit: commit(&root),
        machine: machine(),
        build,
        demo_s,
        exercise_s,
        scenarios_s,
        demo_command: demo_command(&demo_log),
        demo_report: report_md(&out.join("demo"))?,
        exercise,
        exercise_reports,
        scenarios_md: std::fs::read_to_string(out.join("scenarios").join("scenarios.md"))
            .context("read the scenarios' scenarios.md")?,
        scenarios,
    };
    std::fs::write(&target, page(&run)).with_context(|| format!("write {}", target.display()))?;
    update_readme_table(&root, &out)?;
    crate::util::say(&format!(
        "results: {} written (and the README's table) in {} s; scenarios exit {}",
        target.display(),
        started.elapsed().as_secs(),
        code.map_or_else(|| "killed".to_owned(), |c| c.to_string())
    ));
    Ok(())
}

/// Step 1/3: `make demo`, its report copied into `out`; the seconds it took.
fn run_demo(root: &Path, out: &Path) -> anyhow::Result<u64> {
    crate::util::say("results 1/3: make demo");
    progress::started("make demo");
    let (code, demo_s) = logged(root, &out.join("demo.log"), "scripts/demo.sh", &[], &[])?;
    if code != Some(0) {
        bail!("make demo failed ({code:?}; see {OUT}/demo.log)");
    }
    let demo_report = root.join(".demo/report");
    if !demo_report.join("report.md").is_file() {
        bail!("the demo wrote no .demo/report/report.md (see {OUT}/demo.log)");
    }
    copy_folder(&demo_report, &out.join("demo"))?;
    progress::finished("make demo");
    Ok(demo_s)
}

/// Step 2/3: the workshop's exercise 1 as written; its block and the seconds it took.
fn run_exercise_1(root: &Path, out: &Path) -> anyhow::Result<(String, u64)> {
    crate::util::say("results 2/3: the workshop's exercise 1");
    progress::started("the workshop's exercise 1");
    let workshop =
        std::fs::read_to_string(root.join("docs/workshop.md")).context("read docs/workshop.md")?;
    let exercise = docs::blocks("docs/workshop.md", &workshop)
        .into_iter()
        .find(|b| b.section.starts_with("1. "))
        .context("no shell block under '### 1.' in docs/workshop.md")?
        .lines
        .join("\n");
    let script = out.join("exercise-1.sh");
    std::fs::write(&script, format!("{exercise}\n")).context("write exercise-1.sh")?;
    let script_arg = script.to_string_lossy().into_owned();
    let (code, exercise_s) = logged(
        root,
        &out.join("exercise-1.log"),
        "bash",
        &[
            "-c",
            "source .demo/env && set -x && source \"$1\"",
            "exercise-1",
            &script_arg,
        ],
        &[],
    )?;
    if code != Some(0) {
        bail!("the workshop's exercise 1 failed ({code:?}; see {OUT}/exercise-1.log)");
    }
    progress::finished("the workshop's exercise 1");
    Ok((exercise, exercise_s))
}

/// Step 3/3: every fault scenario; its exit code, seconds taken and report.
fn run_scenarios(root: &Path, out: &Path) -> anyhow::Result<(Option<i32>, u64, ScenarioReport)> {
    crate::util::say("results 3/3: every fault scenario");
    let scenarios_out = out.join("scenarios");
    let scenarios_arg = scenarios_out.to_string_lossy().into_owned();
    let (code, scenarios_s) = logged(
        root,
        &out.join("scenarios.log"),
        "scripts/scenarios.sh",
        &[],
        &[("OUT", &scenarios_arg)],
    )?;
    let json = scenarios_out.join("scenarios.json");
    let scenarios: ScenarioReport = serde_json::from_str(
        &std::fs::read_to_string(&json)
            .with_context(|| format!("the scenarios wrote no report (exit {code:?})"))?,
    )
    .with_context(|| format!("read {}", json.display()))?;
    Ok((code, scenarios_s, scenarios))
}

/// The page's build line: which binaries, and any `SCENARIO_FLAGS`.
fn build_note() -> String {
    let bin = std::env::var("SECKILL_BIN_DIR").unwrap_or_default();
    let mut build = if bin.is_empty() {
        "release (target/release)".to_owned()
    } else {
        format!(
            "binaries of {bin} (SECKILL_BIN_DIR) — not a release build: not the figures to publish"
        )
    };
    if let Ok(flags) = std::env::var("SCENARIO_FLAGS") {
        if !flags.is_empty() {
            build.push_str(&format!("; scenarios with SCENARIO_FLAGS={flags}"));
        }
    }
    build
}

/// Each `--out` folder of exercise 1's block with its report, in the block's order.
fn read_exercise_reports(root: &Path, exercise: &str) -> anyhow::Result<Vec<(String, String)>> {
    let mut exercise_reports = Vec::new();
    for folder in out_folders(exercise) {
        let report = report_md(&root.join(&folder))?;
        exercise_reports.push((folder, report));
    }
    Ok(exercise_reports)
}

/// The README's table: the demo's, between the markers.
fn update_readme_table(root: &Path, out: &Path) -> anyhow::Result<()> {
    let readme_path = root.join("README.md");
    let readme = std::fs::read_to_string(&readme_path).context("read README.md")?;
    let demo_md = std::fs::read_to_string(out.join("demo/report.md"))?;
    let table: Vec<&str> = demo_md.lines().filter(|l| l.starts_with('|')).collect();
    if let Some(updated) = with_table(&readme, &table.join("\n")) {
        std::fs::write(&readme_path, updated).context("write README.md")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_proc_did_not_say_reads_unknown_never_zero() {
        let meminfo = "MemTotal:       24576000 kB\nMemFree: 1 kB\n";
        let cpuinfo = "processor\t: 0\nmodel name\t: Some CPU\n";
        assert_eq!(
            machine_from(2, cpuinfo, meminfo, "6.1.0\n"),
            "2 cores (Some CPU), 23 GiB, Linux 6.1.0"
        );
        assert_eq!(
            machine_from(0, "", "", ""),
            "cores unknown (unknown CPU), memory unknown, Linux release unknown"
        );
    }

    #[test]
    fn the_demo_command_names_no_path_or_port_of_this_machine() {
        let log = "  run again     SECKILL_ADMIN_TOKEN=t /x/target/release/seckill-loadgen compare --url http://127.0.0.1:1,http://127.0.0.1:2 --strategies none,redlock";
        assert_eq!(
            demo_command(log),
            "SECKILL_ADMIN_TOKEN=t $L compare --url $A,$B,$C --strategies none,redlock"
        );
        assert_eq!(demo_command("no such line"), "");
    }

    #[test]
    fn the_readme_table_is_replaced_between_its_markers_only() {
        let readme = "a\n<!-- results:demo -->\n| old |\n<!-- /results:demo -->\nb\n";
        assert_eq!(
            with_table(readme, "| new |").as_deref(),
            Some("a\n<!-- results:demo -->\n| new |\n<!-- /results:demo -->\nb\n")
        );
        assert_eq!(with_table("no markers", "| new |"), None);
    }

    #[test]
    fn out_folders_are_read_in_the_blocks_order() {
        let block = "$L run --out a/b --users 3\n$L run --users 9 --out c";
        assert_eq!(out_folders(block), ["a/b", "c"]);
    }
}
