//! The Docker engine and its command line: a command's output, an engine
//! that answers (dockerd started when none does), an image's size, and the
//! stand-ins of images no registry serves.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

use crate::util::say;

/// `program args…`, its standard output; an error with its standard error
/// when it fails.
pub(super) fn output(program: &str, args: &[&str]) -> anyhow::Result<String> {
    let mut command = Command::new(program);
    command.args(args).stdin(Stdio::null());
    stdout_of(command, &format!("{program} {}", args.join(" ")))
}

/// What `command` (`what`, in its error) printed; an error with its
/// standard error when it fails.
pub(super) fn stdout_of(mut command: Command, what: &str) -> anyhow::Result<String> {
    let out = command.output().with_context(|| format!("run {what}"))?;
    if !out.status.success() {
        bail!(
            "{what} exited {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `docker args…`, its standard output.
pub(super) fn docker(args: &[&str]) -> anyhow::Result<String> {
    output("docker", args)
}

/// A Docker engine that answers: the running one, or dockerd started here
/// (as root; its log in /var/log/seckill-dockerd.log).
pub(super) fn ensure_engine() -> anyhow::Result<()> {
    let answers = || docker(&["info"]).is_ok();
    if answers() {
        return Ok(());
    }
    if !nix::unistd::Uid::effective().is_root() {
        bail!("no Docker engine answers and we are not root: start dockerd (or add yourself to the docker group)");
    }
    let log = "/var/log/seckill-dockerd.log";
    say(&format!(
        "no Docker engine answers: starting dockerd (log {log})"
    ));
    let file = std::fs::File::create(log).with_context(|| format!("create {log}"))?;
    Command::new("setsid")
        .arg("dockerd")
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .spawn()
        .context("start dockerd")?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if answers() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let tail = std::fs::read_to_string(log).unwrap_or_default();
    let last: Vec<&str> = tail.lines().rev().take(20).collect();
    bail!(
        "dockerd did not start in 60 s (log {log}):\n{}",
        last.into_iter().rev().collect::<Vec<_>>().join("\n")
    )
}

/// An image's size, `123 MB`.
pub(super) fn image_size(image: &str) -> String {
    docker(&["image", "inspect", "-f", "{{.Size}}", image])
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .map_or_else(|| "size unknown".into(), |b| format!("{:.0} MB", b / 1e6))
}

/// Stand-ins of `images` where no registry serves them
/// (docker/standins/make.sh).
pub(super) fn standins(root: &Path, images: &[&str]) -> anyhow::Result<()> {
    let status = Command::new(root.join("docker/standins/make.sh"))
        .args(images)
        .current_dir(root)
        .status()
        .context("docker/standins/make.sh")?;
    anyhow::ensure!(
        status.success(),
        "docker/standins/make.sh {} failed",
        images.join(" ")
    );
    Ok(())
}
