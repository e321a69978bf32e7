//! What every HTTP handler shares: [`AppState`]. [`crate::startup`] builds
//! it and mounts [`crate::routes`], which read it — so it lives below both.

use std::sync::Arc;

use crate::configuration::Settings;
use crate::control::Control;
use crate::db::{KnownProducts, ServerWitness};
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
    /// The products known to exist: a grab of any other id answers `404`
    /// before its strategy runs (no lock, no per-product state).
    pub known_products: KnownProducts,
    /// Active strategy and faults.
    pub control: Arc<Control>,
    /// The settings the service started with.
    pub settings: Settings,
    /// The admin token in force (see [`Settings::effective_admin_token`]).
    pub admin_token: Option<String>,
}
