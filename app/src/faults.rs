//! The workshop faults: what `PUT /admin/faults` switches on, as plain
//! data. [`crate::control`] shares them across replicas through Redis
//! ([`FAULTS_KEY`]); each grab carries a snapshot in its
//! [`GrabContext`](crate::strategy::GrabContext), which the critical
//! section and the locks read.

/// The faults in force, where the pause stalls, and a partial update:
/// wire types, shared with the load generator (`GET`/`PUT /admin/faults`).
pub use seckill_wire::faults::{Faults, FaultsPatch, PauseAt};

/// Redis key of the faults (JSON of [`Faults`]).
pub const FAULTS_KEY: &str = "seckill:faults";

/// The faults stored in Redis, read over `current`: a field the writer did
/// not know (a replica of an older build, before the field existed) keeps
/// this replica's value, and a field this build does not know is ignored.
/// The answers stay strict ([`Faults`] has no defaults); only what replicas
/// share among themselves is read leniently, so a rolling upgrade never
/// leaves a replica stuck on its old faults.
pub fn read_stored(json: &str, current: Faults) -> Result<Faults, serde_json::Error> {
    let stored: serde_json::Map<String, serde_json::Value> = serde_json::from_str(json)?;
    let mut merged = match serde_json::to_value(current)? {
        serde_json::Value::Object(fields) => fields,
        _ => serde_json::Map::new(),
    };
    for (field, value) in stored {
        if merged.contains_key(&field) {
            merged.insert(field, value);
        }
    }
    serde_json::from_value(serde_json::Value::Object(merged))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_faults_missing_a_field_keep_the_current_value() {
        let mut current = Faults::with_work_delay(3);
        current.check_revision = true;
        let stored = r#"{"work_delay_ms": 9, "pause_ms": 0, "pause_every": 1,
                         "unlock_before_commit": true, "from_the_future": 1}"#;
        let read = read_stored(stored, current).expect("readable");
        assert_eq!(read.work_delay_ms, 9);
        assert!(read.unlock_before_commit);
        assert!(read.check_revision, "absent: kept");
        assert!(read_stored(r#"{"work_delay_ms": "x"}"#, current).is_err());
    }
}
