#!/usr/bin/env python3
"""Structure test of the docker-compose demo stack — no Docker engine needed.

    python3 scripts/check_stack.py          (from anywhere in the repository)

Checks, each with a message naming the file and the thing at fault:
  * `docker-compose config -q` accepts docker-compose.yml;
  * every service has an image or a build context whose Dockerfile exists,
    and a build target that is one of its stages;
  * .dockerignore leaves every workspace member in the build context;
  * every image the compose file or docker/Dockerfile pulls has a stand-in
    in docker/standins/ (Grafana excepted: no Debian package);
  * every bind-mounted host path exists inside the repository, every named
    volume is declared;
  * published host ports are unique and bound to loopback;
  * every service another one waits for with `condition: service_healthy`
    has a health check;
  * every SECKILL_* variable given to an app service (built from
    docker/app.Dockerfile) is a field of `pub struct Settings` in
    app/src/configuration.rs, and the ones the stack needs are there;
  * every ${VAR} docker-compose.yml reads is listed in .env.example, whose
    SECKILL_* names are Settings fields too;
  * Prometheus scrapes exactly the app services, and nginx balances over them;
  * Grafana: provisioned datasource uid, provider path and home dashboard
    resolve to files of the repository; every dashboard JSON parses, has a
    unique uid, and every panel, target, variable and annotation uses the
    provisioned datasource uid; every panel target has a PromQL `expr`;
  * every seckill_* metric named by a dashboard or an alert rule is one that
    app/src/metrics.rs registers.

Uses the standard library and PyYAML (Debian: python3-yaml). Exit status 0
when every check passes, 1 otherwise.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

try:
    import yaml
except ImportError:  # pragma: no cover - depends on the machine
    system_python = "/usr/bin/python3"
    if os.path.exists(system_python) and os.path.realpath(sys.executable) != os.path.realpath(
        system_python
    ) and not os.environ.get("CHECK_STACK_REEXEC"):
        os.environ["CHECK_STACK_REEXEC"] = "1"
        os.execv(system_python, [system_python, *sys.argv])
    sys.exit(
        "check_stack: PyYAML is missing — install it with `apt-get install -y python3-yaml` "
        "(or `pip install pyyaml`)"
    )

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILE = ROOT / "docker-compose.yml"
APP_DOCKERFILE = "docker/Dockerfile"
APP_TARGET = "app"
STANDINS_SCRIPT = "docker/standins/make.sh"
# Images of ours (built here) and those with no Debian package to stand in.
NO_STANDIN = ("seckill-lab/", "grafana/")
# Settings the stack cannot run without (docs/api.md, the settings).
REQUIRED_APP_ENV = {
    "SECKILL_LISTEN",
    "SECKILL_DATABASE_URL",
    "SECKILL_REDIS_URL",
    "SECKILL_REDLOCK_URLS",
    "SECKILL_ADMIN_TOKEN",
}
# Environment names the service reads that are not Settings fields.
EXTRA_APP_ENV = {"SECKILL_CONFIG"}
APP_PORT = 8080

failures: list[str] = []
passes: list[str] = []


def fail(message: str) -> None:
    failures.append(message)


def ok(message: str) -> None:
    passes.append(message)


def rel(path: Path | str) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def inside_repo(path: Path) -> bool:
    try:
        path.resolve().relative_to(ROOT)
        return True
    except ValueError:
        return False


# ---------------------------------------------------------------- compose

def compose_command() -> list[str] | None:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker"):
        probe = subprocess.run(
            ["docker", "compose", "version"], capture_output=True, text=True, check=False
        )
        if probe.returncode == 0:
            return ["docker", "compose"]
    return None


def load_compose(cmd: list[str]) -> dict | None:
    base = [*cmd, "-f", str(COMPOSE_FILE), "--project-directory", str(ROOT)]
    quiet = subprocess.run([*base, "config", "-q"], capture_output=True, text=True, check=False)
    if quiet.returncode != 0:
        fail(f"`{' '.join(cmd)} config -q` rejects docker-compose.yml:\n{quiet.stderr.strip()}")
        return None
    ok(f"`{' '.join(cmd)} config -q` accepts docker-compose.yml")
    # Compose v2 prints JSON on request; v1 (Debian's 1.29) only YAML.
    as_json = subprocess.run(
        [*base, "config", "--format", "json"], capture_output=True, text=True, check=False
    )
    if as_json.returncode == 0 and as_json.stdout.lstrip().startswith("{"):
        return json.loads(as_json.stdout)
    as_yaml = subprocess.run([*base, "config"], capture_output=True, text=True, check=False)
    if as_yaml.returncode != 0:
        fail(f"`{' '.join(cmd)} config` failed:\n{as_yaml.stderr.strip()}")
        return None
    return yaml.safe_load(as_yaml.stdout)


def parse_volume(spec) -> dict:
    """Normalise a service volume (v1 short string or long mapping)."""
    if isinstance(spec, dict):
        return {
            "type": spec.get("type", "volume"),
            "source": spec.get("source"),
            "target": spec.get("target"),
        }
    parts = str(spec).split(":")
    if len(parts) == 1:
        return {"type": "volume", "source": None, "target": parts[0]}
    source, target = parts[0], parts[1]
    kind = "bind" if source.startswith(("/", ".", "~")) else "volume"
    return {"type": kind, "source": source, "target": target}


def parse_port(spec) -> tuple[str, str, str] | None:
    """(host_ip, published, protocol) of a published port, None when not published."""
    if isinstance(spec, dict):
        published = spec.get("published")
        if published in (None, ""):
            return None
        return (spec.get("host_ip") or "0.0.0.0", str(published), spec.get("protocol", "tcp"))
    text = str(spec)
    protocol = "tcp"
    if "/" in text:
        text, protocol = text.split("/", 1)
    parts = text.split(":")
    if len(parts) == 1:
        return None  # container port only: not published on a fixed port
    if len(parts) == 2:
        return ("0.0.0.0", parts[0], protocol)
    return (":".join(parts[:-2]), parts[-2], protocol)


def env_of(service: dict) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        out = {}
        for item in env:
            key, _, value = str(item).partition("=")
            out[key] = value
        return out
    return {k: ("" if v is None else str(v)) for k, v in env.items()}


def settings_fields() -> set[str]:
    path = ROOT / "app/src/configuration.rs"
    text = path.read_text(encoding="utf-8")
    match = re.search(r"pub struct Settings\s*\{(.*?)\n\}", text, re.S)
    if not match:
        fail(f"{rel(path)}: no `pub struct Settings {{ ... }}` found")
        return set()
    fields = set(re.findall(r"^\s*pub\s+([a-z_][a-z0-9_]*)\s*:", match.group(1), re.M))
    if not fields:
        fail(f"{rel(path)}: no `pub <field>:` inside `pub struct Settings`")
    return {f"SECKILL_{name.upper()}" for name in fields}


def check_services(compose: dict, fields: set[str]) -> tuple[list[str], dict]:
    services: dict = compose.get("services") or {}
    declared_volumes = set((compose.get("volumes") or {}).keys())
    app_services: list[str] = []
    published: dict[tuple[str, str], str] = {}
    for name, svc in sorted(services.items()):
        # image or build
        build = svc.get("build")
        if build:
            if isinstance(build, str):
                build = {"context": build}
            context = Path(build.get("context", "."))
            if not context.is_absolute():
                context = ROOT / context
            dockerfile = Path(build.get("dockerfile", "Dockerfile"))
            dockerfile = dockerfile if dockerfile.is_absolute() else context / dockerfile
            if not context.is_dir():
                fail(f"service {name}: build context {rel(context)} is not a directory")
            elif not dockerfile.is_file():
                fail(f"service {name}: Dockerfile {rel(dockerfile)} does not exist")
            else:
                ok(f"service {name}: builds {rel(dockerfile)}")
            target = build.get("target")
            if target and dockerfile.is_file() and target not in dockerfile_stages(dockerfile):
                fail(f"service {name}: build target {target} is no stage of {rel(dockerfile)}")
            if dockerfile.resolve() == (ROOT / APP_DOCKERFILE).resolve() and target == APP_TARGET:
                app_services.append(name)
        elif svc.get("image"):
            ok(f"service {name}: image {svc['image']}")
        else:
            fail(f"service {name}: neither `image` nor `build`")

        # mounts
        for spec in svc.get("volumes") or []:
            vol = parse_volume(spec)
            if vol["type"] == "bind":
                source = Path(os.path.expanduser(vol["source"]))
                if not source.is_absolute():
                    source = ROOT / source
                if not inside_repo(source):
                    fail(f"service {name}: mounts {source}, outside the repository")
                elif not source.exists():
                    fail(f"service {name}: mounted host path {rel(source)} does not exist")
                else:
                    ok(f"service {name}: mounts {rel(source)} at {vol['target']}")
            elif vol["type"] == "volume" and vol["source"]:
                if vol["source"] not in declared_volumes:
                    fail(f"service {name}: named volume {vol['source']} is not declared under `volumes:`")

        # published ports
        for spec in svc.get("ports") or []:
            port = parse_port(spec)
            if port is None:
                continue
            host_ip, number, protocol = port
            key = (number, protocol)
            if key in published:
                fail(f"host port {number}/{protocol} is published by both {published[key]} and {name}")
            published[key] = name
            if host_ip not in ("127.0.0.1", "::1", "localhost"):
                fail(f"service {name}: port {number} is published on {host_ip}; bind it to 127.0.0.1")
            else:
                ok(f"service {name}: publishes {host_ip}:{number}")

        # health checks waited for
        depends = svc.get("depends_on") or {}
        if isinstance(depends, dict):
            for dep, cond in depends.items():
                condition = (cond or {}).get("condition", "service_started")
                target = services.get(dep)
                if target is None:
                    fail(f"service {name}: depends on unknown service {dep}")
                elif condition == "service_healthy":
                    check = target.get("healthcheck") or {}
                    if not check.get("test") or check.get("disable"):
                        fail(f"service {name}: waits for {dep} to be healthy, but {dep} has no health check")

    if not app_services:
        fail(f"no service is built from {APP_DOCKERFILE}")
    for name in app_services:
        env = env_of(services[name])
        names = {k for k in env if k.startswith("SECKILL_")}
        unknown = sorted(names - fields - EXTRA_APP_ENV)
        for var in unknown:
            fail(
                f"service {name}: {var} is not a field of Settings (app/src/configuration.rs); "
                f"known: {', '.join(sorted(fields))}"
            )
        missing = sorted(REQUIRED_APP_ENV - names)
        for var in missing:
            fail(f"service {name}: {var} is not set")
        if not unknown and not missing:
            ok(f"service {name}: {len(names)} SECKILL_* variables, all Settings fields")
        listen = env.get("SECKILL_LISTEN", "")
        if listen and not listen.startswith("0.0.0.0:"):
            fail(f"service {name}: SECKILL_LISTEN={listen} is not reachable from other containers")
    return app_services, services


def dockerfile_stages(dockerfile: Path) -> set[str]:
    return set(re.findall(r"(?im)^FROM\s+\S+\s+AS\s+(\S+)", dockerfile.read_text()))


def workspace_members() -> list[str]:
    text = (ROOT / "Cargo.toml").read_text()
    block = re.search(r"(?ms)^members\s*=\s*\[(.*?)\]", text)
    return re.findall(r'"([^"]+)"', block.group(1)) if block else []


def check_dockerignore() -> None:
    ignore = ROOT / ".dockerignore"
    patterns = [
        line.strip().rstrip("/")
        for line in ignore.read_text().splitlines()
        if line.strip() and not line.startswith("#") and not line.startswith("!")
    ]
    members = workspace_members()
    if not members:
        fail("Cargo.toml: no workspace members found")
    for member in members:
        for path in (member, f"{member}/Cargo.toml", f"{member}/src"):
            hits = [p for p in patterns if fnmatch.fnmatch(path, p)]
            if hits:
                fail(f".dockerignore: {path} (workspace member {member}) is left out by {hits[0]!r}")
                break
        else:
            ok(f".dockerignore: workspace member {member} is in the build context")


def check_standins(compose: dict) -> None:
    script = (ROOT / STANDINS_SCRIPT).read_text()
    table = dict(re.findall(r'(?m)^\s*"([^"|\n]+)\|([^"|\n]+)"\s*$', script))
    images = {svc["image"] for svc in (compose.get("services") or {}).values() if svc.get("image")}
    images |= set(re.findall(r"(?m)^ARG\s+\w+_IMAGE=(\S+)", (ROOT / APP_DOCKERFILE).read_text()))
    for image in sorted(images):
        if image.startswith(NO_STANDIN):
            continue
        folder = table.get(image)
        if folder is None:
            fail(f"image {image} has no stand-in in {STANDINS_SCRIPT}")
        elif folder not in ("base", "rust") and not (ROOT / "docker/standins" / folder / "Dockerfile").is_file():
            fail(f"stand-in of {image}: docker/standins/{folder}/Dockerfile does not exist")
        else:
            ok(f"image {image}: stand-in docker/standins/{folder}")


def check_env_example(fields: set[str]) -> None:
    example = ROOT / ".env.example"
    if not example.is_file():
        fail(".env.example does not exist")
        return
    listed = set()
    for line in example.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=", line)
        if match:
            listed.add(match.group(1))
    used = set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)", COMPOSE_FILE.read_text(encoding="utf-8")))
    for var in sorted(used - listed):
        fail(f"docker-compose.yml reads ${{{var}}} but .env.example does not list it")
    for var in sorted(v for v in listed if v.startswith("SECKILL_") and v not in fields | EXTRA_APP_ENV):
        fail(f".env.example: {var} is not a field of Settings (app/src/configuration.rs)")
    if used <= listed:
        ok(f".env.example lists all {len(used)} variables docker-compose.yml reads")


def check_prometheus_and_lb(app_services: list[str]) -> None:
    expected = {f"{name}:{APP_PORT}" for name in app_services}
    prom_path = ROOT / "prometheus/prometheus.yml"
    try:
        prom = yaml.safe_load(prom_path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        fail(f"{rel(prom_path)}: {e}")
        return
    jobs = {job.get("job_name"): job for job in prom.get("scrape_configs") or []}
    job = jobs.get("seckill")
    if not job:
        fail(f"{rel(prom_path)}: no scrape job `seckill`")
    else:
        targets = {t for sc in job.get("static_configs") or [] for t in sc.get("targets") or []}
        if targets != expected:
            fail(
                f"{rel(prom_path)}: job seckill scrapes {sorted(targets)}, "
                f"the app services are {sorted(expected)}"
            )
        else:
            ok(f"prometheus scrapes every app service: {', '.join(sorted(targets))}")
    for rule_file in prom.get("rule_files") or []:
        if not (prom_path.parent / rule_file).is_file():
            fail(f"{rel(prom_path)}: rule file {rule_file} does not exist next to it")

    nginx = ROOT / "docker/nginx.conf"
    if nginx.is_file():
        servers = set(re.findall(r"^\s*server\s+([\w.-]+:\d+)", nginx.read_text(encoding="utf-8"), re.M))
        if servers != expected:
            fail(f"{rel(nginx)}: upstream servers {sorted(servers)}, the app services are {sorted(expected)}")
        else:
            ok(f"nginx balances over every app service")


def container_to_host(service: dict) -> list[tuple[str, Path]]:
    out = []
    for spec in service.get("volumes") or []:
        vol = parse_volume(spec)
        if vol["type"] == "bind":
            source = Path(vol["source"])
            out.append((vol["target"].rstrip("/"), source if source.is_absolute() else ROOT / source))
    return sorted(out, key=lambda item: -len(item[0]))


def host_path(mounts: list[tuple[str, Path]], container_path: str) -> Path | None:
    for target, source in mounts:
        if container_path == target or container_path.startswith(target + "/"):
            return source / container_path[len(target):].lstrip("/")
    return None


def walk_panels(panels: list) -> list:
    out = []
    for panel in panels or []:
        out.append(panel)
        out.extend(walk_panels(panel.get("panels") or []))
    return out


def check_grafana(services: dict) -> tuple[list[str], set[str]]:
    """Returns every PromQL expression of the dashboards and the datasource uids."""
    exprs: list[str] = []
    ds_dir = ROOT / "dashboards/provisioning/datasources"
    uids: set[str] = set()
    for path in sorted(ds_dir.glob("*.y*ml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for ds in doc.get("datasources") or []:
            if ds.get("type") == "prometheus":
                if not ds.get("uid"):
                    fail(f"{rel(path)}: datasource {ds.get('name')} has no fixed uid")
                uids.add(ds.get("uid"))
                url = ds.get("url", "")
                host = re.sub(r"^\w+://", "", url).split(":")[0].split("/")[0]
                if host not in services:
                    fail(f"{rel(path)}: datasource url {url} names no compose service")
    if not uids:
        fail(f"{rel(ds_dir)}: no Prometheus datasource provisioned")
        return exprs, uids
    ok(f"provisioned Prometheus datasource uid(s): {', '.join(sorted(uids))}")

    grafana = next((s for n, s in services.items() if "grafana" in str(s.get("image", "")) or n == "grafana"), None)
    mounts = container_to_host(grafana) if grafana else []
    if grafana:
        for path in sorted((ROOT / "dashboards/provisioning/dashboards").glob("*.y*ml")):
            doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            for provider in doc.get("providers") or []:
                cpath = (provider.get("options") or {}).get("path", "")
                hpath = host_path(mounts, cpath)
                if hpath is None or not hpath.is_dir():
                    fail(f"{rel(path)}: provider path {cpath} is not a mounted folder of the repository")
                elif not list(hpath.rglob("*.json")):
                    fail(f"{rel(path)}: provider path {cpath} ({rel(hpath)}) holds no dashboard JSON")
                else:
                    ok(f"grafana provider {provider.get('name')} reads {rel(hpath)}")
        home = env_of(grafana).get("GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH")
        if home:
            hpath = host_path(mounts, home)
            if hpath is None or not hpath.is_file():
                fail(f"grafana: home dashboard {home} is not a mounted file of the repository")
            else:
                ok(f"grafana home dashboard: {rel(hpath)}")

    seen_uids: dict[str, Path] = {}
    for path in sorted((ROOT / "dashboards").rglob("*.json")):
        name = rel(path)
        try:
            dash = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            fail(f"{name}: not valid JSON: {e}")
            continue
        uid = dash.get("uid")
        if not uid:
            fail(f"{name}: no dashboard uid")
        elif uid in seen_uids:
            fail(f"{name}: uid {uid} is also used by {rel(seen_uids[uid])}")
        else:
            seen_uids[uid] = path

        def check_ds(where: str, ds) -> None:
            if not isinstance(ds, dict) or ds.get("uid") not in uids:
                fail(f"{name}: {where} uses datasource {ds!r}, not the provisioned uid {sorted(uids)}")

        count = 0
        for panel in walk_panels(dash.get("panels") or []):
            if panel.get("type") == "row":
                continue
            where = f"panel {panel.get('id')} {panel.get('title')!r}"
            check_ds(where, panel.get("datasource"))
            targets = panel.get("targets") or []
            if not targets:
                fail(f"{name}: {where} has no targets")
            for target in targets:
                check_ds(f"{where} target {target.get('refId')}", target.get("datasource"))
                expr = (target.get("expr") or "").strip()
                if not expr:
                    fail(f"{name}: {where} target {target.get('refId')} has no PromQL expr")
                else:
                    exprs.append(expr)
                    count += 1
        for var in (dash.get("templating") or {}).get("list") or []:
            if var.get("type") == "query":
                check_ds(f"variable ${var.get('name')}", var.get("datasource"))
        for anno in (dash.get("annotations") or {}).get("list") or []:
            if anno.get("builtIn"):
                continue
            check_ds(f"annotation {anno.get('name')!r}", anno.get("datasource"))
            expr = ((anno.get("target") or {}).get("expr") or anno.get("expr") or "").strip()
            if expr:
                exprs.append(expr)
        ok(f"{name}: uid {uid}, {count} panel queries, every one on datasource {', '.join(sorted(uids))}")
    if not seen_uids:
        fail("dashboards/: no dashboard JSON")
    return exprs, uids


def check_metric_names(exprs: list[str]) -> None:
    source = (ROOT / "app/src/metrics.rs").read_text(encoding="utf-8")
    registered = set(re.findall(r'"(seckill_[a-z0-9_]+)"', source))
    alerts = ROOT / "prometheus/alerts.yml"
    texts = list(exprs)
    doc = yaml.safe_load(alerts.read_text(encoding="utf-8")) or {}
    for group in doc.get("groups") or []:
        for rule in group.get("rules") or []:
            texts.append(str(rule.get("expr", "")))
    unknown = set()
    for text in texts:
        for metric in re.findall(r"\b(seckill_[a-z0-9_]+)", text):
            base = re.sub(r"_(bucket|sum|count)$", "", metric)
            if metric not in registered and base not in registered:
                unknown.add(metric)
    for metric in sorted(unknown):
        fail(f"{metric} is used by a dashboard or alert but app/src/metrics.rs registers no such metric")
    if not unknown:
        ok(f"every seckill_* metric in dashboards and alerts is registered ({len(registered)} known)")


def main() -> int:
    os.chdir(ROOT)
    cmd = compose_command()
    fields = settings_fields()
    if cmd is None:
        fail("docker-compose is not installed: `apt-get install -y docker-compose` (Debian package)")
        compose = None
    else:
        compose = load_compose(cmd)
    services: dict = {}
    if compose:
        app_services, services = check_services(compose, fields)
        check_prometheus_and_lb(app_services)
        check_standins(compose)
    check_dockerignore()
    check_env_example(fields)
    exprs, _ = check_grafana(services)
    check_metric_names(exprs)

    for line in passes:
        print(f"ok   {line}")
    for line in failures:
        print(f"FAIL {line}", file=sys.stderr)
    print(f"check_stack: {len(passes)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
