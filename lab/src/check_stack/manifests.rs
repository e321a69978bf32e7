//! The objects of a kustomize render, read: what the Kubernetes checks
//! (`k8s`, `load_jobs`) look into.

use std::path::PathBuf;

use serde_json::Value;

/// A render: its name and the objects `kubectl kustomize` printed.
pub(super) struct Render {
    pub name: String,
    pub file: PathBuf,
    pub objects: Vec<Value>,
}

pub(super) fn kind_name(object: &Value) -> (String, String) {
    (
        object["kind"].as_str().unwrap_or_default().to_owned(),
        object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

/// The pod template of a workload (Deployment, StatefulSet, Job).
pub(super) fn pod_spec(object: &Value) -> Option<&Value> {
    let spec = &object["spec"]["template"]["spec"];
    spec.is_object().then_some(spec)
}

pub(super) fn containers(object: &Value) -> impl Iterator<Item = &Value> {
    pod_spec(object)
        .and_then(|s| s["containers"].as_array())
        .into_iter()
        .flatten()
}

pub(super) fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
        .collect()
}

pub(super) fn find<'a>(render: &'a Render, kind: &str, name: &str) -> Option<&'a Value> {
    render
        .objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
}
