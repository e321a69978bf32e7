//! Killing this process's groups when it is itself interrupted.
//!
//! A process group of its own has a cost: the terminal's Ctrl-C goes to the
//! foreground group only, so it no longer reaches the servers a test
//! started, and a test binary that dies of `SIGINT` runs no `Drop`. Without
//! help, an interrupted `cargo test` would leave its `redis-server`s and
//! ZooKeeper JVMs behind. [`kill_groups_on_interrupt`] installs, once, a
//! handler thread that on `SIGINT`, `SIGTERM` or `SIGHUP` sends `SIGKILL` to
//! every group this process started and still owns, then dies of the signal
//! as it would have without the handler.
//!
//! It is opt-in because it takes over those signals: the test harness
//! (`seckill-testkit`) turns it on, the load generator does not — it catches
//! Ctrl-C itself and drops its processes on the way out.

use std::collections::BTreeSet;
use std::sync::{Mutex, Once, PoisonError};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use signal_hook::low_level::emulate_default_handler;

use crate::error::LaunchError;

/// Group ids of every [`crate::Running`] not reaped yet.
static LIVE: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

pub(crate) fn register(group: Pid) {
    LIVE.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(group.as_raw());
}

pub(crate) fn forget(group: Pid) {
    LIVE.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&group.as_raw());
}

/// On `SIGINT`, `SIGTERM` or `SIGHUP`: `SIGKILL` every live group this
/// process started, then end as that signal's default action would.
/// Installed once per process; later calls do nothing.
pub fn kill_groups_on_interrupt() -> Result<(), LaunchError> {
    static INSTALL: Once = Once::new();
    let mut result = Ok(());
    INSTALL.call_once(|| {
        result = Signals::new([SIGINT, SIGTERM, SIGHUP])
            .map_err(LaunchError::io("install the interrupt handler"))
            .and_then(|mut signals| {
                std::thread::Builder::new()
                    .name("seckill-launch-interrupt".into())
                    .spawn(move || {
                        if let Some(signal) = signals.forever().next() {
                            kill_live_groups();
                            let _ = emulate_default_handler(signal);
                        }
                    })
                    .map(drop)
                    .map_err(LaunchError::io("start the interrupt handler thread"))
            });
    });
    result
}

fn kill_live_groups() {
    let live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
    for &group in live.iter() {
        // These groups' leaders are not reaped yet: each id is still ours.
        let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
    }
}
