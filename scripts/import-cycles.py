#!/usr/bin/env python3
"""Import cycles between the modules of each crate: `scripts/import-cycles.py` (run by `.ci/run`).

Crates cannot import each other in a cycle (Cargo forbids it); this checks the modules inside
each crate. Edges come from `crate::a::b` (or `crate::<alias>::a::b`, where lib.rs says `use crate as
<alias>`) and `super::x` paths in non-test code (comments and
`#[cfg(test)] mod tests` tails are ignored), at every depth of the module tree (1 = top-level
modules, 2 = their children, ...). A module using its parent or its child is not a cycle (that is
how a Rust module tree reads); two siblings using each other is. Exits 1 when any cycle is found.
"""
import os, re, sys, itertools
def mods_of(path, srcroot):
    rel = os.path.relpath(path, srcroot)[:-3]
    parts = rel.split('/')
    if parts[-1] in ('mod', 'lib'): parts = parts[:-1]
    return parts
def strip_comments(t):
    return '\n'.join(l.split('//')[0] for l in t.split('\n'))
def crate_aliases(srcroot):
    """Names the crate gives itself (`pub(crate) use crate as tui;`): `crate::tui::x` is `crate::x`."""
    lib = os.path.join(srcroot, 'lib.rs')
    if not os.path.exists(lib): return []
    return re.findall(r'\buse crate as ([a-z_0-9]+);', open(lib).read())
def grouped(t, opener):
    """The paths of `crate::{a::b, c::{d, e}}` groups, each as its list of segments."""
    out = []
    for m in re.finditer(opener, t):
        depth, item, i, prefix = 1, '', m.end(), []
        def flush(item):
            path = [x for x in '::'.join(prefix + [item.strip()]).split('::') if x]
            if path and re.fullmatch(r'[a-z_0-9]+', path[0]): out.append(path)
        while i < len(t) and depth > 0:
            ch = t[i]
            if ch == '{':
                prefix.append(item.strip().rstrip(':').rstrip(':')); item = ''; depth += 1
            elif ch == '}':
                if item.strip(): flush(item)
                item = ''; depth -= 1
                if prefix: prefix.pop()
            elif ch == ',':
                if item.strip(): flush(item)
                item = ''
            else:
                item += ch
            i += 1
    return out
def graph(srcroot, depth):
    edges = {}
    aliases = crate_aliases(srcroot)
    for root, _, files in os.walk(srcroot):
        for f in files:
            if not f.endswith('.rs') or 'snapshots' in root: continue
            p = os.path.join(root, f)
            me = mods_of(p, srcroot)
            t = strip_comments(open(p).read())
            # drop #[cfg(test)] mod tests { ... } tails roughly
            k = t.find('#[cfg(test)]\nmod tests')
            if k >= 0: t = t[:k]
            if f.endswith('_tests.rs') or f == 'tests.rs': continue
            for a in aliases:
                t = re.sub(r'\bcrate::' + a + r'::', 'crate::', t)
            src = '/'.join(me[:depth]) or '<root>'
            for m in re.finditer(r'\bcrate::((?:[a-z_0-9]+::)*[a-z_0-9]+)', t):
                parts = m.group(1).split('::')
                dst = '/'.join(parts[:depth])
                if dst and dst != src and not src.startswith(dst + '/') and not dst.startswith(src + '/'):
                    edges.setdefault(src, set()).add(dst)
            for first in grouped(t, r'\bcrate::\{'):
                dst = '/'.join(first[:depth])
                if dst and dst != src and not src.startswith(dst + '/') and not dst.startswith(src + '/'):
                    edges.setdefault(src, set()).add(dst)
            for m in re.finditer(r'\bsuper::([a-z_0-9]+)', t):
                parent = me[:-1]
                dst = '/'.join((parent + [m.group(1)])[:depth])
                if dst and dst != src and not src.startswith(dst + '/') and not dst.startswith(src + '/'):
                    edges.setdefault(src, set()).add(dst)
    return edges
def sccs(edges):
    idx = {}; low = {}; st = []; on = set(); out = []; c = [0]
    nodes = set(edges) | {d for v in edges.values() for d in v}
    sys.setrecursionlimit(10000)
    def s(v):
        idx[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
        for w in edges.get(v, ()):
            if w not in idx: s(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], idx[w])
        if low[v] == idx[v]:
            comp = []
            while True:
                w = st.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: out.append(sorted(comp))
    for v in sorted(nodes):
        if v not in idx: s(v)
    return out
def main():
    import glob
    roots = sorted(glob.glob('crates/*/src')) + ['src']
    found = set()
    for srcroot in roots:
        for depth in range(1, 6):
            for comp in sccs(graph(srcroot, depth)):
                key = (srcroot, tuple(comp))
                if key not in found:
                    print(f'{srcroot}: import cycle between {", ".join(comp)}')
                    found.add(key)
    if found:
        sys.exit(1)
    print(f'no import cycle in {len(roots)} crates')

main()
