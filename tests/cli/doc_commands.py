#!/usr/bin/env python3
"""The commands and links of README.md, output/README.md and docs/ against the binary, so a renamed option, task,
mechanism, budget or make target, or a moved page, fails a test.

  doc_commands.py EPAR ROOT TMPDIR [CACHE]   (CACHE: a folder that keeps the checkpoint and the completion script
                                            between runs; default TMPDIR)

- every `epar ...` / `./epar ...` line of a fenced block, and every example of the command table (each command's
  --help, "Examples:"), names a command of `epar --help`, and its options parse: `epar CMD ARGS... --help` exits 0
  (an unknown option, a malformed number or list is exit 2 before the --help is reached);
- the values of --task, --tasks, --mechanism(s)/-m, --budget/-b, --benchmark-budget, --preset and --form are names
  the command accepts: those its bash completion offers (generated from the tables and the protocol the command
  checks them against), every item of a comma-separated list;
- the fast examples run for real into TMPDIR (inspect on a checkpoint trained here in a second, compare --list), so
  a value checked only at run time (--eval-items beyond the evaluation set) fails too;
- every `make TARGET` of a fenced block is a target of the Makefile;
- every relative link ([text](path#anchor)) resolves to a file, and an anchor into a markdown page to one of its
  headings; every page under docs/ and output/README.md is reachable from README.md by links.
Prints one line per problem and "doc_commands: N checked, M problem(s)"; exits 1 if there is one."""
import glob
import os
import re
import shlex
import subprocess
import sys

EPAR, ROOT, TMP = sys.argv[1:4]
CACHE = sys.argv[4] if len(sys.argv) > 4 else TMP
# the waiting policy and the BLAS pool epar would choose itself, set here so that it does not re-execute itself for
# them on each of the hundred runs (lib/blas.h epar_blas_reexec)
ENV = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY") or "passive", OPENBLAS_NUM_THREADS="1")
problems = 0
checked = 0


def problem(msg):
    global problems
    problems += 1
    print("not ok " + msg)


def run(args, timeout=60):
    try:
        p = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=ENV)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {timeout} s"


def pages():
    out = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "output", "README.md")]
    out += sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    return [p for p in out if os.path.exists(p)]


def rel(p):
    return os.path.relpath(p, ROOT)


# ---- the commands of the docs and of the command table -------------------------------------------------------------

def doc_commands():
    """(where, argv) of every epar command line of a fenced block; (where, target) of every make line"""
    cmds, makes = [], []
    for page in pages():
        fenced = False
        for i, line in enumerate(open(page, encoding="utf-8").read().split("\n"), 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if not fenced:
                continue
            try:
                words = shlex.split(line, comments=True)
            except ValueError:
                continue
            # several commands joined by && or ;
            parts, cur = [], []
            for w in words:
                if w in ("&&", ";", "||"):
                    parts.append(cur)
                    cur = []
                else:
                    cur.append(w)
            parts.append(cur)
            for p in parts:
                if not p:
                    continue
                if p[0] in ("epar", "./epar") and len(p) > 1 and not p[1].startswith("<"):
                    cmds.append((f"{rel(page)}:{i}", p[1:]))
                elif p[0] == "make":
                    makes += [(f"{rel(page)}:{i}", t) for t in p[1:] if not t.startswith("-") and "=" not in t]
    return cmds, makes


def table_examples(commands):
    """(where, argv) of the examples each command's --help prints (the command table's examples column)"""
    out = []
    for c in commands:
        rc, text, _ = run([EPAR, c, "--help"])
        lines = text.split("\n")
        if "Examples:" not in lines:
            problem(f"'epar {c} --help' has no Examples (the command table's examples column)")
            continue
        for line in lines[lines.index("Examples:") + 1:]:
            if not line.startswith("  epar "):
                if line and not line.startswith("      "):
                    break
                continue
            out.append((f"epar {c} --help", shlex.split(line)[1:]))
    return out


def completion_values(cmd, opt):
    """what bash completion offers for the value of `epar cmd opt` (the generated script)"""
    script = os.path.join(CACHE, "completion.bash")
    if not os.path.exists(script):
        rc, text, err = run([EPAR, "--completion", "bash"])
        if rc:
            problem(f"epar --completion bash: exit {rc}: {err.strip()}")
        open(script, "w").write(text)
    p = subprocess.run(["bash", "-c", 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _epar; '
                                      'printf "%s\\n" "${COMPREPLY[@]}"', "_", script, "epar", cmd, opt, ""],
                       capture_output=True, text=True)
    return set(p.stdout.split())


NAMED = {"--task", "--tasks", "--mechanism", "--mechanisms", "-m", "--budget", "-b", "--benchmark-budget",
         "--preset", "--form"}
CHECKPOINT = None


def substitute(argv):
    """placeholders of the docs by values that exist here: CKPT and checkpoint paths by a checkpoint trained here,
    ${VAR} by 1"""
    out = []
    for a in argv:
        a = re.sub(r"\$\{[A-Z_]+\}", "1", a)
        if a == "CKPT" or a.endswith("checkpoint.bin"):
            a = CHECKPOINT
        out.append(a)
    return out


def check_command(where, argv, commands):
    global checked
    checked += 1
    cmd = argv[0]
    if cmd in ("help", "--help", "--version", "--man"):
        rc, _, err = run([EPAR] + argv)
        if rc:
            problem(f"{where}: 'epar {' '.join(argv)}' exits {rc}: {err.strip()[:200]}")
        return
    if cmd not in commands:
        problem(f"{where}: 'epar {cmd}' is not a command of 'epar --help'")
        return
    args = substitute(argv[1:])
    rc, _, err = run([EPAR, cmd] + args + ["--help"])
    if rc:
        problem(f"{where}: the options of 'epar {' '.join(argv)}' do not parse (exit {rc}): "
                f"{err.strip().splitlines()[0] if err.strip() else ''}")
        return
    for k, a in enumerate(args[:-1]):
        name, _, inline = a.partition("=")
        if name not in NAMED:
            continue
        value = inline if inline else args[k + 1]
        allowed = completion_values(cmd, name)
        if not allowed:
            problem(f"{where}: bash completion offers no value for 'epar {cmd} {name}'")
            continue
        for item in value.split(","):
            base = item.split("@")[0]   # a benchmark cell "mechanism@parameter=value"
            if base not in allowed:
                problem(f"{where}: '{name} {value}': '{base}' is not a value 'epar {cmd}' accepts")
    if cmd == "inspect" and "--text" not in args or cmd == "compare" and "--list" in args:
        out = os.path.join(TMP, "run")
        rc, _, err = run([EPAR, cmd] + args + ["--out", out, "--no-render", "-q"])
        if rc:
            problem(f"{where}: 'epar {' '.join(argv)}' exits {rc}: {err.strip()[:300]}")


def makefile_targets():
    text = open(os.path.join(ROOT, "Makefile"), encoding="utf-8").read()
    return set(re.findall(r"^([A-Za-z][A-Za-z0-9_.-]*):", text, re.M))


# ---- links ---------------------------------------------------------------------------------------------------------

def slug(heading):
    """GitHub's anchor of a heading"""
    s = heading.strip().lower()
    s = re.sub(r"[`*_~]", "", s)
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(page):
    return {slug(m.group(1)) for m in re.finditer(r"^#+ (.*)$", open(page, encoding="utf-8").read(), re.M)}


def links(page):
    text = open(page, encoding="utf-8").read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.findall(r"\]\(([^)\s]+)\)", text)


def check_links():
    global checked
    reach, todo = set(), [os.path.join(ROOT, "README.md")]
    while todo:
        page = os.path.normpath(todo.pop())
        if page in reach:
            continue
        reach.add(page)
        for target in links(page):
            if re.match(r"[a-z]+:", target):
                continue   # an address, not a file here
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            checked += 1
            if not os.path.exists(dest):
                problem(f"{rel(page)}: link '{target}' leads to no file")
                continue
            if anchor and dest.endswith(".md") and anchor not in anchors(dest):
                problem(f"{rel(page)}: link '{target}': no heading '#{anchor}' in {rel(dest)}")
            if dest.endswith(".md") and dest.startswith(os.path.normpath(ROOT) + os.sep):
                todo.append(dest)
    for page in pages():
        if os.path.normpath(page) not in reach:
            problem(f"{rel(page)} cannot be reached from README.md by links")


def main():
    global CHECKPOINT, checked
    rc, text, _ = run([EPAR, "--help"])
    commands = []
    on = False
    for line in text.split("\n"):
        if line == "Commands:":
            on = True
        elif on and not line:
            break
        elif on:
            commands.append(line.split()[0])
    if len(commands) < 5:
        problem(f"'epar --help' lists {len(commands)} commands")
    # a checkpoint for the inspect examples: recall, the model of the docs' examples, a few steps
    ck = os.path.join(CACHE, "ck")
    CHECKPOINT = os.path.join(ck, "train", "recall", "epar-enhanced", "checkpoint.bin")
    rc, err = 0, ""
    if not os.path.exists(CHECKPOINT):
        rc, _, err = run([EPAR, "train", "--task", "recall", "--steps", "20", "--eval-every", "20", "--out", ck, "-q",
                          "--no-render"])
    if rc or not os.path.exists(CHECKPOINT):
        problem(f"epar train (a checkpoint for the inspect examples): exit {rc}: {err.strip()[:200]}")
    cmds, makes = doc_commands()
    if len(cmds) < 20:
        problem(f"only {len(cmds)} epar commands found in the fenced blocks of the docs")
    for where, argv in cmds + table_examples(commands):
        check_command(where, argv, commands)
    targets = makefile_targets()
    for where, t in makes:
        checked += 1
        if t not in targets:
            problem(f"{where}: 'make {t}' is not a target of the Makefile")
    check_links()
    print(f"doc_commands: {checked} checked, {problems} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
