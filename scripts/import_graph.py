#!/usr/bin/env python3
"""The import graph of a crate's modules, and its circles.

    python3 scripts/import_graph.py [app/src] [--strict]

Reads every ``.rs`` file under the folder, maps it to its module
(``lock/redlock.rs`` → ``lock::redlock``, ``lock/mod.rs`` → ``lock``), and
collects the modules each one names through ``crate::…`` (in ``use`` lines
and in paths, ``use crate::{a, b}`` groups too) and ``super::…``. A child
naming its parent's items (``super::X`` inside ``lock/redlock.rs``) is an
edge to the parent; a parent naming a child's items by relative path
(``redlock::Redlock`` in ``lock/mod.rs``) is an edge to the child; a bare
``mod child;`` declaration is not an edge. Prints one line per module with what
it imports, then every strongly connected component of more than one module
(an import circle: no order reads top-down through it). ``--strict`` exits 1
when there is one (for CI once the layering is done). Standard library only.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PATH = re.compile(r"\b(crate|super)((?:::[a-z_][a-z0-9_]*)+)")
RELATIVE = re.compile(r"(?<![:\w])([a-z_][a-z0-9_]*)::")
GROUP = re.compile(r"\b(crate|super)::\{")


def grouped(text: str) -> list[tuple[str, str]]:
    """`use crate::{a, b::c, D}` → (crate, ::a), (crate, ::b::c), (crate, ::D)."""
    found = []
    for match in GROUP.finditer(text):
        depth, start, i = 1, match.end(), match.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        body = text[start : i - 1]
        # Top-level items only; nested groups keep their prefix.
        level, item = 0, ""
        for ch in body + ",":
            if ch == "," and level == 0:
                head = item.strip().split("::{")[0].strip()
                if head:
                    found.append((match.group(1), "::" + head.split(" as ")[0]))
                item = ""
                continue
            level += {"{": 1, "}": -1}.get(ch, 0)
            item += ch
    return found


def module_of(root: Path, file: Path) -> str:
    parts = list(file.relative_to(root).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return "::".join(parts) or "crate"


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def resolve(target: list[str], modules: set[str]) -> str | None:
    """The longest prefix of `target` that is a module."""
    for n in range(len(target), 0, -1):
        name = "::".join(target[:n])
        if name in modules:
            return name
    return None


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    strict = "--strict" in sys.argv
    root = Path(args[0] if args else "app/src")
    files = sorted(p for p in root.rglob("*.rs"))
    modules = {module_of(root, f): f for f in files}
    names = set(modules)
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for module, file in modules.items():
        text = strip_comments(file.read_text(encoding="utf-8"))
        is_mod_file = file.name in ("mod.rs", "lib.rs", "main.rs")
        for kind, rest in PATH.findall(text) + grouped(text):
            segments = [s for s in rest.split("::") if s and s != "self"]
            if kind == "crate":
                target = segments
            else:
                base = module.split("::") if module != "crate" else []
                # `super` of lock/redlock.rs is `lock`; of lock/mod.rs, the crate.
                parent = base[:-1] if not is_mod_file or base else []
                if is_mod_file and base:
                    parent = base[:-1]
                target = parent + segments
            found = resolve(target, names)
            if found and found != module and found != "crate":
                edges[module].add(found)
        # A parent naming its children by relative path (`redlock::Redlock`
        # inside lock/mod.rs) imports them.
        if is_mod_file:
            prefix = "" if module == "crate" else module + "::"
            for child in RELATIVE.findall(text):
                if prefix + child in names:
                    edges[module].add(prefix + child)

    for module in sorted(edges):
        deps = ", ".join(sorted(edges[module])) or "-"
        print(f"{module:<28} -> {deps}")

    # Tarjan's strongly connected components.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(edges):
        if v not in index:
            visit(v)

    print()
    if not circles:
        print(f"no import circle among {len(edges)} modules of {root}")
        return 0
    for circle in circles:
        print(f"import circle of {len(circle)} modules: {', '.join(circle)}")
    return 1 if strict else 0


if __name__ == "__main__":
    sys.exit(main())
