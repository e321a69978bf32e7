//! Integration tests: one binary, one module per area. Every test talks
//! HTTP to a real service backed by real PostgreSQL and Redis.

mod checker;
mod harness;

mod api;
mod cli;
mod concurrency;
mod exclusion;
mod failures;
mod ground_truth;
mod history_truth;
mod openapi;
mod orders_route;
mod pg_2pc;
mod pg_3pc;
mod redlock_extend;
mod status;
