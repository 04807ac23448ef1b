#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/docs/run_page.py - run every command block of a documentation page
the way a reader would, and check what it prints (ctest label `docs`).

Markup (docs/labs/README.md, "How the labs are tested", is the reader's side):

  ```sh            a block of commands, run with bash from the source root;
                   all blocks of a page share one shell (cd and variables
                   carry over), like one terminal.  Any command that fails
                   fails the page (write `cmd || echo "exit status $?"` for
                   a command meant to fail).
  ```output        what the nearest preceding ```sh block prints (stdout and
                   stderr together).  Line by line, runs of blanks count as
                   one space and blank lines are ignored; a line holding only
                   `...` stands for any number of lines; within a line
                   {num} is a number (-3, 4.25, 1e6), {hex} a hex number
                   (0x optional), {word} one word and {any} anything.
  <!-- docs-test: DIRECTIVE -->  on the line(s) before a block:
      skip REASON  do not run it (reported as SKIPPED with the reason)
      arm64 [needs=PATH]...  needs the arm64 cross build (build-arm64/), a
                   working qemu-aarch64 and each PATH (relative to the source
                   root); otherwise SKIPPED loudly, a failure under CI=true
      file PATH    (before any block) the block must be PATH's exact text

Paths: commands name the build tree a new user has after `make`
(`./build/...`).  The page runs in a scratch directory of symlinks to the
source root's entries in which `build` points at --build-dir, so any build
directory (build-docs/, build/ in CI) serves.  HOME is a fresh directory.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

FENCE = re.compile(r'^(\s*)```+\s*([\w+-]*)\s*$')
DIRECTIVE = re.compile(r'^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$')
SKIP_RC = 77


class Block:
    def __init__(self, lang, text, line, directives):
        self.lang = lang
        self.text = text
        self.line = line
        self.directives = directives
        self.expect = None      # the ```output block's text
        self.expect_line = None
        self.status = None      # PASS FAIL SKIPPED NOT-RUN
        self.why = ''


def parse(path):
    blocks, pending = [], []
    lines = open(path, encoding='utf-8').read().split('\n')
    i = 0
    while i < len(lines):
        m = DIRECTIVE.match(lines[i])
        if m:
            pending.append(m.group(1))
            i += 1
            continue
        m = FENCE.match(lines[i])
        if not m:
            if lines[i].strip():
                pending = []
            i += 1
            continue
        indent, lang, start = m.group(1), m.group(2), i + 1
        body = []
        i += 1
        while i < len(lines) and not re.match(r'^\s*```+\s*$', lines[i]):
            line = lines[i]
            body.append(line[len(indent):] if line.startswith(indent) else line)
            i += 1
        if i >= len(lines):
            raise SystemExit(f'{path}:{start}: unterminated code block')
        i += 1
        blocks.append(Block(lang, '\n'.join(body) + '\n', start, pending))
        pending = []
    cmds = []
    for b in blocks:
        if b.lang == 'output':
            owner = next((c for c in reversed(cmds) if c.expect is None), None)
            if owner is None:
                raise SystemExit(f'{path}:{b.line}: ```output block without a ```sh block before it')
            owner.expect, owner.expect_line = b.text, b.line
        elif b.lang in ('sh', 'bash', 'console', 'shell'):
            cmds.append(b)
    return blocks, cmds


TOKENS = {
    '{num}': r'[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?',
    '{hex}': r'(?:0[xX])?[0-9a-fA-F]+',
    '{word}': r'\S+',
    '{any}': r'.*',
}


def norm(line):
    return ' '.join(line.split())


def line_regex(pattern):
    out, pos = [], 0
    for m in re.finditer(r'\{(?:num|hex|word|any)\}', pattern):
        out.append(re.escape(pattern[pos:m.start()]))
        out.append(TOKENS[m.group(0)])
        pos = m.end()
    out.append(re.escape(pattern[pos:]))
    return re.compile('^' + ''.join(out) + '$')


def match_output(expect, actual):
    """True when @actual (text) has the shape @expect promises."""
    pats = [norm(x) for x in expect.split('\n') if x.strip()]
    got = [norm(x) for x in actual.split('\n') if x.strip()]
    pats = [p if p == '...' else line_regex(p) for p in pats]
    memo = {}

    def m(i, j):
        key = (i, j)
        if key in memo:
            return memo[key]
        if i == len(pats):
            r = j == len(got)
        elif pats[i] == '...':
            r = any(m(i + 1, k) for k in range(j, len(got) + 1))
        else:
            r = j < len(got) and bool(pats[i].match(got[j])) and m(i + 1, j + 1)
        memo[key] = r
        return r
    sys.setrecursionlimit(max(10000, 4 * (len(pats) + len(got))))
    return m(0, 0)


def first_mismatch(expect, actual):
    """A hint: the first expected line that matches no output line."""
    got = [norm(x) for x in actual.split('\n') if x.strip()]
    for p in (norm(x) for x in expect.split('\n') if x.strip()):
        if p == '...':
            continue
        if not any(line_regex(p).match(g) for g in got):
            return p
    return None


def make_farm(root, build_dir, tmp):
    farm = os.path.join(tmp, 'src')
    os.mkdir(farm)
    for name in os.listdir(root):
        if name == 'build':
            continue
        os.symlink(os.path.join(root, name), os.path.join(farm, name))
    os.symlink(build_dir, os.path.join(farm, 'build'))
    return farm


def arm64_ready(root):
    """'' when arm64 blocks can run, else the reason they cannot."""
    cross = os.path.join(root, 'build-arm64')
    if not os.path.isdir(cross):
        return 'no arm64 cross build (build-arm64/; make test-arm64 makes it)'
    qemu = shutil.which('qemu-aarch64')
    if not qemu:
        return 'qemu-aarch64 not installed (scripts/setup-arm64.sh)'
    probe = os.path.join(cross, 'samples', 'ftrace', 'ftrace-ops')
    if not os.path.exists(probe):
        return 'build-arm64/samples/ftrace/ftrace-ops was not built'
    try:
        r = subprocess.run([qemu, probe, '--help'], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f'qemu-aarch64 does not run arm64 programs here ({e})'
    if r.returncode != 0:
        return 'qemu-aarch64 does not run arm64 programs here: ' + \
            r.stderr.decode(errors='replace').strip()[:200]
    return ''


DRIVER_HEAD = r'''
set -o pipefail -o errtrace
cd "$1" || exit 99
__docs_dir=$2
__docs_err() {
	case "$2" in 'source "$__docs_dir/block'*) return ;; esac
	__docs_failed=1
	echo "docs-test: command failed (exit $1): $2" >&2
}
__docs_run() {
	__docs_failed=0
	trap '__docs_err $? "$BASH_COMMAND"' ERR
	source "$__docs_dir/block$1.sh" >"$__docs_dir/out$1" 2>&1 </dev/null
	trap - ERR
	echo "$__docs_failed" >"$__docs_dir/rc$1"
}
'''


def run(page, root, build_dir, timeout, verbose):
    blocks, cmds = parse(page)
    rel = os.path.relpath(page, root)
    ci = os.environ.get('CI', '') == 'true'
    failures = 0
    loud_skips = []

    for b in blocks:
        for d in b.directives:
            if d.startswith('file '):
                want = os.path.join(root, d[5:].strip())
                try:
                    text = open(want, encoding='utf-8').read()
                except OSError as e:
                    print(f'FAIL {rel}:{b.line}: {e}')
                    failures += 1
                    continue
                if text != b.text:
                    print(f'FAIL {rel}:{b.line}: this block is not the text of {d[5:].strip()}')
                    failures += 1
                else:
                    print(f'ok   {rel}:{b.line}: block is {d[5:].strip()}')

    arm64_reason = None
    torun = []
    for b in cmds:
        skip = [d for d in b.directives if d.split()[0] == 'skip'] if b.directives else []
        if skip:
            b.status, b.why = 'SKIPPED', skip[0][4:].strip() or 'marked skip'
            continue
        arm = [d.split() for d in b.directives if d and d.split()[0] == 'arm64']
        if arm:
            if arm64_reason is None:
                arm64_reason = arm64_ready(root)
            missing = [w[6:] for w in arm[0][1:] if w.startswith('needs=') and
                       not os.path.exists(os.path.join(root, w[6:]))]
            why = arm64_reason or (f'{missing[0]} was not built' if missing else '')
            if why:
                b.status, b.why = 'SKIPPED', 'arm64: ' + why
                loud_skips.append(b)
                continue
        torun.append(b)

    with tempfile.TemporaryDirectory(prefix='usft-docs-') as tmp:
        farm = make_farm(root, build_dir, tmp)
        home = os.path.join(tmp, 'home')
        os.mkdir(home)
        work = os.path.join(tmp, 'blocks')
        os.mkdir(work)
        script = [DRIVER_HEAD]
        for n, b in enumerate(torun):
            with open(os.path.join(work, f'block{n}.sh'), 'w') as f:
                f.write(b.text)
            script.append(f'echo {n} >"$__docs_dir/started"; __docs_run {n}; [ "$__docs_failed" = 0 ] || exit 0\n')
        env = dict(os.environ)
        env.update(HOME=home, LC_ALL='C', LANG='C')
        for v in ('PKG_CONFIG_PATH', 'LD_PRELOAD', 'USFT_OPTIONS', 'USFT_LOG',
                  'MAKEFLAGS', 'MAKELEVEL', 'MFLAGS'):
            env.pop(v, None)
        timed_out = False
        try:
            subprocess.run(['bash', '-c', ''.join(script), 'docs-driver', farm, work],
                           env=env, timeout=timeout, start_new_session=True)
        except subprocess.TimeoutExpired:
            timed_out = True
        for n, b in enumerate(torun):
            out_f = os.path.join(work, f'out{n}')
            rc_f = os.path.join(work, f'rc{n}')
            out = open(out_f, errors='replace').read() if os.path.exists(out_f) else ''
            b.output = out
            if not os.path.exists(rc_f):
                if os.path.exists(out_f):
                    b.status = 'FAIL'
                    b.why = f'timed out after {timeout} s' if timed_out else 'the block ended the shell (exit?)'
                else:
                    b.status, b.why = 'NOT-RUN', 'an earlier block failed'
                continue
            if open(rc_f).read().strip() != '0':
                b.status, b.why = 'FAIL', 'a command failed'
            elif b.expect is not None and not match_output(b.expect, out):
                hint = first_mismatch(b.expect, out)
                b.status = 'FAIL'
                b.why = f'output differs from the ```output block at line {b.expect_line}' + \
                    (f'; no line matches: {hint!r}' if hint else ' (order or extra lines)')
            else:
                b.status = 'PASS'

    for b in cmds:
        first = b.text.strip().split('\n')[0][:70]
        print(f'{b.status:8} {rel}:{b.line}: {first}' + (f'  [{b.why}]' if b.why else ''))
        if b.status == 'FAIL' or (verbose and b.status == 'PASS'):
            failures += b.status == 'FAIL'
            print('  --- commands\n' + indent(b.text))
            print('  --- output\n' + indent(getattr(b, 'output', '')))
            if b.expect is not None:
                print('  --- expected\n' + indent(b.expect))
    npass = sum(b.status == 'PASS' for b in cmds)
    nskip = sum(b.status == 'SKIPPED' for b in cmds)
    print(f'{rel}: {npass} blocks passed, {failures} failed, {nskip} skipped, '
          f'{sum(b.status == "NOT-RUN" for b in cmds)} not run')
    if loud_skips:
        bar = '#' * 72
        print(f'{bar}\n## SKIPPED {len(loud_skips)} arm64 block(s) of {rel}: {loud_skips[0].why}\n'
              f'## (scripts/setup-arm64.sh, then make test-arm64, to run them)\n{bar}')
        if ci:
            print('## CI=true: a skipped arm64 block is a failure')
            return 1
    if failures:
        return 1
    if not npass and loud_skips:
        return SKIP_RC
    return 0


def indent(text):
    return '\n'.join('    ' + x for x in text.rstrip('\n').split('\n'))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--source-root', required=True)
    ap.add_argument('--build-dir', required=True)
    ap.add_argument('--timeout', type=int, default=150, help='seconds for the whole page')
    ap.add_argument('-v', '--verbose', action='store_true', help='show every block\'s output')
    ap.add_argument('page')
    a = ap.parse_args()
    root = os.path.realpath(a.source_root)
    page = a.page if os.path.isabs(a.page) else os.path.join(root, a.page)
    sys.exit(run(page, root, os.path.realpath(a.build_dir), a.timeout, a.verbose))


if __name__ == '__main__':
    main()
