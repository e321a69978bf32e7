//! The JSON shapes of seckill-app's HTTP answers, shared by the service
//! (which writes them) and the load generator (which reads them): a field
//! renamed on one side is a compile error on the other, and a field missing
//! from an answer fails decoding loudly instead of reading as 0.
//!
//! One module per subject, each naming the endpoints its types travel on:
//!
//! - [`admin`] — the admin token every `/admin/*` call sends: the demo
//!   token, and the token file a docker-compose stack shares.
//! - [`strategies`] — `GET /admin/strategies`, `PUT /admin/strategy`: every
//!   strategy by its [`StrategyName`](strategies::StrategyName), with its
//!   [`Safety`](strategies::Safety) and [`Kind`](strategies::Kind).
//! - [`audit`] — `GET /admin/audit`: the ground truth per product.
//! - [`damage`] — the four counts of damage ([`Damage`](damage::Damage))
//!   every report of it carries, flattened into its object.
//! - [`faults`] — `GET`/`PUT /admin/faults`: the workshop faults and a
//!   partial update of them.
//! - [`history`] — `GET`/`PUT /admin/history`, `POST /admin/history/forget`:
//!   the mutual-exclusion history.
//! - [`products`] — `GET /api/v1/products/{id}`, `POST
//!   /admin/products/{id}/reset`.
//! - [`orders`] — `GET /admin/products/{id}/orders`: the orders since the
//!   last reset, paged.
//! - [`grab`] — `POST /api/v1/products/{id}/grab`: the request and the
//!   `201` order.
//! - [`outcome`] — how a grab ended ([`Outcome`](outcome::Outcome)): the
//!   `outcome` label of `seckill_grab_requests_total`, read back from the
//!   answer's status and error code.
//! - [`status`] — `GET /api/v1/status` (and each event of its stream).
//! - [`scenarios`] — the variants of the fault scenarios, as
//!   `scenarios.json` names them.
//! - [`error`] — the body of every error answer.
//!
//! Rules every type here keeps:
//! - A field the service always sends has no `#[serde(default)]`: a body
//!   without it does not decode.
//! - A field the service may leave out is an `Option` skipped when `None`;
//!   a field it always sends but may set to `null` is an `Option` that must
//!   still be present ([`nullable`]).
//! - Under the `openapi` feature every type is a `utoipa::ToSchema`, so the
//!   service's OpenAPI document is generated from these very types.

/// The names of an enum with `ALL: [Self; N]` and a `const fn as_str`, in
/// the order of `ALL`, as a const array (a `const` cannot call a trait).
macro_rules! names_of {
    ($all:expr, $n:literal) => {{
        let mut names = [""; $n];
        let mut i = 0;
        while i < $n {
            names[i] = $all[i].as_str();
            i += 1;
        }
        names
    }};
}

pub mod admin;
pub mod audit;
pub mod damage;
pub mod error;
pub mod faults;
pub mod grab;
pub mod history;
pub mod i18n;
pub mod nullable;
pub mod orders;
pub mod outcome;
pub mod products;
pub mod scenarios;
pub mod status;
pub mod strategies;
