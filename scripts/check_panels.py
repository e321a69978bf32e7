#!/usr/bin/env python3
"""Evaluate every query of the Grafana dashboards against a live Prometheus.

    python3 scripts/check_panels.py --prometheus URL --since EPOCH \\
        [--strategy redlock] [--instance 127.0.0.1:PORT] dashboards/*.json

scripts/check_panels.sh starts the stack, a Prometheus and a short load,
then runs this. For every dashboard:

  * every ``panels[].targets[].expr`` (rows' nested ``panels`` included) is
    sent to ``/api/v1/query`` once with every variable at Grafana's "All"
    (``$strategy`` and ``$instance`` → ``.*``) and once with one concrete
    strategy and replica, formatted as Grafana formats a multi-value
    variable for a Prometheus regex (``(127\\.0\\.0\\.1:1234)``);
    ``$__rate_interval``, ``$__interval``, ``$__range`` get fixed windows;
  * each annotation query goes to ``/api/v1/query_range`` over the load
    (an annotation marks a moment, so it must match somewhere in the run);
  * each ``label_values(metric, label)`` variable query is answered through
    ``/api/v1/label/<label>/values?match[]=<metric>`` and must yield values.

A query error, an unresolved ``$variable``, an empty result or one of
only NaN (nothing to draw) fails the check. With ``--positive METRIC``,
every panel query on that metric must also show a value above 0 in the
"All" pass: the load provoked its event, and the panel must show it. Each query is printed with its
result count. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

FIXED = {
    "__rate_interval": "1m",
    "__interval": "15s",
    "__range": "5m",
    "__range_s": "300",
    "__interval_ms": "15000",
}


def api(base: str, path: str, params: dict[str, str]) -> dict:
    url = f"{base}{path}?{urllib.parse.urlencode(params, doseq=True)}"
    try:
        with urllib.request.urlopen(url, timeout=15) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:  # 400/422: bad PromQL
        try:
            return json.load(error)
        except ValueError:
            return {"status": "error", "error": f"HTTP {error.code}"}


def grafana_regex(value: str) -> str:
    """A single value of a multi-value variable as Grafana puts it into a
    Prometheus regex: regex-escaped, in a group, backslashes doubled for the
    PromQL string."""
    escaped = re.sub(r"([\\^$*+?.()|{}\[\]])", r"\\\1", value)
    return "(" + escaped.replace("\\", "\\\\") + ")"


def substitute(expr: str, values: dict[str, str]) -> str:
    def repl(match: re.Match) -> str:
        name = match.group(1) or match.group(2) or match.group(3)
        if name in FIXED:
            return FIXED[name]
        if name in values:
            return values[name]
        return match.group(0)

    # $name, ${name} / ${name:format}, [[name]]
    return re.sub(r"\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)", repl, expr)


def walk(panels):
    for panel in panels or []:
        yield panel
        yield from walk(panel.get("panels"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prometheus", required=True)
    parser.add_argument("--since", type=float, required=True, help="start of the load (Unix seconds)")
    parser.add_argument("--strategy", default="redlock", help="the concrete $strategy of the second pass")
    parser.add_argument("--instance", help="the concrete $instance of the second pass (default: first up target)")
    parser.add_argument("--replicas", type=int, default=0, help="fail unless this many seckill targets are up")
    parser.add_argument("--positive", action="append", default=[], metavar="METRIC",
                        help="panel queries on this metric must show a value > 0 (the load provoked it)")
    parser.add_argument("dashboards", nargs="+", type=Path)
    args = parser.parse_args()
    prom = args.prometheus.rstrip("/")
    failures: list[str] = []
    checked = 0

    up = api(prom, "/api/v1/query", {"query": 'up{job="seckill"} == 1'})
    targets = sorted(r["metric"]["instance"] for r in up.get("data", {}).get("result", []))
    print(f"seckill targets up: {', '.join(targets) or 'none'}")
    if args.replicas and len(targets) < args.replicas:
        failures.append(f"only {len(targets)} of {args.replicas} replicas are up in Prometheus")
    instance = args.instance or (targets[0] if targets else "127.0.0.1:0")

    passes = [
        ("All", {"strategy": ".*", "instance": ".*"}),
        (f"strategy={args.strategy} instance={instance}",
         {"strategy": grafana_regex(args.strategy), "instance": grafana_regex(instance)}),
    ]
    now = time.time()

    def report(ok: bool, count, where: str, expr: str, note: str = "") -> None:
        nonlocal checked
        checked += 1
        mark = "ok  " if ok else "FAIL"
        print(f"{mark} [{count:>3}] {where}{note}\n           {expr}")
        if not ok:
            failures.append(f"{where}: {note.strip() or 'empty result'} — {expr}")

    for path in args.dashboards:
        dashboard = json.loads(path.read_text(encoding="utf-8"))
        print(f"\n== {path} ({dashboard.get('title', '?')})")
        queries = []
        for panel in walk(dashboard.get("panels")):
            for target in panel.get("targets") or []:
                if target.get("hide"):
                    continue
                expr = target.get("expr")
                where = f"panel {panel.get('id')} \"{panel.get('title', '')}\" {target.get('refId', '')}"
                if not expr:
                    failures.append(f"{path.name} {where}: target without expr")
                    continue
                queries.append((where, expr))
        if not queries:
            failures.append(f"{path.name}: no panel queries")
        for label, values in passes:
            print(f"-- panels, variables: {label}")
            for where, expr in queries:
                query = substitute(expr, values)
                leftover = re.findall(r"\$\{?\w+|\[\[\w+\]\]", query)
                if leftover:
                    report(False, 0, where, query, f"  unresolved variable {leftover[0]}")
                    continue
                answer = api(prom, "/api/v1/query", {"query": query, "time": f"{now:.3f}"})
                if answer.get("status") != "success":
                    report(False, 0, where, query, f"  error: {answer.get('error', answer)}")
                    continue
                result = answer["data"]["result"]
                count = len(result) if isinstance(result, list) else 1
                nan = isinstance(result, list) and result and all(r.get("value", [0, ""])[1] == "NaN" for r in result)
                # All NaN (a quantile of nothing) draws nothing either.
                if nan or count == 0:
                    report(False, count, where, query, "  only NaN: no observations in the window" if nan else "")
                    continue
                wanted = [m for m in args.positive if re.search(rf"\b{re.escape(m)}\b", expr)]
                if wanted and label == "All":
                    top = max(float(r["value"][1]) for r in result) if isinstance(result, list) else float(result[1])
                    report(top > 0, count, where, query, f"  max {top:g} (must be > 0: the load provoked {wanted[0]})")
                    continue
                report(True, count, where, query)

        print("-- annotations, over the load")
        for annotation in (dashboard.get("annotations") or {}).get("list") or []:
            if annotation.get("builtIn"):
                continue
            expr = (annotation.get("target") or {}).get("expr") or annotation.get("expr")
            if not expr:
                continue
            where = f"annotation \"{annotation.get('name')}\""
            query = substitute(expr, passes[0][1])
            answer = api(prom, "/api/v1/query_range",
                         {"query": query, "start": f"{args.since - 1:.3f}", "end": f"{now:.3f}", "step": "1s"})
            if answer.get("status") != "success":
                report(False, 0, where, query, f"  error: {answer.get('error', answer)}")
                continue
            series = answer["data"]["result"]
            names = sorted({s["metric"].get("strategy", "?") for s in series})
            report(bool(series), len(series), where, query, f"  ({', '.join(names)})" if names else "")

        print("-- template variables")
        for variable in (dashboard.get("templating") or {}).get("list") or []:
            query = variable.get("query")
            if isinstance(query, dict):
                query = query.get("query")
            if variable.get("type") != "query" or not query:
                continue
            where = f"variable ${variable.get('name')}"
            match = re.fullmatch(r"\s*label_values\((?:(.*),)?\s*(\w+)\s*\)\s*", query)
            if not match:
                report(False, 0, where, query, "  not a label_values(...) query this check understands")
                continue
            selector, label = (match.group(1) or "").strip(), match.group(2)
            params = {"start": f"{args.since - 60:.3f}", "end": f"{now:.3f}"}
            if selector:
                params["match[]"] = substitute(selector, passes[0][1])
            answer = api(prom, f"/api/v1/label/{label}/values", params)
            if answer.get("status") != "success":
                report(False, 0, where, query, f"  error: {answer.get('error', answer)}")
                continue
            values = answer["data"]
            report(bool(values), len(values), where, query, f"  ({', '.join(values)})")

    print()
    if failures:
        print(f"check_panels: {len(failures)} of {checked} checks failed:", file=sys.stderr)
        for failure in failures:
            print(f"  {failure}", file=sys.stderr)
        return 1
    print(f"check_panels: all {checked} queries returned data")
    return 0


if __name__ == "__main__":
    sys.exit(main())
