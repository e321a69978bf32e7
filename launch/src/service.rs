//! A [`Service`]: one program that is started, killed and started again on
//! the same command line — a server a test crashes and brings back — and
//! the port-race retry of a first start on free ports.

use std::net::TcpListener;
use std::process::ExitStatus;

use crate::error::LaunchError;
use crate::process::{Launch, Running};
use crate::ready::Ready;

/// How many times a first start on free ports is tried when the process
/// exits at start (see [`start_on_free_ports`]).
pub const PORT_RACE_ATTEMPTS: u32 = 3;

/// A program, when it counts as started, and its running process group,
/// if any. Dropping it kills the group.
#[derive(Debug)]
pub struct Service {
    launch: Launch,
    ready: Ready,
    running: Option<Running>,
}

impl Service {
    /// Not started yet: see [`Service::start`].
    pub fn new(launch: Launch, ready: Ready) -> Self {
        Self {
            launch,
            ready,
            running: None,
        }
    }

    /// Its name in messages.
    pub fn name(&self) -> &str {
        &self.launch.name
    }

    /// Start (again, after [`Service::kill`]) and wait until ready. On
    /// failure nothing of it is left running.
    pub fn start(&mut self) -> Result<(), LaunchError> {
        let mut running = self.spawn()?;
        running.wait_ready(&self.ready)?;
        self.running = Some(running);
        Ok(())
    }

    /// [`Service::start`] for async callers ([`Running::wait_ready_async`]).
    #[cfg(feature = "tokio")]
    pub async fn start_async(&mut self) -> Result<(), LaunchError> {
        let mut running = self.spawn()?;
        running.wait_ready_async(&self.ready).await?;
        self.running = Some(running);
        Ok(())
    }

    fn spawn(&mut self) -> Result<Running, LaunchError> {
        match &self.running {
            Some(running) => Err(LaunchError::AlreadyRunning {
                name: self.launch.name.clone(),
                pid: running.pid(),
            }),
            None => self.launch.spawn(),
        }
    }

    /// `SIGKILL` to its group, like a crash; its files stay. Nothing when
    /// it is not running.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        self.running.take().map(Running::kill)
    }

    /// Graceful stop ([`Running::stop`]). Nothing when it is not running.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        self.running.take().map(Running::stop)
    }

    /// The running process group, if any.
    pub fn running(&self) -> Option<&Running> {
        self.running.as_ref()
    }

    /// Whether it runs (started and not killed).
    pub fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// The leader's pid, while running.
    pub fn pid(&self) -> Option<u32> {
        self.running.as_ref().map(Running::pid)
    }

    /// `SIGSTOP` to its group ([`Running::freeze`]).
    pub fn freeze(&mut self) -> Result<(), LaunchError> {
        match &mut self.running {
            Some(running) => running.freeze(),
            None => Err(LaunchError::NotRunning {
                name: self.launch.name.clone(),
            }),
        }
    }

    /// `SIGCONT` to its group if frozen ([`Running::thaw`]); nothing when
    /// it is not frozen or not running.
    pub fn thaw(&mut self) -> Result<(), LaunchError> {
        self.running.as_mut().map_or(Ok(()), Running::thaw)
    }
}

/// `N` distinct ports nobody listens on right now (all bound at once, then
/// released).
pub fn free_ports<const N: usize>() -> Result<[u16; N], LaunchError> {
    let mut listeners = Vec::with_capacity(N);
    let mut ports = [0; N];
    for port in &mut ports {
        let listener = TcpListener::bind("127.0.0.1:0")
            .map_err(LaunchError::io("bind 127.0.0.1:0 for a free port"))?;
        *port = listener
            .local_addr()
            .map_err(LaunchError::io("read a bound port"))?
            .port();
        listeners.push(listener);
    }
    Ok(ports)
}

/// A port nobody listens on right now on 127.0.0.1.
pub fn free_port() -> Result<u16, LaunchError> {
    free_ports::<1>().map(|[port]| port)
}

/// Start the service `service_on` builds for `N` free ports, and wait until
/// it is ready.
///
/// A port is probed free, then bound by the server, and another process
/// (another test's server) can take it in between; the server then exits
/// with "Address already in use". So a start whose process exits is tried
/// again on new ports, [`PORT_RACE_ATTEMPTS`] times in all; a real start
/// failure fails every time and its last error is returned. A start that
/// hangs is not retried.
pub fn start_on_free_ports<const N: usize>(
    mut service_on: impl FnMut([u16; N]) -> Result<Service, LaunchError>,
) -> Result<([u16; N], Service), LaunchError> {
    let mut attempts = 0;
    loop {
        let (ports, mut service) = build(&mut service_on)?;
        if let Some(done) = settle(&mut attempts, service.start()) {
            return done.map(|()| (ports, service));
        }
    }
}

/// [`start_on_free_ports`] for async callers ([`Service::start_async`]).
#[cfg(feature = "tokio")]
pub async fn start_on_free_ports_async<const N: usize>(
    mut service_on: impl FnMut([u16; N]) -> Result<Service, LaunchError>,
) -> Result<([u16; N], Service), LaunchError> {
    let mut attempts = 0;
    loop {
        let (ports, mut service) = build(&mut service_on)?;
        if let Some(done) = settle(&mut attempts, service.start_async().await) {
            return done.map(|()| (ports, service));
        }
    }
}

fn build<const N: usize>(
    service_on: &mut impl FnMut([u16; N]) -> Result<Service, LaunchError>,
) -> Result<([u16; N], Service), LaunchError> {
    let ports = free_ports()?;
    Ok((ports, service_on(ports)?))
}

/// The outcome of one start, or None to try again on new ports.
fn settle(attempts: &mut u32, started: Result<(), LaunchError>) -> Option<Result<(), LaunchError>> {
    *attempts += 1;
    match started {
        Err(e) if e.exited_at_start() && *attempts < PORT_RACE_ATTEMPTS => None,
        done => Some(done),
    }
}
