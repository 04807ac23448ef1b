#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/docs/check_options.py - the option references agree with the code.

Sources of truth, read from the code:
  - USFT_OPTIONS keys: the table of runtime/core/options.c, and what
    `usft stat` prints;
  - environment variables: every getenv("USFT_...") in runtime/ and inject/;
  - command-line options: the getopt tables of inject/cli/record.c and
    inject/cli/usft.c and the flags inject/cli/list.c compares against.
Checked against them: docs/options.md (all three), docs/usft.1 (command
options, environment), `usft --help` and `usft help CMD` (command options).
Every option documented must exist and every existing one be documented.
"""
import argparse
import os
import re
import subprocess
import sys

COMMANDS = ('record', 'report', 'list', 'stat')
# accepted everywhere and documented once in general terms
GENERIC = {'-h', '--help'}
OPT = re.compile(r'(?<![\w-])(--?[A-Za-z][\w-]*)')

problems = []


def check(what, documented, actual):
    for o in sorted(documented - actual):
        problems.append(f'{what}: documents {o}, which does not exist')
    for o in sorted(actual - documented):
        problems.append(f'{what}: does not document {o}')


def read(root, path):
    return open(os.path.join(root, path), encoding='utf-8').read()


# ---- the code -----------------------------------------------------------------

def code_usft_options(root):
    src = read(root, 'runtime/core/options.c')
    table = src[src.index('usft_option_table[]'):]
    table = table[:table.index('};')]
    return set(re.findall(r'\{\s*"(\w+)",\s*&usft_opts\.', table))


def code_env(root):
    names = set()
    for d in ('runtime', 'inject'):
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for f in files:
                if f.endswith(('.c', '.h')):
                    text = open(os.path.join(dirpath, f), encoding='utf-8').read()
                    names |= set(re.findall(r'getenv\("(USFT_\w+)"\)', text))
    return names


def function_body(src, name):
    m = re.search(r'\n(?:static )?int ' + re.escape(name) + r'\(int argc, char \*\*argv\)\n\{', src)
    if not m:
        raise SystemExit(f'check_options: cannot find {name}() in the CLI sources')
    depth, i = 0, m.end() - 1
    for j in range(i, len(src)):
        depth += {'{': 1, '}': -1}.get(src[j], 0)
        if depth == 0:
            return src[i:j]
    raise SystemExit(f'check_options: unbalanced {name}()')


def code_cli(root):
    usft = read(root, 'inject/cli/usft.c')
    out = {}
    for cmd, src, fn in (('record', read(root, 'inject/cli/record.c'), 'usft_cmd_record'),
                         ('report', usft, 'cmd_report')):
        body = function_body(src, fn)
        longs = re.findall(r'\{\s*"([\w-]+)",\s*(?:required|no|optional)_argument', body)
        optstring = re.search(r'getopt_long\(argc, argv, "([^"]*)"', body).group(1)
        shorts = {'-' + c for c in optstring.lstrip('+:') if c.isalnum()}
        out[cmd] = {'--' + x for x in longs} | shorts
    out['list'] = set(re.findall(r'"(--?[A-Za-z][\w-]*)"',
                                 function_body(read(root, 'inject/cli/list.c'), 'usft_cmd_list')))
    out['stat'] = set(re.findall(r'"(--?[A-Za-z][\w-]*)"', function_body(usft, 'cmd_stat')))
    main = function_body(usft, 'main')
    out['usft'] = set(re.findall(r'"(--?[A-Za-z][\w-]*)"', main))
    return {k: v - GENERIC for k, v in out.items()}


# ---- the documents -------------------------------------------------------------

def section(text, start, stop):
    """text from the line matching @start up to the next line matching @stop"""
    m = re.search(start, text, re.M)
    if not m:
        return None
    rest = text[m.end():]
    n = re.search(stop, rest, re.M)
    return rest[:n.start()] if n else rest


def options_md(root):
    md = read(root, 'docs/options.md')
    res = {}
    usft_opts = section(md, r'^## `USFT_OPTIONS`', r'^## ')
    env = section(md, r'^## Environment variables', r'^## ')
    if usft_opts is None or env is None:
        raise SystemExit('docs/options.md: needs the sections "## `USFT_OPTIONS`..." and '
                         '"## Environment variables"')
    res['keys'] = set(re.findall(r'^\|\s*`(\w+)`', usft_opts, re.M))
    res['env'] = set(re.findall(r'^\|\s*`(USFT_\w+)`', env, re.M))
    cli = {}
    for cmd in COMMANDS + ('usft',):
        title = r'^### `usft`\s*$' if cmd == 'usft' else r'^### `usft ' + cmd + '`'
        s = section(md, title, r'^##')
        if s is None:
            problems.append(f'docs/options.md: no "### `usft {cmd}`" section'
                            if cmd != 'usft' else 'docs/options.md: no "### `usft`" section')
            continue
        rows = re.findall(r'^\|([^|\n]*)\|', s, re.M)
        opts = set()
        for r in rows:
            opts |= {o for o in re.findall(r'`(--?[A-Za-z][\w-]*)', r)}
        cli[cmd] = opts - GENERIC
    res['cli'] = cli
    return res


def unroff(text):
    return text.replace('\\-', '-').replace('\\fR', '').replace('\\fP', '').replace('\\fB', '')


def man_page(root):
    man = unroff(read(root, 'docs/usft.1'))
    cmds = section(man, r'^\.SH COMMANDS', r'^\.SH ')
    res = {}
    for cmd in COMMANDS:
        s = section(cmds, r'^\.B ' + cmd + r'\s*$', r'^\.TP\n\.B \w+\s*$|\Z')
        syn = section(man, r'^\.B usft ' + cmd + r'\s*$', r'^\.br|^\.SH')
        if s is None or syn is None:
            problems.append(f'docs/usft.1: no entry for {cmd}')
            continue
        # option lines only: .TP items and the synopsis
        body = '\n'.join(l for l in s.split('\n') if l.startswith(('.BI', '.BR', '.B ')))
        res[cmd] = set(OPT.findall(body + syn)) - GENERIC
    syn_all = section(man, r'^\.SH SYNOPSIS', r'^\.SH ')
    res['usft'] = set(OPT.findall('\n'.join(l for l in syn_all.split('\n')
                                             if l.startswith('.B usft') or 'version' in l))) - GENERIC
    env = section(man, r'^\.SH ENVIRONMENT', r'^\.SH ')
    res['env'] = set(re.findall(r'\b(USFT_\w+)', env))
    return res


def help_text(usft, cmd):
    args = [usft, '--help'] if cmd == 'usft' else [usft, 'help', cmd]
    r = subprocess.run(args, capture_output=True, text=True, timeout=30)
    if r.returncode:
        problems.append(f'{" ".join(args[1:])}: exit status {r.returncode}')
    lines = r.stdout.split('\n')
    if cmd != 'usft':
        lines = lines[1:] if lines and lines[0].startswith('usage:') else lines
        text = '\n'.join(l for l in lines if l.startswith(' ') or l.startswith('usage'))
        first = r.stdout.split('\n')[0]
        return (set(OPT.findall(text)) | set(OPT.findall(first))) - GENERIC
    return set(OPT.findall(r.stdout)) - GENERIC


def man_version_problem(root, usft):
    """The .TH footer of docs/usft.1 must name the version `usft --version` prints."""
    th = re.search(r'^\.TH\s+\S+\s+\S+\s+"[^"]*"\s+"([^"]*)"', read(root, 'docs/usft.1'), re.M)
    out = subprocess.run([usft, '--version'], capture_output=True, text=True, timeout=30).stdout.strip()
    if not th:
        return 'docs/usft.1: no .TH line with a "usft VERSION" footer'
    if th.group(1) != out:
        return (f'docs/usft.1 footer says "{th.group(1)}" but `usft --version` prints "{out}": '
                f'change the .TH line to "{out}"')
    return None


def stat_options(usft):
    r = subprocess.run([usft, 'stat'], capture_output=True, text=True, timeout=30,
                       env={k: v for k, v in os.environ.items() if k != 'USFT_OPTIONS'})
    opts = section(r.stdout, r'^options:', r'^\S')
    return set(re.findall(r'^  (\w+)\s', opts or '', re.M))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--source-root', required=True)
    ap.add_argument('--usft', required=True, help='the built usft command')
    a = ap.parse_args()
    root = a.source_root

    keys = code_usft_options(root)
    if len(keys) < 5:
        raise SystemExit(f'check_options: read only {sorted(keys)} from runtime/core/options.c')
    env = code_env(root)
    cli = code_cli(root)
    md = options_md(root)
    man = man_page(root)

    check('usft stat (USFT_OPTIONS keys vs runtime/core/options.c)', stat_options(a.usft), keys)
    check('docs/options.md USFT_OPTIONS table', md['keys'], keys)
    check('docs/options.md environment table', md['env'], env)
    check('docs/usft.1 ENVIRONMENT', man['env'], env)
    for cmd in COMMANDS + ('usft',):
        name = 'usft' if cmd == 'usft' else f'usft {cmd}'
        if cmd in md['cli']:
            check(f'docs/options.md "{name}"', md['cli'][cmd], cli[cmd])
        if cmd in man:
            check(f'docs/usft.1 {name}', man[cmd], cli[cmd])
        check(f'`{"usft --help" if cmd == "usft" else "usft help " + cmd}`',
              help_text(a.usft, cmd), cli[cmd])

    print(f'USFT_OPTIONS keys: {" ".join(sorted(keys))}')
    print(f'environment: {" ".join(sorted(env))}')
    for cmd in COMMANDS + ('usft',):
        print(f'{cmd}: {" ".join(sorted(cli[cmd]))}')
    v = man_version_problem(root, a.usft)
    if v:
        problems.append(v)
    for p in problems:
        print('MISMATCH ' + p)
    print(f'{len(problems)} mismatches')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
