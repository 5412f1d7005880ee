#!/usr/bin/env python3
"""Byte-layout C structs of a public header as bit offsets, for the reference test.

The datapath formats (`struct mlx5_cqe64`, `mlx5_err_cqe`, `mlx5_wqe_*_seg`) are ordinary C
structs, not mlx5_ifc `u8 f[0xW]` layouts, so ifc_offsets.py cannot read them. This script
lets the host C compiler lay them out: it cuts the named structs (and the structs they use)
out of the header, compiles a program printing `offsetof` / `sizeof` of every named member
(members of anonymous unions and structs included, as C11 allows), and prints the same JSON
shape as ifc_offsets.py: {"source": L, "layouts": {ours: {"size_bits": N, "fields":
{name: [bit_offset, bit_width]}}}}. Reserved members (`rsvd*`, `reserved*`, `padding`) and
bit-fields are left out.

  c_struct_offsets.py HEADER --struct OURS=THEIRS [...] [--extra HEADER2] [--define N=V]
      [--source-label L]

THEIRS is the struct's name in the header; OURS the layout name in this crate. `--extra`
headers are searched for structs the first one uses but does not define.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

COMMENT_RE = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)
SKIP = re.compile(r'^(rsvd|reserved|padding)', re.I)


def strip(text):
    return COMMENT_RE.sub(' ', text)


def find_struct(texts, name):
    """The body text of `struct name {...}` in the first text that defines it."""
    for t in texts:
        m = re.search(r'\bstruct\s+(?:__rte_packed_begin\s+)?' + re.escape(name) + r'\s*\{', t)
        if not m:
            continue
        i = m.end()
        depth = 1
        j = i
        while depth:
            if t[j] == '{':
                depth += 1
            elif t[j] == '}':
                depth -= 1
            j += 1
        tail = re.match(r'[^;]*;', t[j:]).group(0)
        return t[m.start():j + len(tail)], t[i:j - 1]
    return None, None


def split_decls(body):
    """Top-level declarations of a struct body (split at ';' outside braces)."""
    out, depth, cur = [], 0, ''
    for ch in body:
        if ch == '{':
            depth += 1
        elif ch == '}':
            depth -= 1
        if ch == ';' and depth == 0:
            out.append(cur.strip())
            cur = ''
        else:
            cur += ch
    return [d for d in out if d]


def members(body):
    """Names of the members reachable by `s.name`, flattening anonymous aggregates."""
    names = []
    for d in split_decls(body):
        d = re.sub(r'#\s*(if|endif|else)[^\n]*', ' ', d).strip()
        m = re.match(r'^(?:struct|union)\s*(?:__rte_packed_begin\s*)?\{(.*)\}\s*(?:__rte_packed_end\s*)?(\w*)\s*$', d, re.S)
        if m:
            if not m.group(2):
                names += members(m.group(1))
            else:
                names.append(m.group(2))
            continue
        if ':' in d.split('[')[0]:
            continue  # a bit-field
        m = re.search(r'(\w+)\s*(\[[^\]]*\]\s*)*$', d)
        if m:
            names.append(m.group(1))
    return [n for n in names if not SKIP.match(n)]


def used_structs(body):
    return set(re.findall(r'\bstruct\s+(\w+)\s+\w', body))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('header')
    ap.add_argument('--struct', action='append', required=True)
    ap.add_argument('--extra', action='append', default=[])
    ap.add_argument('--define', action='append', default=[])
    ap.add_argument('--source-label', default='')
    a = ap.parse_args()
    texts = [strip(open(p, encoding='utf-8', errors='replace').read())
             for p in [a.header] + a.extra]
    pairs = [s.split('=', 1) if '=' in s else (s, s) for s in a.struct]
    defs, order, seen = {}, [], set()

    def need(name):
        if name in seen:
            return
        seen.add(name)
        full, body = find_struct(texts, name)
        if full is None:
            sys.exit(f'struct {name} is not defined in the headers given')
        for dep in used_structs(body):
            need(dep)
        defs[name] = (full, body)
        order.append(name)

    for _, theirs in pairs:
        need(theirs)
    prog = ['#include <stddef.h>', '#include <stdint.h>', '#include <stdio.h>',
            'typedef uint16_t __be16; typedef uint32_t __be32; typedef uint64_t __be64;',
            'typedef uint8_t u8; typedef uint16_t u16; typedef uint32_t u32; typedef uint64_t u64;',
            '#define __rte_packed_begin', '#define __rte_packed_end __attribute__((packed))',
            '#define __rte_aligned(a) __attribute__((aligned(a)))',
            '#define ETHERNET_LL_SIZE 6']
    for d in a.define:
        k, v = d.split('=', 1)
        prog.append(f'#define {k} {v}')
    prog += [defs[n][0] for n in order]
    prog.append('int main(void) {')
    for ours, theirs in pairs:
        prog.append(f'printf("L %s %zu\\n", "{ours}", sizeof(struct {theirs}));')
        for f in members(defs[theirs][1]):
            prog.append(f'printf("F %s %s %zu %zu\\n", "{ours}", "{f}", '
                        f'offsetof(struct {theirs}, {f}), sizeof(((struct {theirs} *)0)->{f}));')
    prog.append('return 0; }')
    with tempfile.TemporaryDirectory() as tmp:
        c = os.path.join(tmp, 'l.c')
        exe = os.path.join(tmp, 'l')
        open(c, 'w').write('\n'.join(prog) + '\n')
        subprocess.run(['cc', '-std=gnu11', '-w', c, '-o', exe], check=True)
        out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    layouts = {}
    for line in out.splitlines():
        p = line.split()
        if p[0] == 'L':
            layouts[p[1]] = {'size_bits': int(p[2]) * 8, 'fields': {}}
        else:
            layouts[p[1]]['fields'][p[2]] = [int(p[3]) * 8, int(p[4]) * 8]
    print(json.dumps({'source': a.source_label, 'layouts': layouts}, indent=1))


if __name__ == '__main__':
    main()
