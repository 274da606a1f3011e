"""``python -m stiction.viz FILE.json -o out.html``: a trajectory JSON file (docs/viz.md) as a
self-contained web page."""

import argparse
import os
import sys

from . import InputError, json_to_html


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m stiction.viz", description=__doc__)
    parser.add_argument("file", help="a stiction-trajectory JSON file")
    parser.add_argument("-o", "--output", help="the page to write (default: FILE with .html)")
    args = parser.parse_args(argv)
    out = args.output or os.path.splitext(args.file)[0] + ".html"
    try:
        json_to_html(args.file, out)
    except (InputError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {out} ({os.path.getsize(out) / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
