//! # seckill-app
//!
//! A flash-sale order service whose stock decrement runs inside a
//! configurable lock strategy, built to show — with numbers — why each
//! distributed-lock design holds or breaks.
//!
//! The modules are layered: each one imports only from the ones listed
//! before it (`make import-graph` checks that there is no import circle).
//! A guided tour, bottom to top:
//!
//! 1. [`configuration`] — settings, and the strategy names they accept.
//! 2. [`error`] — what a grab can end in and what clients see;
//!    [`faults`] — the workshop faults, as plain data.
//! 3. [`db`] — schema access and the audit (the ground truth);
//!    [`redis_client`] — Redis connections and the refresh loop of shared
//!    state; [`metrics`] — Prometheus metrics; [`orders`] — a product's
//!    orders, paged (what a load generator checks its orders against).
//! 4. [`history`] — the mutual-exclusion history that counts overlapping
//!    critical sections across replicas.
//! 5. [`strategy`] — what a strategy is: the [`strategy::Strategy`] trait,
//!    a grab request, an order, the dependencies and context a grab runs
//!    with; [`order_batch`] — batched order inserts (`redis-lua-stock`).
//! 6. [`section`] — the critical section every lock protects, written to
//!    lose updates loudly when the lock fails.
//! 7. [`locking`] — the [`locking::DistributedLock`] trait, its guard and
//!    lease, and how a lock wraps the section (acquire → section → commit →
//!    release).
//! 8. [`lock`] — the strategies, one file each; each file says which seed
//!    step it teaches, what it guarantees and how it fails.
//! 9. [`registry`] — every strategy of this build, by name, in teaching
//!    order.
//! 10. [`control`] — the active strategy and workshop faults, shared by all
//!     replicas through Redis.
//! 11. [`state`] — what every handler shares; [`routes`] — the HTTP API,
//!     whose request and answer bodies are the `seckill_wire` crate's types
//!     (shared with the load generator, which decodes the same structs);
//!     [`openapi`] — its OpenAPI document, generated from the handlers;
//!     [`startup`] — wiring; [`telemetry`] — logs.

pub mod cli;
pub mod configuration;
pub mod control;
pub mod db;
pub mod error;
pub mod faults;
pub mod freeze;
pub mod history;
pub mod lock;
pub mod locking;
pub mod metrics;
pub mod openapi;
pub mod order_batch;
pub mod orders;
pub mod redis_client;
pub mod registry;
pub mod routes;
pub mod section;
pub mod setting_types;
pub mod startup;
pub mod state;
pub mod strategy;
pub mod telemetry;
