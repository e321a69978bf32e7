//! This machine's wall clock as the reports write it.

/// This machine's wall clock, ms since the epoch.
pub fn now_ms() -> i64 {
    i64::try_from(unix_ms()).unwrap_or(i64::MAX)
}

/// This machine's wall clock now, ms since the Unix epoch, as the reports
/// write it (`start_unix_ms`, a band's `data-start-ms`).
pub fn unix_ms() -> u64 {
    unix_ms_at(std::time::SystemTime::now())
}

/// `at` in ms since the Unix epoch (0 before it).
pub fn unix_ms_at(at: std::time::SystemTime) -> u64 {
    at.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
