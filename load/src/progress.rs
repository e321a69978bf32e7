//! The progress of long work (`scenario`, `debate`, `atlas`, and `make
//! results` around them): on a terminal, a bar
//! on stderr with the cases done of all planned, the cases in hand and
//! an estimate of the time left; every line the run prints goes above it.
//! With `--quiet`, or when stderr is not a terminal, there is no bar: a
//! line per case, as before. Nothing of it reaches a report.
//!
//! The bar is the command's: [`begin`] at its start, and every plan of
//! cases it runs (a sweep, then each round of a bisection) adds its cases
//! with [`planned`], so the total grows as a bisection adds probes and
//! the estimate follows.

use std::io::IsTerminal as _;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The bar of the running command, when one is drawn.
static BAR: Mutex<Option<Bar>> = Mutex::new(None);

struct Bar {
    bar: ProgressBar,
    /// The labels of the cases in hand.
    running: Vec<String>,
}

/// Draws the bar until dropped (then clears it).
#[derive(Debug)]
#[must_use = "the bar lives as long as this guard"]
pub struct Guard(());

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(b) = BAR.lock().ok().and_then(|mut slot| slot.take()) {
            b.bar.finish_and_clear();
        }
    }
}

/// Start the command's bar: drawn only when stderr is a terminal and the
/// command is not `--quiet`.
pub fn begin(quiet: bool) -> Guard {
    if !quiet && std::io::stderr().is_terminal() {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:28}] {pos}/{len} cases · about {eta} left · {wide_msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.enable_steady_tick(std::time::Duration::from_millis(500));
        if let Ok(mut slot) = BAR.lock() {
            *slot = Some(Bar {
                bar,
                running: Vec::new(),
            });
        }
    }
    Guard(())
}

fn with_bar<T>(f: impl FnOnce(&mut Bar) -> T) -> Option<T> {
    BAR.lock().ok()?.as_mut().map(f)
}

/// `n` more cases are planned.
pub fn planned(n: usize) {
    with_bar(|b| b.bar.inc_length(n as u64));
}

/// The case `label` begins.
pub fn started(label: &str) {
    with_bar(|b| {
        b.running.push(label.to_owned());
        b.bar.set_message(b.running.join(" | "));
    });
}

/// The case `label` ended.
pub fn finished(label: &str) {
    with_bar(|b| {
        if let Some(i) = b.running.iter().position(|l| l == label) {
            b.running.remove(i);
        }
        b.bar.set_message(b.running.join(" | "));
        b.bar.inc(1);
    });
}

/// One case ended, whichever it was (a run watched from outside, where
/// only its verdict lines are seen): the oldest in hand leaves.
pub fn finished_any() {
    with_bar(|b| {
        if !b.running.is_empty() {
            b.running.remove(0);
        }
        b.bar.set_message(b.running.join(" | "));
        b.bar.inc(1);
    });
}

/// Print a line of the run: above the bar when one is drawn.
pub fn line(text: impl AsRef<str>) {
    let text = text.as_ref();
    if with_bar(|b| b.bar.println(text)).is_none() {
        println!("{text}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_terminal_no_bar_is_drawn_and_lines_still_print() {
        // cargo test's stderr is captured, never a terminal.
        let guard = begin(false);
        planned(3);
        started("gc-pause · redlock");
        assert!(with_bar(|_| ()).is_none(), "no bar off a terminal");
        line("a line per case");
        finished("gc-pause · redlock");
        drop(guard);
    }
}
