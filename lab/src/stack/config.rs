//! The balancer's and Prometheus' configs of a local stack, made from the
//! very files docker-compose mounts (docker/nginx.conf,
//! prometheus/prometheus.yml, compiled into this binary so the lab image
//! needs no checkout): the same upstream, locations, job, rules and
//! intervals, with local ports and paths. Each change names the line it
//! rewrites; a template that no longer has that line fails loudly, so the
//! two copies cannot drift apart.

use std::path::Path;

use anyhow::bail;
use regex::Regex;

const NGINX: &str = include_str!("../../../docker/nginx.conf");
const PROMETHEUS: &str = include_str!("../../../prometheus/prometheus.yml");
/// Written beside the local Prometheus config, which names it relatively.
pub const ALERTS: &str = include_str!("../../../prometheus/alerts.yml");

/// Every line of `text` matching `pattern` becomes `with(line)` (which
/// may hold several lines); at least one must match.
fn rewrite(text: &str, pattern: &str, with: impl Fn(&str) -> String) -> anyhow::Result<String> {
    let re = Regex::new(pattern)?;
    let mut out = Vec::new();
    let mut hits = 0;
    for line in text.lines() {
        if re.is_match(line) {
            hits += 1;
            out.push(with(line));
        } else {
            out.push(line.to_owned());
        }
    }
    if hits == 0 {
        bail!("the template has no line matching {pattern:?}: docker/nginx.conf or prometheus/prometheus.yml changed shape; update lab/src/stack/config.rs");
    }
    Ok(out.join("\n") + "\n")
}

/// The first of a run of lines matching `pattern` becomes `lines`, the
/// others go.
fn replace_run(text: &str, pattern: &str, lines: &[String]) -> anyhow::Result<String> {
    let re = Regex::new(pattern)?;
    let mut out = Vec::new();
    let mut done = false;
    for line in text.lines() {
        if re.is_match(line) {
            if !done {
                out.extend(lines.iter().cloned());
                done = true;
            }
        } else {
            out.push(line.to_owned());
        }
    }
    if !done {
        bail!("the template has no line matching {pattern:?}; update lab/src/stack/config.rs");
    }
    Ok(out.join("\n") + "\n")
}

fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// docker/nginx.conf for replicas on `ports`, listening on `bind:port`,
/// its pid and temp folders under `prefix`.
pub fn nginx(ports: &[u16], bind: &str, port: u16, prefix: &Path) -> anyhow::Result<String> {
    let p = prefix.display();
    let mut text = format!("# Made by seckill-lab (lab/src/stack/config.rs) from docker/nginx.conf: local ports and paths.\n{NGINX}");
    text = rewrite(&text, r"^worker_processes ", |_| {
        "worker_processes 1;".into()
    })?;
    text = rewrite(&text, r"^pid ", |_| format!("pid {p}/nginx.pid;"))?;
    text = rewrite(&text, r"^\s*worker_connections ", |l| {
        format!("{}worker_connections 1024;", indent(l))
    })?;
    text = rewrite(&text, r"^\s*client_body_temp_path ", |l| {
        format!("{}client_body_temp_path {p}/body;", indent(l))
    })?;
    text = rewrite(&text, r"^\s*proxy_temp_path ", |l| {
        let i = indent(l);
        format!("{i}proxy_temp_path {p}/proxy;\n{i}fastcgi_temp_path {p}/fastcgi;\n{i}uwsgi_temp_path {p}/uwsgi;\n{i}scgi_temp_path {p}/scgi;")
    })?;
    let servers: Vec<String> = ports
        .iter()
        .map(|port| format!("        server 127.0.0.1:{port} max_fails=3 fail_timeout=5s;"))
        .collect();
    text = replace_run(&text, r"^\s*server app-\d+:8080 ", &servers)?;
    rewrite(&text, r"^\s*listen 8080;", |l| {
        format!("{}listen {bind}:{port};", indent(l))
    })
}

/// prometheus/prometheus.yml scraping replicas on `ports` every
/// `interval`, itself on `port`; its rules file `alerts.yml` beside it.
pub fn prometheus(ports: &[u16], port: u16, interval: &str) -> anyhow::Result<String> {
    let mut text = format!("# Made by seckill-lab (lab/src/stack/config.rs) from prometheus/prometheus.yml: local ports, interval {interval}.\n{PROMETHEUS}");
    let every =
        Regex::new(r"^(\s*(?:scrape_interval|evaluation_interval|scrape_timeout): )\S+(.*)$")?;
    text = rewrite(&text, every.as_str(), |l| {
        every
            .replace(l, format!("${{1}}{interval}${{2}}"))
            .into_owned()
    })?;
    let targets: Vec<String> = ports
        .iter()
        .map(|p| format!("          - 127.0.0.1:{p}"))
        .collect();
    text = replace_run(&text, r"^\s*- app-\d+:8080$", &targets)?;
    rewrite(&text, r"^\s*- localhost:9090$", |l| {
        format!("{}- 127.0.0.1:{port}", indent(l))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nginx_config_names_local_replicas_and_paths() {
        let conf = nginx(&[4001, 4002], "127.0.0.1", 4100, Path::new("/s/nginx"))
            .expect("the template has every line");
        assert!(conf.contains("server 127.0.0.1:4001 max_fails=3"), "{conf}");
        assert!(conf.contains("server 127.0.0.1:4002 max_fails=3"), "{conf}");
        assert!(!conf.contains("app-"), "{conf}");
        assert!(conf.contains("listen 127.0.0.1:4100;"), "{conf}");
        assert!(conf.contains("pid /s/nginx/nginx.pid;"), "{conf}");
        assert!(conf.contains("scgi_temp_path /s/nginx/scgi;"), "{conf}");
        assert!(
            conf.contains("location @no_replica"),
            "the template's locations are kept"
        );
    }

    #[test]
    fn prometheus_config_scrapes_local_replicas_at_the_interval() {
        let conf =
            prometheus(&[4001, 4002, 4003], 4200, "1s").expect("the template has every line");
        assert!(conf.contains("          - 127.0.0.1:4003\n"), "{conf}");
        assert!(!conf.contains("app-"), "{conf}");
        assert!(conf.contains("- 127.0.0.1:4200"), "{conf}");
        assert!(conf.contains("scrape_timeout: 1s"), "{conf}");
        assert!(!conf.contains(": 5s"), "{conf}");
        assert!(conf.contains("- alerts.yml"), "{conf}");
    }

    #[test]
    fn a_template_without_the_line_fails() {
        assert!(rewrite("a\nb\n", "^c", |_| String::new()).is_err());
    }
}
