//! # seckill-app
//!
//! A flash-sale order service whose stock decrement runs inside a
//! configurable lock strategy, built to show — with numbers — why each
//! distributed-lock design holds or breaks.
//!
//! A guided tour, in reading order:
//!
//! 1. [`section`] — the critical section every lock protects, written to
//!    lose updates loudly when the lock fails.
//! 2. [`lock`] — the strategies, one file each, behind one trait; each file
//!    says which seed step it teaches, what it guarantees and how it fails.
//! 3. [`db`] — schema access and the audit (the ground truth).
//! 4. [`control`] — the active strategy and workshop faults, shared by all
//!    replicas through Redis; [`history`] — the mutual-exclusion history
//!    that counts overlapping critical sections across replicas.
//! 5. [`routes`] — the HTTP API; [`error`] — what clients see.
//! 6. [`metrics`] — Prometheus metrics; [`configuration`] — settings;
//!    [`startup`] — wiring; [`telemetry`] — logs.

pub mod configuration;
pub mod control;
pub mod db;
pub mod error;
pub mod history;
pub mod lock;
pub mod metrics;
pub mod order_batch;
pub mod redis_client;
pub mod routes;
pub mod section;
pub mod startup;
pub mod telemetry;
