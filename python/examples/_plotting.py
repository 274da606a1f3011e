"""Plotting helpers shared by the Python examples.

Every example takes ``--plot PATH.png`` (default ``target/<example>.png`` under the repository root)
and ``--no-plot``. Plots need matplotlib; without it an example prints a one-line notice and goes on.
"""

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def default_plot_path(name):
    """``target/<name>.png`` under the repository root."""
    return ROOT / "target" / f"{name}.png"


def add_plot_arguments(parser, name):
    """Adds ``--plot PATH.png`` and ``--no-plot`` to an example's argument parser."""
    default = default_plot_path(name)
    parser.add_argument("--plot", metavar="PATH.png", default=str(default),
                        help=f"write the plot to this PNG file (default: {default})")
    parser.add_argument("--no-plot", action="store_true", help="do not write a plot")


def plot_path(args):
    """The PNG path the parsed arguments ask for, or None (``--no-plot``)."""
    return None if args.no_plot else pathlib.Path(args.plot)


def pyplot(path):
    """matplotlib.pyplot on the non-interactive Agg backend, or None (with a notice) when
    matplotlib is not installed or ``path`` is None."""
    if path is None:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not installed: skipping the plot {path} (pip install matplotlib)")
        return None
    return plt


def save(fig, path):
    """Writes ``fig`` to ``path`` (creating its folder), closes it and says so."""
    import matplotlib.pyplot as plt

    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    print(f"wrote {path}")
    return path
