#!/usr/bin/env python3
"""Print a starting `layout!` declaration for one mlx5_ifc struct of a public header.

A development aid: the printed declaration (names, offsets, widths: facts of the PRM) is
reviewed and edited by hand before it goes into src/mlx5/layouts/. Reserved gaps are dropped.
Unions and anonymous members are printed as comments to be resolved by hand.

usage: gen_layout.py HEADER STRUCT [STRUCT ...]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ifc_offsets import IFC_RE, Header  # noqa: E402


def emit(h, tag):
    lay = h.layouts.get(tag) or h.layouts.get('mlx5_ifc_%s_bits' % tag)
    if lay is None:
        print('// %s: not in this header' % tag)
        return
    size = h.size(lay)
    print('layout! {')
    print('    pub %s: %#x {' % (tag, size))
    off = 0
    for m in lay.members:
        w = h.member_width(m)
        if m.name is not None and not m.name.startswith("reserved"):
            if m.typ in ("u8", "uint8_t"):
                if m.count == 1:
                    spec = '%#x' % m.width
                elif m.count == 0 or w == 0:
                    spec = '[%#x; flex]' % m.width
                else:
                    spec = '[%#x; %d]' % (m.width, m.count)
            else:
                inner = h.resolve(m.typ)
                name = None
                if isinstance(m.typ, str):
                    mt = IFC_RE.match(m.typ)
                    name = mt.group(1) if mt else m.typ
                if inner is not None and inner.kind == 'union' or name is None:
                    spec = '/* union or inline type: %s bits */' % w
                elif m.count == 1:
                    spec = name
                else:
                    spec = '[%s; %d]' % (name, m.count)
            print('        %s @ %#x : %s,' % (m.name, off, spec))
        if lay.kind == 'struct':
            off += w or 0
    print('    }')
    print('}')


def main():
    h = Header(open(sys.argv[1]).read())
    for tag in sys.argv[2:]:
        emit(h, tag)


if __name__ == '__main__':
    main()
