//! `make check-scripts` — the shell that is left parses, passes
//! shellcheck, and writes no function twice.
//!
//! Every `scripts/*.sh`, `docker/**/*.sh` and stand-in entry script must
//! pass `bash -n`. A function name defined in two of them (`say() {` in
//! both services.sh and test.sh, say) fails the check: shared helpers
//! live once, in scripts/lib.sh. No script may chmod a folder outside the
//! checkout (the private PostgreSQL cluster moves under the `postgres`
//! user's home instead). `shellcheck -x -S warning` passes on each of them
//! and on `.ci/run` (a missing shellcheck fails the check, naming `apt-get
//! install shellcheck`). No reader that exits early (`grep -q`, `head`)
//! sits behind a writer in a pipeline: under `pipefail` the writer's broken
//! pipe fails it. scripts/ stays under 400 lines of shell alone: no
//! Python, JavaScript or other interpreter fed a program inline.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};
use regex::Regex;

/// Each entry-point script's own EXIT trap handler, not a shared helper.
const OWN: &[&str] = &["cleanup"];

/// A pipeline into a reader that may exit before the writer is done.
pub const EARLY_READER: &str = r"\|\s*(grep\s+(-[A-Za-z]*q[A-Za-z]*|--quiet)\b|head\b)";

/// `make check-scripts`, from the checkout's root.
pub fn check() -> anyhow::Result<()> {
    let repo = std::env::current_dir().context("the current folder")?;
    let scripts = scripts(&repo)?;
    let mut failures = Vec::new();
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    for script in &scripts {
        let name = file_name(script);
        let parsed = Command::new("bash")
            .arg("-n")
            .arg(script)
            .output()
            .context("run bash -n")?;
        if !parsed.status.success() {
            let err = String::from_utf8_lossy(&parsed.stderr);
            failures.push(format!("{name}: bash -n: {}", err.trim()));
        }
        let text = std::fs::read_to_string(script)
            .with_context(|| format!("read {}", script.display()))?;
        for function in definitions(&text) {
            match seen.get(&function) {
                Some(first) if first != script && !OWN.contains(&function.as_str()) => failures
                    .push(format!(
                        "{function}() is defined in {} and {name}: keep one, in lib.sh",
                        file_name(first)
                    )),
                Some(_) => {}
                None => {
                    seen.insert(function, script.clone());
                }
            }
        }
        failures.extend(
            line_problems(&text)
                .into_iter()
                .map(|p| format!("{name}:{p}")),
        );
    }
    failures.extend(budget(&repo)?);
    let mut checked = scripts.clone();
    checked.push(repo.join(".ci/run"));
    failures.extend(shellcheck(&checked, &repo)?);
    for failure in &failures {
        println!("check-scripts: {failure}");
    }
    println!(
        "check-scripts: {} scripts, {} functions, {} problems",
        scripts.len(),
        seen.len(),
        failures.len()
    );
    if !failures.is_empty() {
        bail!("check-scripts: {} problems", failures.len());
    }
    Ok(())
}

/// An interpreter fed a program inline: `python3 -c …`, `python3 - <<PY`, `node <<JS`.
pub const EMBEDDED: &str = r"\b(python3?|node|perl|ruby)\b[^|;&#]*(\s-c\s|\s-\s|<<)";

/// At most this many lines in scripts/: what is left in shell is package
/// installs and one-line wrappers around the Rust programs.
pub const SCRIPT_LINES: usize = 400;

/// scripts/ within [`SCRIPT_LINES`], and no program of another language
/// (Python, JavaScript, a heredoc fed to an interpreter) inside a script.
fn budget(repo: &Path) -> anyhow::Result<Vec<String>> {
    let mut lines = 0;
    let mut out = Vec::new();
    let embedded = Regex::new(EMBEDDED).expect("a valid regex");
    for path in crate::util::files_under(&repo.join("scripts"))? {
        let text =
            std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
        lines += text.lines().count();
        if path.extension().is_none_or(|e| e != "sh") {
            out.push(format!(
                "{}: only shell belongs in scripts/",
                file_name(&path)
            ));
        }
        for (n, line) in text.lines().enumerate() {
            if embedded.is_match(line.split('#').next().unwrap_or("")) {
                out.push(format!(
                    "{}:{}: another language inside a script: {}",
                    file_name(&path),
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    if lines >= SCRIPT_LINES {
        out.push(format!("scripts/ holds {lines} lines (fewer than {SCRIPT_LINES}: move the logic into seckill-lab)"));
    }
    println!("check-scripts: scripts/ holds {lines} lines (budget: fewer than {SCRIPT_LINES})");
    Ok(out)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// The scripts of `make`, the lab image's entry and the stand-ins' entries.
fn scripts(repo: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(repo.join("scripts")).context("read scripts/")? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "sh") {
            found.push(path);
        }
    }
    let docker = crate::util::files_under(&repo.join("docker"))?;
    let standins = repo.join("docker/standins");
    for path in docker {
        let is_sh = path.extension().is_some_and(|e| e == "sh");
        let is_entry = path.starts_with(&standins)
            && std::fs::read(&path).is_ok_and(|bytes| bytes.starts_with(b"#!/bin/sh"));
        if is_sh || is_entry {
            found.push(path);
        }
    }
    found.sort();
    found.dedup();
    Ok(found)
}

/// The functions a script defines (`name() {`).
pub fn definitions(text: &str) -> Vec<String> {
    let re = Regex::new(r"(?m)^\s*([A-Za-z_][A-Za-z0-9_]*)\(\)\s*\{").expect("a valid regex");
    re.captures_iter(text).map(|c| c[1].to_owned()).collect()
}

/// `line: problem` for each chmod of a parent folder and each early reader
/// behind a pipe (comments aside).
pub fn line_problems(text: &str) -> Vec<String> {
    let chmod = Regex::new(r"\bchmod\b").expect("a valid regex");
    let early = Regex::new(EARLY_READER).expect("a valid regex");
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split('#').next().unwrap_or("");
        let shown = line.trim();
        if chmod.is_match(code) && code.contains("dirname") {
            out.push(format!("{}: chmod of a parent folder: {shown}", n + 1));
        }
        if early.is_match(code) {
            out.push(format!(
                "{}: a reader that exits early behind a pipe (pipefail fails the writer): {shown}",
                n + 1
            ));
        }
    }
    out
}

/// shellcheck's warnings and errors (sources followed from the checkout's
/// root, where the scripts cd), one failure per script that has any.
fn shellcheck(scripts: &[PathBuf], repo: &Path) -> anyhow::Result<Vec<String>> {
    let mut failures = Vec::new();
    for script in scripts {
        let run = Command::new("shellcheck")
            .args(["-x", "-P", "SCRIPTDIR", "-S", "warning"])
            .arg(script)
            .current_dir(repo)
            .output();
        let run = match run {
            Ok(run) => run,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(vec![
                    "shellcheck is not installed: apt-get install shellcheck".into(),
                ]);
            }
            Err(e) => return Err(e).context("run shellcheck"),
        };
        if !run.status.success() {
            let out = String::from_utf8_lossy(&run.stdout);
            failures.push(format!(
                "{}: shellcheck:\n{}",
                file_name(script),
                out.trim()
            ));
        }
    }
    Ok(failures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn early_readers_behind_a_pipe_are_found() {
        let text = "curl -fsS $u | grep -q timeline\ncurl -fsS $u | grep timeline >/dev/null\n\
                    ls | head -1\n# ls | head\nps | grep --quiet x\nchmod 755 \"$(dirname \"$d\")\"\n";
        let problems = line_problems(text);
        let lines: Vec<&str> = problems
            .iter()
            .map(|p| p.split(':').next().unwrap_or(""))
            .collect();
        assert_eq!(lines, ["1", "3", "5", "6"], "{problems:?}");
    }

    #[test]
    fn definitions_are_read() {
        assert_eq!(
            definitions("say() { :; }\n  free_port() {\n:\n}\nx=1\n"),
            ["say", "free_port"]
        );
    }

    #[test]
    fn inline_programs_of_other_languages_are_found() {
        let re = Regex::new(EMBEDDED).expect("a valid regex");
        assert!(re.is_match(r#"  python3 - "$1" <<'PY'"#));
        assert!(re.is_match(r#"json() { python3 -c "import json"; }"#));
        assert!(re.is_match("node <<'JS'"));
        assert!(!re.is_match(r#"  python3 -m venv "$VENV""#));
        assert!(!re.is_match("require_packages python3:python3"));
    }
}
