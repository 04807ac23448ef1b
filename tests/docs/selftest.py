#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/docs/selftest.py - the docs runner fails pages that are wrong:
an output that differs, a command that fails, a block that no longer equals
its file; and passes the right ones.  (Without this a runner that always
says "pass" would make every docs test meaningless.)"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_page  # noqa: E402

CASES = [
    # (name, page text, expected exit status of run_page)
    ('good', '```sh\necho "a  b"; echo 3.25 0x1F; ls build/CMakeCache.txt\n```\n'
             '```output\na b\n{num} {hex}\nbuild/CMakeCache.txt\n```\n', 0),
    ('elision', '```sh\nseq 1 5\n```\n```output\n1\n...\n5\n```\n', 0),
    ('state carries over', '```sh\ncd docs; X=1\n```\n```sh\necho $X ${PWD##*/}\n```\n'
                           '```output\n1 docs\n```\n', 0),
    ('wrong output', '```sh\necho 41\n```\n```output\n42\n```\n', 1),
    ('extra line', '```sh\nseq 1 3\n```\n```output\n1\n2\n```\n', 1),
    ('number is not a word', '```sh\necho x=abc\n```\n```output\nx={num}\n```\n', 1),
    ('failing command', '```sh\nfalse\necho after\n```\n', 1),
    ('failure stops the page', '```sh\nfalse\n```\n```sh\ntouch "$HOME/ran"\n```\n', 1),
    ('expected failure', '```sh\nfalse || echo "exit status $?"\n```\n'
                         '```output\nexit status 1\n```\n', 0),
    ('skip', '<!-- docs-test: skip not here -->\n```sh\nfalse\n```\n', 0),
    ('file drift', '<!-- docs-test: file tests/docs/CMakeLists.txt -->\n```cmake\nnot it\n```\n', 1),
]


def check_checkers(root):
    """check_options.py and check_links.py pass on the tree and fail on a
    copy whose options.md lost a row, whose page has a broken link, or whose
    source cites a document or a numbered section the project does not have."""
    import shutil
    bad = 0
    usft = None
    with tempfile.TemporaryDirectory() as tmp:
        fake = os.path.join(tmp, 'src')
        for d in ('runtime', 'inject'):
            shutil.copytree(os.path.join(root, d), os.path.join(fake, d))
        shutil.copytree(os.path.join(root, 'docs'), os.path.join(fake, 'docs'))
        for f in ('README.md', 'CHANGELOG.md'):
            shutil.copy(os.path.join(root, f), fake)
        # the rest of the tree (pages link to samples/, tests/, bench/...): links, not edited
        for d in sorted(os.listdir(root)):
            if (d in ('runtime', 'inject', 'docs') or d.startswith(('build', '.')) or
                    not os.path.isdir(os.path.join(root, d))):
                continue
            os.symlink(os.path.join(root, d), os.path.join(fake, d))
        for name, edit, script, extra in (
            ('options: a USFT_OPTIONS row removed', ('docs/options.md', '| `jmp` |', '| `jmpx` |'),
             'check_options.py', True),
            ('options: a record option undocumented', ('docs/options.md', '`--prefault`', '`--prefaultx`'),
             'check_options.py', True),
            ('links: a broken link', ('docs/README.md', '(options.md)', '(no-such-page.md)'),
             'check_links.py', False),
            ('links: a source cites a document not in the project',
             ('runtime/core/arch.h', 'THE arch contract.', 'THE arch contract (see ARCH.md).'),
             'check_links.py', False),
            ('links: a source cites a numbered section',
             ('runtime/core/arch.h', 'THE arch contract.', 'THE arch contract (see \u00a78).'),
             'check_links.py', False),
            ('arch: an arch #if in core',
             ('runtime/core/ftrace.c', '\n#include', '\n#if defined(__aarch64__)\n#endif\n#include'),
             'check_arch.py', False),
            ('arch: a continued arch #elif in mem',
             ('runtime/mem/execmem.c', '\n#include', '\n#if 0\n#elif 1 && \\\n  defined(__x86_64__)\n#endif\n#include'),
             'check_arch.py', False)):
            path = os.path.join(fake, edit[0])
            orig = open(path).read()
            for text, want in ((orig, 0), (orig.replace(edit[1], edit[2]), 1)):
                open(path, 'w').write(text)
                args = [sys.executable, os.path.join(HERE, script), '--source-root', fake]
                if extra:
                    usft = usft or os.environ.get('USFT_CLI')
                    if not usft:
                        continue
                    args += ['--usft', usft]
                r = subprocess.run(args, capture_output=True, text=True)
                ok = (r.returncode != 0) == bool(want)
                bad += not ok
                print(f'{"ok  " if ok else "FAIL"} {name} ({"edited" if want else "as is"}): '
                      f'exit {r.returncode}')
                if not ok:
                    print(r.stdout[-2000:] + r.stderr[-2000:])
            open(path, 'w').write(orig)
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--source-root', required=True)
    ap.add_argument('--build-dir', required=True)
    a = ap.parse_args()
    bad = 0
    assert run_page.match_output('{num}\n...\n', '1\n2\n')
    assert not run_page.match_output('{num}\n', 'one\n')
    with tempfile.TemporaryDirectory() as tmp:
        for name, text, want in CASES:
            page = os.path.join(tmp, 'page.md')
            with open(page, 'w') as f:
                f.write(text)
            r = subprocess.run([sys.executable, os.path.join(HERE, 'run_page.py'),
                                '--source-root', a.source_root, '--build-dir', a.build_dir,
                                '--timeout', '30', page],
                               capture_output=True, text=True, env=dict(os.environ, CI=''))
            ok = r.returncode == want
            bad += not ok
            print(f'{"ok  " if ok else "FAIL"} {name}: exit {r.returncode}, want {want}')
            if not ok:
                print(r.stdout + r.stderr)
    bad += check_checkers(a.source_root)
    print(f'{bad} failures')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
