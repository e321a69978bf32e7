//! Logging: `tracing` with an env filter (`RUST_LOG`, default
//! `info,sqlx=warn`), as plain text or JSON lines (`SECKILL_LOG_FORMAT`).

use tracing_subscriber::EnvFilter;

use crate::configuration::LogFormat;

/// Install the global subscriber once. Later calls are ignored (tests).
pub fn init(format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false);
    let _ = if format == LogFormat::Json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}
