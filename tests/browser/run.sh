#!/usr/bin/env bash
# make test-browser: a small run-all (the sizes of tests/golden/protocol.json, with the claims, defects and audit
# settings of paper_protocol.json, so every verdict kind and every figure kind is there) into OUT, then
# check_report.py loads OUT/index.html and OUT/report/REPORT.html in headless Chromium, and check_first_screen.py
# its first screen (the bottom line; the budget banner after a smoke benchmark, in OUT/smoke). Before the run-all, a small
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
# the first screen (1280 x 800) shows the bottom line; no budget banner without a reduced benchmark
"$PY" tests/browser/check_first_screen.py "$OUT" --no-banner || rc=$?
# after a smoke benchmark (the same small protocol with paper_protocol.json's benchmark section), the banner shows
# on the first screen too
SMOKE=$OUT/smoke
mkdir -p "$SMOKE"
"$PY" - "$OUT/protocol.json" "$SMOKE/protocol.json" <<'PYEOF'
import json, sys
small = json.load(open(sys.argv[1]))
small["experiments"]["benchmark"] = json.load(open("paper_protocol.json"))["experiments"]["benchmark"]
json.dump(small, open(sys.argv[2], "w"), indent=1, ensure_ascii=False)
PYEOF
"$EPAR" benchmark --protocol "$SMOKE/protocol.json" --budget smoke --out "$SMOKE" -q --no-render
"$EPAR" run-all --protocol "$SMOKE/protocol.json" --no-benchmark --out "$SMOKE" -q
"$PY" tests/browser/check_first_screen.py "$SMOKE" --banner || rc=$?
exit $rc
