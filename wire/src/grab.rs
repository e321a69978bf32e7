//! `POST /api/v1/products/{id}/grab`: the request ([`GrabBody`]) and the
//! `201` answer ([`Order`]).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// The grab request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct GrabBody {
    /// Buyer, > 0.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, example = 42))]
    pub user_id: i64,
    /// Units, 1..=`SECKILL_MAX_QUANTITY` (5 by default); 1 when absent.
    #[serde(default = "one")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, default = 1))]
    pub quantity: i64,
}

fn one() -> i64 {
    1
}

/// An order as written: the grab `201` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Order {
    /// `orders.id`.
    pub order_id: i64,
    /// Product bought.
    pub product_id: i64,
    /// Buyer.
    pub user_id: i64,
    /// Units.
    pub quantity: i32,
    /// Strategy that wrote it (borrowed from the strategy's own name when
    /// the service writes it: no allocation on the grab's hot path).
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub strategy: Cow<'static, str>,
    /// Fencing token the write carried (`fenced`, or a lock service's
    /// revision under `check_revision`); `null` otherwise, always sent.
    #[serde(deserialize_with = "crate::nullable::required")]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub fence_token: Option<i64>,
}
