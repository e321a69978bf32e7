//! What can go wrong when starting, signalling or stopping a process, and
//! the tail of its log that a failed start carries, so that a test or a
//! scenario that cannot start its server says why without a second look.

use std::fmt;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::Signal;

/// How many lines of a log a failed start quotes.
const TAIL_LINES: usize = 20;

/// Every failure of this crate. Each names the process (its name and its
/// program); a failed start also quotes the end of the log it wrote.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The program could not be run at all (not installed, not executable).
    #[error("cannot start {name} ({program}): {source}{hint}")]
    Spawn {
        name: String,
        program: String,
        /// What to install, with a leading `; ` (empty when none is known).
        hint: String,
        source: std::io::Error,
    },
    /// A file the program needs is missing (a jar, a built binary).
    #[error("cannot start {name}: {} is missing{hint}", path.display())]
    Missing {
        name: String,
        path: PathBuf,
        hint: String,
    },
    /// The process ended before it was ready: a bad flag, or a port another
    /// process bound between our probe and its bind.
    #[error("{name} ({program}) exited at start ({status}){log}")]
    Exited {
        name: String,
        program: String,
        status: ExitStatus,
        log: Box<LogTail>,
    },
    /// It kept running but never passed its readiness probe.
    #[error("{name} ({program}) not ready within {within:?}: {probe}{log}")]
    NotReady {
        name: String,
        program: String,
        within: Duration,
        /// What was asked, e.g. `GET /health answers 2xx on 127.0.0.1:4000`.
        probe: String,
        log: Box<LogTail>,
    },
    /// A freeze or a signal was asked of a process that is not running.
    #[error("{name} is not running")]
    NotRunning { name: String },
    /// A start was asked of a process that is still running.
    #[error("{name} is already running (pid {pid})")]
    AlreadyRunning { name: String, pid: u32 },
    /// `kill(2)` or `killpg(2)` refused.
    #[error("{signal} to {target}: {source}")]
    Signal {
        signal: Signal,
        /// `pid 123` or `process group 123 (redis-server)`.
        target: String,
        source: Errno,
    },
    /// A signal name `kill(1)` would take, but we do not know.
    #[error("unknown signal {0:?} (expected a name such as STOP, -CONT, SIGKILL or a number)")]
    UnknownSignal(String),
    /// Setting up around the process failed: a log file, a config file, a
    /// free port.
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

impl LaunchError {
    /// Whether the process ended at start, the one failure that a start on
    /// other ports may cure (see [`crate::start_on_free_ports`]).
    pub fn exited_at_start(&self) -> bool {
        matches!(self, Self::Exited { .. })
    }

    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let what = what.into();
        move |source| Self::Io { what, source }
    }
}

/// The last lines a process wrote to its log during this start, for an
/// error message, or a note saying why there are none.
#[derive(Debug, Default)]
pub struct LogTail {
    /// The log file, if its output went to one.
    pub path: Option<PathBuf>,
    /// Why there are no lines to quote (output discarded or shared, log unreadable).
    pub note: Option<&'static str>,
    /// Its last lines written since this start, oldest first.
    pub lines: Vec<String>,
}

impl LogTail {
    /// The last lines of `path` from byte `from` on (what this start wrote,
    /// not what an earlier run of the same log did).
    pub(crate) fn read(path: &Path, from: u64) -> Self {
        let mut text = String::new();
        let read = std::fs::File::open(path).and_then(|mut file| {
            file.seek(SeekFrom::Start(from))?;
            // A log may hold bytes that are not UTF-8; a lossy copy is
            // enough for a message.
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)?;
            text = String::from_utf8_lossy(&bytes).into_owned();
            Ok(())
        });
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        let skip = lines.len().saturating_sub(TAIL_LINES);
        Self {
            path: Some(path.to_owned()),
            note: read.is_err().then_some("its log could not be read"),
            lines: lines.into_iter().skip(skip).collect(),
        }
    }
}

impl fmt::Display for LogTail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.path, self.note) {
            (_, Some(note)) => write!(f, "; {note}"),
            (Some(path), None) if self.lines.is_empty() => {
                write!(f, "; its log {} is empty", path.display())
            }
            (Some(path), None) => {
                write!(f, "; last lines of {}:", path.display())?;
                for line in &self.lines {
                    write!(f, "\n    {line}")?;
                }
                Ok(())
            }
            (None, None) => Ok(()),
        }
    }
}
