//! What each strategy is expected to do under the faults in force — shared
//! by `run`/`compare` (fault-aware verdicts) and `scenario`.
//!
//! A strategy's class (`GET /admin/strategies`) says what it promises with
//! no fault; a fault aimed at its weak point changes the expectation: a
//! within-TTL lock under a pause or work longer than its TTL, any lock taken
//! around the section under `unlock_before_commit`, are *expected* to break
//! — the teacher meant it — and are reported `expected-unsafe`, not
//! `VIOLATION`.

use serde_json::Value;

/// How a strategy is built, which decides what each fault does to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `none`.
    NoLock,
    /// `local-mutex`: one process only.
    ProcessLocal,
    /// `setnx`: never expires.
    NoExpiry,
    /// A key with a fixed TTL on one Redis (`set-nx-px*`, `setnx-expire*`,
    /// `setnx-getset`).
    Ttl,
    /// `watchdog`, `etcd-lease`, `zk-ephemeral-seq`: a lease (or session)
    /// kept alive by a background task while the process runs.
    Lease,
    /// `redlock`: a quorum of nodes, validity checked before commit.
    Validity,
    /// `mysql-get-lock`: held by a database session; frees when the
    /// connection closes, not on a timer.
    Session,
    /// `fenced`: a TTL lock, but the database refuses stale tokens.
    Fenced,
    /// `pg-lock-table`: a row swept by age.
    LockTable,
    /// `pg-for-update`, `pg-advisory`: held by the transaction itself.
    InTransaction,
    /// `pg-optimistic`, `pg-atomic`, `redis-lua-stock`: no lock at all.
    NotALock,
}

/// The kind of a strategy, by its stable name.
pub fn kind(strategy: &str) -> Kind {
    match strategy {
        "none" => Kind::NoLock,
        "local-mutex" => Kind::ProcessLocal,
        "setnx" => Kind::NoExpiry,
        "watchdog" | "etcd-lease" | "zk-ephemeral-seq" => Kind::Lease,
        "mysql-get-lock" => Kind::Session,
        "redlock" => Kind::Validity,
        "fenced" => Kind::Fenced,
        "pg-lock-table" => Kind::LockTable,
        "pg-for-update" | "pg-advisory" => Kind::InTransaction,
        "pg-optimistic" | "pg-atomic" | "redis-lua-stock" => Kind::NotALock,
        _ => Kind::Ttl,
    }
}

/// Whether "holds" means no two holders, or only exact data.
pub fn guards_data_only(kind: Kind) -> bool {
    matches!(kind, Kind::Fenced | Kind::NotALock)
}

/// Why `strategy` is expected to break under `faults` (the body of `GET
/// /admin/faults`) with locks of `ttl_ms`, or `None` when it should hold.
pub fn breaks_under(strategy: &str, faults: &Value, ttl_ms: Option<u64>) -> Option<String> {
    let k = kind(strategy);
    let external = matches!(
        k,
        Kind::NoExpiry | Kind::Ttl | Kind::Lease | Kind::Validity | Kind::LockTable | Kind::Session
    );
    if external && faults["unlock_before_commit"].as_bool() == Some(true) {
        return Some("unlock_before_commit: the next holder reads before the commit".into());
    }
    let ttl = ttl_ms?;
    let expiring = matches!(k, Kind::Ttl | Kind::Validity | Kind::LockTable);
    let work = faults["work_delay_ms"].as_u64().unwrap_or(0);
    let pause = faults["pause_ms"].as_u64().unwrap_or(0);
    if expiring && work >= ttl {
        return Some(format!("work_delay_ms {work} >= the lock's TTL {ttl} ms"));
    }
    if expiring && pause >= ttl {
        return Some(format!("pause_ms {pause} >= the lock's TTL {ttl} ms"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn faults_aimed_at_a_design_make_it_expected_to_break() {
        let pause = json!({ "pause_ms": 500, "work_delay_ms": 2, "unlock_before_commit": false });
        assert!(breaks_under("set-nx-px-token", &pause, Some(300)).is_some());
        assert!(breaks_under("redlock", &pause, Some(300)).is_some());
        // The in-process pause does not stop the watchdog's renewals.
        assert!(breaks_under("watchdog", &pause, Some(300)).is_none());
        assert!(breaks_under("fenced", &pause, Some(300)).is_none());
        assert!(breaks_under("pg-for-update", &pause, Some(300)).is_none());
        assert!(breaks_under("set-nx-px-token", &pause, Some(30_000)).is_none());
        let early = json!({ "unlock_before_commit": true });
        assert!(breaks_under("watchdog", &early, None).is_some());
        assert!(breaks_under("pg-advisory", &early, None).is_none());
        assert!(breaks_under("fenced", &early, None).is_none());
    }
}
