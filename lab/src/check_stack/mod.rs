//! `make check-stack` (`seckill-lab check-stack`): the docker-compose stack
//! and its monitoring checked offline — no Docker engine, no running
//! server. Each check names the file and the thing at fault.
//!
//! [`compose`]: `docker-compose config -q` accepts docker-compose.yml; every
//! service has an image or a build whose Dockerfile and target exist;
//! .dockerignore leaves every workspace member in the build context; every
//! image pulled has a stand-in in docker/standins/ (Grafana excepted: no
//! Debian package); bind mounts exist inside the repository, named volumes
//! are declared; published ports are unique and on loopback; a service
//! waited for as `service_healthy` has a health check; every SECKILL_*
//! variable of an app service is a `Settings` field and the ones the stack
//! needs are set; every `${VAR}` compose reads is in .env.example;
//! Prometheus scrapes exactly the app services and nginx balances over
//! them; Grafana's provisioned datasource, provider path and home
//! dashboard resolve to files of the repository; every dashboard has a
//! unique uid and uses the provisioned datasource; every `seckill_*`
//! metric of a dashboard or an alert is one app/src/metrics.rs registers.
//!
//! [`servers`]: every compose service that runs one of the lab's servers
//! (redis, etcd, ZooKeeper, Prometheus) runs it as `seckill_launch::servers`
//! starts it for the tests and `make demo`: the flags they share are
//! written once, in `servers::shared`.
//!
//! [`k8s`] (`make check-k8s`): deploy/k8s/ rendered, validated against
//! the Kubernetes schemas and held to the compose file, without a cluster.
//!
//! [`monitoring`]: promtool checks the Prometheus config, the rules and
//! their unit tests, and parses every dashboard query; every dashboard is
//! type-checked against Grafana's published schema (npm `@grafana/schema`
//! and `tsc`; skipped without node/npm unless `SECKILL_REQUIRE_SCHEMA=1`).

mod compose;
mod found;
mod k8s;
mod load_jobs;
mod manifests;
mod monitoring;
mod servers;

use found::Findings;

/// `make check-stack`, from the checkout's root.
pub fn run() -> anyhow::Result<()> {
    let root = std::env::current_dir()?;
    let mut found = Findings::default();
    compose::check(&root, &mut found)?;
    monitoring::check(&root, &mut found)?;
    report("check-stack", &found)
}

/// `make check-k8s`, from the checkout's root.
pub fn run_k8s() -> anyhow::Result<()> {
    let root = std::env::current_dir()?;
    let mut found = Findings::default();
    k8s::check(&root, &mut found)?;
    report("check-k8s", &found)
}

/// Print every finding; an error when any failed.
fn report(what: &str, found: &Findings) -> anyhow::Result<()> {
    for line in &found.passes {
        println!("ok   {line}");
    }
    for line in &found.failures {
        eprintln!("FAIL {line}");
    }
    let summary = format!(
        "{what}: {} passed, {} failed",
        found.passes.len(),
        found.failures.len()
    );
    if found.failures.is_empty() {
        println!("{summary}");
        Ok(())
    } else {
        anyhow::bail!(summary)
    }
}
