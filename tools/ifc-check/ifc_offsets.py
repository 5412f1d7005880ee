#!/usr/bin/env python3
"""Compute bit offsets of mlx5_ifc-style layouts from a C header.

Parses every `struct|union mlx5_ifc_<name>_bits {...};` of a header in the
style of Linux include/linux/mlx5/mlx5_ifc.h (rdma-core, DPDK mlx5_prm.h and
snap-rdma use the same convention: `u8 f[0xW]` is a field of W *bits*).

  ifc_offsets.py HEADER [--only a,b] [--source-label L]
      -> {"source": L, "layouts": {"<name>": {"size_bits": N,
                                    "fields": {"<field>": [bit_off, bit_width]}}}}
  ifc_offsets.py HEADER --compare OURS.json [--only a,b]
      -> prints differing fields/sizes of common layouts; exit 1 if any field
         differs.
  ifc_offsets.py --selftest

Rules: offsets are bits from the start of the layout; `reserved*` fields are
omitted (their width still counts); `u8 f[N][0xW]` is one entry [off, N*W]; a
bare `u8 f;` is 1 bit; a nested `struct/union X f[N]` is listed as
[off, N*size(X)] and its members are flattened recursively as `f.inner` -- for
arrays only element 0 is flattened; anonymous inline unions/structs (and the
MS-style `struct mlx5_ifc_X_bits;`) contribute their members without prefix.
Undefined types or unresolvable array sizes give width null (and null offsets
for later fields of the same struct) plus a warning on stderr. Non-ifc structs
are parsed only when referenced. A layout defined twice: the first one wins.
"""
import argparse
import ast
import json
import operator as op
import re
import sys

TOKEN_RE = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|[A-Za-z_]\w*'
                      r'|0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*|<<|>>|\S')
COMMENT_RE = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', re.S)
DEFINE_RE = re.compile(r'#\s*define\s+([A-Za-z_]\w*)\b(?!\()\s*(.*)')
IDENT_RE = re.compile(r'[A-Za-z_]\w*$')
IFC_RE = re.compile(r'mlx5_ifc_(\w+)_bits$')
SCALAR_TYPES = ('u8', 'uint8_t')
BUILTIN_CONSTS = {'CHAR_BIT': ['8']}
OPS = {ast.Add: op.add, ast.Sub: op.sub, ast.Mult: op.mul, ast.Div: op.floordiv,
       ast.FloorDiv: op.floordiv, ast.Mod: op.mod, ast.LShift: op.lshift,
       ast.RShift: op.rshift, ast.BitOr: op.or_, ast.BitAnd: op.and_,
       ast.BitXor: op.xor, ast.USub: op.neg, ast.UAdd: op.pos, ast.Invert: op.invert}


def c_int(tok):
    """Value of a C integer literal (hex, octal, decimal; u/l suffixes)."""
    t = tok.rstrip('uUlL')
    if t[:2].lower() == '0x':
        return int(t, 16)
    return int(t, 8) if len(t) > 1 and t[0] == '0' else int(t)


def safe_eval(expr):
    """Evaluate integer arithmetic (C `/` is integer division), no eval()."""
    def ev(n):
        if isinstance(n, ast.Constant) and type(n.value) is int:
            return n.value
        if isinstance(n, ast.BinOp) and type(n.op) in OPS:
            return OPS[type(n.op)](ev(n.left), ev(n.right))
        if isinstance(n, ast.UnaryOp) and type(n.op) in OPS:
            return OPS[type(n.op)](ev(n.operand))
        raise ValueError('unsupported expression')
    return ev(ast.parse(expr, mode='eval').body)


class Layout:
    """A struct or union body: Member objects in source order."""
    def __init__(self, kind, tag=None):
        self.kind, self.tag, self.members = kind, tag, []


class Member:
    """name None => anonymous. typ: 'u8' (scalar, `width` bits each), a tag
    string (named struct/union) or an inline Layout. count: array elements."""
    def __init__(self, name, typ, count, width=None):
        self.name, self.typ, self.count, self.width = name, typ, count, width


class Header:
    def __init__(self, text):
        self.defines, self.enums = {}, {}  # name -> expression tokens
        self.layouts = {}                  # tag -> Layout (first definition)
        self.pending = {}                  # non-ifc tag -> (token index, kind)
        self.warnings = {}                 # message -> occurrence count
        self._sizes, self._busy = {}, set()
        self.toks = self._lex(text)
        self._parse_top()

    def warn(self, msg):
        self.warnings[msg] = self.warnings.get(msg, 0) + 1

    def _lex(self, text):
        """Drop comments, record object-like #defines, drop all # lines."""
        text = COMMENT_RE.sub(lambda m: m.group(1) or ' ', text)
        kept = []
        for line in text.replace('\\\n', ' ').split('\n'):
            if line.lstrip().startswith('#'):
                m = DEFINE_RE.match(line.strip())
                if m:
                    self.defines[m.group(1)] = TOKEN_RE.findall(m.group(2))
            else:
                kept.append(line)
        return TOKEN_RE.findall('\n'.join(kept))

    # ---- constants ------------------------------------------------------
    def const(self, name, seen=()):
        """Value of a #define / enum constant, or None."""
        toks = self.defines.get(name, self.enums.get(name, BUILTIN_CONSTS.get(name)))
        if toks is None or name in seen:
            return None
        return self.eval_tokens(toks, seen + (name,), quiet=True)

    def eval_tokens(self, toks, seen=(), quiet=False):
        out = []
        for t in toks:
            if IDENT_RE.match(t):
                v = self.const(t, seen)
                if v is None:
                    return None if quiet else self.warn('cannot resolve constant %r' % t)
                out.append('(%d)' % v)
            else:
                out.append(str(c_int(t)) if t[0].isdigit() else t)
        try:
            return safe_eval(' '.join(out))
        except (ValueError, SyntaxError, ZeroDivisionError, TypeError):
            return None if quiet else self.warn('cannot evaluate %r' % ' '.join(toks))

    # ---- parsing --------------------------------------------------------
    def _skip_balanced(self, i):
        """toks[i] is '{'; return the index after its matching '}'."""
        depth = 0
        while i < len(self.toks):
            depth += {'{': 1, '}': -1}.get(self.toks[i], 0)
            i += 1
            if depth == 0:
                break
        return i

    def _parse_top(self):
        t, i = self.toks, 0
        while i < len(t):
            if t[i] in ('struct', 'union') and i + 2 < len(t) and \
                    IDENT_RE.match(t[i + 1]) and t[i + 2] == '{':
                if IFC_RE.match(t[i + 1]):
                    lay, i = self._parse_body(i + 3, t[i], t[i + 1])
                    self._register(lay)
                else:                       # other struct: parse if referenced
                    self.pending.setdefault(t[i + 1], (i + 3, t[i]))
                    i = self._skip_balanced(i + 2)
            elif t[i] == 'enum':
                j = i + 1 + bool(i + 1 < len(t) and IDENT_RE.match(t[i + 1]))
                i = self._parse_enum(j + 1) if j < len(t) and t[j] == '{' else i + 1
            elif t[i] == '{':
                i = self._skip_balanced(i)  # function bodies, initialisers...
            else:
                i += 1

    def _register(self, lay):
        if lay.tag in self.layouts:
            self.warn('duplicate definition of %s (keeping the first)' % lay.tag)
        else:
            self.layouts[lay.tag] = lay

    def _parse_enum(self, i):
        """Parse `A [= expr], ... }`; values are evaluated lazily."""
        t, prev = self.toks, None
        while i < len(t) and t[i] != '}':
            name, i = t[i], i + 1
            expr = [prev, '+', '1'] if prev else ['0']
            if i < len(t) and t[i] == '=':
                j, depth = i + 1, 0
                while j < len(t) and not (depth == 0 and t[j] in ',}'):
                    depth += {'(': 1, ')': -1}.get(t[j], 0)
                    j += 1
                expr, i = t[i + 1:j], j
            if IDENT_RE.match(name):
                self.enums.setdefault(name, expr)
                prev = name
            i += i < len(t) and t[i] == ','
        return i + 1

    def _parse_body(self, i, kind, tag=None):
        """Parse members from toks[i] to the closing brace; return (Layout, i)."""
        t, lay = self.toks, Layout(kind, tag)
        where = tag or 'anonymous ' + kind
        while i < len(t) and t[i] != '}':
            if t[i] == ';':
                i += 1
                continue
            if t[i] in ('struct', 'union'):
                ukind, utag, i = t[i], None, i + 1
                if IDENT_RE.match(t[i]):
                    utag, i = t[i], i + 1
                typ = utag
                if t[i] == '{':
                    typ, i = self._parse_body(i + 1, ukind, utag)
                    if utag:
                        self._register(typ)  # tagged definition nested inline
            elif t[i] in SCALAR_TYPES:
                typ, i = 'u8', i + 1
            else:
                j = i
                while j < len(t) and t[j] not in ';}':
                    j = self._skip_balanced(j) if t[j] == '{' else j + 1
                self.warn('%s: skipped member %r' % (where, ' '.join(t[i:j])))
                i = j
                continue
            while True:                     # declarators: name[d1][d2], ...
                name = None
                if IDENT_RE.match(t[i]):
                    name, i = t[i], i + 1
                dims = []
                while t[i] == '[':
                    j = t.index(']', i)
                    dims.append(self.eval_tokens(t[i + 1:j]) if j > i + 1 else 0)
                    i = j + 1
                width = None
                if typ == 'u8':             # last dimension is the bit width
                    width, dims = (dims[-1], dims[:-1]) if dims else (1, [])
                count = 1
                for d in dims:
                    count = None if count is None or d is None else count * d
                lay.members.append(Member(name, typ, count, width))
                if t[i] != ',':
                    break
                i += 1
        return lay, i + 1

    # ---- layout computation ---------------------------------------------
    def resolve(self, typ):
        """Layout of a member type (inline Layout or tag) or None."""
        if typ == 'u8' or isinstance(typ, Layout):
            return None if typ == 'u8' else typ
        if typ not in self.layouts and typ in self.pending:
            self._register(self._parse_body(*self.pending.pop(typ), typ)[0])
        if typ not in self.layouts:
            self.warn('undefined type %s' % typ)
        return self.layouts.get(typ)

    def member_width(self, m):
        if m.typ == 'u8':
            unit = m.width
        else:
            lay = self.resolve(m.typ)
            unit = None if lay is None else self.size(lay)
        return None if unit is None or m.count is None else unit * m.count

    def size(self, lay):
        key = id(lay)
        if key not in self._sizes:
            if key in self._busy:
                self.warn('recursive layout %s' % lay.tag)
                return None
            self._busy.add(key)
            widths = [self.member_width(m) for m in lay.members]
            self._busy.discard(key)
            self._sizes[key] = None if None in widths else \
                (sum if lay.kind == 'struct' else max)(widths or [0])
        return self._sizes[key]

    def flatten(self, lay, base=0, prefix='', out=None):
        """Fill out[prefix + field] = [offset, width] for lay placed at base."""
        out = {} if out is None else out
        off = 0
        for m in lay.members:
            w = self.member_width(m)
            o = None if base is None or off is None else base + off
            inner = self.resolve(m.typ)
            if m.name is None:
                if inner is not None:       # anonymous: members without prefix
                    self.flatten(inner, o, prefix, out)
            elif not m.name.startswith('reserved'):
                key = prefix + m.name
                if key in out:
                    self.warn('%s: duplicate field %s' % (lay.tag, key))
                else:
                    out[key] = [o, w]
                if inner is not None:       # arrays: element 0 only
                    self.flatten(inner, o, key + '.', out)
            if lay.kind == 'struct':
                off = None if off is None or w is None else off + w
        return out

    def result(self, only=None):
        res = {}
        for tag, lay in list(self.layouts.items()):
            m = IFC_RE.match(tag)
            if m and (only is None or m.group(1) in only):
                res[m.group(1)] = {'size_bits': self.size(lay),
                                   'fields': self.flatten(lay)}
        return res


def compare(ref, ours, only=None):
    """Print differences (reference vs ours); return the number of mismatches."""
    keep = lambda d: {n: v for n, v in d.items() if only is None or n in only}
    ref, ours = keep(ref), keep(ours)
    st = dict(match=0, mismatch=0, unknown_in_ref=0, only_in_ref=0, only_in_ours=0)
    for name in (n for n in ref if n in ours):
        rl, ol = ref[name], ours[name]
        rf, of = rl.get('fields', {}), ol.get('fields', {})
        lines = []
        if rl.get('size_bits') != ol.get('size_bits'):
            lines.append('  size_bits: ref=%s ours=%s'
                         % (rl.get('size_bits'), ol.get('size_bits')))
        for f, rv in rf.items():
            if f not in of:
                st['only_in_ref'] += 1
            elif None in rv:
                st['unknown_in_ref'] += 1
            elif list(rv) != list(of[f] or ()):
                st['mismatch'] += 1
                lines.append('  %s: ref=%s ours=%s' % (f, list(rv), of[f]))
            else:
                st['match'] += 1
        st['only_in_ours'] += sum(f not in rf for f in of)
        if lines:
            print('layout %s%s:' % (name, ' (provisional)' if ol.get('provisional') else ''))
            print('\n'.join(lines))
    print('summary: %d layouts compared, %d only in ref, %d only in ours; fields: %s'
          % (sum(n in ours for n in ref), sum(n not in ours for n in ref),
             sum(n not in ref for n in ours),
             ', '.join('%s=%d' % kv for kv in st.items())))
    return st['mismatch']


SELFTEST_HEADER = r'''
/* sample header */
#define MLX5_NUM 2
#define MLX5_MACRO(x) ((x) + 1)
enum { MLX5_A = 3, MLX5_B, };                  // MLX5_B == 4
struct mlx5_ifc_outer_bits {
	u8 opcode[0x10];
	u8 reserved_at_10[0x10];                   /* not listed */
	struct mlx5_ifc_inner_bits inner;          // defined later
	u8 arr[MLX5_NUM][0x8];
	union mlx5_ifc_choice_bits choice;
	union { u8 raw[0x20]; struct mlx5_ifc_inner_bits alt; };
	struct mlx5_ifc_inner_bits many[MLX5_B];
	u8 pas[0][0x40];
};
union mlx5_ifc_choice_bits { u8 small[0x8]; uint8_t big[0x30]; };
struct mlx5_ifc_inner_bits { u8 a[0x4]; u8 reserved1[0x4]; u8 b[24]; };
struct mlx5_ifc_broken_bits {
	u8 x[0x8]; struct mlx5_ifc_missing_bits m; u8 y[MLX5_UNKNOWN];
};
'''


def selftest():
    h = Header(SELFTEST_HEADER)
    r = h.result()
    exp = {'opcode': [0, 16], 'inner': [32, 32], 'inner.a': [32, 4],
           'inner.b': [40, 24], 'arr': [64, 16], 'choice': [80, 48],
           'choice.small': [80, 8], 'choice.big': [80, 48], 'raw': [128, 32],
           'alt': [128, 32], 'alt.a': [128, 4], 'alt.b': [136, 24],
           'many': [160, 128], 'many.a': [160, 4], 'many.b': [168, 24],
           'pas': [288, 0]}
    assert r['outer'] == {'size_bits': 288, 'fields': exp}, r['outer']
    assert r['inner'] == {'size_bits': 32, 'fields': {'a': [0, 4], 'b': [8, 24]}}
    assert r['choice']['size_bits'] == 48
    assert r['broken'] == {'size_bits': None, 'fields': {
        'x': [0, 8], 'm': [8, None], 'y': [None, None]}}, r['broken']
    assert 'undefined type mlx5_ifc_missing_bits' in h.warnings, h.warnings
    assert "cannot resolve constant 'MLX5_UNKNOWN'" in h.warnings, h.warnings
    assert 'MLX5_MACRO' not in h.defines and h.const('MLX5_B') == 4
    print('selftest OK')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('header', nargs='?', help='C header file')
    ap.add_argument('--only', help='comma-separated layout names to output')
    ap.add_argument('--source-label', help='value of "source" (default: HEADER)')
    ap.add_argument('--compare', metavar='OURS.json')
    ap.add_argument('--selftest', action='store_true')
    a = ap.parse_args()
    if a.selftest:
        selftest()
        return 0
    if not a.header:
        ap.error('HEADER is required')
    only = set(a.only.split(',')) if a.only else None
    with open(a.header, encoding='utf-8', errors='replace') as f:
        h = Header(f.read())
    layouts = h.result(only)
    for msg, n in sorted(h.warnings.items()):
        print('warning: %s%s' % (msg, ' (x%d)' % n if n > 1 else ''), file=sys.stderr)
    for name in sorted((only or set()) - set(layouts)):
        print('warning: layout %s not found' % name, file=sys.stderr)
    if a.compare:
        with open(a.compare) as f:
            ours = json.load(f)
        return 1 if compare(layouts, ours.get('layouts', ours), only) else 0
    json.dump({'source': a.source_label or a.header, 'layouts': layouts},
              sys.stdout, indent=1)
    print()
    return 0


if __name__ == '__main__':
    sys.exit(main())
