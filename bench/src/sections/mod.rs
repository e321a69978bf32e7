//! lock-bench's sections, one file each, in the order they run; each
//! prints its rows of the table (`consensus` a table of its own) and is
//! named on the command line by its file's name. `token` always runs
//! first: its floor is every later one's.

pub mod consensus;
pub mod contended;
pub mod many;
pub mod redlock;
pub mod rslock;
pub mod token;
pub mod watchdog;

/// The sections' names, in the order they run.
pub const NAMES: [&str; 7] = [
    "token",
    "redlock",
    "rslock",
    "watchdog",
    "contended",
    "many",
    "consensus",
];
