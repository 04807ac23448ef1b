#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Print the build outputs a test stage needs, one per line.

usage: stage-targets.py [--cmake-args] PRESET BUILD_DIR

A stage that runs only some labels (asan and clang run unit|conformance,
tsan stress|torture) need not build every sample, benchmark and e2e tracee:
this reads the stage's test preset (its label include/exclude regexes, as
ctest applies them: a test is in when one of its labels matches), then every
CTestTestfile.cmake under BUILD_DIR (what CMake generated: add_test() and
set_tests_properties() lines), and prints each file under BUILD_DIR that a
selected test names, in its command, its ENVIRONMENT or its REQUIRED_FILES,
and that ninja knows how to build.  Files a test reaches through a path
compiled into it get there through add_dependencies() on its target, which
ninja follows.  Files under BUILD_DIR that a page's docs-test line names
(`needs=build-arm64-callops/...` in README.md or docs/**/*.md: the docs
stage runs those pages later, against this build) are printed too.  Prints nothing (and the caller builds everything) when the
preset selects no label, or when the build directory has no build.ninja.
--cmake-args prints them as one "--target A B ..." line for `cmake --build`.
It first lets ninja re-run CMake if its inputs changed (`ninja build.ninja`),
so the test files it reads are current.
"""
import json
import os
import re
import subprocess
import sys


def preset_filter(root, name):
    with open(os.path.join(root, "CMakePresets.json"), encoding="utf-8") as f:
        presets = {p["name"]: p for p in json.load(f).get("testPresets", [])}
    inc = exc = None
    seen = set()
    while name in presets and name not in seen:
        seen.add(name)
        p = presets[name]
        filt = p.get("filter", {})
        if inc is None:
            inc = filt.get("include", {}).get("label")
        if exc is None:
            exc = filt.get("exclude", {}).get("label")
        parents = p.get("inherits", [])
        if isinstance(parents, str):
            parents = [parents]
        name = parents[0] if parents else None
    return inc, exc


def cmake_words(text):
    """The arguments of one CMake command call: [=[..]=] and "..." quoted."""
    words = []
    for m in re.finditer(r'\[(=*)\[(.*?)\]\1\]|"((?:[^"\\]|\\.)*)"|([^\s()"]+)', text, re.S):
        if m.group(2) is not None:
            words.append(m.group(2))
        elif m.group(3) is not None:
            words.append(re.sub(r'\\(.)', r'\1', m.group(3)))
        else:
            words.append(m.group(4))
    return words


def tests_of(build):
    tests = {}
    for dirpath, _dirs, files in os.walk(build):
        if "CTestTestfile.cmake" not in files:
            continue
        with open(os.path.join(dirpath, "CTestTestfile.cmake"), encoding="utf-8") as f:
            for line in f:
                m = re.match(r'(add_test|set_tests_properties)\((.*)\)\s*$', line)
                if not m:
                    continue
                w = cmake_words(m.group(2))
                if not w:
                    continue
                t = tests.setdefault(w[0], {"words": [], "labels": []})
                if m.group(1) == "add_test":
                    t["words"] += w[1:]
                else:
                    props = w[2:] if len(w) > 1 and w[1] == "PROPERTIES" else w[1:]
                    for k, v in zip(props[0::2], props[1::2]):
                        if k == "LABELS":
                            t["labels"] = v.split(";")
                        elif k in ("ENVIRONMENT", "REQUIRED_FILES"):
                            t["words"] += re.split(r'[;=:]', v)
    return tests


def docs_needs(root, build, known):
    """Build outputs named by the docs pages' `needs=PATH` (relative to the
    source root), for a page the docs stage runs against this build."""
    pages = [os.path.join(root, "README.md")]
    for dirpath, _dirs, files in os.walk(os.path.join(root, "docs")):
        pages += [os.path.join(dirpath, f) for f in files if f.endswith(".md")]
    want = set()
    for page in pages:
        try:
            with open(page, encoding="utf-8") as f:
                text = f.read()
        except OSError:
            continue
        for m in re.finditer(r'<!-- docs-test:[^>]*?-->', text):
            paths = re.findall(r'\bneeds=(\S+)', m.group(0))
            if re.search(r'\barm64\b', m.group(0)):
                # tests/docs/run_page.py's arm64_ready() runs this probe
                paths.append("build-arm64/samples/ftrace/ftrace-ops")
            for path in paths:
                full = os.path.abspath(os.path.join(root, path))
                if full.startswith(build + "/"):
                    rel = os.path.relpath(full, build)
                    if rel in known:
                        want.add(rel)
    return want


def main():
    args = sys.argv[1:]
    cmake_args = bool(args) and args[0] == "--cmake-args"
    if cmake_args:
        args = args[1:]
    if len(args) != 2:
        sys.exit("usage: stage-targets.py [--cmake-args] PRESET BUILD_DIR")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build = os.path.abspath(args[1])
    inc, exc = preset_filter(root, args[0])
    if not inc or not os.path.exists(os.path.join(build, "build.ninja")):
        return
    # stdout is the answer: ninja's own lines go to stderr
    subprocess.run(["ninja", "-C", build, "build.ninja"], stdout=sys.stderr, check=True)
    outs = subprocess.run(["ninja", "-C", build, "-t", "targets", "all"],
                          capture_output=True, text=True, check=True).stdout
    known = {line.split(":")[0] for line in outs.splitlines()}
    want = set()
    for t in tests_of(build).values():
        labels = t["labels"]
        if not any(re.search(inc, l) for l in labels):
            continue
        if exc and any(re.search(exc, l) for l in labels):
            continue
        for word in t["words"]:
            if word.startswith(build + "/"):
                rel = os.path.relpath(word, build)
                if rel in known:
                    want.add(rel)
    want |= docs_needs(root, build, known)
    if cmake_args:
        if want:
            print("--target " + " ".join(sorted(want)))
        return
    for rel in sorted(want):
        print(rel)


if __name__ == "__main__":
    main()
