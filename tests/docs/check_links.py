#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/docs/check_links.py - every relative link of README.md and
docs/**/*.md points at a file that exists, and every #anchor at a heading
of that file (GitHub's heading slugs)."""
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
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
