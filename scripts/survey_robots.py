"""Loads every URDF of the `example-robot-data` package with stiction and with Pinocchio and
prints which stiction refuses, and why (docs/models.md, issue #16).

    pip install example-robot-data pin     # into the venv that has stiction
    python scripts/survey_robots.py [--no-meshes]
"""

import collections
import glob
import os
import sys
import warnings

import stiction

try:
    import pinocchio
except ImportError:  # the count of Pinocchio's loads is skipped
    pinocchio = None


def robots_dir():
    hits = glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages", "cmeel.prefix", "share",
                                  "example-robot-data", "robots"))
    if not hits:
        sys.exit("example-robot-data is not installed here (pip install example-robot-data)")
    return hits[0]


def main():
    root = robots_dir()
    share = os.path.dirname(os.path.dirname(root))
    meshes = "--no-meshes" not in sys.argv
    files = sorted(glob.glob(os.path.join(root, "**", "*.urdf"), recursive=True))
    loaded, reference, reasons = 0, 0, collections.Counter()
    for f in files:
        name = os.path.relpath(f, root)
        if pinocchio is not None:
            try:
                pinocchio.buildModelFromUrdf(f)
            except Exception:  # noqa: BLE001 - a file Pinocchio cannot load is not counted
                print(f"skip {name}: Pinocchio cannot load it")
                continue
        reference += 1
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                stiction.Model.from_urdf(f, package_dirs=[share], load_collision_meshes=meshes)
            loaded += 1
        except stiction.LoadError as e:
            reason = str(e).replace(f, "").lstrip(": ")
            print(f"FAIL {name}: {reason[:200]}")
            reasons[reason.split("(")[0].split(":")[-1].strip()[:60]] += 1
    print(f"{len(files)} files; {reference} {'loaded by Pinocchio' if pinocchio else 'tried'}; stiction loads {loaded}")
    for reason, n in reasons.most_common():
        print(f"  {n:3d}  {reason}")


if __name__ == "__main__":
    main()
