#!/usr/bin/env bash
# make test-browser: a small run-all (the sizes of tests/golden/protocol.json, with the claims, defects and audit
# settings of paper_protocol.json, so every verdict kind and every figure kind is there) into OUT, then
# check_report.py loads OUT/index.html and OUT/report/REPORT.html in headless Chromium.
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
"$EPAR" run-all --protocol "$OUT/protocol.json" --out "$OUT" -q
exec "$PY" tests/browser/check_report.py "$OUT"
