//! The final answer classes of one grab, as the service names them (the
//! `outcome` label of `seckill_grab_requests_total`, `report.json`'s
//! `outcomes` keys): the service counts its answers by them, the load
//! generator reads them back from the status and the error body's `error`
//! code — decoded, not searched for.

use serde::{Deserialize, Serialize};

/// What one grab request came back with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// `201`: an order.
    Ordered,
    /// `409 sold_out`.
    SoldOut,
    /// `409 already_purchased`.
    AlreadyPurchased,
    /// `429 busy`: the lock (or the pool) is contended; retry.
    Busy,
    /// `409 rejected`: the holder lost its lock before commit, or the fence
    /// refused a stale token; retry.
    Rejected,
    /// Anything else: `503 unavailable`, a 5xx, a transport error.
    Error,
}

/// The error body every 4xx/5xx of the service carries.
#[derive(Debug, Deserialize)]
struct ErrorCode {
    error: String,
}

impl Outcome {
    /// Every outcome, in report order.
    pub const ALL: [Outcome; 6] = [
        Outcome::Ordered,
        Outcome::SoldOut,
        Outcome::AlreadyPurchased,
        Outcome::Busy,
        Outcome::Rejected,
        Outcome::Error,
    ];

    /// Every name, in the order of [`Outcome::ALL`].
    pub const NAMES: [&'static str; 6] = names_of!(Self::ALL, 6);

    /// The service's name of it (its serde name).
    pub const fn as_str(self) -> &'static str {
        match self {
            Outcome::Ordered => "ordered",
            Outcome::SoldOut => "sold_out",
            Outcome::AlreadyPurchased => "already_purchased",
            Outcome::Busy => "busy",
            Outcome::Rejected => "rejected",
            Outcome::Error => "error",
        }
    }

    /// Its position in [`Outcome::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Classify one answer: its status and its body (`None`: no answer).
    pub fn of(status: u16, body: &[u8]) -> Self {
        let code = || {
            serde_json::from_slice::<ErrorCode>(body)
                .ok()
                .map(|b| b.error)
        };
        match status {
            200 | 201 => Outcome::Ordered,
            429 => Outcome::Busy,
            409 => match code().as_deref() {
                Some("sold_out") => Outcome::SoldOut,
                Some("already_purchased") => Outcome::AlreadyPurchased,
                Some("rejected") => Outcome::Rejected,
                _ => Outcome::Error,
            },
            _ => Outcome::Error,
        }
    }

    /// Worth another try by the same buyer (`--retry-ms`).
    pub fn retryable(self) -> bool {
        matches!(self, Outcome::Busy | Outcome::Rejected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_the_services_answers() {
        assert_eq!(Outcome::of(201, b"{}"), Outcome::Ordered);
        let sold_out = br#"{"error":"sold_out","message":"x"}"#;
        assert_eq!(Outcome::of(409, sold_out), Outcome::SoldOut);
        let already = br#"{"error":"already_purchased","message":"x"}"#;
        assert_eq!(Outcome::of(409, already), Outcome::AlreadyPurchased);
        assert_eq!(Outcome::of(429, br#"{"error":"busy"}"#), Outcome::Busy);
        let rejected = br#"{"error":"rejected","message":"x"}"#;
        assert_eq!(Outcome::of(409, rejected), Outcome::Rejected);
        assert_eq!(
            Outcome::of(503, br#"{"error":"unavailable"}"#),
            Outcome::Error
        );
        assert_eq!(Outcome::of(400, b"bad"), Outcome::Error);
        // A message that mentions another code is not that code.
        let quoting = br#"{"error":"conflict","message":"not \"sold_out\""}"#;
        assert_eq!(Outcome::of(409, quoting), Outcome::Error);
        for (i, o) in Outcome::ALL.iter().enumerate() {
            assert_eq!(o.index(), i);
            assert_eq!(serde_json::to_value(o).expect("serialise"), o.as_str());
        }
    }
}
