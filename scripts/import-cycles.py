#!/usr/bin/env python3
"""Import cycles between the modules of each crate: `scripts/import-cycles.py` (run by `.ci/run`).

Crates cannot import each other in a cycle (Cargo forbids it); this checks the modules inside
each crate. Edges come from `crate::a::b` and `super::x` paths in non-test code (comments and
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
def graph(srcroot, depth):
    edges = {}
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
            src = '/'.join(me[:depth]) or '<root>'
            for m in re.finditer(r'\bcrate::((?:[a-z_0-9]+::)*[a-z_0-9]+)', t):
                parts = m.group(1).split('::')
                dst = '/'.join(parts[:depth])
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
