//! The lock strategies: one file each, behind one
//! [`Strategy`](crate::strategy::Strategy) trait.
//!
//! Start here when teaching. Every strategy file opens with the same three
//! headings — **Seed step** (which step of the lineage it rebuilds: docs/strategies.md),
//! **Guarantee**, **How it fails** — then the code, short enough to read in
//! front of a room.
//!
//! What the files share lives below them, so a strategy reads top-down:
//! the trait and the words of a grab in [`crate::strategy`]; the
//! [`DistributedLock`](crate::locking::DistributedLock) trait, its guard and
//! the acquire → section → commit → release runner in [`crate::locking`].
//! The list of strategies — names, constructors, lookup — is the registry
//! above them, [`crate::registry`]. This module only declares the files.
//!
//! Three families share the critical section of [`crate::section`]:
//!
//! - *External locks* (`DistributedLock`: `local-mutex`, the Redis locks
//!   from `setnx` to `fenced`, the coordination services `mysql-get-lock`,
//!   `etcd-lease`, `zk-ephemeral-seq`, and `pg-lock-table`) wrap the whole
//!   section: [`grab_with_lock`](crate::locking::grab_with_lock) acquires,
//!   runs the section, commits and releases — or releases *before* the
//!   commit when the `unlock_before_commit` fault is on. Their files only
//!   say how to acquire and release; the registry runs each as a strategy
//!   through [`Locked`](crate::locking::Locked).
//! - *Database locks* (`pg-for-update`, `pg-advisory`, `pg-optimistic`) take
//!   their lock inside the section's own transaction.
//! - *Not locks at all* (`pg-atomic`, `redis-lua-stock`) replace the
//!   read-modify-write with one atomic operation; they are the floors and
//!   ceilings the locks are measured against. `pg-2pc` splits the same
//!   decrement and order over two databases, in a two-phase commit;
//!   `pg-3pc` in a three-phase one, each database behind a participant
//!   with its own timeout (`participant`).
//!
//! `none` runs the section bare, to show what the locks are for.

pub mod etcd_lease;
pub mod fenced;
pub mod local_mutex;
pub mod mysql_get_lock;
pub mod none;
pub mod participant;
pub mod pg_2pc;
pub mod pg_3pc;
pub mod pg_advisory;
pub mod pg_atomic;
pub mod pg_for_update;
pub mod pg_lock_table;
pub mod pg_optimistic;
pub mod redis_lua_stock;
pub mod redlock;
pub mod set_nx_px;
pub mod set_nx_px_check_del;
pub mod set_nx_px_token;
pub mod setnx;
pub mod setnx_expire;
pub mod setnx_expire_lua;
pub mod setnx_getset;
pub mod watchdog;
pub mod zk_ephemeral_seq;
