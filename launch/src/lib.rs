//! One process launcher for the tests (`seckill-testkit`), the load
//! generator's scenarios and the benchmarks: every `redis-server`, etcd,
//! ZooKeeper and `seckill-app` they own starts, waits, freezes and dies
//! through here.
//!
//! A tour, in the order a start happens:
//!
//! - [`free_ports`] / [`free_port`] pick ports nobody listens on, and
//!   [`start_on_free_ports`] starts a server on them, trying again on new
//!   ports when it exits at start (the port was taken between our probe and
//!   its bind).
//! - [`servers`] holds the command lines of the servers we run, as
//!   [`Launch`]es; a [`Launch`] is any program, its arguments, environment
//!   and [`Output`] (a log file, quoted when a start fails).
//! - [`Launch::spawn`] starts it as the leader of a process group of its own
//!   and returns a [`Running`], which owns the group: [`Running::freeze`] /
//!   [`Running::thaw`] (`SIGSTOP`/`SIGCONT`), [`Running::stop`] (`SIGTERM`,
//!   a bounded wait, `SIGKILL`), [`Running::kill`], and `SIGKILL` on drop —
//!   always to the whole group, through `killpg(2)`, so a JVM's or a shell's
//!   children die with it ([`process`] says why the leader is reaped
//!   last).
//! - [`Ready`] says when it counts as started (a TCP connect, an HTTP 2xx, a
//!   Redis `PONG`, a ZooKeeper `srvr`, any closure) and
//!   [`Running::wait_ready`] waits for that, or fails with a [`LaunchError`]
//!   naming the program and quoting the end of its log.
//! - [`Service`] puts a launch and its readiness together, so a server can
//!   be killed and started again on the same command line.
//! - [`kill_groups_on_interrupt`] makes an interrupted test binary kill its
//!   groups on the way out (a group of its own no longer gets the
//!   terminal's Ctrl-C).
//!
//! # Sync core, async waits
//!
//! Spawning, signalling and reaping are quick system calls, so the core is
//! synchronous std code plus `nix`: the test harness calls it from plain
//! tests and from inside tokio tests alike. Only the readiness wait takes
//! time. [`Running::wait_ready`] sleeps the calling thread; with the `tokio`
//! feature, `Running::wait_ready_async`, `Service::start_async` and
//! `start_on_free_ports_async` run the same probes on tokio's blocking
//! pool and sleep with tokio, so the load generator's runtime keeps serving
//! its load while a server restarts. Both waits judge a try with the same
//! code; the probes are plain std networking with 500 ms timeouts.
//!
//! Signals go through `nix` (`kill`, `killpg`), never `kill(1)`;
//! [`send_signal`] takes `kill(1)`'s names for a pid this crate did not
//! start.

mod error;
mod interrupt;
pub mod process;
mod ready;
pub mod servers;
mod service;

use std::net::SocketAddr;

pub use error::{LaunchError, LogTail};
pub use interrupt::kill_groups_on_interrupt;
pub use nix::sys::signal::Signal;
pub use process::{
    parse_signal, runs, send_signal, stop_detached, Launch, Output, Running, DEFAULT_STOP_GRACE,
};
pub use ready::Ready;
#[cfg(feature = "tokio")]
pub use service::start_on_free_ports_async;
pub use service::{free_port, free_ports, start_on_free_ports, Service, PORT_RACE_ATTEMPTS};

/// `127.0.0.1:port`.
pub fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}
