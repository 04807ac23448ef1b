#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/docs/check_links.py - every relative link of README.md and
docs/**/*.md points at a file that exists, and every #anchor at a heading
of that file (GitHub's heading slugs).

And every source stands alone: a document a source file, comment or page
names (`something.md`) is a file of the project, and nothing cites a
numbered section (`§2.4`) of a document a reader does not have."""
import argparse
import os
import re
import sys

LINK = re.compile(r'\[[^\]]*\]\(([^)\s]+)\)')


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r'[^\w\- ]', '', s)
    return s.replace(' ', '-')


def anchors(path):
    text = open(path, encoding='utf-8').read()
    text = re.sub(r'```.*?```', '', text, flags=re.S)
    return {slug(m.group(1)) for m in re.finditer(r'^#+\s+(.*)$', text, re.M)}


CITE = re.compile(r'(?<![\w./*-])((?:[\w.-]+/)*[\w-]+\.md)\b')
SECTION = re.compile(r'§\s*\d')
SKIP_DIRS = {'.git', '.cache', 'bench-results'}
# pages the project writes, not cites (scripts/bench.sh's report)
GENERATED = {'results.md'}
TEXT = re.compile(r'(\.(c|h|S|s|py|sh|cmake|txt|md|json|in|map|1|yml|yaml)|Makefile)$')


def sources(root):
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith('build'))
        for f in sorted(files):
            if TEXT.search(f):
                yield os.path.join(d, f)


def check_citations(root):
    """Documents named in sources must exist; no numbered-section citations."""
    files = list(sources(root))
    names = {os.path.basename(f) for f in files if f.endswith('.md')}
    # the docs checkers' own fixtures name pages that do not exist on purpose
    own = os.path.dirname(os.path.abspath(__file__))
    bad = n = 0
    for f in files:
        if os.path.dirname(os.path.abspath(f)) == own:
            continue
        try:
            text = open(f, encoding='utf-8').read()
        except (UnicodeDecodeError, OSError):
            continue
        rel = os.path.relpath(f, root)
        for no, line in enumerate(text.splitlines(), 1):
            for m in CITE.finditer(line):
                n += 1
                doc = m.group(1)
                if os.path.basename(doc) in GENERATED or '/NN-' in doc:
                    continue
                if any(os.path.exists(os.path.join(b, doc)) for b in
                       (os.path.dirname(f), root, os.path.join(root, 'docs'))):
                    continue
                if '/' not in doc and doc in names:
                    continue
                print(f'{rel}:{no}: cites {doc}, which is not in the project '
                      '(cite the kernel function and file, or a docs/ page)')
                bad += 1
            if SECTION.search(line):
                print(f'{rel}:{no}: cites a numbered section (§); name the kernel '
                      'function and file, or link a docs/ page heading')
                bad += 1
    print(f'{n} document citations checked in {len(files)} files, {bad} bad')
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--source-root', required=True)
    root = ap.parse_args().source_root
    pages = [os.path.join(root, 'README.md')]
    for d, _, files in os.walk(os.path.join(root, 'docs')):
        pages += [os.path.join(d, f) for f in files if f.endswith('.md')]
    bad = n = 0
    for page in sorted(pages):
        text = open(page, encoding='utf-8').read()
        text = re.sub(r'```.*?```', '', text, flags=re.S)
        for m in LINK.finditer(text):
            target = m.group(1)
            if re.match(r'^[a-z]+:', target):
                continue
            n += 1
            path, _, frag = target.partition('#')
            dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            rel = os.path.relpath(page, root)
            if not os.path.exists(dest):
                print(f'{rel}: broken link {target}')
                bad += 1
            elif frag and dest.endswith('.md') and frag not in anchors(dest):
                print(f'{rel}: no heading for #{frag} in {os.path.relpath(dest, root)}')
                bad += 1
    print(f'{n} links checked in {len(pages)} pages, {bad} broken')
    bad += check_citations(root)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
