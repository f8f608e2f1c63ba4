#!/usr/bin/env python3
"""Every claim row of index.html against report/claims.csv: the measured figure a reader sees must be the measured
value rounded (never a falsehood: 0.482 shown as "0", -0.5 as "-0", 0.786 as "1"), and no "-0" anywhere; an interval
shown beside it ("-45.7% [-142.0%, 50.1%]") must be measured_lo and measured_hi rounded, and shown exactly when
claims.csv has one.
Usage: rendered_claims.py OUTDIR; prints one line per bad row and exits 1 if any."""
import csv, html, math, re, sys

out = sys.argv[1]
claims = {r["claim_id"]: r for r in csv.DictReader(open(out + "/report/claims.csv", newline=""))}
page = open(out + "/index.html").read()
rows = re.findall(r'<tr class="claim[^"]*"[^>]*id="claim-([^"]+)">(.*?)</tr>', page, re.S)
bad = 0
seen = 0


def has_decimals(reported):
    """the reported text's first number is a decimal figure (not "16", "78%", "1/L", "2^-8", "ratio < 1")"""
    m = re.search(r"(\d*\.?\d+)(\S?)", reported)
    return bool(m) and "." in m.group(1) and m.group(2) not in ("/", "^")


def shown_ok(shown, value, decimals):
    """shown is value rounded to the digits it prints (a percentage as a percentage) when the reported figure has
    decimals, else to 3 significant digits"""
    pct = shown.endswith("%")
    s = shown[:-1] if pct else shown
    if re.fullmatch(r"-0(\.0*)?(e[+-]?\d+)?", s):
        return False  # never -0
    x = float(s) / (100 if pct else 1)
    if not decimals:
        return x == float(f"{value * (100 if pct else 1):.3g}") / (100 if pct else 1)
    if not math.isfinite(value):
        return s in ("nan", "inf", "-inf")
    m = re.fullmatch(r"-?(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?", s)
    dec = len(m.group(2) or "") - int(m.group(3) or 0)
    half = 0.5 * 10.0 ** (-dec) / (100 if pct else 1)
    if value != 0 and x == 0:
        return False  # a nonzero value shown as 0
    return abs(x - value) <= half * (1 + 1e-9) + 1e-15


for cid, body in rows:
    cell = re.search(r'data-label="measured"[^>]*>(.*?)</td>', body, re.S)
    if cid not in claims or not cell:
        print(f"{cid}: row without a claims.csv line or a measured cell")
        bad += 1
        continue
    seen += 1
    shown = html.unescape(re.sub(r"<[^>]+>", "", cell.group(1))).strip()
    shown = re.sub(r"\s*\(sd [^)]*\)$", "", shown)  # the across-seed sd beside the value
    meas = claims[cid]["measured"]
    if not meas.replace(";", "").strip():
        continue
    items, vals = shown.split("; "), meas.split("; ")
    # the interval beside a value, where claims.csv has one (measured_lo, measured_hi: "a; b" like measured)
    los, his = claims[cid]["measured_lo"].split("; "), claims[cid]["measured_hi"].split("; ")
    if len(items) != len(vals):
        print(f"{cid}: shown '{shown}' vs measured '{meas}'")
        bad += 1
        continue
    for k, (sh, v) in enumerate(zip(items, vals)):
        m = re.fullmatch(r"(\S+)(?: \[(\S+), (\S+)\])?", sh)
        lo = los[k] if k < len(los) else ""
        hi = his[k] if k < len(his) else ""
        if m and bool(m.group(2)) != bool(lo and hi and v):
            print(f"{cid}: shown '{sh}' but the interval in claims.csv is '{lo}', '{hi}'")
            bad += 1
            continue
        pairs = [(m.group(1) if m else sh, v)] + ([(m.group(2), lo), (m.group(3), hi)] if m and m.group(2) else [])
        for shown_num, csv_num in pairs:
            try:
                value = float(csv_num)
            except ValueError:
                continue  # text
            try:
                good = shown_ok(shown_num, value, has_decimals(claims[cid]["reported"]))
            except (ValueError, AttributeError):
                good = False
            if not good:
                print(f"{cid}: shown '{shown_num}' (of '{sh}') is not {csv_num} rounded")
                bad += 1
if seen != len(claims):
    print(f"{seen} claim rows rendered, claims.csv has {len(claims)}")
    bad += 1
print(f"rendered_claims: {seen} rows, {bad} bad")
sys.exit(1 if bad else 0)
