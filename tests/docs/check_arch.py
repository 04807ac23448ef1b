#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/docs/check_arch.py - the arch boundary holds: no preprocessor
conditional on an architecture (__x86_64__, __aarch64__, ...) in the
runtime or the CLI outside runtime/arch/ and the public usft/asm/ headers.
Generic code asks the arch through hooks with generic fallbacks
(ARCH_HAS_* in the arch's asm/ftrace.h, core/arch.h); the public header
that picks the arch's one is usft/asm/arch.h, inside the boundary."""
import argparse
import os
import re
import sys

ARCH_MACRO = re.compile(r'\b__(x86_64|amd64|i386|aarch64|arm|ARM_\w+|riscv|powerpc\w*|'
                        r'ppc\w*|s390x?|mips\w*|loongarch\w*)__?\b|\b__ARM_\w+\b')
COND = re.compile(r'^\s*#\s*(if|ifdef|ifndef|elif|elifdef|elifndef)\b(.*)$')
ROOTS = ('runtime', 'inject')
ALLOWED = ('runtime/arch/', 'runtime/include/usft/asm/')
EXCEPT = set()


def conditionals(text):
    """(line number, directive) of every #if-like line, continuations joined."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        no, line = i + 1, lines[i]
        while line.endswith('\\') and i + 1 < len(lines):
            i += 1
            line = line[:-1] + ' ' + lines[i]
        m = COND.match(line)
        if m:
            yield no, line.strip()
        i += 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--source-root', required=True)
    root = ap.parse_args().source_root
    bad = n = 0
    for top in ROOTS:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if not f.endswith(('.c', '.h', '.S', '.in')):
                    continue
                path = os.path.join(d, f)
                rel = os.path.relpath(path, root).replace(os.sep, '/')
                n += 1
                if rel.startswith(ALLOWED) or rel in EXCEPT:
                    continue
                for no, line in conditionals(open(path, encoding='utf-8').read()):
                    if ARCH_MACRO.search(line):
                        print(f'{rel}:{no}: arch conditional outside runtime/arch/: {line}\n'
                              f'  move it behind an arch hook with a generic fallback '
                              f'(an ARCH_HAS_* in asm/ftrace.h, see core/arch.h)')
                        bad += 1
    print(f'{n} files checked, {bad} arch conditionals outside runtime/arch/')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
