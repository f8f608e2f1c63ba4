#!/usr/bin/env bash
# make test-browser: a small run-all (the sizes of tests/golden/protocol.json, with the claims, defects and audit
# settings of paper_protocol.json, so every verdict kind and every figure kind is there) into OUT, then
# check_report.py loads OUT/index.html and OUT/report/REPORT.html in headless Chromium. Before the run-all, a small
# recall model is trained and inspected into OUT, so index.html links its head view, which check_head_view.py loads.
# Usage: tests/browser/run.sh [OUT]   (default build/browser; OUT is replaced; screenshots stay in OUT/screenshots/)
set -euo pipefail
cd "$(dirname "$0")/../.."
EPAR=${EPAR:-./epar}
OUT=${1:-build/browser}
PY=/usr/bin/python3   # Debian's python3, the one python3-selenium is installed for
rm -rf "$OUT"
mkdir -p "$OUT"
"$PY" - "$OUT/protocol.json" <<'PYEOF'
import json, sys
small = json.load(open("tests/golden/protocol.json"))
full = json.load(open("paper_protocol.json"))
for key in ("claims", "reference_defects", "audit"):
    if key in full:
        small[key] = full[key]
json.dump(small, open(sys.argv[1], "w"), indent=1, ensure_ascii=False)
PYEOF
"$EPAR" train --task recall --steps 60 --out "$OUT" -q --no-render
"$EPAR" inspect "$OUT/train/recall/epar-enhanced/checkpoint.bin" --item 0 --out "$OUT" -q
"$EPAR" run-all --protocol "$OUT/protocol.json" --out "$OUT" -q
rc=0
"$PY" tests/browser/check_report.py "$OUT" || rc=$?
grep -q 'href="inspect/recall-epar-enhanced-seed42-item0/head_view.html"' "$OUT/index.html" ||
    { echo "not ok test_browser: index.html does not link the head view"; rc=1; }
"$PY" tests/browser/check_head_view.py "$OUT/inspect/recall-epar-enhanced-seed42-item0/head_view.html" "$OUT/screenshots" || rc=$?
exit $rc
