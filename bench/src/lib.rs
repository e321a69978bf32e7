//! The lock benchmarks' library; the two binaries in `src/bin/` are thin
//! mains over it. Read top-down:
//!
//! - [`stats`]: the one quantile every median and p99 comes from.
//! - [`timing`]: the timing loops, shared by both binaries.
//! - [`table`]: lock-bench's printed table, its columns in one place.
//! - [`harness`]: a lock called outside the service, and the two ways
//!   every lock is driven (sequential cycles, tasks on one key).
//! - [`floor`]: the raw Redis floors each lock figure stands beside.
//! - [`sections`]: lock-bench's sections, one file each.
//!
//! `lock-bench` (`src/bin/lock-bench.rs`) starts five redis-server nodes
//! and runs the sections named on its command line; `audit-bench`
//! (`src/bin/audit-bench.rs`) times the audit scrape at a million orders.

pub mod floor;
pub mod harness;
pub mod sections;
pub mod stats;
pub mod table;
pub mod timing;
