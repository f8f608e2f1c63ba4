#!/usr/bin/env python3
"""README.md's and docs/'s generated blocks against the pinned summary of a full run (docs/SUMMARY.md,
docs/summary.json), and a fresh run's summary against the pin on what needs no trained benchmark.

  summary_check.py README PINNED_MD PINNED_JSON [FRESH_OUT [TIMING_FILE]]

- README quotes the opening paragraph of PINNED_MD's block "summary" in a block "headline" (<!-- headline:begin ... -->
  ... <!-- headline:end -->), exactly once, byte for byte; every other block (<!-- NAME:begin ... --> ...
  <!-- NAME:end -->) of README and of the pages under its docs/ (PINNED_MD aside) is PINNED_MD's block NAME, byte for
  byte;
- PINNED_MD is what PINNED_JSON's lines make (the two files come from one run);
- outside the blocks README states no verdict counts of its own ("16 proxy verdicts", "6 not reproduced");
- FRESH_OUT (the --out of an `epar run-all --no-benchmark`): its report/summary.json counts are those of its
  report/claims.csv (the generator counts right), its static counts (claims that read no trained benchmark) are the
  pin's, and so is the text of every static line, except lines naming a wall-clock claim of TIMING_FILE
  (tests/golden/unpinned.txt: their values differ between runs), whose verdicts may also move in the counts.
Prints one line per disagreement and exits 1 if there is one."""
import csv
import glob
import json
import os
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
    """the markdown experiments/report/report.c (write_summary) makes of summary.json's lines, begin markers shortened"""
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
    # README's headline: the opening paragraph of the pinned summary (the begin marker's comment is free)
    opening = headline_of(pb.get("summary", ""))
    heads = re.findall(r"<!-- headline:begin[^\n]*-->\n(.*?)<!-- headline:end -->\n", readme, re.S)
    if len(heads) != 1 or heads[0] != opening:
        problem(f"README's block 'headline' is not the opening paragraph of the pinned summary ({sys.argv[2]}): "
                + ("absent" if not heads else f"{len(heads)} blocks" if len(heads) > 1
                   else f"it differs from line {first_diff(heads[0], opening)}"))
    # every other block, in README and in the docs pages, is the pinned one
    pages = [sys.argv[1]] + sorted(p for p in glob.glob(os.path.join(os.path.dirname(sys.argv[1]) or ".", "docs", "**",
                                                                       "*.md"), recursive=True)
                                   if os.path.abspath(p) != os.path.abspath(sys.argv[2]))
    for page in pages:
        text = readme if page == sys.argv[1] else open(page, encoding="utf-8").read()
        for name, got in blocks(text).items():
            if name == "headline" and page == sys.argv[1]:
                continue
            want = pb.get(name)
            if want is None or text.count(want) != 1:
                problem(f"{'README' if page == sys.argv[1] else page}: block '{name}' is not the pinned one ({sys.argv[2]}): "
                        + ("no such pinned block" if want is None else f"it differs from line {first_diff(got, want)}"))
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


def headline_of(block):
    """the opening paragraph of a block: its lines after the begin marker up to the first empty line (or the end)"""
    lines = block.split("\n")[1:]
    out = []
    for l in lines:
        if not l or l.startswith("<!-- "):
            break
        out.append(l)
    return "\n".join(out) + "\n" if out else ""


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
    timing = set()
    if timing_file:
        for line in open(timing_file, encoding="utf-8"):
            f = line.strip().split(",")
            if len(f) == 3 and f[0] == "report/claims.csv" and f[1] != "*":
                timing.add(f[1])
    # what needs no benchmark agrees with the pin; a wall-clock claim's verdict may move between runs (the
    # machine's load moves its timing), so the pin's counts must be the fresh counts of every other claim plus
    # one verdict, any verdict, for each wall-clock claim
    def agrees(pinned, rs):
        fixed = count([r for r in rs if r["claim_id"] not in timing])
        free = sum(r["claim_id"] in timing for r in rs)
        extra = [pinned.get(v, 0) - fixed[v] for v in fixed]
        return min(extra, default=0) >= 0 and sum(extra) == free
    if fresh["static"]["claims"] != pin["static"]["claims"]:
        problem(f"static claims differ from the pin: fresh {fresh['static']['claims']}, pinned {pin['static']['claims']}")
    if not agrees(pin["static"]["verdicts"], static):
        problem(f"static verdicts differ from the pin (wall-clock claims {sorted(timing)} aside): fresh "
                f"{fresh['static']['verdicts']}, pinned {pin['static']['verdicts']}")
    a = {s["section"]: s for s in fresh["static"]["sections"]}
    b = {s["section"]: s for s in pin["static"]["sections"]}
    diff = [k for k in sorted(set(a) | set(b)) if k not in a or k not in b or a[k]["claims"] != b[k]["claims"]
            or not agrees(b[k]["verdicts"], [r for r in static if r["section"] == k])]
    if diff:
        problem(f"static counts of the sections {diff} differ from the pin: fresh "
                f"{[a.get(k) for k in diff][:2]}, pinned {[b.get(k) for k in diff][:2]}")
    timed_sections = {r["section"] for r in static if r["claim_id"] in timing}
    pinned_lines = {(l["block"], l["id"]): l for l in pin["lines"] if l["static"]}
    fresh_lines = {(l["block"], l["id"]): l for l in fresh["lines"] if l["static"]}
    if set(pinned_lines) != set(fresh_lines):
        problem(f"static lines differ from the pin: fresh only {sorted(set(fresh_lines) - set(pinned_lines))}, "
                f"pinned only {sorted(set(pinned_lines) - set(fresh_lines))}")
    # a section line of a section with a wall-clock claim: its counts were checked above; the rest is compared
    counts = re.compile(r"^(- \*\*[^*]*\*\*: )[^.]*\.")
    for k in sorted(set(pinned_lines) & set(fresh_lines)):
        a, b = fresh_lines[k]["text"], pinned_lines[k]["text"]
        if k[1].startswith("section_") and k[1][len("section_"):] in timed_sections:
            a, b = counts.sub(r"\1", a), counts.sub(r"\1", b)
        if a != b and not any(f"`{t}`" in a or f"`{t}`" in b for t in timing):
            problem(f"static line {k[1]} differs from the pin:\n  fresh:  {a}\n  pinned: {b}")


if __name__ == "__main__":
    sys.exit(main())
