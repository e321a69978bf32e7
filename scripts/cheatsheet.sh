#!/usr/bin/env bash
# `make cheatsheet`: docs/cheatsheet.md printed on one A4 page.
#
#   scripts/cheatsheet.sh          docs/cheatsheet.pdf (commit it) and its
#                                  picture .state/cheatsheet/cheatsheet.png
#   scripts/cheatsheet.sh check    the one-page check only (CI): the PDF is
#                                  rendered into .state/cheatsheet/, docs/ is
#                                  left alone
#
# scripts/cheatsheet.py turns the Markdown into HTML with print CSS (A4
# landscape); headless Chromium prints it (--print-to-pdf); pdfinfo
# (poppler-utils) must then say exactly one page of A4 size, or the script
# fails naming the page count and size — a row added to the table that
# pushes it onto a second page fails here, not at the printer. pdftoppm
# renders the page to PNG to look at. Installs chromium and poppler-utils
# when missing (require_packages).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

mode=${1:-write}
[[ "$mode" == write || "$mode" == check ]] || die "usage: scripts/cheatsheet.sh [check]"

require_packages python3:python3 pdfinfo:poppler-utils pdftoppm:poppler-utils /usr/bin/chromium:chromium

work=.state/cheatsheet
mkdir -p "$work"
html="$work/cheatsheet.html"
pdf="$work/cheatsheet.pdf"
python3 scripts/cheatsheet.py docs/cheatsheet.md "$html"

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
# --no-pdf-header-footer: no date, title or URL printed in the margins.
/usr/bin/chromium --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage \
  --no-first-run --user-data-dir="$profile/profile" --no-pdf-header-footer \
  --print-to-pdf="$pdf" "file://$(pwd)/$html" >/dev/null 2>&1 \
  || die "chromium could not print $html"
[[ -s "$pdf" ]] || die "chromium printed nothing to $pdf"

info=$(pdfinfo "$pdf")
pages=$(awk -F': *' '/^Pages:/ {print $2}' <<<"$info")
size=$(awk -F': *' '/^Page size:/ {print $2}' <<<"$info")
# A4 is 595.28 x 841.89 pt, either way round.
if [[ "$pages" != 1 || "$size" != *"(A4)"* ]]; then
  die "docs/cheatsheet.md prints on $pages page(s) of $size: it must fit one A4 page (shorten it, or tighten scripts/cheatsheet.py's CSS)"
fi
say "cheat sheet: $pages page, $size"

if [[ "$mode" == write ]]; then
  cp "$pdf" docs/cheatsheet.pdf
  pdftoppm -png -r 110 -singlefile docs/cheatsheet.pdf "$work/cheatsheet"
  say "wrote docs/cheatsheet.pdf; its picture: $work/cheatsheet.png"
fi
