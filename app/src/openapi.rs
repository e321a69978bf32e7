//! `GET /openapi.json`: the HTTP API as an OpenAPI 3.1 document, generated
//! by utoipa from the handlers' own `#[utoipa::path]` attributes and the
//! request and answer types they serialize — so the document cannot drift
//! from the code without a test noticing (`app/tests/it/openapi.rs` holds
//! every mounted route to it; `make fuzz-api` runs schemathesis against a
//! live replica: no 5xx, every answer matching the document).

use actix_web::{get, web, HttpResponse};
use utoipa::openapi::schema::Schema;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::RefOr;
use utoipa::{Modify, OpenApi};

use crate::routes;
use crate::state::AppState;

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
        routes::admin::arm_freeze,
        routes::admin::disarm_freeze,
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

/// This document, with this replica's bounds (see [`with_bounds`]).
#[utoipa::path(
    tag = "health",
    responses((status = 200, description = "The OpenAPI 3.1 document of this API", body = Object))
)]
#[get("/openapi.json")]
pub async fn openapi_json(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().json(with_bounds(state.settings.fault_delay_max_ms.get()))
}

/// [`document`] with the bounds this replica enforces on `PUT
/// /admin/faults` written into the request schema (`FaultsPatch`): every
/// `*_ms` delay at most `fault_delay_max_ms` (`SECKILL_FAULT_DELAY_MAX_MS`),
/// `pause_every` at least 1. A client (or a fuzzer) reading the document
/// knows what the route accepts; what it answers is not narrowed.
pub fn with_bounds(fault_delay_max_ms: u64) -> utoipa::openapi::OpenApi {
    let mut doc = document().clone();
    let patch = doc
        .components
        .as_mut()
        .and_then(|c| c.schemas.get_mut("FaultsPatch"));
    if let Some(RefOr::T(Schema::Object(patch))) = patch {
        let max = usize::try_from(fault_delay_max_ms).unwrap_or(usize::MAX);
        for (name, property) in &mut patch.properties {
            let RefOr::T(Schema::Object(field)) = property else {
                continue;
            };
            if name.ends_with("_ms") {
                field.maximum = Some(utoipa::Number::UInt(max));
            } else if name == "pause_every" {
                field.minimum = Some(utoipa::Number::UInt(1));
            }
        }
    }
    doc
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

#[cfg(test)]
mod tests {
    use super::*;

    fn json(doc: &utoipa::openapi::OpenApi) -> serde_json::Value {
        serde_json::to_value(doc).expect("the document serializes")
    }

    #[test]
    fn the_faults_patch_carries_the_replicas_delay_bound() {
        let doc = json(&with_bounds(50));
        let patch = &doc["components"]["schemas"]["FaultsPatch"]["properties"];
        for field in [
            "work_delay_ms",
            "pause_ms",
            "setnx_expire_gap_ms",
            "release_gap_ms",
            "acquire_pause_ms",
            "commit_delay_ms",
        ] {
            assert_eq!(patch[field]["maximum"], 50, "{field}: {}", patch[field]);
        }
        assert_eq!(
            patch["pause_every"]["minimum"], 1,
            "{}",
            patch["pause_every"]
        );
        // The answers are not narrowed.
        let faults = &doc["components"]["schemas"]["Faults"]["properties"];
        assert!(faults["pause_ms"].get("maximum").is_none(), "{faults}");
    }

    #[test]
    fn each_stream_event_is_described_with_its_json_payloads_schema() {
        let doc = json(document());
        let ok = &doc["paths"]["/api/v1/status/stream"]["get"]["responses"]["200"]["content"]
            ["text/event-stream"]["schema"];
        assert_eq!(ok["$ref"], "#/components/schemas/StatusEvent", "{ok}");
        let event = &doc["components"]["schemas"]["StatusEvent"];
        let kinds = event["oneOf"].as_array().expect("oneOf");
        let payload = |name: &str| {
            kinds
                .iter()
                .find(|k| k["properties"]["event"]["enum"][0] == name)
                .map(|k| k["properties"]["data"].clone())
                .unwrap_or_else(|| panic!("an `{name}` event in {event}"))
        };
        for (name, body) in [("message", "StatusBody"), ("unavailable", "ErrorBody")] {
            let data = payload(name);
            assert_eq!(data["type"], "string", "{data}");
            assert_eq!(data["contentMediaType"], "application/json", "{data}");
            assert_eq!(
                data["contentSchema"]["$ref"],
                format!("#/components/schemas/{body}"),
                "{data}"
            );
        }
        let params = doc["paths"]["/api/v1/status/stream"]["get"]["parameters"]
            .as_array()
            .expect("parameters");
        let events = params
            .iter()
            .find(|p| p["name"] == "events")
            .expect("?events=");
        assert_eq!(events["schema"]["maximum"], 1000, "{events}");
        assert!(doc["components"]["schemas"]["FaultInForce"].is_object());
    }
}
