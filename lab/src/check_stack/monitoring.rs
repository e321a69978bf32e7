//! The monitoring files through promtool, and the dashboards against
//! Grafana's published schema (see the module doc of [`super`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context as _;
use serde_json::{json, Value};

use super::found::Findings;
use crate::dashboards;

/// `@grafana/schema`'s version: the Grafana image's of docker-compose.yml.
const GRAFANA_SCHEMA: &str = "11.4.0";
const TYPESCRIPT: &str = "5.6.3";

/// Each panel type with a published options schema: its namespace and module.
const PANELCFG: [(&str, &str, &str); 7] = [
    ("stat", "Stat", "stat/panelcfg/x/StatPanelCfg_types.gen"),
    (
        "timeseries",
        "TimeSeries",
        "timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen",
    ),
    (
        "state-timeline",
        "StateTimeline",
        "statetimeline/panelcfg/x/StateTimelinePanelCfg_types.gen",
    ),
    (
        "bargauge",
        "BarGauge",
        "bargauge/panelcfg/x/BarGaugePanelCfg_types.gen",
    ),
    ("gauge", "Gauge", "gauge/panelcfg/x/GaugePanelCfg_types.gen"),
    ("table", "Table", "table/panelcfg/x/TablePanelCfg_types.gen"),
    ("text", "Text", "text/panelcfg/x/TextPanelCfg_types.gen"),
];

/// The types a dashboard literal must satisfy: Grafana's `Dashboard` with
/// string enums accepted as their JSON values, and the Prometheus plugin's
/// query and annotation fields on top of the common ones.
const PRELUDE: &str = r"
type J<T> = T extends string ? `${T}`
  : T extends number | boolean | null | undefined ? T
  : T extends ReadonlyArray<infer U> ? Array<J<U>>
  : T extends object ? { [K in keyof T]: J<T[K]> }
  : T;
type PromQuery = J<DataQuery> & {
  expr: string; legendFormat?: string; range?: boolean; instant?: boolean;
  exemplar?: boolean; editorMode?: 'code' | 'builder'; format?: 'time_series' | 'table' | 'heatmap';
  interval?: string; intervalFactor?: number;
};
type Anno = NonNullable<NonNullable<J<Dashboard>['annotations']>['list']>[number];
type PromAnnotation = Omit<Anno, 'target'> & {
  target?: PromQuery; titleFormat?: string; textFormat?: string; tagKeys?: string;
  useValueForTime?: boolean; step?: string;
};
type PromDashboard = Omit<J<Dashboard>, 'annotations'> & {
  annotations?: Omit<NonNullable<J<Dashboard>['annotations']>, 'list'> & { list?: PromAnnotation[] };
};
";

fn promtool(found: &mut Findings, what: &str, args: &[&str]) {
    let status = Command::new("promtool").args(args).status();
    match status {
        Ok(s) if s.success() => found.ok(what),
        Ok(_) => found.fail(format!("promtool {}: {what}", args.join(" "))),
        Err(_) => found.fail("promtool is missing: apt-get install -y prometheus"),
    }
}

/// Every dashboard query (and annotation), `$strategy`/`$instance` at
/// `.*`, as a recording rule file promtool parses.
fn query_rules(files: &[PathBuf]) -> anyhow::Result<(Value, usize)> {
    let mut rules = Vec::new();
    for path in files {
        let dash: Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().replace('-', "_"))
            .unwrap_or_default();
        let file = path
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut exprs = Vec::new();
        for panel in dashboards::panels(&dash) {
            for target in panel["targets"].as_array().into_iter().flatten() {
                let expr = target["expr"].as_str().unwrap_or_default();
                exprs.push((
                    format!("{file} panel {} {}", panel["id"], target["refId"]),
                    expr.to_owned(),
                ));
            }
        }
        for anno in dashboards::annotations(&dash) {
            let expr = dashboards::annotation_expr(anno).unwrap_or_default();
            exprs.push((
                format!("{file} annotation {}", anno["name"]),
                expr.to_owned(),
            ));
        }
        for (i, (place, expr)) in exprs.into_iter().enumerate() {
            let expr = expr.replace("$strategy", ".*").replace("$instance", ".*");
            rules.push(json!({"record": format!("dashboard_query:{stem}:{i}"), "expr": expr, "labels": {"where": place}}));
        }
    }
    let count = rules.len();
    Ok((
        json!({"groups": [{"name": "dashboard-queries", "rules": rules}]}),
        count,
    ))
}

/// check.ts: each dashboard as a literal that must satisfy the published
/// types, each target as a Prometheus query, each panel's options and
/// custom field config as its plugin's.
fn typescript(files: &[PathBuf]) -> anyhow::Result<String> {
    let mut out = String::from("import type { Dashboard, DataQuery } from '@grafana/schema';\n");
    for (_, ns, module) in PANELCFG {
        out += &format!(
            "import type * as {ns} from '@grafana/schema/dist/esm/raw/composable/{module}';\n"
        );
    }
    out += PRELUDE;
    for (i, path) in files.iter().enumerate() {
        let dash: Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
        let name = path
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        out += &format!(
            "\n// {name}\nexport const dashboard{i} = {} satisfies PromDashboard;\n",
            serde_json::to_string_pretty(&dash)?
        );
        for panel in dashboards::panels(&dash)
            .into_iter()
            .filter(|p| p["type"] != "row")
        {
            let id = &panel["id"];
            for (k, target) in panel["targets"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                out += &format!(
                    "export const d{i}_panel{id}_target{k} = {target} satisfies PromQuery;\n"
                );
            }
            let Some((_, ns, _)) = PANELCFG.iter().find(|(t, _, _)| panel["type"] == *t) else {
                println!(
                    "note: {name} panel {id}: no published schema for type {}",
                    panel["type"]
                );
                continue;
            };
            if !panel["options"].is_null() {
                out += &format!(
                    "export const d{i}_panel{id}_options = {} satisfies J<{ns}.Options>;\n",
                    panel["options"]
                );
            }
            let custom = &panel["fieldConfig"]["defaults"]["custom"];
            if !custom.is_null() {
                out += &format!("export const d{i}_panel{id}_custom = {custom} satisfies J<{ns}.FieldConfig>;\n");
            }
        }
    }
    Ok(out)
}

fn schema_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SECKILL_SCHEMA_DIR") {
        return dir.into();
    }
    super::found::cache_dir().join(format!("grafana-schema-{GRAFANA_SCHEMA}"))
}

/// The dashboards through `tsc` against `@grafana/schema` (installed from
/// npm into a cache folder once). Without node/npm or the registry it is
/// skipped, unless SECKILL_REQUIRE_SCHEMA=1.
fn schema(files: &[PathBuf], found: &mut Findings) -> anyhow::Result<()> {
    let skip = |found: &mut Findings, why: &str| {
        if std::env::var("SECKILL_REQUIRE_SCHEMA").is_ok_and(|v| v == "1") {
            found.fail(format!("schema check: {why}"));
        } else {
            println!("SKIP schema check: {why}");
        }
    };
    let has = |program: &str| {
        Command::new(program)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !has("node") || !has("npm") {
        skip(
            found,
            "node/npm not installed (apt-get install -y nodejs npm)",
        );
        return Ok(());
    }
    let dir = schema_dir();
    let tsc = dir.join("node_modules/.bin/tsc");
    let installed = |dir: &Path| tsc.is_file() && dir.join("node_modules/@grafana/schema").is_dir();
    if !installed(&dir) {
        std::fs::create_dir_all(&dir)?;
        if !dir.join("package.json").is_file() {
            std::fs::write(dir.join("package.json"), "{\"private\": true}\n")?;
        }
        println!(
            "installing @grafana/schema@{GRAFANA_SCHEMA} typescript@{TYPESCRIPT} into {}",
            dir.display()
        );
        let _ = Command::new("npm")
            .args(["install", "--prefix"])
            .arg(&dir)
            .args(["--no-audit", "--no-fund", "--loglevel=error"])
            .args([
                format!("@grafana/schema@{GRAFANA_SCHEMA}"),
                format!("typescript@{TYPESCRIPT}"),
            ])
            .status();
    }
    if !installed(&dir) {
        skip(
            found,
            "could not install @grafana/schema from npm (offline?)",
        );
        return Ok(());
    }
    std::fs::write(dir.join("check.ts"), typescript(files)?)?;
    std::fs::write(
        dir.join("tsconfig.json"),
        r#"{"compilerOptions": {"strict": true, "noEmit": true, "module": "commonjs", "moduleResolution": "node10",
  "target": "es2022", "skipLibCheck": true, "types": []}, "files": ["check.ts"]}"#,
    )?;
    let status = Command::new(&tsc)
        .args(["-p", "tsconfig.json"])
        .current_dir(&dir)
        .status()
        .context("run tsc")?;
    if status.success() {
        found.ok(format!(
            "dashboards satisfy @grafana/schema {GRAFANA_SCHEMA}"
        ));
    } else {
        found.fail(format!("dashboards do not satisfy @grafana/schema {GRAFANA_SCHEMA} (tsc errors above; line numbers refer to {}/check.ts)", dir.display()));
    }
    Ok(())
}

/// Every check of this module.
pub fn check(root: &Path, found: &mut Findings) -> anyhow::Result<()> {
    promtool(
        found,
        "prometheus/prometheus.yml",
        &["check", "config", "prometheus/prometheus.yml"],
    );
    promtool(
        found,
        "prometheus/alerts.yml",
        &["check", "rules", "prometheus/alerts.yml"],
    );
    promtool(
        found,
        "alert unit tests",
        &["test", "rules", "prometheus/alerts_test.yml"],
    );
    let files = dashboards::files(root)?;
    let (rules, count) = query_rules(&files)?;
    let state = root.join(".state");
    std::fs::create_dir_all(&state)?;
    let file = state.join("dashboard_queries.yml");
    // JSON is YAML.
    std::fs::write(&file, serde_json::to_string_pretty(&rules)?)?;
    let what = format!("the PromQL of {count} dashboard queries parses");
    promtool(found, &what, &["check", "rules", &file.to_string_lossy()]);
    schema(&files, found)
}
