//! What a case records of its fault, typed: every dial in force
//! ([`InForce`]: each value in its unit, under the dial's name, with a
//! TTL multiple also as typed) and the facts its run adds ([`Facts`]: the
//! replica it broke, the links it slowed, the replica it promoted).
//! `scenarios.json` writes them as flat objects: a case's `"params"` is an
//! [`InForce`], its `"faults"` a [`FaultRecord`] (the dials the run used
//! beside its facts).

use std::collections::BTreeMap;

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use seckill_load::api::PauseAt;

/// The suffix of a duration's value as typed (`pause_as_typed: "1.5ttl"`).
const AS_TYPED: &str = "_as_typed";

/// One dial's value, in its unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DialValue {
    /// A duration in ms, or a count.
    Whole(u64),
    /// A number (a percentage, a factor).
    Number(f64),
    /// One of a choice's words.
    Word(String),
}

impl DialValue {
    /// The value as a number (`None` for a word).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            #[allow(clippy::cast_precision_loss)]
            Self::Whole(v) => Some(*v as f64),
            Self::Number(x) => Some(*x),
            Self::Word(_) => None,
        }
    }

    /// The value as it would be typed: `6`, not `6.0`.
    pub fn typed(&self) -> String {
        match self {
            Self::Whole(v) => v.to_string(),
            Self::Number(x) if x.fract() == 0.0 && x.abs() < 1e15 => format!("{x:.0}"),
            Self::Number(x) => x.to_string(),
            Self::Word(w) => w.clone(),
        }
    }
}

/// Every dial in force, by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InForce {
    /// Each dial's value in its unit.
    values: BTreeMap<String, DialValue>,
    /// The durations typed as a multiple of the TTL (or `fill`), as typed.
    as_typed: BTreeMap<String, String>,
}

impl InForce {
    /// The dials of a dial struct (`dials!`), as they serialise. Its
    /// fields are whole numbers, numbers and words (`Dial`'s types), so
    /// this cannot fail; a field of another type would be a programming
    /// error, never an empty record.
    pub fn of(dials: &impl Serialize) -> Self {
        serde_json::to_value(dials)
            .and_then(serde_json::from_value)
            .expect("a dials! struct serialises to numbers and words")
    }

    /// Dial `name`'s value.
    pub fn get(&self, name: &str) -> Option<&DialValue> {
        self.values.get(name)
    }

    /// Dial `name`'s value as a number (ms for a duration).
    pub fn f64(&self, name: &str) -> Option<f64> {
        self.get(name).and_then(DialValue::as_f64)
    }

    /// Dial `name`'s value as a whole number.
    pub fn u64(&self, name: &str) -> Option<u64> {
        match self.get(name)? {
            DialValue::Whole(v) => Some(*v),
            _ => None,
        }
    }

    /// Dial `name`'s value as it was typed (`1.5ttl`, `after-check`, `50`).
    pub fn typed(&self, name: &str) -> Option<String> {
        self.as_typed
            .get(name)
            .cloned()
            .or_else(|| self.get(name).map(DialValue::typed))
    }

    /// Set dial `name`, with how it was typed when that differs from the
    /// value (a TTL multiple).
    pub fn insert(&mut self, name: &str, value: DialValue, as_typed: Option<String>) {
        self.values.insert(name.to_owned(), value);
        match as_typed {
            Some(text) => self.as_typed.insert(name.to_owned(), text),
            None => self.as_typed.remove(name),
        };
    }

    /// Drop dial `name` (not in force in this variant).
    pub fn remove(&mut self, name: &str) {
        self.values.remove(name);
        self.as_typed.remove(name);
    }

    /// Every dial, by name, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &DialValue)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v))
    }
}

impl Serialize for InForce {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.values.len() + self.as_typed.len()))?;
        for (name, value) in &self.values {
            map.serialize_entry(name, value)?;
            if let Some(text) = self.as_typed.get(name) {
                map.serialize_entry(&format!("{name}{AS_TYPED}"), text)?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for InForce {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A `null` is a dial not in force (older reports wrote one).
        let all = BTreeMap::<String, Option<DialValue>>::deserialize(d)?;
        let mut out = Self::default();
        for (key, value) in all {
            let Some(value) = value else { continue };
            match (key.strip_suffix(AS_TYPED), value) {
                (Some(name), DialValue::Word(text)) => {
                    out.as_typed.insert(name.to_owned(), text);
                }
                (_, value) => {
                    out.values.insert(key, value);
                }
            }
        }
        Ok(out)
    }
}

/// What a run adds beside its dials, each where its scenario says it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Facts {
    /// The replica the fault was applied to (`a`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica: Option<String>,
    /// The link cut (`redis`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// The links slowed, and which way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<String>,
    /// The replica killed (`a`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub killed: Option<String>,
    /// The replica whose links were cut (`a`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut: Option<String>,
    /// A kill's gap between SETNX and EXPIRE, ms (0: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gap: Option<u64>,
    /// Which Redlock nodes each replica reached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// The clock jumps that landed (0 in the control run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_jumps: Option<usize>,
    /// The jump applied, ms (0 in the control run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jump: Option<u64>,
    /// Node 3's restarts that landed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node3_restarts: Option<usize>,
    /// The nodes restarted, in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restarted: Option<Vec<String>>,
    /// The restarted nodes' persistence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persistence: Option<String>,
    /// Whose clock was slewed (the nodes', or none: the client's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<String>,
    /// How long the slew ran before the holder's deadline, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exposure_ms: Option<f64>,
    /// Where the coordinator was stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause_at: Option<PauseAt>,
    /// The coordinator logged its decision before the crash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision_log: Option<bool>,
    /// Each database was fronted by a 3PC participant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub participants: Option<bool>,
    /// What happened to Redis (`killed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redis: Option<String>,
    /// What happened to PostgreSQL (`cut`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub postgres: Option<String>,
    /// The replica promoted (`the lagging replica`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub promoted: Option<String>,
    /// Replicas of the lock's Redis.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<u8>,
    /// Replicas a lock write waited for (`WAIT`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_replicas: Option<u8>,
    /// How the order insert was refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub insert_refused: Option<String>,
    /// The Redis decrement was not given back (the reported bug).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip_cancel: Option<bool>,
    /// The holder entered without checking what was left of its validity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip_validity_check: Option<bool>,
    /// The lock was released before the transaction committed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unlock_before_commit: Option<bool>,
}

impl Facts {
    /// The fault applied to replica `a` alone.
    pub fn replica_a() -> Self {
        Self {
            replica: Some("a".to_owned()),
            ..Self::default()
        }
    }
}

/// A case's `"faults"`: the dials its run used and the facts it added.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultRecord {
    /// What the run adds.
    #[serde(flatten)]
    pub facts: Facts,
    /// The dials the run used (declared after `facts`: reading a record,
    /// the facts take their names first and the dials the rest).
    #[serde(flatten)]
    pub dials: InForce,
}

impl FaultRecord {
    /// `dials` (a `dials!` struct) beside `facts`.
    pub fn new(dials: &impl Serialize, facts: Facts) -> Self {
        Self {
            facts,
            dials: InForce::of(dials),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dials_in_force_round_trip_with_their_typed_multiples() {
        let mut d = InForce::default();
        d.insert("pause", DialValue::Whole(600), Some("1.5ttl".to_owned()));
        d.insert("slew_pct", DialValue::Number(3.0), None);
        d.insert("where", DialValue::Word("after-check".to_owned()), None);
        let text = serde_json::to_string(&d).expect("json");
        assert_eq!(
            text,
            r#"{"pause":600,"pause_as_typed":"1.5ttl","slew_pct":3.0,"where":"after-check"}"#
        );
        let back: InForce = serde_json::from_str(&text).expect("read");
        assert_eq!(back, d);
        assert_eq!(back.typed("pause").as_deref(), Some("1.5ttl"));
        assert_eq!(back.typed("slew_pct").as_deref(), Some("3"));
        assert_eq!(back.f64("pause"), Some(600.0));
        assert_eq!(back.u64("where"), None);
    }

    #[test]
    fn a_fault_record_reads_back_its_facts_apart_from_its_dials() {
        let mut dials = InForce::default();
        dials.insert("ttl_ms", DialValue::Whole(400), None);
        let record = FaultRecord {
            facts: Facts {
                restarted: Some(vec!["node1".to_owned(), "node2".to_owned()]),
                ..Facts::replica_a()
            },
            dials,
        };
        let text = serde_json::to_string(&record).expect("json");
        let back: FaultRecord = serde_json::from_str(&text).expect("read");
        assert_eq!(back, record);
        // An older report's `null` dial reads as not in force.
        let old: FaultRecord =
            serde_json::from_str(r#"{"ttl_ms":400,"wait_count":null,"replica":"a"}"#).expect("old");
        assert_eq!(old.dials.get("wait_count"), None);
        assert_eq!(old.facts.replica.as_deref(), Some("a"));
    }
}
