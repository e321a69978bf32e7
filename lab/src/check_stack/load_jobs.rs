//! The sharded load's Jobs (deploy/k8s/jobs/, docs/kubernetes.md), held
//! to what makes their records merge: the compose file's load generator
//! image; the shards an Indexed Job whose `completions`, `parallelism` and
//! the N of `--shard` are one number, never retried (a second attempt
//! would send its share twice); the prepare Job and the shards given the
//! same strategy and load; both aimed at the app's Service on its port,
//! with the admin token mounted where `SECKILL_ADMIN_TOKEN_FILE` says.

use serde_json::Value;

use super::found::Findings;
use super::manifests::{containers, find, pod_spec, strings, Render};

/// The jobs against each other, the workshop render and the compose file.
pub(super) fn check(
    compose: &Value,
    prepare: &Render,
    shards: &Render,
    workshop: &Render,
    found: &mut Findings,
) {
    let Some(prep) = find(prepare, "Job", "seckill-load-prepare") else {
        found.fail("load prepare: no Job seckill-load-prepare");
        return;
    };
    let Some(shard) = find(shards, "Job", "seckill-load") else {
        found.fail("load shards: no Job seckill-load");
        return;
    };
    let loadgen = compose["services"]["loadgen"]["image"]
        .as_str()
        .unwrap_or_default();
    for (name, job) in [("prepare", prep), ("shards", shard)] {
        let Some(container) = containers(job).next() else {
            found.fail(format!("load {name}: its Job has no container"));
            continue;
        };
        let image = container["image"].as_str().unwrap_or_default();
        if image == loadgen {
            found.ok(format!(
                "load {name}: runs the compose file's load generator image ({image})"
            ));
        } else {
            found.fail(format!(
                "load {name}: image {image:?}, the compose loadgen's is {loadgen:?}"
            ));
        }
        aimed_at_the_app(name, container, workshop, found);
        token_mounted(name, job, container, found);
    }
    indexed(shard, found);
    same_load(prep, shard, found);
}

/// The `--flag=value` arguments of a container, the subcommand and
/// `--shard` aside.
fn flags(job: &Value) -> Vec<String> {
    containers(job)
        .next()
        .map(|c| strings(&c["args"]))
        .unwrap_or_default()
        .into_iter()
        .filter(|a| a.starts_with("--") && !a.starts_with("--shard"))
        .collect()
}

fn aimed_at_the_app(name: &str, container: &Value, workshop: &Render, found: &mut Findings) {
    let args = strings(&container["args"]);
    let url = args.iter().find_map(|a| a.strip_prefix("--url="));
    let target = url
        .and_then(|u| u.strip_prefix("http://"))
        .and_then(|hp| hp.split_once(':'));
    let Some((host, port)) = target else {
        found.fail(format!(
            "load {name}: no --url=http://SERVICE:PORT among its args"
        ));
        return;
    };
    let service_port = find(workshop, "Service", host).and_then(|s| {
        s["spec"]["ports"]
            .as_array()?
            .iter()
            .find_map(|p| p["port"].as_u64())
    });
    match service_port {
        Some(p) if p.to_string() == port => found.ok(format!(
            "load {name}: aims at Service {host} on its port {port}"
        )),
        other => found.fail(format!(
            "load {name}: --url names {host}:{port}, the lab's Service {host} has port {other:?}"
        )),
    }
}

fn token_mounted(name: &str, job: &Value, container: &Value, found: &mut Findings) {
    let file = container["env"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["name"] == "SECKILL_ADMIN_TOKEN_FILE")
        .and_then(|e| e["value"].as_str())
        .unwrap_or_default();
    let secret_volumes: Vec<&str> = pod_spec(job)
        .and_then(|s| s["volumes"].as_array())
        .into_iter()
        .flatten()
        .filter(|v| v["secret"]["secretName"] == "seckill-admin-token")
        .filter_map(|v| v["name"].as_str())
        .collect();
    let mounted = container["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|m| {
            secret_volumes.contains(&m["name"].as_str().unwrap_or_default())
                && m["mountPath"]
                    .as_str()
                    .is_some_and(|p| !file.is_empty() && file.starts_with(&format!("{p}/")))
        });
    if mounted {
        found.ok(format!(
            "load {name}: reads the admin token from the Secret, mounted at {file}"
        ));
    } else {
        found.fail(format!(
            "load {name}: SECKILL_ADMIN_TOKEN_FILE {file:?} is not inside a mount of Secret seckill-admin-token"
        ));
    }
}

fn indexed(job: &Value, found: &mut Findings) {
    let spec = &job["spec"];
    let completions = spec["completions"].as_u64();
    let parallelism = spec["parallelism"].as_u64();
    let command = containers(job)
        .next()
        .map(|c| strings(&c["command"]).join(" "))
        .unwrap_or_default();
    let n = regex::Regex::new(r#"--shard "?\$\(\(JOB_COMPLETION_INDEX \+ 1\)\)/(\d+)"#)
        .ok()
        .and_then(|r| r.captures(&command).map(|c| c[1].to_owned()))
        .and_then(|n| n.parse::<u64>().ok());
    let ok = spec["completionMode"] == "Indexed"
        && completions.is_some()
        && completions == parallelism
        && completions == n
        && spec["backoffLimit"] == 0;
    if ok {
        found.ok(format!(
            "load shards: an Indexed Job of {} pods at once, pod K−1 sending --shard K/{}, never retried",
            completions.unwrap_or_default(),
            completions.unwrap_or_default()
        ));
    } else {
        found.fail(format!(
            "load shards: completionMode {} (Indexed), completions {completions:?}, parallelism {parallelism:?} and the N of --shard {n:?} must be one number, backoffLimit {} (0)",
            spec["completionMode"], spec["backoffLimit"]
        ));
    }
}

fn same_load(prepare: &Value, shards: &Value, found: &mut Findings) {
    let (a, b) = (flags(prepare), flags(shards));
    let subcommand = containers(prepare)
        .next()
        .and_then(|c| c["args"][0].as_str().map(str::to_owned));
    if subcommand.as_deref() != Some("prepare") {
        found.fail(format!(
            "load prepare: its first argument is {subcommand:?}, not prepare"
        ));
    }
    if a == b && a.iter().any(|f| f.starts_with("--strategy=")) {
        found.ok(format!(
            "load: prepare and the shards are given the same load ({})",
            a.join(" ")
        ));
    } else {
        found.fail(format!(
            "load: prepare is given {a:?}, the shards {b:?}: the same --strategy and load flags, or merge refuses them"
        ));
    }
}
