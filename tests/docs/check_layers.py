#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/docs/check_layers.py - the layers of docs/architecture.md include
each other in one direction only, so no two of them form a cycle.

Every #include "..." in runtime/ and inject/ is resolved to a file and both
ends to a layer; an include must go from a layer to one of a lower rank:

  inject/tracefs               `usft mount` (a FUSE client of the control channel; uses cli)
  inject/cli, inject/preload   the command and the shim
  tracers                      ordinary users of the public API
  arch                         runtime/arch/<arch>/*.c, *.S (implements core's hooks)
  core                         runtime/core/
  elf, mem                     leaves over libelf/libdw and mmap (no core)
  asm                          runtime/arch/<arch>/asm/ (the arch's headers)
  compat, include              runtime/compat/, the public headers

Also: inject/cli/usft.c defines no function but main() and its own static
ones, so no command file calls into it (the commands share cli.c)."""
import argparse
import os
import re
import sys

RANK = {'inject/tracefs': 7, 'inject/cli': 6, 'inject/preload': 6, 'tracers': 5, 'arch': 4, 'core': 3,
        'elf': 2, 'mem': 2, 'asm': 1, 'compat': 0, 'include': 0}
SEARCH = ('runtime', 'runtime/tracers', 'runtime/arch/x86_64', 'runtime/arch/arm64',
          'runtime/include', 'inject/cli', 'inject/preload', 'inject/tracefs')
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
# a function definition at file scope that is not static
EXTERN_FN = re.compile(r'^(?!static\b)(?![#/ \t{}])[^;()=\n]*?\b(\w+)\(([^;]*?)\)\s*\n\{', re.M)


def layer(rel):
    p = rel.split('/')
    if p[0] == 'inject':
        return 'inject/' + p[1] if len(p) > 2 else None
    if p[0] != 'runtime' or len(p) < 3:
        return None
    if p[1] == 'arch':
        return 'asm' if 'asm' in p[3:-1] else 'arch'
    return p[1] if p[1] in RANK else None


def resolve(root, src_dir, name):
    for d in (src_dir,) + tuple(os.path.join(root, s) for s in SEARCH):
        path = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(path):
            return os.path.relpath(path, root).replace(os.sep, '/')
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--source-root', required=True)
    root = ap.parse_args().source_root
    bad, n, edges = 0, 0, set()
    for top in ('runtime', 'inject'):
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if not f.endswith(('.c', '.h', '.S')):
                    continue
                path = os.path.join(d, f)
                rel = os.path.relpath(path, root).replace(os.sep, '/')
                src = layer(rel)
                n += 1
                for name in INCLUDE.findall(open(path, encoding='utf-8').read()):
                    tgt = resolve(root, d, name)
                    dst = layer(tgt) if tgt else None
                    if not src or not dst or src == dst:
                        continue
                    edges.add((src, dst))
                    if RANK[dst] >= RANK[src]:
                        print(f'{rel}: includes "{name}" ({dst}/, rank {RANK[dst]}) from '
                              f'{src}/ (rank {RANK[src]}): a layer includes only lower ones '
                              f'(tests/docs/check_layers.py); move what both need down, or '
                              f'let the lower layer take a hook or callback')
                        bad += 1
    usft = open(os.path.join(root, 'inject/cli/usft.c'), encoding='utf-8').read()
    for m in EXTERN_FN.finditer(usft):
        if m.group(1) != 'main':
            print(f'inject/cli/usft.c: defines {m.group(1)}() for other files: usft.c only '
                  f'dispatches; shared helpers go in inject/cli/cli.c, a command in its own file')
            bad += 1
    graph = ', '.join(f'{a}->{b}' for a, b in sorted(edges))
    print(f'{n} files checked; layer includes: {graph}; {bad} problems')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
