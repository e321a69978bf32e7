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

/// A line of the lab's own, in bold: `[seckill] …`.
pub(crate) fn say(message: &str) {
    println!("\x1b[1m[seckill]\x1b[0m {message}");
}
