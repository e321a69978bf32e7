//! What can go wrong talking to the service, each with a message a person
//! can act on; each maps to an exit code.

/// What can go wrong talking to the service. Each maps to an exit code.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// Nothing answers at a URL (wrong URL, service down).
    #[error("cannot reach the service at {url}: {reason}. Is it running? (`make demo` starts one; check --url)")]
    Unreachable { url: String, reason: String },
    /// The admin token was refused.
    #[error("the admin token was refused by {url} (HTTP {status}); pass --admin-token or set SECKILL_ADMIN_TOKEN to the service's SECKILL_ADMIN_TOKEN")]
    Unauthorized { url: String, status: u16 },
    /// A strategy the service does not know.
    #[error("unknown strategy {name:?}; the service knows: {known}")]
    UnknownStrategy { name: String, known: String },
    /// A product that is not seeded.
    #[error("product {id} does not exist on {url}; start the service with SECKILL_SEED_PRODUCTS listing it (e.g. 1:100,2:100)")]
    UnknownProduct { id: u64, url: String },
    /// Replicas that did not agree on the strategy in time.
    #[error("replica {url} still runs {seen:?} 10 s after switching to {wanted:?}: do all replicas share one Redis?")]
    NotSwitched {
        url: String,
        seen: String,
        wanted: String,
    },
    /// Any other unexpected answer.
    #[error("{what} at {url} answered HTTP {status}: {body}")]
    Unexpected {
        what: &'static str,
        url: String,
        status: u16,
        body: String,
    },
}
