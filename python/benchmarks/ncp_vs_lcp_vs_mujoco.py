"""Issue #20's speed measurement, side by side in one run: the NCP solver
(``contact={"solver": "ncp"}``), the boxed LCP (the default) and MuJoCo's ``mj_step`` on the
same contact scenes (those of ``contact_scenes_vs_mujoco.py``: boxes of 1 kg, half extent
5 cm, μ = 0.5, dt = 1 ms), growing from one box to piles of 50 and 100.

Per scene and engine: the median and worst step time, the largest penetration over the run
(stiction: the deepest contact of the last constraint stage of each step; MuJoCo: the most
negative ``contact.dist``), how far a box centre moved (a pile at rest should not), and for
the NCP solver its Newton iterations per step, its inexact or unstandardized solves and its
Gauss–Seidel fallbacks (``stats["lcp_fallbacks"]``).
Each stiction run is a child process under a wall-clock budget (``--budget``): a run that
does not finish reports the steps it made.

Run: ``python python/benchmarks/ncp_vs_lcp_vs_mujoco.py [--seconds 0.5] [--budget 120]
[--write]``. ``--write`` replaces the section between the markers in docs/benchmarks.md.
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

import stiction

sys.path.insert(0, os.path.dirname(__file__))
from contact_scenes_vs_mujoco import DT, SCENES, box_centres, fmt_t, in_child, write_section  # noqa: E402

ORDER = ["box_on_ground", "four_boxes", "pile50", "pile100"]


def run_stiction(name, solver, seconds, budget, out):
    model, q0, _ = SCENES[name]()
    n = len(q0) // 7
    sim = stiction.Simulator(model, dt=DT, contact={"solver": solver})
    q, v, tau = q0.copy(), np.zeros(model.nv), np.zeros(model.nv)
    steps = int(round(seconds / DT))
    times, moved, depth = [], 0.0, 0.0
    start = time.perf_counter()
    for _ in range(steps):
        t0 = time.perf_counter()
        q, v = sim.step(q, v, tau)
        times.append(time.perf_counter() - t0)
        c = sim.last_constraints()
        if c is not None and len(c["depths"]):
            depth = max(depth, float(np.max(c["depths"])))
        moved = max(moved, float(np.max(np.linalg.norm(box_centres(q, n) - box_centres(q0, n), axis=1))))
        if time.perf_counter() - start > budget:
            break
    s = sim.stats
    out.put({
        "steps": len(times), "of": steps, "median": statistics.median(times) if times else None,
        "worst": max(times) if times else None, "moved": moved, "depth": depth,
        "newton": s["newton_iterations"] / max(1, s["ncp_solves"]), "inexact": s["inexact_solves"],
        "unstandardized": s["unstandardized_solves"], "fallbacks": s["lcp_fallbacks"],
    })


def run_mujoco(name, seconds):
    import mujoco

    _, q0, xml = SCENES[name]()
    n = len(q0) // 7
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    times, moved, depth, ncon = [], 0.0, 0.0, 0
    for _ in range(int(round(seconds / DT))):
        t0 = time.perf_counter()
        mujoco.mj_step(m, d)
        times.append(time.perf_counter() - t0)
        ncon = max(ncon, d.ncon)
        if d.ncon:
            depth = max(depth, float(-np.min(d.contact.dist[: d.ncon])))
        moved = max(moved, float(np.max(np.linalg.norm(box_centres(d.qpos, n) - box_centres(q0, n), axis=1))))
    return {"median": statistics.median(times), "worst": max(times), "moved": moved, "depth": depth, "contacts": ncon}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=0.5, help="simulated time per scene")
    ap.add_argument("--budget", type=float, default=120.0, help="wall-clock budget of a stiction run (s)")
    ap.add_argument("--scenes", default=",".join(ORDER), help="comma-separated scene names")
    ap.add_argument("--write", action="store_true", help="write the table into docs/benchmarks.md")
    args = ap.parse_args()
    rows = ["| scene | contacts (MuJoCo) | engine | step (median / worst) | ratio to MuJoCo | "
            "max penetration | moved | Newton iterations per step; inexact, unstandardized solves; fallbacks |",
            "|---|---|---|---|---|---|---|---|"]
    for name in [s for s in args.scenes.split(",") if s]:
        mj = run_mujoco(name, args.seconds)
        rows.append(f"| `{name}` | {mj['contacts']} | MuJoCo `mj_step` | {fmt_t(mj['median'])} / {fmt_t(mj['worst'])} "
                    f"| 1 | {mj['depth'] * 1e3:.3f} mm | {mj['moved'] * 1e3:.2f} mm | — |")
        print(rows[-1], flush=True)
        for solver in ("boxed_lcp", "ncp"):
            st = in_child(run_stiction, (name, solver, args.seconds, args.budget), args.budget)
            if st is None or not st["steps"]:
                rows.append(f"| `{name}` | | stiction `{solver}` | no step in {args.budget + 60:.0f} s | — | — | — | — |")
            else:
                partial = "" if st["steps"] == st["of"] else f" ({st['steps']} of {st['of']} steps in the budget)"
                extra = (f"{st['newton']:.1f}; {st['inexact']}, {st['unstandardized']}; {st['fallbacks']}" if solver == "ncp" else "—")
                rows.append(
                    f"| `{name}` | | stiction `{solver}` | {fmt_t(st['median'])} / {fmt_t(st['worst'])}{partial} | "
                    f"{st['median'] / mj['median']:.1f}× | {st['depth'] * 1e3:.3f} mm | {st['moved'] * 1e3:.2f} mm | "
                    f"{extra} |")
            print(rows[-1], flush=True)
    text = "\n".join(rows) + "\n"
    print()
    print(text)
    if args.write:
        write_section("ncp-vs-lcp", text)

if __name__ == "__main__":
    main()
