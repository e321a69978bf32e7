//! What every HTTP handler shares: [`AppState`]. [`crate::startup`] builds
//! it and mounts [`crate::routes`], which read it — so it lives below both.

use std::sync::Arc;

use crate::configuration::Settings;
use crate::control::Control;
use crate::db::ServerWitness;
use crate::strategy::Deps;

/// What every handler shares.
#[derive(Debug)]
pub struct AppState {
    /// Pool, Redis, metrics and lock timings.
    pub deps: Deps,
    /// The readers' own small pool (status page, `/metrics`, readiness,
    /// audit): answers while grabs hold every connection of `deps.pool`.
    pub read_pool: sqlx::PgPool,
    /// Asks the server (through `read_pool`) whether it answers, when a
    /// grab found no pooled connection: contention or an outage.
    pub witness: ServerWitness,
    /// Active strategy and faults.
    pub control: Arc<Control>,
    /// The settings the service started with.
    pub settings: Settings,
    /// The admin token in force (see [`Settings::effective_admin_token`]).
    pub admin_token: Option<String>,
}
