//! `GET /openapi.json` describes exactly the routes the service mounts,
//! and every error answer it documents is an `ErrorBody`. (That the live
//! answers match the document is `make fuzz-api`'s job: schemathesis.)

use std::collections::BTreeSet;

use crate::harness::{fresh_database, AppOptions, RedisServer, TestApp};

/// Every `#[get("…")]`, `#[post("…")]`, `#[put("…")]` route attribute in
/// the crate's source: what actix mounts (startup mounts every handler).
fn routes_in_source() -> BTreeSet<(String, String)> {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![src.join("openapi.rs")];
    for entry in std::fs::read_dir(src.join("routes")).expect("routes/") {
        files.push(entry.expect("entry").path());
    }
    let mut routes = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("source");
        for line in text.lines().map(str::trim) {
            for method in ["get", "post", "put", "delete", "patch"] {
                if let Some(rest) = line.strip_prefix(&format!("#[{method}(\"")) {
                    let path = rest.split('"').next().expect("path");
                    routes.insert((method.to_owned(), path.to_owned()));
                }
            }
        }
    }
    routes
}

#[tokio::test]
async fn the_document_covers_every_mounted_route_and_documents_error_bodies() {
    let redis = RedisServer::start();
    let db = fresh_database().await;
    let app = TestApp::spawn(AppOptions::new(&db, &redis.url())).await;
    let (status, doc) = app.get("/openapi.json").await;
    assert_eq!(status, 200, "{doc}");
    assert!(
        doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.")),
        "{doc}"
    );

    // Each strategy's construction class is part of the documented answer.
    let entry = &doc["components"]["schemas"]["StrategyEntry"];
    assert!(
        entry["properties"]["kind"].is_object()
            && entry["required"]
                .as_array()
                .is_some_and(|r| r.iter().any(|f| f == "kind")),
        "StrategyEntry documents a required kind: {entry}"
    );
    assert!(
        doc["components"]["schemas"]["Kind"]["enum"]
            .as_array()
            .is_some_and(|values| values.iter().any(|v| v == "validity")),
        "the Kind schema lists its values: {}",
        doc["components"]["schemas"]["Kind"]
    );

    // Every reference resolves: a generic field left to utoipa once
    // pointed at `#/components/schemas/i64`, which nothing defines.
    let mut refs = BTreeSet::new();
    collect_refs(&doc, &mut refs);
    for reference in &refs {
        let name = reference
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("a reference outside the schemas: {reference}"));
        assert!(
            doc["components"]["schemas"][name].is_object(),
            "{reference} is referenced and not defined"
        );
    }
    assert!(
        refs.contains("#/components/schemas/Damage"),
        "the audit and the status flatten one Damage: {refs:?}"
    );

    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            documented.insert((method.clone(), path.clone()));
            let responses = op["responses"].as_object().expect("responses");
            assert!(!responses.is_empty(), "{method} {path}: no responses");
            for (code, response) in responses {
                if code.starts_with('4') || code.starts_with('5') {
                    let schema = &response["content"]["application/json"]["schema"]["$ref"];
                    // Readiness answers its checks either way (a 503 names
                    // the dependency that failed).
                    let want = if path == "/health/ready" {
                        "#/components/schemas/ReadyBody"
                    } else {
                        "#/components/schemas/ErrorBody"
                    };
                    assert_eq!(schema, want, "{method} {path} {code}: errors are ErrorBody");
                }
            }
            if path.starts_with("/admin/") {
                assert!(
                    responses.contains_key("401") && op["security"].is_array(),
                    "{method} {path}: admin routes need the token"
                );
            }
        }
    }
    let mounted = routes_in_source();
    assert!(mounted.len() >= 18, "{mounted:?}");
    assert_eq!(
        documented, mounted,
        "documented (left) vs mounted (right) routes"
    );

    // And each documented route is mounted for real: none of them falls
    // through to the unknown-route 404.
    for (method, path) in &documented {
        let url = format!("{}{}", app.address, path.replace("{id}", "1"));
        let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
        let response = app
            .client
            .request(method.clone(), &url)
            .header("content-type", "application/json")
            .body("{}")
            .timeout(std::time::Duration::from_secs(2))
            .send()
            .await;
        let Ok(response) = response else {
            continue; // the event stream keeps the answer open
        };
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        assert!(
            !text.contains("\"not_found\"") || !text.contains("route "),
            "{method} {path} is not mounted: {status} {text}"
        );
    }
}

/// Every `$ref` in `value`, at any depth.
fn collect_refs(value: &serde_json::Value, into: &mut BTreeSet<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v.as_str()) {
                    ("$ref", Some(reference)) => {
                        into.insert(reference.to_owned());
                    }
                    _ => collect_refs(v, into),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_refs(v, into)),
        _ => {}
    }
}
