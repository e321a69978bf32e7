#!/usr/bin/env bash
# `make results` — the one run the README's and the workshop's figures come
# from, written to docs/results.md (dated, with the commit and the machine):
#
#   1. `make demo` (scripts/demo.sh): the release build, the stack, and the
#      demo's side-by-side comparison — the README's table, which is
#      rewritten from it (between its `results:demo` markers);
#   2. the workshop's exercise 1, its block run as docs/workshop.md writes
#      it (source .demo/env, then the two paced runs);
#   3. every fault scenario, as `make scenarios` runs them (the workshop's
#      exercises 2-8 and the wrap-up).
#
# Every step's output is kept in loadgen-report/results/. About 10 minutes
# after the release build on the 2-core machine of our runs. The demo stays
# up afterwards, as after `make demo`.
#
# Knobs: SECKILL_BIN_DIR (other binaries, e.g. target/debug: the file then
# says so — a debug build's figures are not the ones to publish),
# RESULTS_OUT (docs/results.md), SCENARIO_FLAGS.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
started=$SECONDS
out=loadgen-report/results
target=${RESULTS_OUT:-docs/results.md}
rm -rf "$out"
mkdir -p "$out"
date_utc=$(date -u '+%Y-%m-%d %H:%M UTC')

say "results 1/3: make demo"
t=$SECONDS
scripts/demo.sh 2>&1 | tee "$out/demo.log"
demo_s=$((SECONDS - t))
[[ -f .demo/report/report.md ]] || die "the demo wrote no .demo/report/report.md"
cp -r .demo/report "$out/demo"

say "results 2/3: the workshop's exercise 1"
t=$SECONDS
# The first shell block under the heading "### 1." of the workshop, as written.
awk '/^### 1\. /{s=1} s&&/^```sh/{b=1;next} b&&/^```/{exit} b' docs/workshop.md > "$out/exercise-1.sh"
[[ -s "$out/exercise-1.sh" ]] || die "no shell block under '### 1.' in docs/workshop.md"
(
  # shellcheck disable=SC1091
  source .demo/env
  set -x
  # shellcheck disable=SC1090
  source "$out/exercise-1.sh"
) 2>&1 | tee "$out/exercise-1.log"
ex1_s=$((SECONDS - t))
# The --out folders the block names, in its order.
mapfile -t ex1_dirs < <(grep -o -- '--out [^ ]*' "$out/exercise-1.sh" | cut -d' ' -f2)

say "results 3/3: every fault scenario"
t=$SECONDS
status=0
OUT="$out/scenarios" scripts/scenarios.sh 2>&1 | tee "$out/scenarios.log" || status=$?
scen_s=$((SECONDS - t))
[[ -f "$out/scenarios/scenarios.md" ]] || die "the scenarios wrote no report (exit $status)"

bin=${SECKILL_BIN_DIR:-target/release}
build="release (target/release)"
[[ -n "${SECKILL_BIN_DIR:-}" ]] && build="binaries of $bin (SECKILL_BIN_DIR) — not a release build: not the figures to publish"
[[ -n "${SCENARIO_FLAGS:-}" ]] && build="$build; scenarios with SCENARIO_FLAGS=${SCENARIO_FLAGS}"
commit=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- app loadgen wire proxy testkit migrations Cargo.lock 2>/dev/null || commit="$commit + uncommitted changes"
machine="$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(free -g | awk '/Mem:/{print $2}') GiB, Linux $(uname -r)"

python3 - "$target" "$out" "$date_utc" "$commit" "$machine" "$build" "$demo_s" "$ex1_s" "$scen_s" "${ex1_dirs[@]}" <<'PY'
import json, pathlib, re, sys
target, out, date, commit, machine, build, demo_s, ex1_s, scen_s, *ex1_dirs = sys.argv[1:]
out = pathlib.Path(out)

def report_md(folder):
    """A loadgen report.md without its title; its headings one level down."""
    text = (pathlib.Path(folder) / "report.md").read_text().split("\n", 1)[1].strip()
    return re.sub(r"^#", "###", text, flags=re.M)

demo_log = (out / "demo.log").read_text()
demo_cmd = next((l.split("run again", 1)[1].strip() for l in demo_log.splitlines() if "run again" in l), "")
# As a reader types it after `source .demo/env`: no path or port of this machine.
demo_cmd = re.sub(r"--url \S+", "--url $A,$B,$C", demo_cmd)
demo_cmd = re.sub(r"\S*/seckill-loadgen\b", "$L", demo_cmd)
ex1 = (out / "exercise-1.sh").read_text().strip()
scen = json.loads((out / "scenarios/scenarios.json").read_text())
cases = scen["scenarios"]
off = [c for c in cases if c.get("verdict") != "as-expected"]
steps = []
for c in cases:
    for s in c.get("steps", []):
        text = s if isinstance(s, str) else s.get("what") or s.get("text") or json.dumps(s)
        if re.search(r"sold again|never sold|answered 503|503", str(text)):
            steps.append(f"- `{c['name']}` / `{c['strategy']}`: {text}")

md = f"""# Results: the figures the README and the workshop quote

One run, **{date}**, commit `{commit}`, on {machine}; build: {build}.
`make results` (scripts/results.sh) makes this run again and rewrites this
file and the README's table; every process shares the machine's cores.
Counts vary from run to run; verdicts do not. The step outputs are kept in
`loadgen-report/results/`.

- [The demo's comparison](#the-demos-comparison) — the README's table
- [Workshop exercise 1](#workshop-exercise-1)
- [Every fault scenario](#every-fault-scenario) — workshop exercises 2–8 and the wrap-up

## The demo's comparison

`make demo`: the stack (its own PostgreSQL, Redis, five Redlock nodes,
etcd, ZooKeeper, MariaDB, three replicas), then a comparison over the three
replicas — 50 closed-loop buyers started at once, until sold out, stock
100, 5 ms of simulated work inside the critical section ({demo_s} s for the
whole demo, build included). The same comparison again:
`{demo_cmd}` with the demo's strategies and `--work-delay-ms 5`.

{report_md(out / "demo")}

## Workshop exercise 1

The block of [the workshop's exercise 1](workshop.md#1-why-lock-at-all-10-min--the-naive-read-modify-write-every-post-starts-from),
run as written after `source .demo/env` ({ex1_s} s):

```sh
{ex1}
```
"""
for d in ex1_dirs:
    md += f"\n`{d}`:\n\n{report_md(d)}\n"
md += f"""
## Every fault scenario

`make scenarios` (every scenario; {scen_s} s with the build step): {len(cases)} cases in
{scen['duration_s']:.0f} s, {len(cases) - len(off)} `as-expected`, {len(off)} not.

{(out / "scenarios/scenarios.md").read_text().strip()}
"""
if steps:
    md += "\nStep lines quoted by the workshop (recovery after a crash, answers while a dependency was gone):\n\n" + "\n".join(steps) + "\n"
pathlib.Path(target).write_text(md)

# The README's table: the demo's, between the markers.
readme = pathlib.Path("README.md")
text = readme.read_text()
start, end = "<!-- results:demo -->", "<!-- /results:demo -->"
if start in text and end in text:
    table = "\n".join(l for l in (out / "demo/report.md").read_text().splitlines() if l.startswith("|"))
    a, b = text.index(start) + len(start), text.index(end)
    readme.write_text(text[:a] + "\n" + table + "\n" + text[b:])
PY
say "results: $target written (and the README's table) in $((SECONDS - started)) s; scenarios exit $status"
