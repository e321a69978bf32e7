//! `make check-k8s` (`seckill-lab check-k8s`): deploy/k8s/ checked without
//! a cluster (none runs here).
//!
//! - Every target renders: the base, each overlay, and a student's lab
//!   (a kustomization that sets a namespace over the workshop overlay, as
//!   docs/kubernetes.md tells a teacher to write one) — `kubectl kustomize`.
//! - Every object of every render validates against the Kubernetes OpenAPI
//!   schemas, strictly (an unknown field is an error), for the oldest and
//!   the newest version we claim ([`VERSIONS`]) — PyPI's
//!   `kubernetes-validate`, in a virtualenv this check makes once. Only
//!   the Prometheus Operator's ServiceMonitor has no schema there: it is
//!   checked by hand below.
//! - The workshop render (base and every component) agrees with
//!   docker-compose.yml and the service: the same images; the servers
//!   started with the flags `seckill_launch::servers::shared` holds (the
//!   compose check's own rule, [`super::servers`]); PostgreSQL with the
//!   compose file's flags; the app's SECKILL_* names exactly the compose
//!   replicas' (all `Settings` fields); its port the one SECKILL_LISTEN
//!   names; its probes on the service's health routes; Prometheus'
//!   annotations and the ServiceMonitor on `/metrics`; one Redlock URL per
//!   StatefulSet pod.
//! - Inside every render: each Service selects pods and their named ports;
//!   each ConfigMap and Secret referenced exists — but the admin token's
//!   Secret, which the user makes ([`USER_SECRETS`]); the dashboards are
//!   the files of dashboards/, byte for byte.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context as _;
use serde_json::{json, Value};

use super::found::{yaml_text, Findings};
use super::manifests::{containers, find, kind_name, pod_spec, strings, Render};

/// The Kubernetes versions every object must validate against: the oldest
/// still maintained when this was written, and the newest the validator
/// knows.
pub const VERSIONS: [&str; 2] = ["1.29.0", "1.37.0"];
/// The validator, pinned.
const VALIDATOR: &str = "kubernetes-validate==1.37.0";
/// Secrets the user creates before the first apply (docs/kubernetes.md).
pub const USER_SECRETS: [&str; 1] = ["seckill-admin-token"];
/// Our images: built by `make docker-images`, named as in the compose file.
const OURS: &str = "seckill-lab/";

/// `make check-k8s` from the checkout's root, its findings in `found`.
pub fn check(root: &Path, found: &mut Findings) -> anyhow::Result<()> {
    check_tree(
        root,
        &root.join("deploy/k8s"),
        &root.join(".state/check-k8s"),
        found,
    )
}

/// The checks over a deploy/k8s tree (a test feeds a broken copy), the
/// renders written to `out`.
pub fn check_tree(root: &Path, k8s: &Path, out: &Path, found: &mut Findings) -> anyhow::Result<()> {
    std::fs::create_dir_all(out)?;
    let student = out.join("students/ann");
    std::fs::create_dir_all(&student)?;
    let workshop = k8s.join("overlays/workshop");
    let relative = pathdiff(&workshop, &student);
    std::fs::write(
        student.join("kustomization.yaml"),
        format!(
            "namespace: seckill-ann\nresources:\n  - {}\n",
            relative.display()
        ),
    )?;
    let targets = [
        ("base", k8s.join("base")),
        ("workshop", workshop),
        ("loadtest", k8s.join("overlays/loadtest")),
        ("student ann", student),
        ("load prepare", k8s.join("jobs/prepare")),
        ("load shards", k8s.join("jobs/shards")),
    ];
    let mut renders = Vec::new();
    for (name, dir) in targets {
        if let Some(render) = render(name, &dir, out, found)? {
            renders.push(render);
        }
    }
    let validator = validator()?;
    for render in &renders {
        validate(&validator, render, found);
        references(render, found);
        if render.name == "student ann" {
            namespaced(render, "seckill-ann", found);
        }
    }
    let compose = super::compose::load(root, found);
    if let Some(workshop) = renders.iter().find(|r| r.name == "workshop") {
        if let Some(compose) = &compose {
            agrees_with_compose(root, compose, workshop, found)?;
        }
        dashboards(root, workshop, found);
    }
    if let Some(loadtest) = renders.iter().find(|r| r.name == "loadtest") {
        service_monitor(loadtest, found);
    }
    let named = |name: &str| renders.iter().find(|r| r.name == name);
    if let (Some(prepare), Some(shards), Some(workshop), Some(compose)) = (
        named("load prepare"),
        named("load shards"),
        named("workshop"),
        &compose,
    ) {
        super::load_jobs::check(compose, prepare, shards, workshop, found);
    }
    Ok(())
}

/// `to` relative to `from` (both absolute, no symlinks in between).
fn pathdiff(to: &Path, from: &Path) -> PathBuf {
    let to: Vec<_> = to.components().collect();
    let from: Vec<_> = from.components().collect();
    let common = to.iter().zip(&from).take_while(|(a, b)| a == b).count();
    let mut path = PathBuf::new();
    for _ in common..from.len() {
        path.push("..");
    }
    for part in &to[common..] {
        path.push(part);
    }
    path
}

fn render(
    name: &str,
    dir: &Path,
    out: &Path,
    found: &mut Findings,
) -> anyhow::Result<Option<Render>> {
    let output = Command::new("kubectl").arg("kustomize").arg(dir).output();
    let output = match output {
        Ok(o) => o,
        Err(e) => {
            found.fail(format!(
                "kubectl cannot run ({e}): install kubectl 1.27 or newer, whose kustomize renders deploy/k8s"
            ));
            return Ok(None);
        }
    };
    if !output.status.success() {
        found.fail(format!(
            "{name}: `kubectl kustomize {}` failed: {}",
            dir.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
        return Ok(None);
    }
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let file = out.join(format!("{}.yaml", name.replace(' ', "-")));
    std::fs::write(&file, &text)?;
    let mut objects = Vec::new();
    for doc in text.split("\n---\n") {
        match yaml_text(doc) {
            Ok(Value::Null) => {}
            Ok(object) => objects.push(object),
            Err(e) => found.fail(format!(
                "{name}: the render holds YAML this check cannot read: {e:#}"
            )),
        }
    }
    found.ok(format!(
        "{name}: renders, {} objects ({})",
        objects.len(),
        file.display()
    ));
    Ok(Some(Render {
        name: name.to_owned(),
        file,
        objects,
    }))
}

/// `kubernetes-validate`: on PATH, else in a virtualenv under
/// `~/.cache/seckill-lab/` made (and kept) on first use.
fn validator() -> anyhow::Result<PathBuf> {
    if let Ok(path) = which("kubernetes-validate") {
        return Ok(path);
    }
    let venv = super::found::cache_dir().join("k8s-venv");
    let bin = venv.join("bin/kubernetes-validate");
    if bin.is_file() {
        return Ok(bin);
    }
    eprintln!("check-k8s: installing {VALIDATOR} into {}", venv.display());
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status();
    anyhow::ensure!(
        made.is_ok_and(|s| s.success()),
        "cannot make a virtualenv at {} (Debian: apt-get install python3-venv)",
        venv.display()
    );
    let installed = Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet", VALIDATOR])
        .status()
        .context("run pip")?;
    anyhow::ensure!(
        installed.success(),
        "pip install {VALIDATOR} failed (is PyPI reachable?)"
    );
    Ok(bin)
}

fn which(program: &str) -> anyhow::Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .with_context(|| format!("{program} is not on PATH"))
}

fn validate(validator: &Path, render: &Render, found: &mut Findings) {
    for version in VERSIONS {
        let output = Command::new(validator)
            .args(["--strict", "--quiet", "--kubernetes-version", version])
            .arg(&render.file)
            .output();
        let Ok(output) = output else {
            found.fail(format!(
                "{}: {} cannot run",
                render.name,
                validator.display()
            ));
            return;
        };
        let said = String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr);
        let unexplained: Vec<&str> = said
            .lines()
            .filter(|l| !l.trim().is_empty())
            .filter(|l| !l.contains("Couldn't find schema for kind ServiceMonitor"))
            .collect();
        if output.status.success() && unexplained.is_empty() {
            found.ok(format!(
                "{}: every object validates against Kubernetes {version}'s schemas (strict)",
                render.name
            ));
        } else {
            found.fail(format!(
                "{}: objects fail Kubernetes {version}'s schemas:\n{}",
                render.name,
                unexplained.join("\n")
            ));
        }
    }
}

/// Services select pods and name their ports; ConfigMaps and Secrets
/// referenced exist (or are the user's to make).
fn references(render: &Render, found: &mut Findings) {
    let mut missing = missing_configuration(render);
    missing.extend(service_gaps(render));
    if missing.is_empty() {
        found.ok(format!(
            "{}: every Service selects pods with its named ports; every ConfigMap and Secret referenced exists (but {}, which you make)",
            render.name,
            USER_SECRETS.join(", ")
        ));
    }
    for line in missing {
        found.fail(format!("{}: {line}", render.name));
    }
}

/// The ConfigMaps and Secrets a pod needs that the render lacks.
fn missing_configuration(render: &Render) -> Vec<String> {
    let have: BTreeSet<(String, String)> = render.objects.iter().map(kind_name).collect();
    let mut missing = Vec::new();
    for object in &render.objects {
        let (kind, name) = kind_name(object);
        let Some(pod) = pod_spec(object) else {
            continue;
        };
        let mut wants = Vec::new();
        for volume in pod["volumes"].as_array().into_iter().flatten() {
            if let Some(s) = volume["secret"]["secretName"].as_str() {
                wants.push(("Secret", s.to_owned()));
            }
            if let Some(c) = volume["configMap"]["name"].as_str() {
                wants.push(("ConfigMap", c.to_owned()));
            }
        }
        for container in containers(object) {
            for from in container["envFrom"].as_array().into_iter().flatten() {
                if let Some(c) = from["configMapRef"]["name"].as_str() {
                    wants.push(("ConfigMap", c.to_owned()));
                }
            }
            for env in container["env"].as_array().into_iter().flatten() {
                if let Some(s) = env["valueFrom"]["secretKeyRef"]["name"].as_str() {
                    wants.push(("Secret", s.to_owned()));
                }
            }
        }
        for (want_kind, want) in wants {
            let users = want_kind == "Secret" && USER_SECRETS.contains(&want.as_str());
            if !users && !have.contains(&(want_kind.to_owned(), want.clone())) {
                missing.push(format!(
                    "{kind}/{name} needs {want_kind}/{want}, which is not in the render"
                ));
            }
        }
    }
    missing
}

/// Services that select no pod, or name a port their pods lack.
fn service_gaps(render: &Render) -> Vec<String> {
    let mut missing = Vec::new();
    for service in render.objects.iter().filter(|o| o["kind"] == "Service") {
        let (_, name) = kind_name(service);
        let selector = service["spec"]["selector"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let pods: Vec<&Value> = render
            .objects
            .iter()
            .filter(|o| {
                let labels = &o["spec"]["template"]["metadata"]["labels"];
                pod_spec(o).is_some() && selector.iter().all(|(k, v)| &labels[k] == v)
            })
            .collect();
        if pods.is_empty() {
            missing.push(format!("Service/{name} selects no pod"));
        }
        for port in service["spec"]["ports"].as_array().into_iter().flatten() {
            let Some(target) = port["targetPort"].as_str() else {
                continue;
            };
            let named = pods.iter().all(|pod| {
                containers(pod).any(|c| {
                    c["ports"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|p| p["name"] == target)
                })
            });
            if !named {
                missing.push(format!(
                    "Service/{name}'s targetPort {target} is no port of its pods"
                ));
            }
        }
    }
    missing
}

fn namespaced(render: &Render, namespace: &str, found: &mut Findings) {
    let stray: Vec<String> = render
        .objects
        .iter()
        .filter(|o| {
            let ns = if o["kind"] == "Namespace" {
                &o["metadata"]["name"]
            } else {
                &o["metadata"]["namespace"]
            };
            ns != namespace
        })
        .map(|o| format!("{:?}", kind_name(o)))
        .collect();
    if stray.is_empty() {
        found.ok(format!(
            "{}: every object in namespace {namespace}, its Namespace too",
            render.name
        ));
    } else {
        found.fail(format!(
            "{}: outside namespace {namespace}: {}",
            render.name,
            stray.join(", ")
        ));
    }
}

/// The app's SECKILL_* names in the render: its ConfigMap's and its env's.
fn app_settings(render: &Render) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for object in &render.objects {
        if object["kind"] == "ConfigMap" && object["metadata"]["name"] == "seckill-settings" {
            for (k, v) in object["data"].as_object().into_iter().flatten() {
                names.insert(k.clone(), v.as_str().unwrap_or_default().to_owned());
            }
        }
        if object["kind"] == "Deployment" && object["metadata"]["name"] == "seckill-app" {
            for env in containers(object).flat_map(|c| c["env"].as_array().into_iter().flatten()) {
                let value = env["value"].as_str().unwrap_or_default().to_owned();
                names.insert(env["name"].as_str().unwrap_or_default().to_owned(), value);
            }
        }
    }
    names.retain(|k, _| k.starts_with("SECKILL_"));
    names
}

/// The workshop render (base and every component) against the compose
/// file and the service.
fn agrees_with_compose(
    root: &Path,
    compose: &Value,
    render: &Render,
    found: &mut Findings,
) -> anyhow::Result<()> {
    let services = compose["services"].as_object().cloned().unwrap_or_default();
    // Images.
    let compose_images: BTreeSet<String> = services
        .values()
        .filter_map(|s| s["image"].as_str().map(str::to_owned))
        .collect();
    let k8s_images: BTreeSet<String> = render
        .objects
        .iter()
        .flat_map(containers)
        .filter_map(|c| c["image"].as_str().map(str::to_owned))
        .collect();
    let foreign: Vec<&String> = k8s_images
        .iter()
        .filter(|image| !compose_images.contains(*image))
        .collect();
    if foreign.is_empty() {
        found.ok(format!(
            "workshop: its {} images are the compose file's ({})",
            k8s_images.len(),
            k8s_images.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
    } else {
        found.fail(format!(
            "workshop: images not in docker-compose.yml: {foreign:?}"
        ));
    }
    // The lab's servers, held to servers::shared as the compose file is.
    let mut as_compose = serde_json::Map::new();
    for object in &render.objects {
        for container in containers(object) {
            let image = container["image"].as_str().unwrap_or_default();
            if image.starts_with(OURS) {
                continue;
            }
            let mut command = strings(&container["command"]);
            command.extend(strings(&container["args"]));
            let env: serde_json::Map<String, Value> = container["env"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| Some((e["name"].as_str()?.to_owned(), e["value"].clone())))
                .collect();
            as_compose.insert(
                format!("k8s {}", kind_name(object).1),
                json!({"image": image, "command": command, "environment": env}),
            );
        }
    }
    super::servers::check(&json!({ "services": as_compose }), found);
    // PostgreSQL's flags.
    let compose_pg = strings(&services.get("postgres").cloned().unwrap_or_default()["command"]);
    let k8s_pg = find(render, "StatefulSet", "postgres")
        .and_then(|o| containers(o).next())
        .map(|c| strings(&c["args"]))
        .unwrap_or_default();
    if !compose_pg.is_empty() && k8s_pg == compose_pg {
        found.ok(format!(
            "workshop: PostgreSQL runs as in compose: {k8s_pg:?}"
        ));
    } else {
        found.fail(format!(
            "workshop: PostgreSQL's args {k8s_pg:?}, the compose file's {compose_pg:?}"
        ));
    }
    app_agrees(root, render, &services, found);
    Ok(())
}

/// The app's settings, port, probes and scrape path.
fn app_agrees(
    root: &Path,
    render: &Render,
    services: &serde_json::Map<String, Value>,
    found: &mut Findings,
) {
    let settings = app_settings(render);
    let compose_names: BTreeSet<String> = services
        .get("app-1")
        .and_then(|s| s["environment"].as_object())
        .into_iter()
        .flatten()
        .map(|(k, _)| k.clone())
        .filter(|k| k.starts_with("SECKILL_"))
        .collect();
    let names: BTreeSet<String> = settings.keys().cloned().collect();
    if names == compose_names {
        found.ok(format!(
            "workshop: the app's {} SECKILL_* settings are the compose replicas'",
            names.len()
        ));
    } else {
        found.fail(format!(
            "workshop: SECKILL_* names differ from docker-compose.yml's app-1: only here {:?}, only there {:?}",
            names.difference(&compose_names).collect::<Vec<_>>(),
            compose_names.difference(&names).collect::<Vec<_>>()
        ));
    }
    port_and_routes(root, render, &settings, found);
    redlock_urls(render, &settings, found);
}

/// The app's port (listened on, reached, scraped) and its probes' and
/// scrape's paths: routes of the service.
fn port_and_routes(
    root: &Path,
    render: &Render,
    settings: &BTreeMap<String, String>,
    found: &mut Findings,
) {
    let listen_port = settings
        .get("SECKILL_LISTEN")
        .and_then(|l| l.rsplit(':').next())
        .and_then(|p| p.parse::<u64>().ok());
    let Some(app) = find(render, "Deployment", "seckill-app") else {
        found.fail("workshop: no Deployment seckill-app");
        return;
    };
    let container = containers(app).next().cloned().unwrap_or_default();
    let port = container["ports"][0]["containerPort"].as_u64();
    let annotations = &app["spec"]["template"]["metadata"]["annotations"];
    let scrape_port = annotations["prometheus.io/port"]
        .as_str()
        .and_then(|p| p.parse::<u64>().ok());
    if port.is_some() && port == listen_port && scrape_port == port {
        found.ok(format!(
            "workshop: the app listens, is reached and scraped on port {}",
            port.unwrap_or_default()
        ));
    } else {
        found.fail(format!(
            "workshop: containerPort {port:?}, SECKILL_LISTEN's port {listen_port:?}, prometheus.io/port {scrape_port:?} must agree"
        ));
    }
    let routes = std::fs::read_to_string(root.join("app/src/routes/health.rs")).unwrap_or_default();
    let metrics =
        std::fs::read_to_string(root.join("app/src/routes/metrics.rs")).unwrap_or_default();
    for (what, path, source) in [
        (
            "readinessProbe",
            container["readinessProbe"]["httpGet"]["path"].clone(),
            &routes,
        ),
        (
            "livenessProbe",
            container["livenessProbe"]["httpGet"]["path"].clone(),
            &routes,
        ),
        (
            "prometheus.io/path",
            annotations["prometheus.io/path"].clone(),
            &metrics,
        ),
    ] {
        match path.as_str() {
            Some(p) if source.contains(&format!("\"{p}\"")) => {
                found.ok(format!(
                    "workshop: the app's {what} {p} is a route of the service"
                ));
            }
            other => found.fail(format!(
                "workshop: the app's {what} {other:?} is no route of the service"
            )),
        }
    }
}

/// One Redlock URL per pod of the StatefulSet, by its stable name.
fn redlock_urls(render: &Render, settings: &BTreeMap<String, String>, found: &mut Findings) {
    let nodes = find(render, "StatefulSet", "redlock")
        .and_then(|o| o["spec"]["replicas"].as_u64())
        .unwrap_or(0);
    let want: Vec<String> = (0..nodes)
        .map(|i| format!("redis://redlock-{i}.redlock:6379"))
        .collect();
    let urls: Vec<String> = settings
        .get("SECKILL_REDLOCK_URLS")
        .map(|u| u.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    if nodes > 0 && urls == want {
        found.ok(format!(
            "workshop: SECKILL_REDLOCK_URLS names each of the {nodes} Redlock pods"
        ));
    } else {
        found.fail(format!(
            "workshop: SECKILL_REDLOCK_URLS {urls:?}, the StatefulSet's pods {want:?}"
        ));
    }
}

/// The dashboards ConfigMap holds dashboards/*.json, byte for byte.
fn dashboards(root: &Path, render: &Render, found: &mut Findings) {
    let Some(map) = find(render, "ConfigMap", "seckill-dashboards") else {
        found.fail("workshop: no ConfigMap seckill-dashboards");
        return;
    };
    let labelled = map["metadata"]["labels"]["grafana_dashboard"] == "1";
    let mut want = BTreeMap::new();
    for entry in std::fs::read_dir(root.join("dashboards"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "json") {
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            want.insert(name, std::fs::read_to_string(&path).unwrap_or_default());
        }
    }
    let have: BTreeMap<String, String> = map["data"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
        .collect();
    if labelled && have == want && !want.is_empty() {
        found.ok(format!(
            "workshop: ConfigMap seckill-dashboards holds dashboards/ byte for byte ({}), labelled grafana_dashboard=1",
            want.keys().cloned().collect::<Vec<_>>().join(", ")
        ));
    } else {
        found.fail(format!(
            "workshop: ConfigMap seckill-dashboards (labelled: {labelled}) is not dashboards/: copy them to deploy/k8s/base/dashboards/ (have {:?}, want {:?})",
            have.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>()
        ));
    }
}

/// The ServiceMonitor (no schema in the validator): it selects the app's
/// Service and scrapes a port it names, on /metrics.
fn service_monitor(render: &Render, found: &mut Findings) {
    let Some(monitor) = render
        .objects
        .iter()
        .find(|o| o["kind"] == "ServiceMonitor")
    else {
        found.fail("loadtest: no ServiceMonitor");
        return;
    };
    let service = find(render, "Service", "seckill-app");
    let selects = service.is_some_and(|s| {
        monitor["spec"]["selector"]["matchLabels"]
            .as_object()
            .into_iter()
            .flatten()
            .all(|(k, v)| &s["metadata"]["labels"][k] == v)
    });
    let endpoint = &monitor["spec"]["endpoints"][0];
    let port_named = service.is_some_and(|s| {
        s["spec"]["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|p| p["name"] == endpoint["port"])
    });
    if selects && port_named && endpoint["path"] == "/metrics" {
        found.ok("loadtest: the ServiceMonitor selects Service seckill-app and scrapes its port http on /metrics");
    } else {
        found.fail(format!(
            "loadtest: the ServiceMonitor selects seckill-app: {selects}, names its port: {port_named}, path {}",
            endpoint["path"]
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("the workspace")
            .to_owned()
    }

    fn copy_tree(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).expect("mkdir");
        for entry in std::fs::read_dir(from).expect("read dir").flatten() {
            let path = entry.path();
            let target = to.join(entry.file_name());
            if path.is_dir() {
                copy_tree(&path, &target);
            } else {
                std::fs::copy(&path, &target).expect("copy");
            }
        }
    }

    /// Replace each `from` of the file with its `to` (each must be there).
    fn edit(path: &Path, changes: &[(&str, &str)]) {
        let mut text = std::fs::read_to_string(path).expect("a file of the copy");
        for (from, to) in changes {
            assert!(text.contains(from), "{} has no {from:?}", path.display());
            text = text.replace(from, to);
        }
        std::fs::write(path, text).expect("write");
    }

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("seckill-check-k8s-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    // Needs kubectl and the validator (made on first use): `make test` runs
    // where `make check-k8s` does.
    #[test]
    fn the_tree_passes_and_a_broken_object_fails_naming_it() {
        let root = root();
        let mut found = Findings::default();
        let out = scratch("good");
        check_tree(&root, &root.join("deploy/k8s"), &out, &mut found).expect("the check runs");
        assert!(found.failures.is_empty(), "{:#?}", found.failures);
        assert!(found.passes.len() >= 20, "{:#?}", found.passes);

        // A port as text (a schema error) and a Secret nobody makes.
        let broken = scratch("broken");
        copy_tree(&root.join("deploy/k8s"), &broken.join("k8s"));
        let k8s = broken.join("k8s");
        edit(
            &k8s.join("base/app.yaml"),
            &[("containerPort: 8080", "containerPort: eighty")],
        );
        edit(
            &k8s.join("base/console.yaml"),
            &[("secretName: seckill-admin-token", "secretName: nobodys")],
        );
        // Five shard pods told they are four, and a shard given another load.
        edit(
            &k8s.join("jobs/shards/job.yaml"),
            &[
                ("parallelism: 4", "parallelism: 5"),
                ("--stock=20000", "--stock=100"),
            ],
        );
        let mut found = Findings::default();
        check_tree(&root, &broken.join("k8s"), &broken.join("out"), &mut found)
            .expect("the check runs");
        let failures = found.failures.join("\n");
        assert!(
            failures.contains("containerPort: 'eighty' is not of type 'integer'"),
            "{failures}"
        );
        assert!(
            failures.contains("Deployment/seckill-console needs Secret/nobodys"),
            "{failures}"
        );
        assert!(
            failures.contains("completions Some(4), parallelism Some(5) and the N of --shard Some(4) must be one number"),
            "{failures}"
        );
        assert!(
            failures.contains("prepare is given") && failures.contains("\"--stock=100\""),
            "{failures}"
        );
        let _ = std::fs::remove_dir_all(out);
        let _ = std::fs::remove_dir_all(broken);
    }

    #[test]
    fn a_relative_path_climbs_to_the_common_folder() {
        assert_eq!(
            pathdiff(
                Path::new("/a/b/k8s/overlays/workshop"),
                Path::new("/a/b/.state/students/ann")
            ),
            PathBuf::from("../../../k8s/overlays/workshop")
        );
    }
}
