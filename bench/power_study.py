#!/usr/bin/env python3
"""The power study's primary-metric choice (docs/TASKS.md, "Power", step 4): per task of a benchmark folder, for the
final metric, the learning curve's mean ('curve') and the curve's mean loss, the sd across seeds of the paired relative
differences of epar-enhanced against none and against rope (cell.json's value, curve_metric, curve_loss); the rule:
'curve' where the final accuracy saturates (every mechanism's mean >= 0.99) or has no spread, else the candidate among
final and curve with the smaller mean of the two sds (lm and lm-shuffled keep final whatever it prints: TASKS.md).
Prints the markdown table of TASKS.md. Usage (the run behind that table):
  epar benchmark --budget quick --mechanisms none,rope,epar-enhanced --seeds 1001,1002,1003,1004 --no-render --out P
  python3 bench/power_study.py P"""
import json, glob, os, sys, math, statistics as st
from collections import defaultdict
root = sys.argv[1]
cells = defaultdict(dict)
for f in glob.glob(os.path.join(root, 'benchmark/cells/*/*/seed-*/cell.json')):
    d = json.load(open(f))
    hib = d['metric'] != 'bpc'
    cells[d['task']][(d['mechanism'], d['seed'])] = dict(final=(d['value'], hib), curve=(d['curve_metric'], hib),
        final_loss=(d['eval_loss'], False), curve_loss=(d['curve_loss'], False), chance=d['chance'])
def rel(task, cand, other):
    c = cells[task]
    seeds = sorted(s for m, s in c if m == 'epar-enhanced' and (other, s) in c)
    out = []
    for s in seeds:
        (x, hib), (y, _) = c[('epar-enhanced', s)][cand], c[(other, s)][cand]
        out.append((1 if hib else -1) * (x - y) / abs(y) if y else float('nan'))
    return out
print('| task | seeds | final: mean ± sd of EPAR enh. (chance) | final: paired sd vs none / rope | curve: paired sd vs none / rope | curve_loss: paired sd vs none / rope | chosen |')
print('|---|---|---|---|---|---|---|')
for task in sorted(cells):
    row = {}
    for cand in ('final', 'curve', 'curve_loss'):
        sds = []
        for o in ('none', 'rope'):
            r = rel(task, cand, o)
            sds.append(st.stdev(r) if len(r) > 1 else float('nan'))
        row[cand] = sds
    fin = [v['final'][0] for (m, s), v in cells[task].items() if m == 'epar-enhanced']
    if not fin: continue
    ch = next(iter(cells[task].values()))['chance']
    mf, mc = st.mean(row['final']), st.mean(row['curve'])
    mm = defaultdict(list)
    for (m, s_), v in cells[task].items(): mm[m].append(v['final'][0])
    sat = next(iter(cells[task].values()))['final'][1] and all(st.mean(v) >= 0.99 for v in mm.values())
    degenerate = sat or min(row['final']) == 0
    choice = 'curve' if (degenerate or mc < mf or math.isnan(mf)) else 'final'
    if not next(iter(cells[task].values()))['final'][1]:
        choice = 'final (bpc: the paper reports the trained model)'
    f = lambda p: f"{100*p[0]:.1f} / {100*p[1]:.1f} %"
    print(f"| {task} | {len(fin)} | {st.mean(fin):.3f} ± {st.stdev(fin) if len(fin)>1 else float('nan'):.3f} ({ch:.3f}) | {f(row['final'])}{' (saturated)' if sat else ' (no spread)' if degenerate else ''} | {f(row['curve'])} | {f(row['curve_loss'])} | {choice} |")
