//! The compose file's servers against `seckill_launch::servers`, where the
//! tests, the scenarios, the bench and `make demo` start the same servers:
//! what they share (no persistence for Redis, ZooKeeper's tick and
//! four-letter commands, etcd's log level, Prometheus' retention and
//! lifecycle flags) is written once, in `servers::shared`, and each compose
//! service of that image must say the same.

use seckill_launch::servers::shared;
use serde_json::Value;

use super::found::Findings;

/// A service's command as strings (empty when it has none).
fn command(service: &Value) -> Vec<String> {
    service["command"]
        .as_array()
        .map(|args| {
            args.iter()
                .map(|a| match a {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// An environment variable of a service, as text.
fn env(service: &Value, name: &str) -> Option<String> {
    match &service["environment"][name] {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// Whether `flags` appear in `args` in order, side by side.
fn contains_run(args: &[String], flags: &[&str]) -> bool {
    flags.is_empty()
        || args
            .windows(flags.len())
            .any(|w| w.iter().zip(flags).all(|(a, f)| a == f))
}

/// Every compose service whose image is one of the lab's servers, held to
/// `servers::shared`.
pub fn check(compose: &Value, found: &mut Findings) {
    let Some(services) = compose["services"].as_object() else {
        return;
    };
    for (name, service) in services {
        let image = service["image"].as_str().unwrap_or_default();
        let args = command(service);
        let repository = image.split(':').next().unwrap_or_default();
        let said = match repository.rsplit('/').next().unwrap_or_default() {
            "redis" => Some(
                contains_run(&args, &shared::REDIS_FLAGS)
                    .then_some(())
                    .ok_or_else(|| format!("its command {args:?} lacks {:?}", shared::REDIS_FLAGS)),
            ),
            "etcd" => {
                let level = format!("--log-level={}", shared::ETCD_LOG_LEVEL);
                Some(
                    args.contains(&level)
                        .then_some(())
                        .ok_or_else(|| format!("its command {args:?} lacks {level}")),
                )
            }
            "prometheus" => Some(
                shared::PROMETHEUS_FLAGS
                    .iter()
                    .find(|f| !args.iter().any(|a| a == *f))
                    .map_or(Ok(()), |f| Err(format!("its command {args:?} lacks {f}"))),
            ),
            "zookeeper" => {
                let tick = shared::ZK_TICK_MS.to_string();
                Some(
                    match (
                        env(service, "ZOO_TICK_TIME"),
                        env(service, "ZOO_4LW_COMMANDS_WHITELIST"),
                    ) {
                        (Some(t), Some(w)) if t == tick && w == shared::ZK_4LW => Ok(()),
                        (t, w) => Err(format!(
                            "ZOO_TICK_TIME {t:?} and ZOO_4LW_COMMANDS_WHITELIST {w:?}, not {tick} and {}",
                            shared::ZK_4LW
                        )),
                    },
                )
            }
            _ => None,
        };
        match said {
            Some(Ok(())) => found.ok(format!(
                "compose: {name} ({image}) runs as seckill_launch::servers starts it"
            )),
            Some(Err(why)) => found.fail(format!(
                "compose: {name} ({image}) differs from seckill_launch::servers::shared: {why}"
            )),
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn findings(compose: &Value) -> Findings {
        let mut found = Findings::default();
        check(compose, &mut found);
        found
    }

    #[test]
    fn servers_started_as_the_launcher_starts_them_pass() {
        let compose = json!({"services": {
            "redis": {"image": "redis:7.4-bookworm", "command": ["redis-server", "--save", "", "--appendonly", "no"]},
            "etcd": {"image": "quay.io/coreos/etcd:v3.5.17", "command": ["etcd", "--log-level=warn"]},
            "prometheus": {"image": "prom/prometheus:v2.53.3", "command": ["--config.file=x", "--storage.tsdb.retention.time=2d", "--web.enable-lifecycle"]},
            "zookeeper": {"image": "zookeeper:3.9", "environment": {"ZOO_TICK_TIME": 100, "ZOO_4LW_COMMANDS_WHITELIST": "ruok,srvr"}},
            "lb": {"image": "nginx:1.27-alpine"},
        }});
        let found = findings(&compose);
        assert!(found.failures.is_empty(), "{:?}", found.failures);
        assert_eq!(found.passes.len(), 4, "{:?}", found.passes);
    }

    #[test]
    fn a_server_that_drifted_fails_naming_what_differs() {
        let compose = json!({"services": {
            "redis-1": {"image": "redis:7.4-bookworm", "command": ["redis-server", "--appendonly", "yes"]},
            "etcd": {"image": "quay.io/coreos/etcd:v3.5.17", "command": ["etcd", "--log-level=info"]},
            "prometheus": {"image": "prom/prometheus:v2.53.3", "command": ["--storage.tsdb.retention.time=2d"]},
            "zookeeper": {"image": "zookeeper:3.9", "environment": {"ZOO_TICK_TIME": 2000, "ZOO_4LW_COMMANDS_WHITELIST": "ruok,srvr"}},
        }});
        let found = findings(&compose);
        assert_eq!(found.failures.len(), 4, "{:?}", found.failures);
        for (failure, names) in found.failures.iter().zip([
            "--log-level=warn",
            "--web.enable-lifecycle",
            "\"--save\"",
            "ZOO_TICK_TIME Some(\"2000\")",
        ]) {
            assert!(failure.contains(names), "{failure}");
        }
    }
}
