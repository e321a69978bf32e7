#!/usr/bin/env python3
"""`make cheatsheet`: docs/cheatsheet.md as one printable HTML page.

    python3 scripts/cheatsheet.py docs/cheatsheet.md out.html

The cheat sheet is written in a small part of Markdown — headings, paragraphs,
one pipe table, `code`, **bold** and [links](target) — and this turns exactly
that part into HTML with print CSS (A4 landscape, small type, the table on
the whole width), for headless Chromium's --print-to-pdf
(scripts/cheatsheet.sh). Standard library only: no Markdown package to
install, whichever python3 runs it. Anything else in the page (a list, a
code block) stops it with the line number, rather than printing raw
Markdown.
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

CSS = """
@page { size: A4 landscape; margin: 7mm 9mm; }
* { box-sizing: border-box; }
html { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
body { margin: 0; font: 7.5pt/1.24 "DejaVu Sans", "Liberation Sans", Arial, sans-serif; color: #111; }
h1 { font-size: 13pt; margin: 0 0 1.2mm; }
h1 small { font-size: 7.5pt; font-weight: normal; color: #555; margin-left: 3mm; }
p { margin: 0 0 1.4mm; }
code { font: 7pt "DejaVu Sans Mono", "Liberation Mono", monospace; background: #eef1f6; padding: 0 .5mm; border-radius: .6mm; }
table { width: 100%; border-collapse: collapse; margin: 1.2mm 0 1.8mm; table-layout: fixed; }
th, td { border: .2mm solid #9aa3b5; padding: .35mm 1mm; vertical-align: top; text-align: left; }
th { background: #dfe5f0; font-size: 7.4pt; }
tr:nth-child(even) td { background: #f6f8fb; }
td:first-child { white-space: nowrap; font-weight: bold; }
col.strategy { width: 12%; } col.lineage { width: 19%; } col.guarantee { width: 13%; }
col.fails { width: 31%; } col.shown { width: 25%; }
a { color: inherit; text-decoration: none; }
"""

INLINE = re.compile(r"`([^`]+)`|\*\*([^*]+)\*\*|\[([^\]]+)\]\(([^)]+)\)")


def inline(text: str) -> str:
    """`code`, **bold** and [text](link) (printed as its text), the rest escaped."""
    out, at = [], 0
    for m in INLINE.finditer(text):
        out.append(html.escape(text[at : m.start()]))
        if m.group(1) is not None:
            out.append(f"<code>{html.escape(m.group(1))}</code>")
        elif m.group(2) is not None:
            out.append(f"<strong>{inline(m.group(2))}</strong>")
        else:
            out.append(inline(m.group(3)))
        at = m.end()
    out.append(html.escape(text[at:]))
    return "".join(out)


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def convert(markdown: str, source: str) -> str:
    lines = markdown.splitlines()
    body: list[str] = []
    paragraph: list[str] = []
    title = "cheat sheet"

    def flush() -> None:
        if paragraph:
            body.append(f"<p>{inline(' '.join(paragraph))}</p>")
            paragraph.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            flush()
        elif line.startswith("# "):
            flush()
            title = line[2:].strip()
            body.append(f"<h1>{inline(title)}<small>{html.escape(source)} · make cheatsheet</small></h1>")
        elif line.startswith("|"):
            flush()
            head = cells(line)
            if i + 1 >= len(lines) or not re.fullmatch(r"\|?[\s:|-]+\|?", lines[i + 1].strip()):
                sys.exit(f"{source}:{i + 1}: a table needs its |---| line")
            i += 2
            names = ["strategy", "lineage", "guarantee", "fails", "shown"]
            cols = "".join(f'<col class="{names[n]}">' if n < len(names) else "<col>" for n in range(len(head)))
            rows = [f"<colgroup>{cols}</colgroup>", "<tr>" + "".join(f"<th>{inline(c)}</th>" for c in head) + "</tr>"]
            while i < len(lines) and lines[i].startswith("|"):
                row = cells(lines[i])
                if len(row) != len(head):
                    sys.exit(f"{source}:{i + 1}: {len(row)} cells, the header has {len(head)}")
                rows.append("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in row) + "</tr>")
                i += 1
            body.append("<table>" + "".join(rows) + "</table>")
            continue
        elif re.match(r"\s*([-*+]|\d+\.)\s|```|#{2,}\s|>", line):
            sys.exit(f"{source}:{i + 1}: only headings, paragraphs and one table are printed: {line!r}")
        else:
            paragraph.append(line.strip())
        i += 1
    flush()
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def main() -> int:
    if len(sys.argv) != 3:
        sys.exit("usage: cheatsheet.py <cheatsheet.md> <out.html>")
    source = Path(sys.argv[1])
    Path(sys.argv[2]).write_text(convert(source.read_text(encoding="utf-8"), source.as_posix()), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
