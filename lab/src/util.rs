//! The lab's small helpers, shared by its chores: its own output line
//! ([`say`]), the files under a folder, a command's first line, a number
//! in a text, the runtime a chore's async work runs on. They live here,
//! below every chore, so no chore imports back up from `main.rs`.

use std::path::PathBuf;

/// Every file under `dir`, in its subfolders too.
pub(crate) fn files_under(dir: &std::path::Path) -> anyhow::Result<Vec<PathBuf>> {
    use anyhow::Context as _;
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("read {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            out.extend(files_under(&path)?);
        } else {
            out.push(path);
        }
    }
    Ok(out)
}

/// A command's first line of output, or `fallback`.
pub(crate) fn first_line(program: &str, args: &[&str], fallback: &str) -> String {
    std::process::Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_owned))
        .unwrap_or_else(|| fallback.to_owned())
}

/// The number after `key` on the first line that starts with it (leading
/// blanks aside): `tps = 812.3`, `Requests/sec: 14996.1`, `VmRSS: 12904 kB`.
pub(crate) fn number_after(text: &str, key: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.trim_start().strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// The current-thread tokio runtime a subcommand's async work runs on.
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    use anyhow::Context as _;
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("a tokio runtime")
}

/// Run `then` on the first Ctrl-C or SIGTERM, on a thread of its own; the
/// signals no longer end the process by themselves from here on (the
/// children of a chore still get the Ctrl-C of their terminal).
pub(crate) fn on_interrupt(then: impl FnOnce() + Send + 'static) {
    let _ = std::thread::Builder::new()
        .name("on-interrupt".into())
        .spawn(move || {
            let Ok(rt) = runtime() else { return };
            let signalled = rt.block_on(async {
                use tokio::signal::unix::{signal, SignalKind};
                let mut term = signal(SignalKind::terminate())?;
                tokio::select! {
                    r = tokio::signal::ctrl_c() => r,
                    _ = term.recv() => Ok(()),
                }
            });
            if signalled.is_ok() {
                then();
            }
        });
}

/// A line of the lab's own, in bold: `[seckill] …`.
pub(crate) fn say(message: &str) {
    println!("\x1b[1m[seckill]\x1b[0m {message}");
}
