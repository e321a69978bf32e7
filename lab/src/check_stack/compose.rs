//! The compose file, its images, mounts, ports, settings and the
//! monitoring files that name its services (see the module doc of
//! [`super`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use regex::Regex;
use serde_json::Value;

use super::found::{yaml, yaml_text, Findings};
use crate::dashboards;

const APP_DOCKERFILE: &str = "docker/Dockerfile";
const APP_TARGET: &str = "app";
const STANDINS: &str = "docker/standins/make.sh";
/// Images of ours (built here) and those with no Debian package to stand in.
const NO_STANDIN: [&str; 2] = ["seckill-lab/", "grafana/"];
/// Settings the stack cannot run without.
const REQUIRED_APP_ENV: [&str; 5] = [
    "SECKILL_LISTEN",
    "SECKILL_DATABASE_URL",
    "SECKILL_REDIS_URL",
    "SECKILL_REDLOCK_URLS",
    "SECKILL_ADMIN_TOKEN_FILE",
];
/// Environment names the service reads that are not Settings fields.
const EXTRA_APP_ENV: [&str; 1] = ["SECKILL_CONFIG"];
const APP_PORT: u16 = 8080;

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a valid regex")
}

fn rel(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// `docker-compose config`'s view of the file (variables substituted,
/// short forms kept as written), or None with the failure noted.
pub(super) fn load(root: &Path, found: &mut Findings) -> Option<Value> {
    let base = |args: &[&str]| {
        Command::new("docker-compose")
            .arg("-f")
            .arg(root.join("docker-compose.yml"))
            .arg("--project-directory")
            .arg(root)
            .args(args)
            .output()
    };
    let Ok(quiet) = base(&["config", "-q"]) else {
        found.fail("docker-compose is not installed: `apt-get install -y docker-compose`");
        return None;
    };
    if !quiet.status.success() {
        found.fail(format!(
            "`docker-compose config -q` rejects docker-compose.yml:\n{}",
            String::from_utf8_lossy(&quiet.stderr).trim()
        ));
        return None;
    }
    found.ok("`docker-compose config -q` accepts docker-compose.yml");
    let full = base(&["config"]).ok().filter(|o| o.status.success())?;
    match yaml_text(&String::from_utf8_lossy(&full.stdout)) {
        Ok(value) => Some(value),
        Err(e) => {
            found.fail(format!(
                "`docker-compose config` printed YAML this check cannot read: {e:#}"
            ));
            None
        }
    }
}

/// The fields of `pub struct Settings`, as SECKILL_* names.
fn settings_fields(root: &Path, found: &mut Findings) -> BTreeSet<String> {
    let text = std::fs::read_to_string(root.join("app/src/configuration.rs")).unwrap_or_default();
    let Some(body) = re(r"(?s)pub struct Settings\s*\{(.*?)\n\}").captures(&text) else {
        found.fail("app/src/configuration.rs: no `pub struct Settings { ... }` found");
        return BTreeSet::new();
    };
    re(r"(?m)^\s*pub\s+([a-z_][a-z0-9_]*)\s*:")
        .captures_iter(&body[1])
        .map(|c| format!("SECKILL_{}", c[1].to_uppercase()))
        .collect()
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A service's environment, list or mapping.
fn env_of(service: &Value) -> BTreeMap<String, String> {
    match &service["environment"] {
        Value::Array(items) => items
            .iter()
            .map(|i| {
                let item = text(i);
                let (k, v) = item.split_once('=').unwrap_or((&item, ""));
                (k.to_owned(), v.to_owned())
            })
            .collect(),
        Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), text(v))).collect(),
        _ => BTreeMap::new(),
    }
}

/// (type, source, target) of a service volume, short or long form.
fn volume(spec: &Value) -> (String, Option<String>, String) {
    if spec.is_object() {
        let kind = spec["type"].as_str().unwrap_or("volume").to_owned();
        return (
            kind,
            spec["source"].as_str().map(str::to_owned),
            text(&spec["target"]),
        );
    }
    let spec = text(spec);
    let parts: Vec<&str> = spec.split(':').collect();
    if parts.len() == 1 {
        return ("volume".into(), None, spec);
    }
    let kind = if parts[0].starts_with(['/', '.', '~']) {
        "bind"
    } else {
        "volume"
    };
    (kind.into(), Some(parts[0].to_owned()), parts[1].to_owned())
}

/// (host ip, published port, protocol) of a published port.
fn port(spec: &Value) -> Option<(String, String, String)> {
    if spec.is_object() {
        let published = text(&spec["published"]);
        if published.is_empty() {
            return None;
        }
        let ip = spec["host_ip"].as_str().unwrap_or("0.0.0.0").to_owned();
        return Some((
            ip,
            published,
            spec["protocol"].as_str().unwrap_or("tcp").to_owned(),
        ));
    }
    let spec = text(spec);
    let (spec, protocol) = spec
        .split_once('/')
        .map_or((spec.as_str(), "tcp"), |(a, b)| (a, b));
    let parts: Vec<&str> = spec.split(':').collect();
    match parts.len() {
        1 => None,
        2 => Some(("0.0.0.0".into(), parts[0].into(), protocol.into())),
        n => Some((
            parts[..n - 2].join(":"),
            parts[n - 2].into(),
            protocol.into(),
        )),
    }
}

fn stages(dockerfile: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(dockerfile).unwrap_or_default();
    re(r"(?im)^FROM\s+\S+\s+AS\s+(\S+)")
        .captures_iter(&text)
        .map(|c| c[1].to_owned())
        .collect()
}

/// A service's build: whether it is an app service (built from
/// docker/Dockerfile's `app` target).
fn check_build(root: &Path, name: &str, service: &Value, found: &mut Findings) -> bool {
    let build = &service["build"];
    if build.is_null() {
        match service["image"].as_str() {
            Some(image) => found.ok(format!("service {name}: image {image}")),
            None => found.fail(format!("service {name}: neither `image` nor `build`")),
        }
        return false;
    }
    let context = root.join(build.as_str().or(build["context"].as_str()).unwrap_or("."));
    let dockerfile = context.join(build["dockerfile"].as_str().unwrap_or("Dockerfile"));
    if !context.is_dir() {
        found.fail(format!(
            "service {name}: build context {} is not a directory",
            rel(root, &context)
        ));
    } else if !dockerfile.is_file() {
        found.fail(format!(
            "service {name}: Dockerfile {} does not exist",
            rel(root, &dockerfile)
        ));
    } else {
        found.ok(format!("service {name}: builds {}", rel(root, &dockerfile)));
    }
    let target = build["target"].as_str();
    if let Some(target) =
        target.filter(|t| dockerfile.is_file() && !stages(&dockerfile).contains(*t))
    {
        found.fail(format!(
            "service {name}: build target {target} is no stage of {}",
            rel(root, &dockerfile)
        ));
    }
    let same = |a: &Path, b: &Path| {
        a.canonicalize()
            .ok()
            .is_some_and(|a| b.canonicalize().is_ok_and(|b| a == b))
    };
    same(&dockerfile, &root.join(APP_DOCKERFILE)) && target == Some(APP_TARGET)
}

fn check_mounts(root: &Path, name: &str, service: &Value, volumes: &Value, found: &mut Findings) {
    for spec in service["volumes"].as_array().into_iter().flatten() {
        match volume(spec) {
            (kind, Some(source), target) if kind == "bind" => {
                let path = root.join(&source);
                if !path.starts_with(root) || source.contains("..") {
                    found.fail(format!(
                        "service {name}: mounts {source}, outside the repository"
                    ));
                } else if !path.exists() {
                    found.fail(format!(
                        "service {name}: mounted host path {} does not exist",
                        rel(root, &path)
                    ));
                } else {
                    found.ok(format!(
                        "service {name}: mounts {} at {target}",
                        rel(root, &path)
                    ));
                }
            }
            (kind, Some(source), _) if kind == "volume" && volumes.get(&source).is_none() => {
                found.fail(format!(
                    "service {name}: named volume {source} is not declared under `volumes:`"
                ));
            }
            _ => {}
        }
    }
}

fn check_ports(
    name: &str,
    service: &Value,
    published: &mut BTreeMap<(String, String), String>,
    found: &mut Findings,
) {
    for (ip, number, protocol) in service["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(port)
    {
        if let Some(other) = published.insert((number.clone(), protocol.clone()), name.to_owned()) {
            found.fail(format!(
                "host port {number}/{protocol} is published by both {other} and {name}"
            ));
        }
        if ["127.0.0.1", "::1", "localhost"].contains(&ip.as_str()) {
            found.ok(format!("service {name}: publishes {ip}:{number}"));
        } else {
            found.fail(format!(
                "service {name}: port {number} is published on {ip}; bind it to 127.0.0.1"
            ));
        }
    }
}

fn check_depends(
    name: &str,
    service: &Value,
    services: &serde_json::Map<String, Value>,
    found: &mut Findings,
) {
    for (dep, condition) in service["depends_on"].as_object().into_iter().flatten() {
        match services.get(dep) {
            None => found.fail(format!("service {name}: depends on unknown service {dep}")),
            Some(target) if condition["condition"] == "service_healthy" => {
                let check = &target["healthcheck"];
                if check["test"].is_null() || check["disable"] == true {
                    found.fail(format!("service {name}: waits for {dep} to be healthy, but {dep} has no health check"));
                }
            }
            Some(_) => {}
        }
    }
}

fn check_app_env(name: &str, service: &Value, fields: &BTreeSet<String>, found: &mut Findings) {
    let env = env_of(service);
    let names: BTreeSet<&String> = env.keys().filter(|k| k.starts_with("SECKILL_")).collect();
    let unknown: Vec<&&String> = names
        .iter()
        .filter(|n| !fields.contains(**n) && !EXTRA_APP_ENV.contains(&n.as_str()))
        .collect();
    for var in &unknown {
        found.fail(format!(
            "service {name}: {var} is not a field of Settings (app/src/configuration.rs)"
        ));
    }
    let missing: Vec<&str> = REQUIRED_APP_ENV
        .iter()
        .copied()
        .filter(|r| !env.contains_key(*r))
        .collect();
    for var in &missing {
        found.fail(format!("service {name}: {var} is not set"));
    }
    if unknown.is_empty() && missing.is_empty() {
        found.ok(format!(
            "service {name}: {} SECKILL_* variables, all Settings fields",
            names.len()
        ));
    }
    let listen = env.get("SECKILL_LISTEN").map_or("", String::as_str);
    if !listen.is_empty() && !listen.starts_with("0.0.0.0:") {
        found.fail(format!(
            "service {name}: SECKILL_LISTEN={listen} is not reachable from other containers"
        ));
    }
}

/// Every service; returns the app services.
fn check_services(
    root: &Path,
    compose: &Value,
    fields: &BTreeSet<String>,
    found: &mut Findings,
) -> Vec<String> {
    let services = compose["services"].as_object().cloned().unwrap_or_default();
    let mut apps = Vec::new();
    let mut published = BTreeMap::new();
    for (name, service) in &services {
        if check_build(root, name, service, found) {
            apps.push(name.clone());
        }
        check_mounts(root, name, service, &compose["volumes"], found);
        check_ports(name, service, &mut published, found);
        check_depends(name, service, &services, found);
    }
    if apps.is_empty() {
        found.fail(format!("no service is built from {APP_DOCKERFILE}"));
    }
    for name in &apps {
        check_app_env(name, &services[name], fields, found);
    }
    apps
}

fn check_dockerignore(root: &Path, found: &mut Findings) {
    let ignore = std::fs::read_to_string(root.join(".dockerignore")).unwrap_or_default();
    let patterns: Vec<glob::Pattern> = ignore
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with(['#', '!']))
        .filter_map(|l| glob::Pattern::new(l.trim_end_matches('/')).ok())
        .collect();
    let cargo = std::fs::read_to_string(root.join("Cargo.toml")).unwrap_or_default();
    let members: Vec<String> = re(r"(?ms)^members\s*=\s*\[(.*?)\]")
        .captures(&cargo)
        .map(|c| {
            re(r#""([^"]+)""#)
                .captures_iter(&c[1])
                .map(|m| m[1].to_owned())
                .collect()
        })
        .unwrap_or_default();
    if members.is_empty() {
        found.fail("Cargo.toml: no workspace members found");
    }
    for member in members {
        let left_out = [
            member.clone(),
            format!("{member}/Cargo.toml"),
            format!("{member}/src"),
        ]
        .into_iter()
        .find_map(|path| {
            patterns
                .iter()
                .find(|p| p.matches(&path))
                .map(|p| (path, p.as_str().to_owned()))
        });
        match left_out {
            Some((path, pattern)) => found.fail(format!(
                ".dockerignore: {path} (workspace member {member}) is left out by {pattern:?}"
            )),
            None => found.ok(format!(
                ".dockerignore: workspace member {member} is in the build context"
            )),
        }
    }
}

fn check_standins(root: &Path, compose: &Value, found: &mut Findings) {
    let script = std::fs::read_to_string(root.join(STANDINS)).unwrap_or_default();
    let table: BTreeMap<String, String> = re(r#"(?m)^\s*"([^"|\n]+)\|([^"|\n]+)"\s*$"#)
        .captures_iter(&script)
        .map(|c| (c[1].to_owned(), c[2].to_owned()))
        .collect();
    let mut images: BTreeSet<String> = compose["services"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(_, s)| s["image"].as_str().map(str::to_owned))
        .collect();
    let dockerfile = std::fs::read_to_string(root.join(APP_DOCKERFILE)).unwrap_or_default();
    images.extend(
        re(r"(?m)^ARG\s+\w+_IMAGE=(\S+)")
            .captures_iter(&dockerfile)
            .map(|c| c[1].to_owned()),
    );
    for image in images
        .iter()
        .filter(|i| !NO_STANDIN.iter().any(|n| i.starts_with(n)))
    {
        match table.get(image) {
            None => found.fail(format!("image {image} has no stand-in in {STANDINS}")),
            Some(folder)
                if !["base", "rust"].contains(&folder.as_str())
                    && !root
                        .join("docker/standins")
                        .join(folder)
                        .join("Dockerfile")
                        .is_file() =>
            {
                found.fail(format!(
                    "stand-in of {image}: docker/standins/{folder}/Dockerfile does not exist"
                ));
            }
            Some(folder) => found.ok(format!("image {image}: stand-in docker/standins/{folder}")),
        }
    }
}

fn check_env_example(root: &Path, fields: &BTreeSet<String>, found: &mut Findings) {
    let Ok(example) = std::fs::read_to_string(root.join(".env.example")) else {
        found.fail(".env.example does not exist");
        return;
    };
    let listed: BTreeSet<String> = example
        .lines()
        .filter_map(|l| {
            re(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=")
                .captures(l)
                .map(|c| c[1].to_owned())
        })
        .collect();
    let compose = std::fs::read_to_string(root.join("docker-compose.yml")).unwrap_or_default();
    let used: BTreeSet<String> = re(r"\$\{([A-Za-z_][A-Za-z0-9_]*)")
        .captures_iter(&compose)
        .map(|c| c[1].to_owned())
        .collect();
    for var in used.difference(&listed) {
        found.fail(format!(
            "docker-compose.yml reads ${{{var}}} but .env.example does not list it"
        ));
    }
    for var in listed.iter().filter(|v| {
        v.starts_with("SECKILL_") && !fields.contains(*v) && !EXTRA_APP_ENV.contains(&v.as_str())
    }) {
        found.fail(format!(
            ".env.example: {var} is not a field of Settings (app/src/configuration.rs)"
        ));
    }
    if used.is_subset(&listed) {
        found.ok(format!(
            ".env.example lists all {} variables docker-compose.yml reads",
            used.len()
        ));
    }
}

fn check_prometheus_and_lb(
    root: &Path,
    apps: &[String],
    found: &mut Findings,
) -> anyhow::Result<()> {
    let expected: BTreeSet<String> = apps.iter().map(|a| format!("{a}:{APP_PORT}")).collect();
    let prom = yaml(&root.join("prometheus/prometheus.yml"))?;
    let job = prom["scrape_configs"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|j| j["job_name"] == "seckill");
    match job {
        None => found.fail("prometheus/prometheus.yml: no scrape job `seckill`"),
        Some(job) => {
            let targets: BTreeSet<String> = job["static_configs"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|sc| sc["targets"].as_array().cloned().unwrap_or_default())
                .map(|t| text(&t))
                .collect();
            if targets == expected {
                found.ok(format!(
                    "prometheus scrapes every app service: {}",
                    targets.into_iter().collect::<Vec<_>>().join(", ")
                ));
            } else {
                found.fail(format!("prometheus/prometheus.yml: job seckill scrapes {targets:?}, the app services are {expected:?}"));
            }
        }
    }
    for rule in prom["rule_files"]
        .as_array()
        .into_iter()
        .flatten()
        .map(text)
    {
        if !root.join("prometheus").join(&rule).is_file() {
            found.fail(format!(
                "prometheus/prometheus.yml: rule file {rule} does not exist next to it"
            ));
        }
    }
    let nginx = std::fs::read_to_string(root.join("docker/nginx.conf")).unwrap_or_default();
    let servers: BTreeSet<String> = re(r"(?m)^\s*server\s+([\w.-]+:\d+)")
        .captures_iter(&nginx)
        .map(|c| c[1].to_owned())
        .collect();
    if servers == expected {
        found.ok("nginx balances over every app service");
    } else {
        found.fail(format!(
            "docker/nginx.conf: upstream servers {servers:?}, the app services are {expected:?}"
        ));
    }
    Ok(())
}

/// Where a container path of `service` lives in the repository, through
/// its bind mounts (the longest mount first).
fn host_path(root: &Path, service: &Value, container: &str) -> Option<PathBuf> {
    let mut mounts: Vec<(String, PathBuf)> = service["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|spec| match volume(spec) {
            (kind, Some(source), target) if kind == "bind" => {
                Some((target.trim_end_matches('/').to_owned(), root.join(source)))
            }
            _ => None,
        })
        .collect();
    mounts.sort_by_key(|(target, _)| std::cmp::Reverse(target.len()));
    mounts.into_iter().find_map(|(target, source)| {
        let rest = container.strip_prefix(&target)?;
        (rest.is_empty() || rest.starts_with('/'))
            .then(|| source.join(rest.trim_start_matches('/')))
    })
}

/// The provisioned Prometheus datasource uids.
fn datasources(
    root: &Path,
    services: &Value,
    found: &mut Findings,
) -> anyhow::Result<BTreeSet<String>> {
    let mut uids = BTreeSet::new();
    for path in crate::util::files_under(&root.join("dashboards/provisioning/datasources"))? {
        let doc = yaml(&path)?;
        for ds in doc["datasources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| d["type"] == "prometheus")
        {
            let uid = ds["uid"].as_str().unwrap_or_default();
            if uid.is_empty() {
                found.fail(format!(
                    "{}: datasource {} has no fixed uid",
                    rel(root, &path),
                    ds["name"]
                ));
            }
            uids.insert(uid.to_owned());
            let url = ds["url"].as_str().unwrap_or_default();
            let host = url
                .split("://")
                .last()
                .unwrap_or_default()
                .split([':', '/'])
                .next()
                .unwrap_or_default();
            if services.get(host).is_none() {
                found.fail(format!(
                    "{}: datasource url {url} names no compose service",
                    rel(root, &path)
                ));
            }
        }
    }
    if uids.is_empty() {
        found.fail("dashboards/provisioning/datasources: no Prometheus datasource provisioned");
    } else {
        found.ok(format!(
            "provisioned Prometheus datasource uid(s): {}",
            uids.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(uids)
}

fn check_grafana_mounts(root: &Path, grafana: &Value, found: &mut Findings) -> anyhow::Result<()> {
    for path in crate::util::files_under(&root.join("dashboards/provisioning/dashboards"))? {
        for provider in yaml(&path)?["providers"].as_array().into_iter().flatten() {
            let container = provider["options"]["path"].as_str().unwrap_or_default();
            match host_path(root, grafana, container) {
                Some(dir) if dir.is_dir() => {
                    let any = crate::util::files_under(&dir)?
                        .iter()
                        .any(|p| p.extension().is_some_and(|e| e == "json"));
                    if any {
                        found.ok(format!(
                            "grafana provider {} reads {}",
                            provider["name"],
                            rel(root, &dir)
                        ));
                    } else {
                        found.fail(format!(
                            "{}: provider path {container} holds no dashboard JSON",
                            rel(root, &path)
                        ));
                    }
                }
                _ => found.fail(format!(
                    "{}: provider path {container} is not a mounted folder of the repository",
                    rel(root, &path)
                )),
            }
        }
    }
    if let Some(home) = env_of(grafana).get("GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH") {
        match host_path(root, grafana, home) {
            Some(file) if file.is_file() => {
                found.ok(format!("grafana home dashboard: {}", rel(root, &file)))
            }
            _ => found.fail(format!(
                "grafana: home dashboard {home} is not a mounted file of the repository"
            )),
        }
    }
    Ok(())
}

/// One dashboard: its uid, and every panel, target, variable and
/// annotation on a provisioned datasource; returns its PromQL.
fn check_dashboard(
    name: &str,
    dash: &Value,
    uids: &BTreeSet<String>,
    found: &mut Findings,
) -> Vec<String> {
    let mut exprs = Vec::new();
    let check_ds = |found: &mut Findings, what: &str, ds: &Value| {
        if !ds["uid"].as_str().is_some_and(|u| uids.contains(u)) {
            found.fail(format!(
                "{name}: {what} uses datasource {ds}, not the provisioned uid {uids:?}"
            ));
        }
    };
    for panel in dashboards::panels(dash)
        .into_iter()
        .filter(|p| p["type"] != "row")
    {
        let what = format!("panel {} {}", panel["id"], panel["title"]);
        check_ds(found, &what, &panel["datasource"]);
        let targets = panel["targets"].as_array().cloned().unwrap_or_default();
        if targets.is_empty() {
            found.fail(format!("{name}: {what} has no targets"));
        }
        for target in &targets {
            check_ds(
                found,
                &format!("{what} target {}", target["refId"]),
                &target["datasource"],
            );
            match target["expr"]
                .as_str()
                .map(str::trim)
                .filter(|e| !e.is_empty())
            {
                Some(expr) => exprs.push(expr.to_owned()),
                None => found.fail(format!(
                    "{name}: {what} target {} has no PromQL expr",
                    target["refId"]
                )),
            }
        }
    }
    let count = exprs.len();
    for var in dash["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["type"] == "query")
    {
        check_ds(
            found,
            &format!("variable ${}", var["name"].as_str().unwrap_or_default()),
            &var["datasource"],
        );
    }
    for anno in dashboards::annotations(dash) {
        check_ds(
            found,
            &format!("annotation {}", anno["name"]),
            &anno["datasource"],
        );
        if let Some(expr) = dashboards::annotation_expr(anno).filter(|e| !e.trim().is_empty()) {
            exprs.push(expr.trim().to_owned());
        }
    }
    found.ok(format!(
        "{name}: uid {}, {count} panel queries, every one on a provisioned datasource",
        dash["uid"].as_str().unwrap_or_default()
    ));
    exprs
}

fn check_grafana(
    root: &Path,
    compose: &Value,
    found: &mut Findings,
) -> anyhow::Result<Vec<String>> {
    let services = &compose["services"];
    let uids = datasources(root, services, found)?;
    let grafana = services
        .as_object()
        .into_iter()
        .flatten()
        .find(|(n, s)| {
            *n == "grafana" || s["image"].as_str().is_some_and(|i| i.contains("grafana"))
        })
        .map(|(_, s)| s);
    if let Some(grafana) = grafana {
        check_grafana_mounts(root, grafana, found)?;
    }
    let mut exprs = Vec::new();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    let files = dashboards::files(root)?;
    if files.is_empty() {
        found.fail("dashboards/: no dashboard JSON");
    }
    for path in files {
        let name = rel(root, &path);
        let dash: Value = match serde_json::from_str(&std::fs::read_to_string(&path)?) {
            Ok(dash) => dash,
            Err(e) => {
                found.fail(format!("{name}: not valid JSON: {e}"));
                continue;
            }
        };
        match dash["uid"].as_str() {
            None | Some("") => found.fail(format!("{name}: no dashboard uid")),
            Some(uid) => {
                if let Some(other) = seen.insert(uid.to_owned(), name.clone()) {
                    found.fail(format!("{name}: uid {uid} is also used by {other}"));
                }
            }
        }
        exprs.extend(check_dashboard(&name, &dash, &uids, found));
    }
    Ok(exprs)
}

fn check_metric_names(
    root: &Path,
    mut exprs: Vec<String>,
    found: &mut Findings,
) -> anyhow::Result<()> {
    let source = std::fs::read_to_string(root.join("app/src/metrics.rs"))?;
    let registered: BTreeSet<String> = re(r#""(seckill_[a-z0-9_]+)""#)
        .captures_iter(&source)
        .map(|c| c[1].to_owned())
        .collect();
    let alerts = yaml(&root.join("prometheus/alerts.yml"))?;
    for group in alerts["groups"].as_array().into_iter().flatten() {
        exprs.extend(
            group["rules"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| text(&r["expr"])),
        );
    }
    let suffix = re(r"_(bucket|sum|count)$");
    let unknown: BTreeSet<String> = exprs
        .iter()
        .flat_map(|e| {
            re(r"\b(seckill_[a-z0-9_]+)")
                .captures_iter(e)
                .map(|c| c[1].to_owned())
                .collect::<Vec<_>>()
        })
        .filter(|m| !registered.contains(m) && !registered.contains(suffix.replace(m, "").as_ref()))
        .collect();
    for metric in &unknown {
        found.fail(format!("{metric} is used by a dashboard or alert but app/src/metrics.rs registers no such metric"));
    }
    if unknown.is_empty() {
        found.ok(format!(
            "every seckill_* metric in dashboards and alerts is registered ({} known)",
            registered.len()
        ));
    }
    Ok(())
}

/// No stack falls back to the README's demo token: each makes its own
/// (the `admin-token` service) unless `SECKILL_ADMIN_TOKEN` is set.
fn check_no_demo_token(root: &Path, found: &mut Findings) {
    let compose = std::fs::read_to_string(root.join("docker-compose.yml")).unwrap_or_default();
    if compose.contains(crate::stack::DEMO_TOKEN) {
        found.fail(format!(
            "docker-compose.yml names the demo token {}: a stack makes its own",
            crate::stack::DEMO_TOKEN
        ));
    } else {
        found.ok("docker-compose.yml has no default admin token: each stack makes its own");
    }
}

/// Every check of this module.
pub fn check(root: &Path, found: &mut Findings) -> anyhow::Result<()> {
    check_no_demo_token(root, found);
    let fields = settings_fields(root, found);
    let compose = load(root, found).unwrap_or(Value::Null);
    if !compose.is_null() {
        let apps = check_services(root, &compose, &fields, found);
        super::servers::check(&compose, found);
        check_prometheus_and_lb(root, &apps, found)?;
        check_standins(root, &compose, found);
    }
    check_dockerignore(root, found);
    check_env_example(root, &fields, found);
    let exprs = check_grafana(root, &compose, found)?;
    check_metric_names(root, exprs, found)
}
