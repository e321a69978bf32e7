#!/usr/bin/env python3
"""`make check-scripts`: the shell scripts parse, pass shellcheck, and no function is written twice.

    python3 scripts/check_scripts.py

Every ``scripts/*.sh``, ``docker/**/*.sh`` and stand-in entry script must pass ``bash -n``; a function name defined in two
of them (``free_port() {`` in both services.sh and stack.sh, say) fails the
check: shared helpers live once, in scripts/lib.sh. No script may chmod a
folder outside the checkout (the private PostgreSQL cluster moves under the
``postgres`` user's home instead). ``shellcheck -x -S warning`` passes on each
of them and on ``.ci/run`` (a missing shellcheck fails the check, naming
``apt-get install shellcheck``); no reader that exits early (``grep -q``,
``head``) sits behind a writer in a pipeline: under ``pipefail`` the writer's
broken pipe fails it. Standard library only.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

# Each entry-point script's own EXIT trap handler, not a shared helper.
OWN = {"cleanup"}
# A pipeline into a reader that may exit before the writer is done.
EARLY_READER = re.compile(r"\|\s*(grep\s+(-[A-Za-z]*q[A-Za-z]*|--quiet)\b|head\b)")
DEFINITION = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\(\)\s*\{", re.M)


def main() -> int:
    root = Path(__file__).resolve().parent
    repo = root.parent
    # The scripts of `make`, the lab image's entry and the stand-ins' entries.
    scripts = sorted(root.glob("*.sh")) + sorted((repo / "docker").rglob("*.sh"))
    scripts += sorted(p for p in (repo / "docker/standins").rglob("*") if p.is_file() and p.read_bytes().startswith(b"#!/bin/sh"))
    scripts = sorted(set(scripts))
    failures = []
    seen: dict[str, Path] = {}
    for script in scripts:
        parsed = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        if parsed.returncode:
            failures.append(f"{script.name}: bash -n: {parsed.stderr.strip()}")
        text = script.read_text()
        for name in DEFINITION.findall(text):
            if name in seen and seen[name] != script and name not in OWN:
                failures.append(f"{name}() is defined in {seen[name].name} and {script.name}: keep one, in lib.sh")
            seen.setdefault(name, script)
        for line_no, line in enumerate(text.splitlines(), 1):
            code = line.split("#", 1)[0]
            if re.search(r"\bchmod\b", code) and "dirname" in code:
                failures.append(f"{script.name}:{line_no}: chmod of a parent folder: {line.strip()}")
            if EARLY_READER.search(code):
                failures.append(
                    f"{script.name}:{line_no}: a reader that exits early behind a pipe (pipefail fails the writer): {line.strip()}"
                )
    failures += shellcheck(scripts + [repo / ".ci/run"], repo)
    for failure in failures:
        print(f"check_scripts: {failure}")
    print(f"check_scripts: {len(scripts)} scripts, {len(seen)} functions, {len(failures)} problems")
    return 1 if failures else 0


def shellcheck(scripts: list[Path], repo: Path) -> list[str]:
    """shellcheck's warnings and errors (sources followed from the checkout's root, where the scripts cd), one failure per script that has any."""
    if shutil.which("shellcheck") is None:
        return ["shellcheck is not installed: apt-get install shellcheck"]
    failures = []
    for script in scripts:
        checked = subprocess.run(
            ["shellcheck", "-x", "-P", "SCRIPTDIR", "-S", "warning", str(script)],
            capture_output=True,
            text=True,
            cwd=repo,
        )
        if checked.returncode:
            failures.append(f"{script.name}: shellcheck:\n{checked.stdout.strip()}")
    return failures


if __name__ == "__main__":
    sys.exit(main())
