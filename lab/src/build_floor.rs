//! `make bench-build` (and the last row of `make bench`): a clean release
//! build of what `make demo` runs — `seckill-app`, `seckill-loadgen`,
//! `seckill-lab` — beside its *floor*, measured in the same run: an empty
//! binary crate that depends on the same external crates, at the same
//! versions and with the same features, built from clean with the same
//! release profile. The floor is what compiling our dependencies costs
//! with nothing of ours; the ratio is what our own crates add.
//!
//! Both builds go to fresh folders under `target/bench-build/` (target and
//! build directory alike, so nothing cached is reused); ours runs with
//! `--timings` and the report's path is printed (docs/performance.md reads
//! its critical path and costliest crates from it).
//!
//! Then the newcomer's wait: the demo (`seckill-lab demo up`, in `.demo/`,
//! restarting a running one) on the binaries just built, its clock started
//! when our clean build started. `first table N s` is what a fresh clone's
//! `make demo` would print on this machine, its builds included; the demo
//! is stopped after.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::Context;
use serde::Deserialize;

use crate::bench::{check, ratio, row};

/// What `make demo` builds.
const DEMO: [&str; 3] = ["seckill-app", "seckill-loadgen", "seckill-lab"];

/// The goal: ours at most this many times the floor.
const GOAL: f64 = 1.3;

/// The goal for the demo's first table from a clean build, in seconds.
const FIRST_TABLE_GOAL: u64 = 8 * 60;

#[derive(Debug, Deserialize)]
struct Metadata {
    packages: Vec<Package>,
    workspace_members: Vec<String>,
    resolve: Resolve,
}

#[derive(Debug, Deserialize)]
struct Package {
    id: String,
    name: String,
    version: String,
}

#[derive(Debug, Deserialize)]
struct Resolve {
    nodes: Vec<Node>,
}

#[derive(Debug, Deserialize)]
struct Node {
    id: String,
    features: Vec<String>,
    deps: Vec<NodeDep>,
}

#[derive(Debug, Deserialize)]
struct NodeDep {
    pkg: String,
    dep_kinds: Vec<DepKind>,
}

#[derive(Debug, Deserialize)]
struct DepKind {
    /// `null` (normal), `"build"` or `"dev"`.
    kind: Option<String>,
}

/// One external crate a workspace member of the demo depends on directly.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Direct {
    name: String,
    version: String,
    features: Vec<String>,
}

/// The external crates the `roots` depend on directly (normal and build
/// dependencies), through the workspace crates they depend on, each with
/// the features the workspace's resolution gives it.
fn direct_dependencies(meta: &Metadata, roots: &[&str]) -> anyhow::Result<Vec<Direct>> {
    let members: BTreeSet<&str> = meta.workspace_members.iter().map(String::as_str).collect();
    let package: BTreeMap<&str, &Package> =
        meta.packages.iter().map(|p| (p.id.as_str(), p)).collect();
    let node: BTreeMap<&str, &Node> = meta
        .resolve
        .nodes
        .iter()
        .map(|n| (n.id.as_str(), n))
        .collect();
    let mut todo: Vec<&str> = Vec::new();
    for root in roots {
        let id = members
            .iter()
            .find(|id| package.get(*id).is_some_and(|p| p.name == *root))
            .with_context(|| format!("{root} is not a member of the workspace"))?;
        todo.push(id);
    }
    let (mut seen, mut direct) = (BTreeSet::new(), BTreeSet::new());
    while let Some(id) = todo.pop() {
        if !seen.insert(id) {
            continue;
        }
        let here = node
            .get(id)
            .with_context(|| format!("{id} has no node in the resolve graph"))?;
        let built = here
            .deps
            .iter()
            .filter(|d| d.dep_kinds.iter().any(|k| k.kind.as_deref() != Some("dev")));
        for dep in built {
            if members.contains(dep.pkg.as_str()) {
                todo.push(&dep.pkg);
            } else if let (Some(p), Some(n)) =
                (package.get(dep.pkg.as_str()), node.get(dep.pkg.as_str()))
            {
                direct.insert(Direct {
                    name: p.name.clone(),
                    version: p.version.clone(),
                    features: n.features.clone(),
                });
            }
        }
    }
    Ok(direct.into_iter().collect())
}

/// The `[profile.release…]` sections of the workspace's Cargo.toml, as
/// written, but those of our own crates (`seckill-…`: the floor has none
/// of them, and cargo would warn of each).
fn release_profile(manifest: &str) -> String {
    let mut out = String::new();
    let mut keep = false;
    for line in manifest.lines() {
        if line.starts_with('[') {
            keep = line.starts_with("[profile.release")
                && !line.starts_with("[profile.release.package.seckill-");
        }
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The floor's Cargo.toml: an empty binary depending on every crate of
/// `deps` (each under a name of its own, so two versions of one crate can
/// both be there), default features off and the resolved ones on.
fn floor_manifest(deps: &[Direct], profile: &str) -> String {
    let mut out = String::from(
        "[package]\nname = \"seckill-build-floor\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n[workspace]\n\n[dependencies]\n",
    );
    for (i, d) in deps.iter().enumerate() {
        let features: Vec<String> = d.features.iter().map(|f| format!("{f:?}")).collect();
        out.push_str(&format!(
            "d{i} = {{ package = {:?}, version = \"={}\", default-features = false, features = [{}] }}\n",
            d.name,
            d.version,
            features.join(", ")
        ));
    }
    out.push('\n');
    out.push_str(profile);
    out
}

/// `cargo build --release` in `dir` (its manifest), every artifact under
/// `out`, emptied first; how long it took, in seconds.
fn clean_build(dir: &Path, out: &Path, args: &[&str]) -> anyhow::Result<f64> {
    if out.exists() {
        std::fs::remove_dir_all(out).with_context(|| format!("emptying {}", out.display()))?;
    }
    let started = Instant::now();
    crate::util::say(&format!(
        "cargo build --release {} (into {})",
        args.join(" "),
        out.display()
    ));
    let status = Command::new("cargo")
        .current_dir(dir)
        .args(["build", "--release"])
        .args(args)
        .env("CARGO_TARGET_DIR", out)
        .env("CARGO_BUILD_BUILD_DIR", out)
        .status()
        .context("running cargo")?;
    anyhow::ensure!(
        status.success(),
        "cargo build in {} failed: {status}",
        dir.display()
    );
    Ok(started.elapsed().as_secs_f64())
}

/// `make bench-build`: both clean builds, one row.
pub fn run() -> anyhow::Result<()> {
    let root = crate::docs::root()?;
    // This machine's platform only: a crate for another one is no part of
    // either build.
    let rustc = Command::new("rustc")
        .arg("-vV")
        .output()
        .context("rustc -vV")?;
    let host = String::from_utf8_lossy(&rustc.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_owned))
        .context("no host triple in rustc -vV")?;
    let output = Command::new("cargo")
        .current_dir(&root)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--locked",
            "--filter-platform",
            &host,
        ])
        .output()
        .context("cargo metadata")?;
    anyhow::ensure!(output.status.success(), "cargo metadata failed");
    let meta: Metadata =
        serde_json::from_slice(&output.stdout).context("reading cargo metadata")?;
    let deps = direct_dependencies(&meta, &DEMO)?;
    let manifest = std::fs::read_to_string(root.join("Cargo.toml"))?;
    let work = root.join("target/bench-build");
    let floor_dir = work.join("floor-crate");
    std::fs::create_dir_all(floor_dir.join("src"))?;
    std::fs::write(
        floor_dir.join("Cargo.toml"),
        floor_manifest(&deps, &release_profile(&manifest)),
    )?;
    std::fs::write(floor_dir.join("src/main.rs"), "fn main() {}\n")?;
    // The workspace's versions: cargo drops what the floor does not use.
    std::fs::copy(root.join("Cargo.lock"), floor_dir.join("Cargo.lock"))?;
    let floor = clean_build(&floor_dir, &work.join("floor"), &[])?;
    let mut ours_args = vec!["--locked", "--timings"];
    for p in DEMO {
        ours_args.extend(["-p", p]);
    }
    let ours_out: PathBuf = work.join("ours");
    let ours_started_ms = seckill_load::clock::unix_ms();
    let ours = clean_build(&root, &ours_out, &ours_args)?;
    let first_table = first_table(&root, &ours_out.join("release"), ours_started_ms);
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    println!();
    println!(
        "make bench-build — {cores} cores, {} external crates the demo's packages name",
        deps.len()
    );
    println!("{}", row("figure", "ours", "floor", "ratio", "goal", ""));
    println!(
        "{}",
        row(
            "clean release build of app+loadgen+lab (s)",
            &format!("{ours:.0}"),
            &format!("{floor:.0}"),
            &ratio(ours, floor),
            &format!("<= {GOAL}"),
            check(ours <= GOAL * floor),
        )
    );
    print_first_table(first_table);
    println!(
        "timings of ours: {}",
        ours_out.join("cargo-timings/cargo-timing.html").display()
    );
    Ok(())
}

/// The demo's row: its seconds to the first table, or why there are none.
fn print_first_table(first_table: anyhow::Result<u64>) {
    let (secs, ok) = match &first_table {
        Ok(secs) => (secs.to_string(), check(*secs <= FIRST_TABLE_GOAL)),
        Err(_) => ("-".to_owned(), "FAILED"),
    };
    println!(
        "{}",
        row(
            "make demo's first table from a clean build (s)",
            &secs,
            "-",
            "-",
            &format!("<= {FIRST_TABLE_GOAL}"),
            ok,
        )
    );
    if let Err(e) = first_table {
        println!("  the demo: {e:#}");
    }
}

/// `seckill-lab demo up` on the binaries of `bin`, its clock started at
/// `started_ms`: the seconds its `first table N s` line names (its output
/// passed through), then `demo stop`.
fn first_table(root: &Path, bin: &Path, started_ms: u64) -> anyhow::Result<u64> {
    crate::util::say("the demo on the binaries just built (its clock started with the build)");
    let mut child = Command::new(bin.join("seckill-lab"))
        .current_dir(root)
        .args(["demo", "up"])
        .env("SECKILL_BIN_DIR", bin)
        .env("SECKILL_DEMO_STARTED_MS", started_ms.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .context("starting seckill-lab demo up")?;
    let mut secs = None;
    if let Some(out) = child.stdout.take() {
        for line in std::io::BufReader::new(out).lines() {
            let line = line.context("reading the demo's output")?;
            println!("{line}");
            secs = secs.or_else(|| first_table_secs(&line));
        }
    }
    let status = child.wait().context("waiting for the demo")?;
    let stop = Command::new(bin.join("seckill-lab"))
        .current_dir(root)
        .args(["demo", "stop"])
        .env("SECKILL_BIN_DIR", bin)
        .status();
    // Said whether or not `up` succeeded: a failed `up` leaves servers too.
    if !stop.is_ok_and(|s| s.success()) {
        crate::util::say("demo stop failed: make demo-stop stops what .demo/ names");
    }
    anyhow::ensure!(status.success(), "demo up exited with {status}");
    secs.context("the demo printed no `first table N s` line")
}

/// `N` of a `… first table N s after …` line.
fn first_table_secs(line: &str) -> Option<u64> {
    let (_, rest) = line.split_once("first table ")?;
    rest.split_once(" s ")?.0.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_names_each_crate_at_its_version_with_its_features() {
        let deps = [
            Direct {
                name: "tokio".into(),
                version: "1.2.3".into(),
                features: vec!["rt".into(), "macros".into()],
            },
            Direct {
                name: "rand".into(),
                version: "0.8.5".into(),
                features: vec![],
            },
        ];
        let text = floor_manifest(&deps, "[profile.release]\ndebug = 1\n");
        assert!(text.contains(
            "d0 = { package = \"tokio\", version = \"=1.2.3\", default-features = false, features = [\"rt\", \"macros\"] }"
        ));
        assert!(text.contains(
            "d1 = { package = \"rand\", version = \"=0.8.5\", default-features = false, features = [] }"
        ));
        assert!(text.ends_with("[profile.release]\ndebug = 1\n"));
    }

    #[test]
    fn the_first_tables_seconds_are_read_from_the_demos_line() {
        let line = "\x1b[1m[seckill]\x1b[0m first table 431 s after make demo started (its builds included)";
        assert_eq!(first_table_secs(line), Some(431));
        assert_eq!(first_table_secs("[seckill] load generator: 25 s"), None);
        assert_eq!(first_table_secs("first table soon s after"), None);
    }

    #[test]
    fn only_the_release_profile_of_the_dependencies_is_kept() {
        let manifest = "[workspace]\nmembers = []\n[profile.release]\ndebug = 1\n[profile.release.package.seckill-app]\ncodegen-units = 2\n[profile.release.package.x]\nopt-level = 0\n[profile.dev]\nopt-level = 1\n";
        assert_eq!(
            release_profile(manifest),
            "[profile.release]\ndebug = 1\n[profile.release.package.x]\nopt-level = 0\n"
        );
    }
}
