//! Spawning a program in a process group of its own, and the handle that
//! owns that group until it is stopped, killed or dropped.
//!
//! Why a group: `Child::kill` signals one pid, and a program may not be one
//! process — `sh -c` runs its commands as children, a JVM or a server may
//! fork helpers. Killing only the direct child leaves those running,
//! holding ports and files. Every process here starts as the leader of a
//! new group (`process_group(0)`), and every signal goes to the whole
//! group with `killpg(2)`.
//!
//! Why the leader is reaped last: a group id is the leader's pid, and the
//! kernel may give that pid to an unrelated process once the leader is
//! reaped. Until then the zombie leader keeps the id, so a `killpg` cannot
//! reach a stranger. [`Running`] therefore looks at an exit with
//! `waitid(WNOWAIT)` (which leaves the zombie in place), kills the group's
//! stragglers, and only then reaps.

use std::ffi::OsStr;
use std::fs::OpenOptions;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{kill, killpg, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use crate::error::{LaunchError, LogTail};
use crate::interrupt;

/// How long [`Running::stop`] waits after `SIGTERM` unless told otherwise.
pub const DEFAULT_STOP_GRACE: Duration = Duration::from_secs(5);

/// Where a process's stdout and stderr go. Its stdin is always empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Both discarded.
    Discard,
    /// stdout discarded, stderr shared with this process (a test's output
    /// shows the server's warnings as they happen).
    Stderr,
    /// Both appended to this file, which a failed start quotes.
    Log(PathBuf),
}

/// How to start one program: its command line, environment, where its
/// output goes, and what to tell a person whose machine lacks it. Kept by a
/// [`crate::Service`] so that a restart runs the very same command.
#[derive(Debug)]
pub struct Launch {
    pub(crate) name: String,
    command: Command,
    output: Output,
    hint: String,
    stop_grace: Duration,
}

impl Launch {
    /// Run `program`, called `name` in messages (e.g. `redis node2`).
    pub fn new(name: impl Into<String>, program: impl AsRef<OsStr>) -> Self {
        Self {
            name: name.into(),
            command: Command::new(program),
            output: Output::Discard,
            hint: String::new(),
            stop_grace: DEFAULT_STOP_GRACE,
        }
    }

    /// Rename it for messages.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// One more argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.command.arg(arg);
        self
    }

    /// More arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command.args(args);
        self
    }

    /// One environment variable (a later one of the same name wins).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.command.env(key, value);
        self
    }

    /// More environment variables.
    pub fn envs<I, K, V>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.command.envs(vars);
        self
    }

    /// Inherit nothing from this process's environment; the variables this
    /// `Launch` sets, before or after, are kept (unlike
    /// [`Command::env_clear`], which forgets them too).
    pub fn clean_env(mut self) -> Self {
        let kept: Vec<_> = self
            .command
            .get_envs()
            .filter_map(|(key, value)| Some((key.to_owned(), value?.to_owned())))
            .collect();
        self.command.env_clear().envs(kept);
        self
    }

    /// Where stdout and stderr go (default: discarded).
    pub fn output(mut self, output: Output) -> Self {
        self.output = output;
        self
    }

    /// Append stdout and stderr to `path`.
    pub fn log(self, path: impl Into<PathBuf>) -> Self {
        self.output(Output::Log(path.into()))
    }

    /// What to install when the program is missing, e.g.
    /// `Debian package redis-server`.
    pub fn hint(mut self, hint: impl AsRef<str>) -> Self {
        self.hint = format!("; {}", hint.as_ref());
        self
    }

    /// How long [`Running::stop`] waits between `SIGTERM` and `SIGKILL`.
    pub fn stop_grace(mut self, grace: Duration) -> Self {
        self.stop_grace = grace;
        self
    }

    /// The program's file name, as `/proc/<pid>/comm` shows it (see
    /// [`runs`]).
    pub fn program_name(&self) -> String {
        let program = self.program();
        Path::new(&program)
            .file_name()
            .map_or(program.clone(), |n| n.to_string_lossy().into_owned())
    }

    /// The program, for messages.
    fn program(&self) -> String {
        self.command.get_program().to_string_lossy().into_owned()
    }

    /// Start it as the leader of a new process group, without waiting for
    /// it to be ready (see [`Running::wait_ready`]).
    pub fn spawn(&mut self) -> Result<Running, LaunchError> {
        let log = match &self.output {
            Output::Discard => {
                self.command.stdout(Stdio::null()).stderr(Stdio::null());
                None
            }
            Output::Stderr => {
                self.command.stdout(Stdio::null()).stderr(Stdio::inherit());
                None
            }
            Output::Log(path) => {
                let what = || format!("open {}'s log {}", self.name, path.display());
                let file = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(LaunchError::io(what()))?;
                let from = file.metadata().map(|m| m.len()).unwrap_or(0);
                let stdout = file.try_clone().map_err(LaunchError::io(what()))?;
                self.command.stdout(stdout).stderr(file);
                Some((path.clone(), from))
            }
        };
        let child = self
            .command
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|source| LaunchError::Spawn {
                name: self.name.clone(),
                program: self.program(),
                hint: self.hint.clone(),
                source,
            })?;
        let group = pid_of(child.id());
        interrupt::register(group);
        Ok(Running {
            name: self.name.clone(),
            program: self.program(),
            output: self.output.clone(),
            log,
            stop_grace: self.stop_grace,
            group,
            child,
            status: None,
            frozen: false,
        })
    }
}

/// A started process group, owned: dropping it kills the whole group
/// (`SIGKILL`) and reaps the leader.
#[derive(Debug)]
pub struct Running {
    name: String,
    program: String,
    output: Output,
    /// The log file and its length when this process started.
    log: Option<(PathBuf, u64)>,
    stop_grace: Duration,
    /// The group id, which is the leader's pid.
    group: Pid,
    child: Child,
    /// Set once the leader is reaped; no signal is sent after that.
    status: Option<ExitStatus>,
    frozen: bool,
}

impl Running {
    /// The leader's pid (also the group id).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its name in messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file its output goes to, if any.
    pub fn log_path(&self) -> Option<&Path> {
        self.log.as_ref().map(|(path, _)| path.as_path())
    }

    /// Send `signal` to every process of the group.
    pub fn signal(&self, signal: Signal) -> Result<(), LaunchError> {
        if self.status.is_some() {
            return Err(LaunchError::NotRunning {
                name: self.name.clone(),
            });
        }
        killpg(self.group, signal).map_err(|source| LaunchError::Signal {
            signal,
            target: format!("process group {} ({})", self.group, self.name),
            source,
        })
    }

    /// `SIGSTOP` to the group: every thread of every process stops, as in
    /// a stop-the-world pause or a frozen VM.
    pub fn freeze(&mut self) -> Result<(), LaunchError> {
        self.signal(Signal::SIGSTOP)?;
        self.frozen = true;
        Ok(())
    }

    /// `SIGCONT` to the group: it carries on, unaware of the gap. Nothing
    /// is sent when it is not frozen.
    pub fn thaw(&mut self) -> Result<(), LaunchError> {
        if self.frozen {
            self.signal(Signal::SIGCONT)?;
            self.frozen = false;
        }
        Ok(())
    }

    /// Whether [`Running::freeze`] stopped it and no thaw followed.
    pub fn is_frozen(&self) -> bool {
        self.frozen
    }

    /// Whether the leader has ended (it stays a zombie until reaped).
    pub fn has_exited(&self) -> bool {
        if self.status.is_some() {
            return true;
        }
        let peek = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
        // ECHILD: somebody else reaped it; it is gone either way.
        !matches!(
            waitid(Id::Pid(self.group), peek),
            Ok(WaitStatus::StillAlive) | Err(Errno::EINTR)
        )
    }

    /// Graceful stop: `SIGTERM` to the group (and `SIGCONT`, so that a
    /// frozen process can act on it), up to the stop grace for the leader to
    /// end, then `SIGKILL` to whatever of the group is left; reaps the
    /// leader and returns its exit status.
    pub fn stop(mut self) -> ExitStatus {
        let _ = self.signal(Signal::SIGTERM);
        if self.frozen {
            let _ = self.signal(Signal::SIGCONT);
        }
        let deadline = Instant::now() + self.stop_grace;
        while !self.has_exited() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.reap()
    }

    /// Let it outlive this process: nothing is signalled on drop, and an
    /// interrupt no longer kills its group. Returns the leader's pid (the
    /// group id), for a pid file: `make demo`'s servers keep running after
    /// `seckill-lab demo` exits, and `demo stop` signals their groups.
    pub fn detach(self) -> u32 {
        let pid = self.pid();
        interrupt::forget(self.group);
        // The Child handle holds no resource a detached process needs; the
        // leader is reparented to init when this process exits.
        std::mem::forget(self);
        pid
    }

    /// Wait for the leader to end on its own (a one-shot program, such as
    /// an installer), then reap the group; returns its exit status.
    pub fn wait(mut self) -> ExitStatus {
        // Blocks until the leader ends; WNOWAIT leaves the zombie (and so
        // the group id) for `reap`, as everywhere in this file.
        let exited = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT;
        while matches!(waitid(Id::Pid(self.group), exited), Err(Errno::EINTR)) {}
        self.reap()
    }

    /// `SIGKILL` to the group — no shutdown, no save: a crash. Reaps the
    /// leader and returns its exit status.
    pub fn kill(mut self) -> ExitStatus {
        self.reap()
    }

    /// `SIGKILL` to the group (stragglers the leader left included), then
    /// wait for the leader. Idempotent.
    pub(crate) fn reap(&mut self) -> ExitStatus {
        if let Some(status) = self.status {
            return status;
        }
        // ESRCH: the group is empty already.
        let _ = killpg(self.group, Signal::SIGKILL);
        let status = match self.child.wait() {
            Ok(status) => status,
            // Only when another waiter reaped it; SIGKILL is what it got.
            Err(_) => std::os::unix::process::ExitStatusExt::from_raw(Signal::SIGKILL as i32),
        };
        interrupt::forget(self.group);
        self.status = Some(status);
        self.frozen = false;
        status
    }

    /// The error for a start that ended early: reaps, quotes the log.
    pub(crate) fn exited_at_start(&mut self) -> LaunchError {
        let status = self.reap();
        LaunchError::Exited {
            name: self.name.clone(),
            program: self.program.clone(),
            status,
            log: Box::new(self.log_tail()),
        }
    }

    /// The error for a start that never got ready.
    pub(crate) fn not_ready(&self, within: Duration, probe: &str) -> LaunchError {
        LaunchError::NotReady {
            name: self.name.clone(),
            program: self.program.clone(),
            within,
            probe: probe.to_owned(),
            log: Box::new(self.log_tail()),
        }
    }

    /// What it has written to its log since it started.
    pub fn log_tail(&self) -> LogTail {
        match (&self.log, &self.output) {
            (Some((path, from)), _) => LogTail::read(path, *from),
            (None, Output::Stderr) => LogTail {
                note: Some("its stderr went to this process's stderr"),
                ..LogTail::default()
            },
            (None, _) => LogTail {
                note: Some("its output was discarded"),
                ..LogTail::default()
            },
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.reap();
    }
}

fn pid_of(pid: u32) -> Pid {
    // A pid always fits in pid_t; the fallback is never used.
    Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX))
}

/// Send a signal named as `kill(1)` takes it (`STOP`, `-STOP`, `SIGSTOP`,
/// `-19`) to one process — not a group: for a pid this crate did not start
/// (a server's own `process_id`, say).
pub fn send_signal(pid: u32, signal: &str) -> Result<(), LaunchError> {
    let signal = parse_signal(signal)?;
    kill(pid_of(pid), signal).map_err(|source| LaunchError::Signal {
        signal,
        target: format!("pid {pid}"),
        source,
    })
}

/// A signal from a name or number as `kill(1)` takes it.
pub fn parse_signal(name: &str) -> Result<Signal, LaunchError> {
    let bare = name.trim().trim_start_matches('-');
    let unknown = || LaunchError::UnknownSignal(name.to_owned());
    if let Ok(number) = bare.parse::<i32>() {
        return Signal::try_from(number).map_err(|_| unknown());
    }
    let upper = bare.to_ascii_uppercase();
    let full = if upper.starts_with("SIG") {
        upper
    } else {
        format!("SIG{upper}")
    };
    full.parse().map_err(|_| unknown())
}

/// Whether `pid` is a live process (not a zombie) running `program`, as
/// `/proc/<pid>/comm` names it (a program's file name, cut to 15 bytes): a
/// pid file's process may have ended and its pid gone to a stranger.
pub fn runs(pid: u32, program: &str) -> bool {
    let name = Path::new(program)
        .file_name()
        .map_or_else(|| program.into(), |n| n.to_string_lossy());
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    let zombie = stat_fields(&pid.to_string())
        .and_then(|fields| fields.into_iter().next())
        .is_some_and(|state| state.starts_with('Z'));
    // comm is cut at 15 bytes, not at a character.
    let name = name.as_bytes();
    !comm.is_empty() && !zombie && comm.trim_end().as_bytes() == &name[..name.len().min(15)]
}

/// The fields of `/proc/<pid>/stat` after the command (`pid` may be
/// `self`): state, ppid, pgrp, … The command may hold spaces and
/// parentheses, so they are read after its last `)`. `None` when the
/// process cannot be read.
pub fn stat_fields(pid: &str) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// Stop detached groups (see [`Running::detach`]) by their leaders' pids:
/// those still running their program get `SIGTERM` (and `SIGCONT`) to the
/// whole group at once, up to `grace` for every leader to end, then
/// `SIGKILL` to the groups left. Returns the pids that were running.
pub fn stop_detached(groups: &[(u32, &str)], grace: Duration) -> Vec<u32> {
    let alive = |(pid, program): &&(u32, &str)| runs(*pid, program);
    let live: Vec<&(u32, &str)> = groups.iter().filter(alive).collect();
    for (pid, _) in &live {
        let _ = killpg(pid_of(*pid), Signal::SIGTERM);
        let _ = killpg(pid_of(*pid), Signal::SIGCONT);
    }
    let deadline = Instant::now() + grace;
    while live.iter().any(alive) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    for (pid, _) in live.iter().copied().filter(alive) {
        let _ = killpg(pid_of(*pid), Signal::SIGKILL);
    }
    live.into_iter().map(|(pid, _)| *pid).collect()
}
