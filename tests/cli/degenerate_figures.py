#!/usr/bin/env python3
"""Render every figure script under the given output folders on degenerate copies of their tables.

usage: degenerate_figures.py [--jobs N] DIR...

For each mode, DIR is copied (tables and scripts only) and every CSV in the copy rewritten:
  nan    every numeric field nan (nothing learned, one seed's sd, a failed metric), text fields kept
  empty  the header row only
  one    the header and the first row (a single point, one mechanism, one seed)
  const  every numeric column set to its first row's value (a zero y range)
then gnuplot runs every .gp of the copy in its folder. A script that exits non-zero or writes no PNG is a
failure: one line "FAIL <mode> <script>: <gnuplot's last message>". Exit 1 if any failed.
Scripts of the same family (attention_<mechanism>.gp, curves_<task>.gp) are rendered for their first member only:
they differ in the file they read, not in how they plot it.
"""
import concurrent.futures
import csv
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile

NUM = re.compile(r'^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^[-+]?(nan|inf)$', re.I)
FAMILIES = re.compile(r'^(attention_(?!layer|weights|statistics)|curves_)')
MODES = ('nan', 'empty', 'one', 'const')


def mutate(text, mode):
    lines = text.splitlines()
    if not lines:
        return text
    head, rows = lines[0], lines[1:]
    if mode == 'empty':
        return head + '\n'
    if mode == 'one':
        return '\n'.join([head] + rows[:1]) + '\n'
    out, first = [head], None
    for cells in csv.reader(rows):
        if first is None:
            first = cells
        new = []
        for i, c in enumerate(cells):
            if NUM.match(c.strip()):
                if mode == 'nan':
                    c = 'nan'
                elif i < len(first) and NUM.match(first[i].strip()):
                    c = first[i]
            new.append(c)
        s = io.StringIO()
        csv.writer(s, lineterminator='').writerow(new)
        out.append(s.getvalue())
    return '\n'.join(out) + '\n'


def scripts(root):
    seen, out = set(), []
    for d, _, files in sorted(os.walk(root)):
        for f in sorted(files):
            if not f.endswith('.gp'):
                continue
            m = FAMILIES.match(f)
            key = (d, m.group(1)) if m else None
            if key and key in seen:
                continue
            if key:
                seen.add(key)
            out.append((d, f))
    return out


def render(job):
    mode, d, f, top = job
    png = os.path.join(d, f[:-3] + '.png')
    r = subprocess.run(['gnuplot', f], cwd=d, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if r.returncode == 0 and os.path.exists(png) and os.path.getsize(png) > 0:
        return None
    last = [l for l in r.stderr.splitlines() if l.strip() and not l.startswith((' ', '\t'))][-1:]
    return f'FAIL {mode} {os.path.relpath(os.path.join(d, f), top)}: {last[0] if last else "no PNG"}'


def main(argv):
    jobs = 2
    if argv[:1] == ['--jobs']:
        jobs, argv = int(argv[1]), argv[2:]
    if not argv:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix='epar-degenerate.')
    try:
        work = []
        for mode in MODES:
            for k, src in enumerate(argv):
                top = os.path.join(tmp, mode, str(k))
                shutil.copytree(src, top, ignore=lambda d, names: [n for n in names if os.path.isfile(os.path.join(d, n))
                                                                    and not n.endswith(('.csv', '.gp'))])
                for d, _, files in os.walk(top):
                    for f in files:
                        if f.endswith('.csv'):
                            p = os.path.join(d, f)
                            with open(p) as fh:
                                t = fh.read()
                            with open(p, 'w') as fh:
                                fh.write(mutate(t, mode))
                work += [(mode, d, f, os.path.join(tmp, mode)) for d, f in scripts(top)]
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
            fails = [r for r in ex.map(render, work) if r]
        for r in fails:
            print(r)
        print(f'# {len(work)} renders of {len(work) // len(MODES)} scripts on degenerate tables, {len(fails)} failed')
        return 1 if fails else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
