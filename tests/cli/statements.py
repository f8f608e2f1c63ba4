#!/usr/bin/env python3
"""Every testable statement of docs/SOURCE_STATEMENTS.md is judged, explained or (trained only) pending.

usage: statements.py TABLE PROTOCOL PROTOCOLS_MD PENDING

A row of the table is testable when its "testable" column names STATIC (an untrained check) or PROXY (a trained
proxy); a row may have both parts. Each part needs one of:
  - a claim cited in the row's claims column (ids in backquotes) of that kind in the protocol: a static claim
    computes its value (posfx) or reads the analyses' folders (STATIC_DIRS); a trained claim reads any other folder
    (benchmark/, ...); claims that only say what they need (measure.needs: 110M models) count as neither;
  - a reason line in the section "## Source statements without a claim" of docs/PROTOCOLS.md:
    "- S3-22 (003:224): why not" for the whole row, "- S3-33 static (003:287): ..." or "... proxy (...)" for a part;
  - for the trained (PROXY) part only, an entry in the pending file ("S1-01 what it waits for"), which must shrink:
    an entry whose part is covered meanwhile, or of a row without a PROXY part, is an error.
Every id cited in the table must exist in the protocol. Prints the problems (exit 1) and the pending list.
"""
import json
import re
import sys

STATIC_DIRS = {"position", "optimal", "parameter", "adaptive", "compare", "scale"}
ROW = re.compile(r"^\| (S[0-4]-\d{2}) \|")
REASON = re.compile(r"^- (S([0-4])-\d{2})(?: (static|proxy))? \((00([0-4]):[^)]*)\): \S")
SECTION = "## Source statements without a claim"


def cells(line):
    return [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]


def claim_files(c):
    m = c.get("measure", {})
    if "needs" in m:
        return None
    out = []
    for r in m.get("readings", [m]):
        out.append("(posfx)" if "posfx" in r else r.get("file", ""))
    return out


def kind(c):
    files = claim_files(c)
    if not files:
        return None
    trained = [f for f in files if f != "(posfx)" and f.split("/")[0] not in STATIC_DIRS]
    return "proxy" if trained else "static"


def main(table, protocol, protocols_md, pending_path):
    problems = []
    claims = {c["id"]: c for c in json.load(open(protocol, encoding="utf-8"))["claims"]}
    rows = {}
    for n, line in enumerate(open(table, encoding="utf-8"), 1):
        m = ROW.match(line)
        if not m:
            continue
        rid, c = m.group(1), cells(line.rstrip("\n"))
        if len(c) != 6:
            problems.append(f"{table}:{n}: row {rid} has {len(c)} columns, not 6 (escape a '|' inside a cell as '\\|')")
            continue
        if rid in rows:
            problems.append(f"{table}:{n}: row {rid} appears twice")
        cited = re.findall(r"`([^`]+)`", c[3])
        for cid in cited:
            if cid not in claims:
                problems.append(f"row {rid} cites claim '{cid}', which is not in {protocol}")
        parts = [p for p in ("static", "proxy") if p.upper() in c[4]]
        rows[rid] = {"parts": parts, "kinds": {kind(claims[x]) for x in cited if x in claims},
                     "cited": cited, "note": c[5]}

    reasons = {}
    text = open(protocols_md, encoding="utf-8").read().split("\n")
    inside = False
    for n, line in enumerate(text, 1):
        if line.startswith("## "):
            inside = line.strip() == SECTION
            continue
        if not inside or not line.startswith("- S"):
            continue
        m = REASON.match(line)
        if not m:
            problems.append(f"{protocols_md}:{n}: a reason line reads '- SN-NN [static|proxy] (00N:line): why'")
            continue
        rid, part = m.group(1), m.group(3)
        if m.group(2) != m.group(5):
            problems.append(f"{protocols_md}:{n}: reason for {rid} cites {m.group(4)}, another document")
        if rid not in rows:
            problems.append(f"{protocols_md}:{n}: reason for {rid}, which is not a row of {table}")
        elif part and part not in rows[rid]["parts"]:
            problems.append(f"{protocols_md}:{n}: reason for the {part} part of {rid}, whose testable column has none")
        else:
            reasons.setdefault(rid, set()).update([part] if part else ["static", "proxy"])

    pending = {}
    for n, line in enumerate(open(pending_path, encoding="utf-8"), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        rid = line.split()[0]
        what = line[len(rid):].strip()
        if rid in pending:
            problems.append(f"{pending_path}:{n}: {rid} listed twice")
        pending[rid] = what
        r = rows.get(rid)
        if r is None:
            problems.append(f"{pending_path}:{n}: {rid} is not a row of {table}")
        elif "proxy" not in r["parts"]:
            problems.append(f"{pending_path}:{n}: {rid} has no PROXY part: only trained statements may be pending "
                            "(a STATIC row needs a claim or a reason)")
        elif "proxy" in r["kinds"] or "proxy" in reasons.get(rid, ()):
            problems.append(f"{pending_path}:{n}: {rid} is covered now ("
                            + (", ".join(x for x in r["cited"] if kind(claims.get(x, {})) == "proxy") or "a reason")
                            + "): remove it from the pending list")

    n_claim = n_reason = 0
    for rid, r in rows.items():
        for part in r["parts"]:
            if part in r["kinds"]:
                n_claim += 1
            elif part in reasons.get(rid, ()):
                n_reason += 1
            elif part == "proxy" and rid in pending:
                pass
            else:
                need = "a trained claim (reading benchmark/ or another trained folder)" if part == "proxy" else \
                    "a static claim"
                extra = ", nor an entry in " + pending_path if part == "proxy" else ""
                problems.append(f"row {rid} ({part} part: {r['note'][:60]}) has neither {need} cited in {table} nor a "
                                f"reason line '- {rid} ({'00' + rid[1]}:...): why' in {protocols_md}{extra}")
    for p in problems:
        print("problem: " + p)
    parts = sum(len(r["parts"]) for r in rows.values())
    print(f"# statements: {len(rows)} rows, {parts} testable parts: {n_claim} with a claim, {n_reason} with a reason, "
          f"{len(pending)} pending")
    if pending:
        print(f"# pending (trained statements awaiting a claim, {pending_path}): " + " ".join(sorted(pending)))
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
