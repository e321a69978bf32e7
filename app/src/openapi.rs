//! `GET /openapi.json`: the HTTP API as an OpenAPI 3.1 document, generated
//! by utoipa from the handlers' own `#[utoipa::path]` attributes and the
//! request and answer types they serialize — so the document cannot drift
//! from the code without a test noticing (`app/tests/it/openapi.rs` holds
//! every mounted route to it; `make fuzz-api` runs schemathesis against a
//! live replica: no 5xx, every answer matching the document).

use actix_web::{get, HttpResponse};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::routes;

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "seckill-lab",
        description = "A flash-sale order service whose stock decrement runs inside a configurable \
                       lock strategy. Every error answer is an `ErrorBody`; admin routes need \
                       `Authorization: Bearer <SECKILL_ADMIN_TOKEN>`."
    ),
    paths(
        routes::grab::grab,
        routes::products::product,
        routes::health::live,
        routes::health::ready,
        routes::metrics::metrics,
        routes::admin::strategies,
        routes::admin::switch_strategy,
        routes::admin::reset_product,
        routes::admin::product_orders,
        routes::admin::audit,
        routes::admin::get_faults,
        routes::admin::put_faults,
        routes::admin::clear_faults,
        routes::admin::get_history,
        routes::admin::history_sections,
        routes::admin::put_history,
        routes::admin::forget_history,
        routes::status::page,
        routes::status::status,
        routes::status::status_stream,
        openapi_json,
    ),
    modifiers(&AdminToken),
    tags(
        (name = "grab", description = "The flash-sale moment"),
        (name = "products", description = "Stock and the active strategy"),
        (name = "status", description = "The status page and its data"),
        (name = "health", description = "Liveness, readiness, Prometheus metrics"),
        (name = "admin", description = "Strategy switch, reset, orders, audit, faults, history (admin token)"),
    )
)]
#[derive(Debug)]
pub struct ApiDoc;

/// The admin routes' bearer token as a security scheme.
#[derive(Debug)]
struct AdminToken;

impl Modify for AdminToken {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "admin_token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("SECKILL_ADMIN_TOKEN"))
                    .build(),
            ),
        );
    }
}

/// This document.
#[utoipa::path(
    tag = "health",
    responses((status = 200, description = "The OpenAPI 3.1 document of this API", body = Object))
)]
#[get("/openapi.json")]
pub async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok().json(document())
}

/// The document, built once.
pub fn document() -> &'static utoipa::openapi::OpenApi {
    static DOC: std::sync::OnceLock<utoipa::openapi::OpenApi> = std::sync::OnceLock::new();
    DOC.get_or_init(|| {
        let mut doc = ApiDoc::openapi();
        doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
        doc
    })
}
