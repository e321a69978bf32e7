//! A stack's state folder: `<name>.port` (a port once chosen is taken
//! again while it is free, so a bookmarked URL stays valid across runs),
//! `<name>.pid` (the leader of a detached process group, see
//! `seckill_launch::Running::detach`) and `<name>.log`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use seckill_launch::{Launch, Ready};

/// How long a stopped process may take to finish its in-flight requests.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// One stack's state folder.
#[derive(Debug, Clone)]
pub struct StateDir {
    pub path: PathBuf,
}

impl StateDir {
    pub fn new(path: PathBuf) -> anyhow::Result<Self> {
        std::fs::create_dir_all(&path).with_context(|| format!("create {}", path.display()))?;
        Ok(Self { path })
    }

    /// `<name>.<ext>` in the folder.
    pub fn file(&self, name: &str, ext: &str) -> PathBuf {
        self.path.join(format!("{name}.{ext}"))
    }

    /// A subfolder, made when missing.
    pub fn sub(&self, name: &str) -> anyhow::Result<PathBuf> {
        let dir = self.path.join(name);
        std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
        Ok(dir)
    }

    /// The port kept in `<name>.port`, if any.
    pub fn port(&self, name: &str) -> Option<u16> {
        read_number(&self.file(name, "port"))
    }

    /// `<name>`'s port: the kept one while it is free, else a new free one
    /// (kept).
    pub fn pick_port(&self, name: &str) -> anyhow::Result<u16> {
        if let Some(port) = self.port(name).filter(|p| port_free(*p)) {
            return Ok(port);
        }
        let port = seckill_launch::free_port()?;
        let file = self.file(name, "port");
        std::fs::write(&file, format!("{port}\n"))
            .with_context(|| format!("write {}", file.display()))?;
        Ok(port)
    }

    /// `<name>`'s port for a new start: whatever of ours runs under that
    /// name is stopped first, so that its kept port is free again.
    pub fn claim(&self, name: &str, program: &str) -> anyhow::Result<u16> {
        self.stop(&[(name, program)]);
        self.pick_port(name)
    }

    /// `http://127.0.0.1:<port of name>`.
    pub fn url(&self, name: &str) -> Option<String> {
        self.port(name).map(|p| format!("http://127.0.0.1:{p}"))
    }

    /// The pid in `<name>.pid` when that process still runs `program`.
    pub fn alive(&self, name: &str, program: &str) -> Option<u32> {
        read_number::<u32>(&self.file(name, "pid"))
            .filter(|pid| seckill_launch::runs(*pid, program))
    }

    /// Start `launch` (its output in `<name>.log` unless it names its own),
    /// wait until `ready`, and leave it running detached, its pid in
    /// `<name>.pid`. Whatever of `<name>` ran before is stopped first.
    pub fn start(&self, name: &str, mut launch: Launch, ready: &Ready) -> anyhow::Result<u32> {
        let program = launch.program_name();
        self.stop(&[(name, &program)]);
        let mut running = launch.spawn()?;
        let pid = running.pid();
        std::fs::write(self.file(name, "pid"), format!("{pid}\n"))
            .with_context(|| format!("write {name}.pid"))?;
        running.wait_ready(ready)?;
        Ok(running.detach())
    }

    /// Stop the processes of these `(name, program)` pid files, all at
    /// once (a replica finishes its in-flight requests first); the pid
    /// files go. Returns what was stopped, for a message.
    pub fn stop(&self, which: &[(&str, &str)]) -> Vec<String> {
        let groups: Vec<(u32, &str, &str)> = which
            .iter()
            .filter_map(|(name, program)| {
                let pid = read_number(&self.file(name, "pid"));
                let _ = std::fs::remove_file(self.file(name, "pid"));
                pid.map(|pid| (pid, *name, *program))
            })
            .collect();
        let targets: Vec<(u32, &str)> = groups.iter().map(|(p, _, prog)| (*p, *prog)).collect();
        let stopped = seckill_launch::stop_detached(&targets, STOP_GRACE);
        groups
            .iter()
            .filter(|(pid, _, _)| stopped.contains(pid))
            .map(|(pid, name, _)| format!("{name} (pid {pid})"))
            .collect()
    }

    /// Every `<prefix>*.pid` name in the folder (`app-` → app-1, app-2…).
    pub fn names(&self, prefix: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.path)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter_map(|f| f.strip_suffix(".pid").map(str::to_owned))
            .filter(|n| n.starts_with(prefix))
            .collect();
        names.sort();
        names
    }
}

/// Nobody listens on `127.0.0.1:port` (std binds with `SO_REUSEADDR`, as
/// the servers do).
pub fn port_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

fn read_number<T: std::str::FromStr>(path: &Path) -> Option<T> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}
