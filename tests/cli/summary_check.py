#!/usr/bin/env python3
"""README.md's generated blocks against the pinned summary of a full run (docs/SUMMARY.md, docs/summary.json), and a
fresh run's summary against the pin on what needs no trained benchmark.

  summary_check.py README PINNED_MD PINNED_JSON [FRESH_OUT [TIMING_FILE]]

- every block of PINNED_MD (<!-- NAME:begin ... --> ... <!-- NAME:end -->) is in README exactly once, byte for byte;
- PINNED_MD is what PINNED_JSON's lines make (the two files come from one run);
- outside the blocks README states no verdict counts of its own ("16 proxy verdicts", "6 not reproduced");
- FRESH_OUT (the --out of an `epar run-all --no-benchmark`): its report/summary.json counts are those of its
  report/claims.csv (the generator counts right), its static counts (claims that read no trained benchmark) are the
  pin's, and so is the text of every static line, except lines naming a wall-clock claim of TIMING_FILE
  (tests/golden/unpinned.txt: their values differ between runs).
Prints one line per disagreement and exits 1 if there is one."""
import csv
import json
import re
import sys

bad = 0


def problem(msg):
    global bad
    bad += 1
    print(msg)


def blocks(text):
    """name -> the block's text, markers included"""
    out = {}
    for m in re.finditer(r"<!-- ([a-z-]+):begin[^\n]*-->\n.*?<!-- \1:end -->\n", text, re.S):
        out[m.group(1)] = m.group(0)
    return out


def md_of(lines):
    """the markdown experiments/report.c (write_summary) makes of summary.json's lines, begin markers shortened"""
    parts = []
    for name in dict.fromkeys(l["block"] for l in lines):
        body, prev_item = "", True
        for l in lines:
            if l["block"] != name:
                continue
            item = l["text"].startswith("-")
            if item and not prev_item:
                body += "\n"  # a list after a paragraph
            body += l["text"] + "\n"
            prev_item = item
        parts.append(f"<!-- {name}:begin -->\n{body}<!-- {name}:end -->\n")
    return "\n".join(parts)


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    readme, pinned_md, pinned_json = (open(p, encoding="utf-8").read() for p in sys.argv[1:4])
    pin = json.loads(pinned_json)
    pb, rb = blocks(pinned_md), blocks(readme)
    if not pb:
        problem(f"{sys.argv[2]}: no <!-- NAME:begin --> ... <!-- NAME:end --> block")
    for name, text in pb.items():
        if readme.count(text) != 1:
            got = rb.get(name)
            problem(f"README's block '{name}' is not the pinned one ({sys.argv[2]}): "
                    + ("absent" if got is None else f"it differs from line {first_diff(got, text)}"))
    # the pinned markdown is what its json's lines make (the begin markers' comments aside)
    want = md_of(pin["lines"])
    got = re.sub(r"(<!-- [a-z-]+:begin)[^\n]*-->", r"\1 -->", pinned_md)
    if got != want:
        problem(f"{sys.argv[2]} is not what the lines of {sys.argv[3]} make (one run writes both): "
                f"differs from line {first_diff(got, want)}")
    # no verdict counts typed into README outside the generated blocks
    rest = readme
    for text in rb.values():
        rest = rest.replace(text, "")
    typed = re.findall(r"[^.\n]*\b\d+ (?:not reproduced|reproduced|inconclusive|proxy verdicts?)\b[^.\n]*", rest)
    if typed:
        problem(f"README states verdict counts outside the generated blocks: {typed[:3]}")
    if len(sys.argv) > 4:
        fresh_check(sys.argv[4], pin, sys.argv[5] if len(sys.argv) > 5 else None)
    print(f"summary_check: {len(pb)} pinned block(s), {bad} problem(s)")
    return 1 if bad else 0


def first_diff(a, b):
    la, lb = a.split("\n"), b.split("\n")
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return f"{i + 1}: '{x[:120]}' vs '{y[:120]}'"
    return f"{min(len(la), len(lb)) + 1} (one is longer)"


def fresh_check(out, pin, timing_file):
    fresh = json.load(open(out + "/report/summary.json", encoding="utf-8"))
    rows = list(csv.DictReader(open(out + "/report/claims.csv", newline="", encoding="utf-8")))
    # the generator's counts are claims.csv's
    count = lambda rs: {v: sum(r["verdict"] == v for r in rs) for v in fresh["verdicts"]}
    static = [r for r in rows if not r["input"].startswith("benchmark/")]
    if fresh["claims"] != len(rows) or fresh["verdicts"] != count(rows):
        problem(f"{out}: summary.json's counts {fresh['verdicts']} are not claims.csv's {count(rows)}")
    if fresh["static"]["claims"] != len(static) or fresh["static"]["verdicts"] != count(static):
        problem(f"{out}: summary.json's static counts are not claims.csv's (claims that read no benchmark/)")
    for s in fresh["static"]["sections"]:
        rs = [r for r in static if r["section"] == s["section"]]
        if s["claims"] != len(rs) or s["verdicts"] != count(rs):
            problem(f"{out}: summary.json's counts of section {s['section']} are not claims.csv's")
    # what needs no benchmark agrees with the pin
    for key in ("claims", "verdicts", "sections"):
        if fresh["static"][key] != pin["static"][key]:
            a, b = fresh["static"][key], pin["static"][key]
            if key == "sections":
                a = {s["section"]: s for s in a}
                b = {s["section"]: s for s in b}
                diff = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
                problem(f"static counts of the sections {diff} differ from the pin: fresh "
                        f"{[a.get(k) for k in diff][:2]}, pinned {[b.get(k) for k in diff][:2]}")
            else:
                problem(f"static {key} differ from the pin: fresh {a}, pinned {b}")
    timing = set()
    if timing_file:
        for line in open(timing_file, encoding="utf-8"):
            f = line.strip().split(",")
            if len(f) == 3 and f[0] == "report/claims.csv" and f[1] != "*":
                timing.add(f[1])
    pinned_lines = {(l["block"], l["id"]): l for l in pin["lines"] if l["static"]}
    fresh_lines = {(l["block"], l["id"]): l for l in fresh["lines"] if l["static"]}
    if set(pinned_lines) != set(fresh_lines):
        problem(f"static lines differ from the pin: fresh only {sorted(set(fresh_lines) - set(pinned_lines))}, "
                f"pinned only {sorted(set(pinned_lines) - set(fresh_lines))}")
    for k in sorted(set(pinned_lines) & set(fresh_lines)):
        a, b = fresh_lines[k]["text"], pinned_lines[k]["text"]
        if a != b and not any(f"`{t}`" in a or f"`{t}`" in b for t in timing):
            problem(f"static line {k[1]} differs from the pin:\n  fresh:  {a}\n  pinned: {b}")


if __name__ == "__main__":
    sys.exit(main())
