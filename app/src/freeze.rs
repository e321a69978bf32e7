//! The scenario hook that freezes the whole process at a named point of
//! the critical section (`POST /admin/freeze`, `DELETE /admin/freeze`).
//!
//! Kleppmann's process pause is a stop of *everything*: the grab, the
//! renewal tasks, the runtime's timers. The scenario runner used to send
//! `SIGSTOP` from outside when the arbiter showed the replica inside, which
//! could land anywhere in the section — mostly in its simulated work, never
//! where the claim under test needs it. Armed here, the next section of
//! this replica that reaches the point sends `SIGSTOP` to its own process:
//! every thread stops at once, exactly there, and stays stopped until the
//! runner sends `SIGCONT`. One arm, one freeze: the hook disarms as it
//! fires, so the grabs that follow after the `SIGCONT` run on.
//!
//! The points ([`FreezeAt`]):
//! - `before-check`: after the read, before the write and before the lock's
//!   last check ([`crate::locking::LockGuard::check_still_held`]);
//! - `after-check`: after that check, just before the commit — the pause
//!   no check can catch;
//! - `anywhere`: a moment drawn uniformly in `[0, work_delay_ms)` from the
//!   section's start; if the section ended first, the draw is given to the
//!   next section.
//!
//! A process that stops itself needs someone to continue it, so the hook
//! is off unless `SECKILL_SCENARIO_HOOKS` is on (the scenario runner turns
//! it on for the replicas it starts; no stack of the demo does). Off, the
//! routes answer `403 hooks_disabled`.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::Rng as _;
pub use seckill_wire::faults::{FreezeArmed, FreezeAt, FreezeBody};

/// The one-shot freeze of this process: what is armed, as one atomic
/// (every grab passes the points, so reading it is a load, not a lock).
#[derive(Debug, Clone, Default)]
pub struct FreezeHook {
    armed: Arc<AtomicU8>,
}

/// Nothing armed.
const NONE: u8 = 0;

fn code(at: FreezeAt) -> u8 {
    match at {
        FreezeAt::BeforeCheck => 1,
        FreezeAt::AfterCheck => 2,
        FreezeAt::Anywhere => 3,
        FreezeAt::DuringAcquire => 4,
    }
}

fn point(code: u8) -> Option<FreezeAt> {
    match code {
        1 => Some(FreezeAt::BeforeCheck),
        2 => Some(FreezeAt::AfterCheck),
        3 => Some(FreezeAt::Anywhere),
        4 => Some(FreezeAt::DuringAcquire),
        _ => None,
    }
}

impl FreezeHook {
    /// Arm the next freeze at `at` (replaces an armed one).
    pub fn arm(&self, at: FreezeAt) {
        self.armed.store(code(at), Ordering::SeqCst);
    }

    /// Disarm; what was armed.
    pub fn disarm(&self) -> Option<FreezeAt> {
        point(self.armed.swap(NONE, Ordering::SeqCst))
    }

    /// What is armed.
    pub fn armed(&self) -> Option<FreezeAt> {
        point(self.armed.load(Ordering::SeqCst))
    }

    /// Disarm if armed at `at`; whether it was (one caller wins).
    fn take(&self, at: FreezeAt) -> bool {
        let code = code(at);
        self.armed.load(Ordering::Relaxed) == code
            && self
                .armed
                .compare_exchange(code, NONE, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
    }

    /// At point `at` of a section: when the hook is armed there, disarm it
    /// and stop the process (returns once a `SIGCONT` came).
    pub fn at(&self, at: FreezeAt) {
        if self.take(at) {
            stop_self(at);
        }
    }

    /// A section begins with `work` of simulated work ahead: when the hook
    /// is armed `anywhere`, a moment of that work is drawn and the process
    /// stops then — if the section is still open. The section holds the
    /// returned watch until it ends (commit, abort, error): dropped, it
    /// closes the section, and a draw that came too late goes back.
    pub fn section(&self, work: Duration) -> SectionWatch {
        if !self.take(FreezeAt::Anywhere) {
            // The common case: nothing armed, nothing allocated.
            return SectionWatch { open: None };
        }
        let open = Arc::new(AtomicBool::new(true));
        let (hook, still_open) = (self.clone(), open.clone());
        let max_us = u64::try_from(work.as_micros()).unwrap_or(u64::MAX).max(1);
        let after = Duration::from_micros(rand::rng().random_range(0..max_us));
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            if still_open.load(Ordering::SeqCst) {
                stop_self(FreezeAt::Anywhere);
            } else {
                // The section ended before the moment drawn: the next
                // section draws again (unless a new arm came meanwhile).
                let _ = hook.armed.compare_exchange(
                    NONE,
                    code(FreezeAt::Anywhere),
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                );
            }
        });
        SectionWatch { open: Some(open) }
    }
}

/// Held by a section while it runs (see [`FreezeHook::section`]).
#[derive(Debug)]
pub struct SectionWatch {
    /// `Some` only when this section drew an `anywhere` moment.
    open: Option<Arc<AtomicBool>>,
}

impl Drop for SectionWatch {
    fn drop(&mut self) {
        if let Some(open) = &self.open {
            open.store(false, Ordering::SeqCst);
        }
    }
}

/// `SIGSTOP` raised on the calling thread (`tgkill` to itself): the
/// thread stops on its way back from the call, before one more
/// instruction of the section, and the stop takes every other thread of
/// the process with it until a `SIGCONT`. (A `kill` to the process would
/// wake another thread to start the stop, and the caller could run on —
/// through the check, into the write — before it is stopped too.)
fn stop_self(at: FreezeAt) {
    tracing::warn!(
        ?at,
        "freezing the whole process (SIGSTOP) at the armed point"
    );
    if let Err(e) = nix::sys::signal::raise(nix::sys::signal::Signal::SIGSTOP) {
        tracing::error!(error = %e, "SIGSTOP to self failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_that_is_not_armed_does_not_fire_and_disarm_reports_what_was_armed() {
        let hook = FreezeHook::default();
        hook.arm(FreezeAt::AfterCheck);
        // A different point passes through (this would stop the test
        // process if it fired).
        hook.at(FreezeAt::BeforeCheck);
        assert_eq!(hook.armed(), Some(FreezeAt::AfterCheck));
        assert_eq!(hook.disarm(), Some(FreezeAt::AfterCheck));
        assert_eq!(hook.armed(), None);
        hook.at(FreezeAt::AfterCheck);
    }

    #[tokio::test]
    async fn an_anywhere_draw_after_the_section_ended_goes_back_to_the_next_section() {
        let hook = FreezeHook::default();
        hook.arm(FreezeAt::Anywhere);
        // Closed at once: the moment drawn in [0, 50 ms) comes after.
        drop(hook.section(Duration::from_millis(50)));
        assert_eq!(hook.armed(), None, "taken by the section");
        seckill_testkit::eventually("given back", Duration::from_secs(5), || async {
            match hook.armed() {
                Some(FreezeAt::Anywhere) => Ok(()),
                other => Err(other),
            }
        })
        .await;
        hook.disarm();
    }
}
