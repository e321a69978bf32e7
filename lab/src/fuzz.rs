//! `seckill-lab fuzz-api` (`make fuzz-api`): schemathesis (from PyPI, in
//! .state/venv) against one live replica with every backing server of the
//! demo stack (.demo/fuzz-api/), driven by the replica's own `GET
//! /openapi.json`. It passes when no answer is a 5xx and every answer
//! matches the document: documented status code, content type and body
//! schema. Admin routes get the token.
//!
//! Every operation is fuzzed, two with a bound:
//! - `GET /api/v1/status/stream` is endless unless `?events=K` bounds it
//!   (the document says so); schemathesis reads an event stream until it
//!   ends, or until `max-stream-events` events (3 here, in the config file
//!   written here) or the request timeout, and checks each event it read
//!   against the event schema.
//! - `PUT /admin/faults`: the replica runs with
//!   `SECKILL_FAULT_DELAY_MAX_MS` (`FUZZ_FAULT_MAX_MS`, 20 ms), so the
//!   document's `maximum` of every delay is 20 and the route refuses more:
//!   the fuzzer can switch faults on, never a ten-minute pause. The faults
//!   it leaves on are printed, then cleared, after the run.
//!
//! The seed is fresh each run and printed first (and again on failure):
//! `FUZZ_SEED=<n> make fuzz-api` replays it. Variables: `FUZZ_SEED`,
//! `FUZZ_MAX_EXAMPLES` (25 per operation), `FUZZ_SECONDS` (time budget,
//! 240), `FUZZ_FAULT_MAX_MS` (20), `SECKILL_BIN_DIR` (the profile of the
//! binaries, as everywhere). The Makefile installs python3-venv first.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context as _};
use seckill_load::api::Service;

use crate::util::{first_line, say};

/// The stack's folder, relative to the checkout.
const STACK_DIR: &str = ".demo/fuzz-api";

/// Run it from the checkout's root.
pub fn run() -> anyhow::Result<()> {
    let root = std::env::current_dir().context("the current folder")?;
    let schemathesis = install(&root)?;
    say(&first_line(
        &schemathesis.display().to_string(),
        &["--version"],
        "schemathesis (version unknown)",
    ));
    let seed = match std::env::var("FUZZ_SEED") {
        Ok(text) => text.trim().parse::<u64>().map_err(|_| {
            anyhow::anyhow!("FUZZ_SEED must be a non-negative integer, not '{text}'")
        })?,
        Err(_) => fresh_seed(),
    };
    say(&format!(
        "seed {seed} (replay this run: FUZZ_SEED={seed} make fuzz-api)"
    ));
    let max_ms = std::env::var("FUZZ_FAULT_MAX_MS").unwrap_or_else(|_| "20".into());
    let interrupted = swallow_interrupts();
    let down = || crate::stack::command("down", Path::new(STACK_DIR), 1, Vec::new());
    let up = crate::stack::command(
        "up",
        Path::new(STACK_DIR),
        1,
        vec![format!("SECKILL_FAULT_DELAY_MAX_MS={max_ms}")],
    );
    if let Err(e) = up {
        let _ = down();
        return Err(e);
    }
    let fuzzed = fuzz(&root, &schemathesis, seed);
    let down = down();
    if interrupted.load(std::sync::atomic::Ordering::Relaxed) {
        bail!("interrupted (the stack is down)");
    }
    if fuzzed.is_err() {
        say(&format!(
            "schemathesis failed with seed {seed}: replay with FUZZ_SEED={seed} make fuzz-api"
        ));
    }
    fuzzed?;
    down
}

/// Ctrl-C reaches schemathesis (the same process group), which stops;
/// this process only notes it, so the stack still goes down after.
fn swallow_interrupts() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = std::sync::Arc::clone(&seen);
    crate::util::on_interrupt(move || flag.store(true, std::sync::atomic::Ordering::Relaxed));
    seen
}

/// schemathesis in .state/venv, installed from PyPI when missing.
fn install(root: &Path) -> anyhow::Result<std::path::PathBuf> {
    let venv = root.join(".state/venv");
    let schemathesis = venv.join("bin/schemathesis");
    if schemathesis.exists() {
        return Ok(schemathesis);
    }
    say("installing schemathesis from PyPI into .state/venv");
    let _ = std::fs::remove_dir_all(&venv);
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .context("python3 -m venv")?;
    anyhow::ensure!(
        made.success(),
        "python3 -m venv .state/venv failed (python3-venv installed?)"
    );
    let installed = Command::new(venv.join("bin/pip"))
        .args([
            "install",
            "-q",
            "--disable-pip-version-check",
            "schemathesis>=4,<5",
        ])
        .status()
        .context("pip")?;
    anyhow::ensure!(
        installed.success(),
        "pip could not install schemathesis (is PyPI reachable?)"
    );
    Ok(schemathesis)
}

/// A seed from the clock and the process id (what replays a run is the
/// number printed, not how it was drawn).
fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.finish() >> 34
}

/// The run against the stack's one replica, then the faults it left on
/// printed and cleared.
fn fuzz(root: &Path, schemathesis: &Path, seed: u64) -> anyhow::Result<()> {
    let dir = root.join(STACK_DIR);
    let port = std::fs::read_to_string(dir.join("app-1.port")).context("the replica's port")?;
    let url = format!("http://127.0.0.1:{}", port.trim());
    let token = std::env::var("SECKILL_ADMIN_TOKEN")
        .unwrap_or_else(|_| seckill_wire::admin::DEMO_TOKEN.to_owned());
    let config = dir.join("schemathesis.toml");
    std::fs::write(
        &config,
        format!(
            "# Written by seckill-lab fuzz-api. schemathesis keeps its crash cache (what\n\
             # `schemathesis replay` reads) here, not in the checkout.\n\
             [cache]\ndirectory = \"{}\"\n\n\
             # An event stream is read until it ends or for at most this many events\n\
             # (the stream's own ?events=K may end it first).\n\
             [[operations]]\ninclude-name = \"GET /api/v1/status/stream\"\nmax-stream-events = 3\n",
            dir.join("schemathesis-cache").display()
        ),
    )
    .with_context(|| format!("write {}", config.display()))?;
    say(&format!(
        "schemathesis run {url}/openapi.json (seed {seed})"
    ));
    let env = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    let status = Command::new(schemathesis)
        .arg("--no-color")
        .arg("--config-file")
        .arg(&config)
        .args(["run", &format!("{url}/openapi.json")])
        .args(["--header", &format!("Authorization: Bearer {token}")])
        .args([
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
        ])
        .args(["--max-examples", &env("FUZZ_MAX_EXAMPLES", "25")])
        .args(["--max-time", &env("FUZZ_SECONDS", "240")])
        .args(["--request-timeout", "10", "--workers", "2"])
        .args(["--seed", &seed.to_string(), "--generation-database", "none"])
        .status()
        .context("run schemathesis")?;
    let service = Service::new(vec![url], token);
    let runtime = crate::util::runtime()?;
    match runtime.block_on(service.faults()) {
        Ok(f) => say(&format!(
            "faults the fuzzer left on: {}",
            serde_json::to_string(&f).unwrap_or_default()
        )),
        Err(e) => say(&format!("faults the fuzzer left on: unreadable ({e})")),
    }
    if let Err(e) = runtime.block_on(service.clear_faults()) {
        say(&format!("could not clear the faults: {e}"));
    }
    if !status.success() {
        bail!("schemathesis exited {status}");
    }
    Ok(())
}
