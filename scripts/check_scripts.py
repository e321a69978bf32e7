#!/usr/bin/env python3
"""`make check-scripts`: the shell scripts parse, and no function is written twice.

    python3 scripts/check_scripts.py

Every ``scripts/*.sh``, ``docker/**/*.sh`` and stand-in entry script must pass ``bash -n``; a function name defined in two
of them (``free_port() {`` in both services.sh and stack.sh, say) fails the
check: shared helpers live once, in scripts/lib.sh. No script may chmod a
folder outside the checkout (the private PostgreSQL cluster moves under the
``postgres`` user's home instead). Standard library only.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

# Each entry-point script's own EXIT trap handler, not a shared helper.
OWN = {"cleanup"}
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
    for failure in failures:
        print(f"check_scripts: {failure}")
    print(f"check_scripts: {len(scripts)} scripts, {len(seen)} functions, {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
