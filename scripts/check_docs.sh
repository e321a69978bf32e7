#!/usr/bin/env bash
# `make check-docs` — the docs run: every ```sh block of docs/workshop.md and
# of the README's quick start is run, as written, in one bash session (as a
# person pastes them into one terminal, top to bottom), against a small
# demo. The test fails at the first block that fails, and names it (file,
# line, section) with its exit code.
#
# Scaled down, never rewritten otherwise (each rule is printed when used):
#   - the environment: SECKILL_BIN_DIR (default target/debug: no release
#     build), SCENARIO_FLAGS="--quick --quiet" (shorter fault windows),
#     DEMO_STRATEGIES=none,set-nx-px-token and DEMO_STOCK=20 (a short first
#     comparison in `make demo`);
#   - `--run-time Ns` becomes N/10 s (at least 2 s), `sleep N` N/10 (at
#     least 1): the paced loads and the waits inside them, together;
#   - a `make demo` or `make scenarios S=…` line already run earlier in the
#     test is not run again (same command: the same stack, the same report
#     folder).
# Lines not run at all — each printed as SKIP with its reason — are the
# SKIP list below: commands CI runs as steps of their own (`make test`, the
# Docker lines: `scripts/docker.sh ci`), or that take far beyond the
# test's budget (`make debate`: ten sweeps and the unswept claims).
#
# Checks between sections: once an exercise is over, the faults in force
# must be the cleared ones (what `DELETE /admin/faults` answered at the
# start) and no replica may still run with extra settings
# (.demo/app-*.settings): every exercise clears what it set. The session
# must add up to 90 minutes (the "(N min)" of its headings).
#
# The demo of .demo/ is used (a running one is restarted by the first block)
# and stopped at the end, as `make demo-stop` does.
#
#   scripts/check_docs.sh            run
#   scripts/check_docs.sh --print    print the script it would run, run nothing
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

export SECKILL_BIN_DIR=${SECKILL_BIN_DIR:-target/debug}
export SCENARIO_FLAGS=${SCENARIO_FLAGS:-"--quick --quiet"}
export DEMO_STRATEGIES=${DEMO_STRATEGIES:-none,set-nx-px-token}
export DEMO_STOCK=${DEMO_STOCK:-20}
driver=$(mktemp /tmp/check-docs.XXXXXX)

python3 - "$driver" <<'PY'
import re, shlex, sys

# Lines not run: (file, a regular expression on the line, why).
SKIP = [
    ("README.md", r"^make test\b", "CI runs `make test` as its own step (.ci/run), before this test"),
    ("README.md", r"^make debate\b", "ten sweeps of 20 injections a point and the unswept claims' trials: tens of minutes, beyond this test's budget"),
    ("README.md", r"^docker(-compose)? ", "Docker: checked by `scripts/docker.sh ci` in .ci/run (and `make check-docker`)"),
    ("README.md", r"^make docker-images\b", "Docker: checked by `scripts/docker.sh ci` in .ci/run (and `make check-docker`)"),
]
FILES = ["README.md", "docs/workshop.md"]

def blocks(path):
    """(line, section, text) of each ```sh block; README: the quick start only."""
    section, out, inside, start, buf = "", [], False, 0, []
    for n, line in enumerate(open(path).read().splitlines(), 1):
        if not inside and line.startswith("#"):
            section = line.lstrip("#").strip()
            if path == "README.md" and line.startswith("## "):
                break  # the quick start ends at the first section
        if not inside and line.strip() in ("```sh", "```bash", "```shell"):
            inside, start, buf = True, n + 1, []
        elif inside and line.strip() == "```":
            inside = False
            out.append((start, section, buf))
        elif inside:
            buf.append(line)
    return out

def scale(line, notes):
    def runtime(m):
        n = max(2, int(m.group(1)) // 10)
        notes.add(f"--run-time Ns -> N/10 s (at least 2)")
        return f"--run-time {n}s"
    def sleep(m):
        n = max(1, round(float(m.group(1)) / 10, 1))
        notes.add("sleep N -> N/10 (at least 1)")
        return f"sleep {n}"
    line = re.sub(r"--run-time (\d+)s\b", runtime, line)
    line = re.sub(r"\bsleep (\d+(?:\.\d+)?)\b", sleep, line)
    return line

out = ['set -eo pipefail', 'source scripts/check_docs_lib.sh']
minutes = []
seen_scenarios = set()
for path in FILES:
    text = open(path).read()
    if path.endswith("workshop.md"):
        minutes = [int(m) for m in re.findall(r"^#+ .*\((\d+) min\)", text, re.M)]
    for start, section, lines in blocks(path):
        label = f"{path}:{start} ({section})"
        out.append(f"section {shlex.quote(path)} {shlex.quote(section)}")
        out.append(f"CURRENT={shlex.quote(label)}; echo; say {shlex.quote('block ' + label)}")
        body, notes = [], set()
        for i, line in enumerate(lines):
            stripped = line.strip()
            why = next((w for f, r, w in SKIP if f == path and re.search(r, stripped)), None)
            if why:
                out.append(f"echo {shlex.quote('  SKIP  ' + stripped + '   -- ' + why)}")
                continue
            m = re.match(r"(make demo|make scenarios S=\S+)(\s+#|$)", stripped)
            if m:
                if m.group(1) in seen_scenarios:
                    out.append(f"echo {shlex.quote('  SKIP  ' + stripped + '   -- already run above (same command, same state)')}")
                    continue
                seen_scenarios.add(m.group(1))
            scaled = scale(line, notes)
            body.append(scaled)
        for note in sorted(notes):
            out.append(f"echo {shlex.quote('  scaled: ' + note)}")
        out.append("echo " + shlex.quote("\n".join("  $ " + l for l in body)))
        out.extend(body)
out.append("section END END")
out.append(f"session_minutes {' '.join(map(str, minutes))}")
open(sys.argv[1], "w").write("\n".join(out) + "\n")
PY

if [[ "${1:-}" == --print ]]; then cat "$driver"; rm -f "$driver"; exit 0; fi
say "check-docs: SECKILL_BIN_DIR=$SECKILL_BIN_DIR SCENARIO_FLAGS='$SCENARIO_FLAGS' DEMO_STRATEGIES=$DEMO_STRATEGIES DEMO_STOCK=$DEMO_STOCK"
started=$SECONDS
status=0
bash "$driver" || status=$?
rm -f "$driver"
scripts/demo.sh stop >/dev/null 2>&1 || true
if [[ $status == 0 ]]; then
  say "check-docs: every block ran ($((SECONDS - started)) s)"
else
  die "check-docs: FAILED (exit $status) after $((SECONDS - started)) s — the block named above"
fi
