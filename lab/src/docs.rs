//! `make check-docs` — the docs run: every ```sh block of docs/workshop.md
//! and of the README's quick start is run, as written, in one bash session
//! (as a person pastes them into one terminal, top to bottom), against a
//! small demo. The check fails at the first block that fails, and names it
//! (file, line, section) with its exit code.
//!
//! Scaled down, never rewritten otherwise (each rule is printed when used):
//! - the environment: `SECKILL_BIN_DIR` (default target/debug: no release
//!   build), `SCENARIO_FLAGS="--quick --quiet"` (shorter fault windows),
//!   `DEMO_STRATEGIES=none,set-nx-px-token` and `DEMO_STOCK=20` (a short
//!   first comparison in `make demo`);
//! - `--run-time Ns` becomes N/10 s (at least 2 s), `sleep N` N/10 (at
//!   least 1): the paced loads and the waits inside them, together;
//! - a `make demo` or `make scenarios S=…` line already run earlier in the
//!   check is not run again (same command: the same stack, the same report
//!   folder).
//!
//! Lines not run at all — each printed as SKIP with its reason — are the
//! [`SKIP`] list: commands CI runs as steps of their own (`make test`, the
//! Docker lines), or that take far beyond the check's budget (`make
//! debate`). With `CHECK_DOCS_SCENARIOS_TESTED=1` (CI, where `make test`'s
//! scenario test ran every scenario with `--quick` just before), the
//! exercises' plain `make scenarios S=…` lines are skipped too; the first
//! one, which proves the runner works on the demo's machine, and every line
//! with its own `OUT` or `ARGS` still run.
//!
//! Checks between sections: once an exercise is over, the faults in force
//! must be the cleared ones (what `DELETE /admin/faults` answered at the
//! start) and no replica may still run with extra settings
//! (`.demo/app-*.settings`): every exercise clears what it set. The
//! session must add up to 90 minutes (the "(N min)" of its headings),
//! checked before anything runs.
//!
//! The Chinese workshop (docs/zh/workshop.md) is checked against the
//! English one before anything runs: the same ```sh blocks, line for line,
//! in the same order, and the same minutes per exercise
//! ([`translations_match`]). Its commands are then the ones this check
//! runs; running them a second time would test nothing new.
//!
//! The demo of `.demo/` is used (a running one is restarted by the first
//! block) and stopped at the end, as `make demo-stop` does — unless every
//! block ran and `CHECK_DOCS_KEEP_DEMO=1` (CI: `make check-panels` reuses
//! it, then `make demo-stop`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context};
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Parser, Tag, TagEnd};
use regex::Regex;

/// The files whose blocks run, in order.
const FILES: [&str; 2] = ["README.md", "docs/workshop.md"];

/// Lines not run: (file, a regular expression on the line, why).
const SKIP: &[(&str, &str, &str)] = &[
    (
        "README.md",
        r"^make test\b",
        "CI runs `make test` as its own step (.ci/run), before this check",
    ),
    (
        "README.md",
        r"^make debate\b",
        "ten sweeps of 20 injections a point and the unswept claims' trials: tens of minutes, beyond this check's budget",
    ),
    (
        "README.md",
        r"^make atlas\b",
        "every strategy under every fault, each pair located by bisection: hours, beyond this check's budget (its test runs three cells)",
    ),
    (
        "README.md",
        r"^docker(-compose)? ",
        "Docker: checked by `seckill-lab docker ci` in .ci/run (and `make check-docker`)",
    ),
    (
        "README.md",
        r"^make docker-images\b",
        "Docker: checked by `seckill-lab docker ci` in .ci/run (and `make check-docker`)",
    ),
];

/// A plain `make scenarios S=…` line: no `OUT`, no `ARGS`.
const PLAIN_SCENARIOS: &str = r#"^make scenarios S=("[^"]*"|\S+)\s*(#.*)?$"#;

/// Why a plain scenarios line is skipped under `CHECK_DOCS_SCENARIOS_TESTED`.
const TESTED: &str = "CHECK_DOCS_SCENARIOS_TESTED: `make test`'s scenario test ran every scenario with --quick earlier in this CI run";

/// The environment of the run, unless already set.
const DEFAULTS: [(&str, &str); 4] = [
    ("SECKILL_BIN_DIR", "target/debug"),
    ("SCENARIO_FLAGS", "--quick --quiet"),
    ("DEMO_STRATEGIES", "none,set-nx-px-token"),
    ("DEMO_STOCK", "20"),
];

/// The length of the workshop, in minutes.
const SESSION_MINUTES: u32 = 90;

/// One ```sh block.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// The file.
    pub path: &'static str,
    /// The line of its first command (1-based).
    pub line: usize,
    /// The heading above it.
    pub section: String,
    /// Its lines.
    pub lines: Vec<String>,
}

impl Block {
    fn label(&self) -> String {
        format!("{}:{} ({})", self.path, self.line, self.section)
    }

    /// An exercise, or the preparation before one: the faults must be
    /// the cleared ones at its end.
    fn is_exercise(&self) -> bool {
        self.path == "docs/workshop.md"
            && (self.section.starts_with(|c: char| c.is_ascii_digit())
                || self.section.starts_with("Before"))
    }
}

/// The ```sh (or bash, shell) blocks of `text` with the heading above
/// each; in the README only those of the quick start (above the first `##`
/// heading).
pub fn blocks(path: &'static str, text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut heading: Option<String> = None;
    let mut code: Option<(usize, String)> = None;
    for (event, range) in Parser::new(text).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                if path == "README.md" && level == HeadingLevel::H2 {
                    break;
                }
                heading = Some(String::new());
            }
            Event::End(TagEnd::Heading(_)) => section = heading.take().unwrap_or_default(),
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info)))
                if matches!(info.trim(), "sh" | "bash" | "shell") =>
            {
                let fence = text[..range.start].matches('\n').count() + 1;
                code = Some((fence + 1, String::new()));
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((line, body)) = code.take() {
                    out.push(Block {
                        path,
                        line,
                        section: section.clone(),
                        lines: body.lines().map(str::to_owned).collect(),
                    });
                }
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, body)) = code.as_mut() {
                    body.push_str(&t);
                } else if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            _ => {}
        }
    }
    out
}

/// The "(N min)" of each heading of the workshop.
pub fn session_minutes(text: &str) -> Vec<u32> {
    let re = Regex::new(r"(?m)^#+ .*(?:\((\d+) min\)|（(\d+) 分钟）)").expect("a valid regex");
    re.captures_iter(text)
        .filter_map(|c| c.get(1).or(c.get(2))?.as_str().parse().ok())
        .collect()
}

/// The translations whose commands must be the original's, block for
/// block: (original, translation).
const TRANSLATIONS: [(&str, &str); 1] = [("docs/workshop.md", "docs/zh/workshop.md")];

/// Each translation holds the original's ```sh blocks, the same lines in
/// the same order, and the same minutes per exercise: then running the
/// original's blocks runs the translation's too, and a command changed in
/// one language only fails here, naming the block.
pub fn translations_match(root: &Path) -> anyhow::Result<()> {
    for (original, translated) in TRANSLATIONS {
        let read = |path: &str| {
            std::fs::read_to_string(root.join(path)).with_context(|| format!("read {path}"))
        };
        let (a, b) = (read(original)?, read(translated)?);
        let (ours, theirs) = (blocks(original, &a), blocks(translated, &b));
        for (i, (x, y)) in ours.iter().zip(&theirs).enumerate() {
            if x.lines != y.lines {
                bail!(
                    "{}: block {} differs from {} ({:?} vs {:?}): commands are never translated",
                    y.label(),
                    i + 1,
                    x.label(),
                    y.lines,
                    x.lines
                );
            }
        }
        if ours.len() != theirs.len() {
            bail!(
                "{translated} has {} command blocks, {original} {}: every block, in order",
                theirs.len(),
                ours.len()
            );
        }
        let (m, n) = (session_minutes(&a), session_minutes(&b));
        if m != n {
            bail!("{translated}: the exercises' minutes {n:?} are not {original}'s {m:?}");
        }
        crate::util::say(&format!(
            "{translated}: the same {} command blocks as {original}, the same minutes",
            ours.len()
        ));
    }
    Ok(())
}

/// The debate's two pages, both generated from docs/redlock-debate.json:
/// the same rows (the `### N. id` headings), in the JSON's order, each
/// with the same rerun command (commands are never translated).
pub fn debate_pages_match(root: &Path) -> anyhow::Result<()> {
    let read = |path: &str| {
        std::fs::read_to_string(root.join(path)).with_context(|| format!("read {path}"))
    };
    let json: serde_json::Value = serde_json::from_str(&read("docs/redlock-debate.json")?)
        .context("docs/redlock-debate.json is not JSON")?;
    let ids: Vec<String> = json["rows"]
        .as_array()
        .context("docs/redlock-debate.json has no rows")?
        .iter()
        .map(|r| r["id"].as_str().unwrap_or_default().to_owned())
        .collect();
    for page in ["docs/redlock-debate.md", "docs/zh/redlock-debate.md"] {
        let text = read(page)?;
        let (rows, commands) = debate_rows(&text);
        if rows != ids {
            bail!("{page}: its rows {rows:?} are not docs/redlock-debate.json's {ids:?}: regenerate both (make debate)");
        }
        let json_commands: Vec<&str> = json["rows"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| r["command"].as_str().unwrap_or_default())
            .collect();
        if commands != json_commands {
            bail!("{page}: its rerun commands are not the JSON's: regenerate both (make debate)");
        }
    }
    crate::util::say(&format!(
        "docs/redlock-debate.md and docs/zh/redlock-debate.md: the JSON's {} rows, in order, the same commands",
        ids.len()
    ));
    Ok(())
}

/// The atlas, generated from docs/atlas.json: one cell per (strategy,
/// fault) pair, each outcome one of the contract's shapes (never blank),
/// and both pages carry every cell's command.
pub fn atlas_pages_match(root: &Path) -> anyhow::Result<()> {
    let read = |path: &str| {
        std::fs::read_to_string(root.join(path)).with_context(|| format!("read {path}"))
    };
    let json: serde_json::Value =
        serde_json::from_str(&read("docs/atlas.json")?).context("docs/atlas.json is not JSON")?;
    let cells = json["cells"]
        .as_array()
        .context("docs/atlas.json has no cells")?;
    let mut strategies: Vec<&str> = Vec::new();
    let mut faults: Vec<&str> = Vec::new();
    for cell in cells {
        let (s, f) = (
            cell["strategy"].as_str().unwrap_or_default(),
            cell["fault"].as_str().unwrap_or_default(),
        );
        if !strategies.contains(&s) {
            strategies.push(s);
        }
        if !faults.contains(&f) {
            faults.push(f);
        }
        for outcome in ["exclusion", "data"] {
            let shapes = [
                "bracket",
                "holds_up_to",
                "breaks_from",
                "undecided",
                "not_applicable",
            ];
            let found = shapes
                .iter()
                .filter(|k| cell[outcome].get(**k).is_some())
                .count();
            if found != 1 {
                bail!(
                    "docs/atlas.json: {s}:{f}'s {outcome} is not one of {shapes:?}: {}",
                    cell[outcome]
                );
            }
        }
    }
    if cells.len() != strategies.len() * faults.len() {
        bail!(
            "docs/atlas.json: {} cells for {} strategies by {} faults: a pair is missing or twice (make atlas)",
            cells.len(),
            strategies.len(),
            faults.len()
        );
    }
    for page in ["docs/atlas.md", "docs/zh/atlas.md"] {
        let text = read(page)?;
        for cell in cells {
            let command = cell["command"].as_str().unwrap_or_default();
            if !text.contains(command) {
                bail!("{page}: no `{command}`: regenerate it from docs/atlas.json (make atlas)");
            }
        }
    }
    crate::util::say(&format!(
        "docs/atlas.json: {} strategies by {} faults, every cell one of the contract's shapes; both pages carry every command",
        strategies.len(),
        faults.len()
    ));
    Ok(())
}

/// Each `### N. id` heading's id of a debate page, and the first command
/// of each row's rerun line, in order.
fn debate_rows(page: &str) -> (Vec<String>, Vec<&str>) {
    let heading = Regex::new(r"(?m)^### \d+\. (\S+)").expect("a valid regex");
    let rerun = Regex::new(r"(?m)^- \*\*(?:Rerun|重跑)\*\*: `([^`]+)`").expect("a valid regex");
    (
        heading
            .captures_iter(page)
            .map(|c| c[1].to_owned())
            .collect(),
        rerun
            .captures_iter(page)
            .filter_map(|c| c.get(1).map(|m| m.as_str()))
            .collect(),
    )
}

/// `line` scaled down: `--run-time Ns` to N/10 s (at least 2), `sleep N`
/// to N/10 (at least 1). The rules used are added to `notes`.
pub fn scale(line: &str, notes: &mut Vec<&'static str>) -> String {
    let run_time = Regex::new(r"--run-time (\d+)s\b").expect("a valid regex");
    let sleep = Regex::new(r"\bsleep (\d+(?:\.\d+)?)\b").expect("a valid regex");
    let mut note = |n: &'static str| {
        if !notes.contains(&n) {
            notes.push(n);
        }
    };
    let line = run_time.replace_all(line, |c: &regex::Captures| {
        note("--run-time Ns -> N/10 s (at least 2)");
        let n: u64 = c[1].parse().unwrap_or(20);
        format!("--run-time {}s", (n / 10).max(2))
    });
    sleep
        .replace_all(&line, |c: &regex::Captures| {
            note("sleep N -> N/10 (at least 1)");
            let n: f64 = c[1].parse().unwrap_or(10.0);
            let scaled = ((n / 10.0) * 10.0).round() / 10.0;
            format!("sleep {}", scaled.max(1.0))
        })
        .into_owned()
}

/// The bash the check runs: every block, its skips and scalings printed
/// before it, the label of the block being run written to
/// `$CHECK_DOCS_CURRENT`, and `seckill-lab docs-between` once each
/// exercise is over.
pub fn driver(blocks: &[Block], scenarios_tested: bool) -> String {
    let skips: Vec<(&str, Regex, &str)> = SKIP
        .iter()
        .map(|(file, re, why)| (*file, Regex::new(re).expect("a valid regex"), *why))
        .collect();
    let plain_scenarios = Regex::new(PLAIN_SCENARIOS).expect("a valid regex");
    let once = Regex::new(r"^(make demo|make scenarios S=\S+)(\s+#|$)").expect("a valid regex");
    let between = "\"$SECKILL_LAB\" docs-between \"$CHECK_DOCS_STATE\"\n";
    let mut out = String::from("set -eo pipefail\n");
    let mut seen: Vec<String> = Vec::new();
    let mut previous: Option<&Block> = None;
    for block in blocks {
        if let Some(p) = previous {
            if p.section != block.section && p.is_exercise() {
                out.push_str(between);
            }
        }
        previous = Some(block);
        let label = block.label();
        let _ = writeln!(
            out,
            "printf '%s\\n' {} > \"$CHECK_DOCS_CURRENT\"",
            quote(&label)
        );
        let _ = writeln!(out, "echo; {}", say(&format!("block {label}")));
        let mut body = Vec::new();
        let mut notes = Vec::new();
        for line in &block.lines {
            let stripped = line.trim();
            let skip = skips
                .iter()
                .find(|(file, re, _)| *file == block.path && re.is_match(stripped))
                .map(|(_, _, why)| *why)
                .or_else(|| {
                    let plain = plain_scenarios.is_match(stripped);
                    let first = seen.iter().all(|s| !s.starts_with("make scenarios"));
                    (scenarios_tested && plain && !first && block.is_exercise()).then_some(TESTED)
                });
            if let Some(why) = skip {
                let _ = writeln!(
                    out,
                    "echo {}",
                    quote(&format!("  SKIP  {stripped}   -- {why}"))
                );
                continue;
            }
            if let Some(m) = once.captures(stripped) {
                let command = m[1].to_owned();
                if seen.contains(&command) {
                    let why = "already run above (same command, same state)";
                    let _ = writeln!(
                        out,
                        "echo {}",
                        quote(&format!("  SKIP  {stripped}   -- {why}"))
                    );
                    continue;
                }
                seen.push(command);
            }
            body.push(scale(line, &mut notes));
        }
        for note in notes {
            let _ = writeln!(out, "echo {}", quote(&format!("  scaled: {note}")));
        }
        let shown: Vec<String> = body.iter().map(|l| format!("  $ {l}")).collect();
        let _ = writeln!(out, "echo {}", quote(&shown.join("\n")));
        for line in body {
            out.push_str(&line);
            out.push('\n');
        }
    }
    if previous.is_some_and(Block::is_exercise) {
        out.push_str(between);
    }
    out
}

fn quote(s: &str) -> String {
    shlex::try_quote(s).map_or_else(|_| format!("'{}'", s.replace('\0', "")), |q| q.into_owned())
}

fn say(s: &str) -> String {
    format!("printf '\\033[1m[seckill]\\033[0m %s\\n' {}", quote(s))
}

pub fn root() -> anyhow::Result<PathBuf> {
    let here = std::env::current_dir().context("the current folder")?;
    if !here.join("docs/workshop.md").is_file() {
        bail!(
            "run it from the checkout's root (make check-docs): no docs/workshop.md in {}",
            here.display()
        );
    }
    Ok(here)
}

/// `make check-docs`.
pub fn check(print: bool) -> anyhow::Result<()> {
    let root = root()?;
    let mut all = Vec::new();
    let mut minutes = Vec::new();
    for path in FILES {
        let text =
            std::fs::read_to_string(root.join(path)).with_context(|| format!("read {path}"))?;
        if path.ends_with("workshop.md") {
            minutes = session_minutes(&text);
        }
        all.extend(blocks(path, &text));
    }
    translations_match(&root)?;
    debate_pages_match(&root)?;
    atlas_pages_match(&root)?;
    let tested = std::env::var("CHECK_DOCS_SCENARIOS_TESTED").is_ok_and(|v| v == "1");
    let script = driver(&all, tested);
    if print {
        print!("{script}");
        return Ok(());
    }
    let total: u32 = minutes.iter().sum();
    if total != SESSION_MINUTES {
        bail!("docs/workshop.md: the session adds up to {total} minutes ({minutes:?}), not {SESSION_MINUTES}");
    }
    crate::util::say(&format!(
        "the workshop adds up to {SESSION_MINUTES} minutes ({minutes:?})"
    ));

    let state = std::env::temp_dir().join(format!("check-docs-{}", std::process::id()));
    std::fs::create_dir_all(&state).with_context(|| format!("create {}", state.display()))?;
    let driver_path = state.join("driver.sh");
    std::fs::write(&driver_path, &script).context("write the driver")?;
    let current = state.join("current");
    let mut bash = Command::new("bash");
    bash.arg(&driver_path)
        .current_dir(&root)
        .env(
            "SECKILL_LAB",
            std::env::current_exe().context("this program's path")?,
        )
        .env("CHECK_DOCS_STATE", state.join("cleared"))
        .env("CHECK_DOCS_CURRENT", &current);
    let mut shown = Vec::new();
    for (name, value) in DEFAULTS {
        let value = std::env::var(name).unwrap_or_else(|_| value.to_owned());
        shown.push(format!("{name}={value}"));
        bash.env(name, value);
    }
    crate::util::say(&format!("check-docs: {}", shown.join(" ")));
    let started = Instant::now();
    let status = bash.status().context("run bash")?;
    let failed_in =
        std::fs::read_to_string(&current).unwrap_or_else(|_| "(before the first block)".into());
    // CHECK_DOCS_KEEP_DEMO=1 (CI): a demo that ran every block is left
    // running for `make check-panels`, which reuses it.
    let keep = status.success() && std::env::var("CHECK_DOCS_KEEP_DEMO").is_ok_and(|v| v == "1");
    if !keep {
        let _ = Command::new("scripts/demo.sh")
            .arg("stop")
            .current_dir(&root)
            .output();
    }
    let _ = std::fs::remove_dir_all(&state);
    let took = started.elapsed().as_secs();
    if !status.success() {
        bail!(
            "check-docs: FAILED ({status}) after {took} s — block {} failed",
            failed_in.trim()
        );
    }
    crate::util::say(&format!("check-docs: every block ran ({took} s)"));
    Ok(())
}

/// `seckill-lab docs-between STATE`: see [`Command::DocsBetween`](crate).
pub fn between(state: &Path) -> anyhow::Result<()> {
    let Ok(port) = std::fs::read_to_string(".demo/app-1.port") else {
        return Ok(()); // no demo yet
    };
    let url = format!("http://127.0.0.1:{}/admin/faults", port.trim());
    let token =
        std::env::var("SECKILL_ADMIN_TOKEN").unwrap_or_else(|_| crate::stack::DEMO_TOKEN.into());
    let runtime = crate::util::runtime()?;
    let client = reqwest::Client::new();
    let fetch = |method: reqwest::Method| {
        let request = client.request(method, &url).bearer_auth(&token);
        runtime.block_on(async {
            let response = request.send().await?.error_for_status()?;
            response.text().await
        })
    };
    let Ok(cleared) = std::fs::read_to_string(state) else {
        let cleared = fetch(reqwest::Method::DELETE).with_context(|| format!("DELETE {url}"))?;
        std::fs::write(state, &cleared).with_context(|| format!("write {}", state.display()))?;
        crate::util::say(&format!(
            "the cleared faults (every exercise must end with them): {cleared}"
        ));
        return Ok(());
    };
    let now = fetch(reqwest::Method::GET).with_context(|| format!("GET {url}"))?;
    if now != cleared {
        bail!("at the end of the exercise the faults are still {now} (cleared: {cleared})");
    }
    let mut settings = Vec::new();
    for entry in std::fs::read_dir(".demo").context("read .demo")? {
        let path = entry.context("read .demo")?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.starts_with("app-") && name.ends_with(".settings") {
            settings.push(
                std::fs::read_to_string(&path)
                    .unwrap_or_default()
                    .trim()
                    .to_owned(),
            );
        }
    }
    if !settings.is_empty() {
        bail!(
            "at the end of the exercise a replica still runs with: {}",
            settings.join(" ")
        );
    }
    crate::util::say("faults cleared, every replica on the defaults");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# Title\n\n### Before the session\n\n```sh\nmake demo\nmake scenarios S=gc-pause\n```\n\n\
### 1. First (10 min)\n\n```sh\n$L run --run-time 30s\nsleep 5\nmake scenarios S=slow-network\n\
make scenarios S=gc-pause OUT=x ARGS=\"--set a=1\"\nmake demo\n```\n\n### Wrap-up (80 min)\n\n```sh\necho done\n```\n";

    #[test]
    fn a_debate_page_gives_its_rows_and_rerun_commands_in_order() {
        let page = "# x\n\n### 1. pause-breaks-redlock {#pause-breaks-redlock}\n\n- **Rerun**: `seckill-loadgen debate --rows a` (the fixed points alone: `x`)\n\n\
### 2. clock-jump {#clock-jump}\n\n- **重跑**: `seckill-loadgen debate --rows b` (…)\n";
        let (rows, commands) = debate_rows(page);
        assert_eq!(rows, ["pause-breaks-redlock", "clock-jump"]);
        assert_eq!(
            commands,
            [
                "seckill-loadgen debate --rows a",
                "seckill-loadgen debate --rows b"
            ]
        );
    }

    #[test]
    fn minutes_are_read_in_either_language() {
        let text = "### 1. Why (10 min)\n### 2. 暂停（15 分钟）\n### 3. none\n";
        assert_eq!(session_minutes(text), [10, 15]);
    }

    #[test]
    fn blocks_carry_their_heading_and_first_line() {
        let found = blocks("docs/workshop.md", DOC);
        assert_eq!(found.len(), 3);
        assert_eq!(found[0].section, "Before the session");
        assert_eq!(found[0].line, 6);
        assert_eq!(found[0].lines, ["make demo", "make scenarios S=gc-pause"]);
        assert_eq!(found[1].section, "1. First (10 min)");
        assert_eq!(found[1].line, 13);
        assert!(found[1].is_exercise() && !found[2].is_exercise());
        assert_eq!(session_minutes(DOC), [10, 80]);
    }

    #[test]
    fn the_readme_stops_at_its_first_section() {
        let readme = "# x\n\n```sh\nmake demo\n```\n\n## Results\n\n```sh\nmake results\n```\n";
        let found = blocks("README.md", readme);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].lines, ["make demo"]);
    }

    #[test]
    fn scaling_divides_run_times_and_sleeps_by_ten() {
        let mut notes = Vec::new();
        assert_eq!(
            scale("$L run --run-time 30s --users 4", &mut notes),
            "$L run --run-time 3s --users 4"
        );
        assert_eq!(
            scale("$L run --run-time 5s", &mut notes),
            "$L run --run-time 2s"
        );
        assert_eq!(scale("sleep 25; sleep 3", &mut notes), "sleep 2.5; sleep 1");
        assert_eq!(notes.len(), 2);
    }

    #[test]
    fn the_driver_skips_repeats_and_checks_after_each_exercise() {
        let found = blocks("docs/workshop.md", DOC);
        let script = driver(&found, false);
        let run = |line: &str| script.lines().filter(|l| *l == line).count();
        assert_eq!(run("make demo"), 1, "{script}");
        assert!(
            script.contains("\nmake scenarios S=slow-network\n"),
            "{script}"
        );
        assert!(script.contains("\nsleep 1\n"), "{script}");
        // After "Before the session" and after "1. First", not after the wrap-up.
        assert_eq!(script.matches("docs-between").count(), 2, "{script}");
        let tested = driver(&found, true);
        assert!(
            tested.contains("\nmake scenarios S=gc-pause   #")
                || tested.contains("\nmake scenarios S=gc-pause\n")
        );
        assert!(
            !tested.contains("\nmake scenarios S=slow-network\n"),
            "{tested}"
        );
        assert!(
            tested.contains("SKIP  make scenarios S=slow-network"),
            "{tested}"
        );
        assert!(
            tested.contains("\nmake scenarios S=gc-pause OUT=x"),
            "{tested}"
        );
    }
}
