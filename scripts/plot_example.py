#!/usr/bin/env python3
"""Turns the CSV file a Rust example writes (e.g. target/box_push.csv) into a PNG plot.

The first row names the columns. The first column (or --x NAME) is the horizontal axis; every other
column gets its own panel, on a log scale when it is positive and spans more than three decades (losses).
Empty cells and NaN are gaps (runs of different lengths in one file). --xy A,B adds a panel of column B
against column A (a path, e.g. --xy x,z), and may be repeated.

Usage: python3 scripts/plot_example.py CSV [--out PNG] [--x NAME] [--xy A,B ...] [--title TEXT]
(default PNG: the CSV's path with the extension .png). Needs matplotlib.
"""

import argparse
import csv
import math
import pathlib
import sys


def read_columns(path):
    """The header names and one list of floats per column (NaN for empty cells)."""
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f) if r and not r[0].startswith("#")]
    if len(rows) < 2:
        raise SystemExit(f"{path}: expected a header row and at least one data row")
    names = [n.strip() for n in rows[0]]
    columns = [[] for _ in names]
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(names):
            raise SystemExit(f"{path}:{line}: {len(row)} cells, the header names {len(names)} columns")
        for k, cell in enumerate(row):
            cell = cell.strip()
            try:
                columns[k].append(float(cell) if cell else math.nan)
            except ValueError:
                raise SystemExit(f"{path}:{line}: column '{names[k]}' holds '{cell}', not a number")
    return names, columns


def wants_log(values):
    finite = [v for v in values if math.isfinite(v)]
    return bool(finite) and min(finite) > 0 and max(finite) / min(finite) > 1e3


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", help="the CSV file (header row of column names)")
    parser.add_argument("--out", help="the PNG to write (default: the CSV path with .png)")
    parser.add_argument("--x", help="the column of the horizontal axis (default: the first)")
    parser.add_argument("--xy", action="append", default=[], metavar="A,B",
                        help="also plot column B against column A (a path); repeatable")
    parser.add_argument("--title", help="the figure title (default: the CSV file name)")
    args = parser.parse_args(argv)
    path = pathlib.Path(args.csv)
    if not path.is_file():
        raise SystemExit(f"{path}: no such file (run the example first)")
    names, columns = read_columns(path)
    x_name = args.x or names[0]
    if x_name not in names:
        raise SystemExit(f"--x {x_name}: no such column; the columns are {', '.join(names)}")
    pairs = []
    for spec in args.xy:
        pair = [s.strip() for s in spec.split(",")]
        if len(pair) != 2 or any(p not in names for p in pair):
            raise SystemExit(f"--xy {spec}: expected two of the columns {', '.join(names)}, as A,B")
        pairs.append(pair)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: pip install matplotlib", file=sys.stderr)
        return 1
    x = columns[names.index(x_name)]
    series = [(n, c) for n, c in zip(names, columns) if n != x_name]
    panels = len(series) + len(pairs)
    cols = 1 if panels <= 3 else 2
    rows = math.ceil(panels / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.5 * cols, 2.4 * rows + 0.6), squeeze=False)
    flat = [a for row in axes for a in row]
    for ax, (name, values) in zip(flat, series):
        (ax.semilogy if wants_log(values) else ax.plot)(x, values)
        ax.set_ylabel(name)
        ax.set_xlabel(x_name)
        ax.grid(alpha=0.3)
    for ax, (a, b) in zip(flat[len(series):], pairs):
        ax.plot(columns[names.index(a)], columns[names.index(b)])
        ax.set_xlabel(a)
        ax.set_ylabel(b)
        ax.set_aspect("equal", adjustable="datalim")
        ax.grid(alpha=0.3)
    for ax in flat[panels:]:
        ax.set_visible(False)
    fig.suptitle(args.title or path.name)
    fig.tight_layout()
    out = pathlib.Path(args.out) if args.out else path.with_suffix(".png")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=80)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
