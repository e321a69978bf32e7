//! Readiness: when a started server may be used. A [`Ready`] is a probe (a
//! TCP connect, an HTTP status, a Redis `PING`, a ZooKeeper `srvr`, or any
//! closure), how long to keep asking, and how often.
//!
//! Every probe is plain blocking std networking with short timeouts, so one
//! probe serves both waits: [`Running::wait_ready`] sleeps the thread
//! between tries; `Running::wait_ready_async` (feature `tokio`) runs each
//! try on tokio's blocking pool and sleeps with tokio. Both judge a try the
//! same way ([`Running::judge`]): ready, or exited (with its log), or past
//! the deadline (with its log), or ask again.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::LaunchError;
use crate::local;
use crate::process::Running;

/// How long a probe's connect, write or read may take.
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

type Probe = Arc<dyn Fn() -> bool + Send + Sync>;

/// When a process counts as started, and how long to wait for that.
#[derive(Clone)]
pub struct Ready {
    probe: Probe,
    what: String,
    within: Duration,
    every: Duration,
    /// The local port the probe asks: an answer there counts only when the
    /// listener is this process's (or one of its group's), not another
    /// process's that took the same free port first.
    port: Option<u16>,
}

impl std::fmt::Debug for Ready {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ready")
            .field("what", &self.what)
            .field("within", &self.within)
            .field("every", &self.every)
            .finish_non_exhaustive()
    }
}

impl Ready {
    /// Ready when `probe` returns true; `what` says what it asks, for the
    /// message of a start that never got there. 30 s, every 50 ms, unless
    /// changed with [`Ready::within`] and [`Ready::every`].
    pub fn when(what: impl Into<String>, probe: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        Self {
            probe: Arc::new(probe),
            what: what.into(),
            within: Duration::from_secs(30),
            every: Duration::from_millis(50),
            port: None,
        }
    }

    /// The answer must come from a listener of the started process's group.
    fn on_port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }

    /// Ready once something accepts a TCP connection on `addr` — whoever
    /// listens (the server probes below also ask that the listener is the
    /// started process's own).
    pub fn port(addr: SocketAddr) -> Self {
        Self::when(format!("a TCP connect to {addr}"), move || {
            TcpStream::connect_timeout(&addr, PROBE_TIMEOUT).is_ok()
        })
    }

    /// Ready once `GET path` on `127.0.0.1:port` answers 2xx.
    pub fn http(port: u16, path: &str) -> Self {
        let addr = local(port);
        let path = path.to_owned();
        Self::when(format!("GET {path} answering 2xx on {addr}"), move || {
            http_status(addr, &path).is_some_and(|status| (200..300).contains(&status))
        })
        .on_port(port)
    }

    /// Ready once the Redis on `127.0.0.1:port` answers `PING` with `PONG`
    /// (within 5 s, every 20 ms).
    pub fn redis(port: u16) -> Self {
        let addr = local(port);
        Self::when(format!("PONG from {addr}"), move || {
            ask(addr, b"PING\r\n").is_some_and(|answer| answer.starts_with("+PONG"))
        })
        .on_port(port)
        .within(Duration::from_secs(5))
        .every(Duration::from_millis(20))
    }

    /// Ready once the ZooKeeper on `127.0.0.1:port` serves: its `srvr`
    /// four-letter word answers with a mode (within 60 s, every 100 ms; a
    /// JVM is slow to start).
    pub fn zookeeper(port: u16) -> Self {
        let addr = local(port);
        Self::when(format!("`srvr` naming a Mode on {addr}"), move || {
            ask(addr, b"srvr").is_some_and(|answer| answer.contains("Mode:"))
        })
        .on_port(port)
        .within(Duration::from_secs(60))
        .every(Duration::from_millis(100))
    }

    /// Ask the probe once, now.
    pub fn probe_once(&self) -> bool {
        (self.probe)()
    }

    /// Give up after `within`.
    pub fn within(mut self, within: Duration) -> Self {
        self.within = within;
        self
    }

    /// Ask again after `every`.
    pub fn every(mut self, every: Duration) -> Self {
        self.every = every;
        self
    }
}

impl Running {
    /// Ask `ready`'s probe until it says yes, sleeping this thread between
    /// tries. Fails when the process ends first or the time is up; either
    /// error quotes its log. The process keeps running after a timeout
    /// (drop it to kill it).
    pub fn wait_ready(&mut self, ready: &Ready) -> Result<(), LaunchError> {
        let deadline = Instant::now() + ready.within;
        while !self.judge(ready, (ready.probe)(), deadline)? {
            std::thread::sleep(ready.every);
        }
        Ok(())
    }

    /// [`Running::wait_ready`] for async callers: each try runs on tokio's
    /// blocking pool (a probe may block up to its 500 ms timeouts), and the
    /// pause between tries is a tokio sleep, so the runtime's workers stay
    /// free — a scenario restarts a server while its load keeps running.
    #[cfg(feature = "tokio")]
    pub async fn wait_ready_async(&mut self, ready: &Ready) -> Result<(), LaunchError> {
        let deadline = Instant::now() + ready.within;
        loop {
            let probe = Arc::clone(&ready.probe);
            let answered = tokio::task::spawn_blocking(move || probe())
                .await
                .unwrap_or(false);
            if self.judge(ready, answered, deadline)? {
                return Ok(());
            }
            tokio::time::sleep(ready.every).await;
        }
    }

    /// One try judged: `Ok(true)` ready, `Ok(false)` ask again, or the
    /// error of a process that ended or ran out of time.
    fn judge(
        &mut self,
        ready: &Ready,
        answered: bool,
        deadline: Instant,
    ) -> Result<bool, LaunchError> {
        // Another process that took the same free port first answers for
        // it: not ready (this one will fail to bind, exit, and be started
        // again on other ports), never a false start.
        let theirs = answered
            && ready
                .port
                .and_then(listener_group)
                .is_some_and(|group| group != self.pid());
        if answered && !theirs {
            Ok(true)
        } else if self.has_exited() {
            Err(self.exited_at_start())
        } else if Instant::now() >= deadline {
            Err(self.not_ready(ready.within, &ready.what))
        } else {
            Ok(false)
        }
    }
}

/// The process group of whoever listens on TCP `port` (IPv4 or IPv6),
/// from /proc: the listening socket's inode, the process holding it, its
/// group. `None` when it cannot be told (no /proc, no such listener seen,
/// a process not readable).
fn listener_group(port: u16) -> Option<u32> {
    let inodes: Vec<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|table| std::fs::read_to_string(table).ok())
        .flat_map(|text| {
            text.lines()
                .skip(1)
                .filter_map(|line| {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    let local_port = fields.get(1)?.rsplit(':').next()?;
                    let listening = *fields.get(3)? == "0A";
                    (listening && u16::from_str_radix(local_port, 16).ok()? == port)
                        .then(|| fields.get(9).map(|inode| format!("socket:[{inode}]")))
                        .flatten()
                })
                .collect::<Vec<_>>()
        })
        .collect();
    if inodes.is_empty() {
        return None;
    }
    for entry in std::fs::read_dir("/proc").ok()?.filter_map(Result::ok) {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        let holds = fds.filter_map(Result::ok).any(|fd| {
            std::fs::read_link(fd.path())
                .is_ok_and(|target| inodes.iter().any(|i| target.as_os_str() == i.as_str()))
        });
        if holds {
            // After the command: state, ppid, pgrp.
            return crate::process::stat_fields(&pid.to_string())?
                .get(2)?
                .parse()
                .ok();
        }
    }
    None
}

/// Send `request`, read the answer until the server closes or goes quiet.
fn ask(addr: SocketAddr, request: &[u8]) -> Option<String> {
    let mut stream = TcpStream::connect_timeout(&addr, PROBE_TIMEOUT).ok()?;
    stream.set_read_timeout(Some(PROBE_TIMEOUT)).ok()?;
    stream.set_write_timeout(Some(PROBE_TIMEOUT)).ok()?;
    stream.write_all(request).ok()?;
    let mut answer = [0u8; 4096];
    let mut len = 0;
    // Redis keeps the connection open after its answer; ZooKeeper closes
    // it. Read what comes until a close, a full buffer or a quiet timeout.
    while len < answer.len() {
        match stream.read(&mut answer[len..]) {
            Ok(0) => break,
            Ok(n) => {
                len += n;
                // A Redis status or error line is the whole answer.
                if matches!(answer[0], b'+' | b'-') && answer[..len].ends_with(b"\r\n") {
                    break;
                }
            }
            Err(_) if len > 0 => break,
            Err(_) => return None,
        }
    }
    Some(String::from_utf8_lossy(&answer[..len]).into_owned())
}

/// Status code of a plain HTTP/1.1 GET, or None when nothing answers.
fn http_status(addr: SocketAddr, path: &str) -> Option<u16> {
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let answer = ask(addr, request.as_bytes())?;
    answer.get(9..12)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This test process's own group, from /proc/self/stat.
    fn own_group() -> u32 {
        crate::process::stat_fields("self")
            .and_then(|fields| fields.get(2)?.parse().ok())
            .expect("pgrp")
    }

    #[test]
    fn a_port_is_traced_to_the_group_of_the_process_listening_on_it() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        assert_eq!(listener_group(port), Some(own_group()));
        drop(listener);
        // Nobody listens now: nothing to tell.
        assert_eq!(listener_group(port), None);
    }
}
