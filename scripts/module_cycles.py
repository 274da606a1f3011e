#!/usr/bin/env python3
"""Checks that no module of the stiction crate imports one that imports it back: neither
between top-level modules (src/X.rs, src/X/) nor between the children (files and folders)
of one top-level module.

An edge A -> B is any `crate::B` path (in a `use` or inline; `crate::Name` for a name the
crate root re-exports counts as its module) in a file under src/A/ or in
src/A.rs, for top-level modules A != B. Doc comments (`//!`, `///`) and line comments are
skipped, so intra-doc links do not count, and so is unit-test code (a file's `#[cfg(test)]` tail
and `tests.rs` files). Prints the edges of every strongly connected
component with more than one module and exits 1 if there is one; prints the module order
(dependencies first) and exits 0 otherwise.

Run: python3 scripts/module_cycles.py [--all]   (--all: print every edge)
"""
import re
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PATH = re.compile(r"\bcrate::([A-Za-z_][A-Za-z0-9_]*)")
ROOT_REEXPORT = re.compile(r"^pub use ([a-z_][a-z0-9_]*)::(\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*);", re.M)
USE_GROUP = re.compile(r"\buse\s+crate::\{([^;]*)\}", re.S)


def top_modules():
    mods = set()
    for p in SRC.iterdir():
        if p.is_dir() and (p / "mod.rs").exists():
            mods.add(p.name)
        elif p.suffix == ".rs" and p.stem not in ("lib", "main"):
            mods.add(p.stem)
    return mods


def root_names():
    """Names the crate root re-exports (`crate::Model` is `crate::model::Model`)."""
    names = {}
    for module, items in ROOT_REEXPORT.findall((SRC / "lib.rs").read_text()):
        for item in items.strip("{}").split(","):
            if item.strip():
                names[item.strip()] = module
    return names


def code_of(path):
    """The file's code without comments and without its `#[cfg(test)]` tail (unit
    tests, conventionally last in a file, and `tests.rs` files are not part of the
    library's dependency graph)."""
    if path.name == "tests.rs":
        return ""
    lines = []
    text = path.read_text().splitlines()
    for i, line in enumerate(text):
        stripped = line.lstrip()
        if stripped.startswith("#[cfg(test)]") and i + 1 < len(text) and text[i + 1].lstrip().startswith("mod "):
            break
        if stripped.startswith("//"):
            continue
        lines.append(line.split("//")[0] if "//" in line and '"' not in line else line)
    return "\n".join(lines)


def edges(mods):
    names = root_names()
    out = {}
    for m in sorted(mods):
        files = [SRC / f"{m}.rs"] if (SRC / f"{m}.rs").exists() else sorted((SRC / m).rglob("*.rs"))
        for f in files:
            code = code_of(f)
            targets = set(PATH.findall(code))
            for group in USE_GROUP.findall(code):
                targets |= {t.strip().split("::")[0] for t in group.split(",") if t.strip()}
            for t in {names.get(t, t) for t in targets}:
                if t in mods and t != m:
                    out.setdefault((m, t), set()).add(str(f.relative_to(SRC.parent)))
    return out


def sccs(mods, adj):
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(adj.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(sorted(comp))

    for v in sorted(mods):
        if v not in index:
            visit(v)
    return comps


def child_edges(top):
    """Edges between the children (files and folders) of top-level module `top`: `super::X`
    from a file directly in src/top/, `super::super::X` from one a folder deeper, and
    `crate::top::X`; a name that src/top/mod.rs re-exports counts as its child."""
    folder = SRC / top
    if not folder.is_dir():
        return set(), {}
    children = {p.stem for p in folder.glob("*.rs") if p.stem != "mod"} | {p.name for p in folder.iterdir() if p.is_dir()}
    names = {}
    for module, items in ROOT_REEXPORT.findall((folder / "mod.rs").read_text().replace("pub(crate) use", "pub use")):
        for item in items.strip("{}").split(","):
            if item.strip():
                names[item.strip()] = module
    out = {}
    for child in sorted(children):
        files = [folder / f"{child}.rs"] if (folder / f"{child}.rs").exists() else sorted((folder / child).rglob("*.rs"))
        for f in files:
            depth = len(f.relative_to(folder).parts)  # 1: src/top/x.rs, 2: src/top/sub/x.rs
            code = code_of(f)
            up = "super::" if depth == 1 else "super::super::" if depth == 2 else None
            targets = set(re.findall(rf"\bcrate::{top}::([A-Za-z_][A-Za-z0-9_]*)", code))
            if up:
                targets |= set(re.findall(rf"(?<![A-Za-z_:]){up}([A-Za-z_][A-Za-z0-9_]*)", code))
                for group in re.findall(rf"(?<![A-Za-z_:]){up}\{{([^;]*)\}}", code):
                    targets |= {t.strip().split("::")[0] for t in group.split(",") if t.strip()}
            for t in {names.get(t, t) for t in targets}:
                if t in children and t != child:
                    out.setdefault((child, t), set()).add(str(f.relative_to(SRC.parent)))
    return children, out


def main():
    mods = top_modules()
    status = 0
    for top in sorted(mods):
        children, e = child_edges(top)
        adj = {}
        for a, b in e:
            adj.setdefault(a, set()).add(b)
        for c in sccs(children, adj):
            if len(c) > 1:
                status = 1
                print(f"import cycle inside {top}: " + ", ".join(c))
                for (a, b), files in sorted(e.items()):
                    if a in c and b in c:
                        print(f"  {top}::{a} -> {top}::{b}   ({', '.join(sorted(files))})")
    e = edges(mods)
    adj = {}
    for a, b in e:
        adj.setdefault(a, set()).add(b)
    if "--all" in sys.argv:
        for (a, b), files in sorted(e.items()):
            print(f"{a} -> {b}   ({', '.join(sorted(files))})")
    comps = sccs(mods, adj)
    cyclic = [c for c in comps if len(c) > 1]
    if cyclic or status:
        for c in cyclic:
            print("import cycle among: " + ", ".join(c))
            for (a, b), files in sorted(e.items()):
                if a in c and b in c:
                    print(f"  {a} -> {b}   ({', '.join(sorted(files))})")
        return 1
    # Tarjan emits components in reverse topological order: dependencies first.
    print("no import cycles among the top-level modules nor among the children of any of them;")
    print("top-level modules, dependencies first: " + " < ".join(c[0] for c in comps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
