//! The service's answers, typed: the very structs the service serializes
//! (`seckill-wire`), so a field renamed on one side does not compile on the
//! other, and a field missing from an answer fails to decode instead of
//! reading as 0.

pub use seckill_wire::audit::{AuditBody, AuditRow};
pub use seckill_wire::damage::Damage;
pub use seckill_wire::faults::{Faults, FaultsPatch, FreezeArmed, FreezeAt, FreezeBody, PauseAt};
pub use seckill_wire::grab::{GrabBody, Order};
pub use seckill_wire::history::{
    ForgetBody, Forgotten, HistoryReport, HistorySwitch, HistorySwitched, OverlapEvent,
    StrategyHistory,
};
pub use seckill_wire::history::{Section, SectionsBody};
pub use seckill_wire::orders::{OrderRow, OrdersPage};
pub use seckill_wire::products::{ProductBody, ResetBody};
pub use seckill_wire::scenarios::Variant;
pub use seckill_wire::status::{FaultInForce, StatusBody};
pub use seckill_wire::strategies::{
    Kind, Safety, StrategiesBody, StrategyEntry, StrategyName, SwitchBody,
};

use super::error::ServiceError;

/// The entry of `name` in `listed`, or an error listing the known names.
pub fn entry<'a>(
    listed: &'a StrategiesBody,
    name: &str,
) -> Result<&'a StrategyEntry, ServiceError> {
    listed
        .get(name)
        .ok_or_else(|| ServiceError::UnknownStrategy {
            name: name.to_owned(),
            known: listed
                .strategies
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Why the service cannot run `entry` ("not available on this service:
/// …"), or `None` when it can: the words `compare` skips it with and a
/// shard refuses it with.
pub fn unavailable(entry: &StrategyEntry) -> Option<String> {
    (!entry.available).then(|| {
        format!(
            "not available on this service: {}",
            entry
                .unavailable_reason
                .as_deref()
                .unwrap_or("the service did not say why")
        )
    })
}
