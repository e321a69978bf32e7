//! The Grafana dashboards as the checks read them (`check-stack`'s
//! structure and PromQL checks, `check-panels`' live queries): the files,
//! every panel (rows' nested panels included), the annotations of our own
//! and their queries.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Every dashboard JSON under `root`/dashboards/, sorted.
pub fn files(root: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = crate::util::files_under(&root.join("dashboards"))?
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    Ok(files)
}

/// Every panel of a dashboard, rows' nested panels included, in order.
pub fn panels(dashboard: &Value) -> Vec<&Value> {
    fn walk<'a>(panels: &'a Value, out: &mut Vec<&'a Value>) {
        for panel in panels.as_array().into_iter().flatten() {
            out.push(panel);
            walk(&panel["panels"], out);
        }
    }
    let mut out = Vec::new();
    walk(&dashboard["panels"], &mut out);
    out
}

/// The dashboard's own annotations (Grafana's built-in one left out).
pub fn annotations(dashboard: &Value) -> impl Iterator<Item = &Value> {
    dashboard["annotations"]["list"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["builtIn"].as_i64().unwrap_or(0) == 0 && a["builtIn"] != true)
}

/// An annotation's PromQL: its target's `expr`, or an older `expr` of its own.
pub fn annotation_expr(annotation: &Value) -> Option<&str> {
    annotation["target"]["expr"]
        .as_str()
        .or(annotation["expr"].as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_panels_and_own_annotations_are_found() {
        let dashboard = serde_json::json!({
            "panels": [{"id": 1, "panels": [{"id": 2}]}, {"id": 3}],
            "annotations": {"list": [
                {"builtIn": 1, "name": "Annotations & Alerts"},
                {"name": "switches", "target": {"expr": "changes(x[1m])"}},
                {"name": "old", "expr": "y"}
            ]}
        });
        let ids: Vec<i64> = panels(&dashboard)
            .iter()
            .filter_map(|p| p["id"].as_i64())
            .collect();
        assert_eq!(ids, [1, 2, 3]);
        let exprs: Vec<Option<&str>> = annotations(&dashboard).map(annotation_expr).collect();
        assert_eq!(exprs, [Some("changes(x[1m])"), Some("y")]);
    }
}
