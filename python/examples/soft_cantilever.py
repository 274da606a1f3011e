"""A stable Neo-Hookean cantilever released from straight under gravity, from Python (the Rust
example `cargo run --release --example soft_cantilever` does the same): it swings down, rings
with the damping and settles on its static equilibrium. Backward Euler beside the implicit
midpoint rule, which damps less; the plot shows the tip height over time and the settled shape.

A 40 × 5 × 5 cm bar (E = 300 kPa, ν = 0.3, ρ = 1000 kg/m³; 8 × 2 × 2 cells, 192 tets), clamped at
x = 0, mass damping 3 /s and stiffness damping 5 ms, stepped for 4 s at dt = 5 ms.

Run: python python/examples/soft_cantilever.py [--steps N] [--plot PATH.png | --no-plot] [--html PATH.html]
"""

import argparse

import numpy as np

import stiction

from _plotting import add_plot_arguments, plot_path, pyplot, save

DT = 5e-3
STEPS = 800


def bar():
    mesh = stiction.TetMesh.box((8, 2, 2), (0.4, 0.05, 0.05), origin=(0.0, -0.025, -0.025))
    clamp = mesh.vertices_where(lambda p: p[0] == 0.0)
    body = stiction.SoftBody(mesh, material="neo_hookean", youngs_modulus=3e5, poisson=0.3, density=1000.0,
                             damping=(3.0, 5e-3), pin_vertices=clamp)
    tip = mesh.vertices_where(lambda p: p[0] == 0.4)
    return body, tip


def simulate(body, tip, integrator, steps=STEPS):
    x, v = body.rest_positions, np.zeros(body.ndof)
    controls = np.zeros((steps, body.ndof))
    rollout = body.rollout(x, v, controls, dt=DT, integrator=integrator)
    xs, _ = rollout.states
    tip_z = xs[:, [3 * i + 2 for i in tip]].mean(axis=1)
    iterations = np.mean([r["iterations"] for r in rollout.reports])
    return {"tip_z": np.concatenate([[0.0], tip_z]), "x": xs[-1], "iterations": iterations,
            "xs": np.vstack([x, xs])}


def plot(body, runs, equilibrium, path):
    plt = pyplot(path)
    if plt is None:
        return None
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    t = np.arange(len(next(iter(runs.values()))["tip_z"])) * DT
    for name, run in runs.items():
        ax[0].plot(t, 1e3 * run["tip_z"], label=f"{name} ({run['iterations']:.1f} Newton iterations per step)")
    ax[0].axhline(1e3 * equilibrium["tip_z"], color="k", ls=":", label="static equilibrium")
    ax[0].set_xlabel("t [s]")
    ax[0].set_ylabel("tip height [mm]")
    ax[0].set_title("Neo-Hookean cantilever released under gravity")
    ax[0].legend(fontsize=8)
    rest = body.rest_positions.reshape(-1, 3)
    for name, x, style in (("rest", body.rest_positions, "o"), ("after 4 s (backward Euler)", runs["backward Euler"]["x"], "s")):
        p = x.reshape(-1, 3)
        ax[1].plot(1e3 * p[:, 0], 1e3 * p[:, 2], style, ms=3, label=name)
    ax[1].set_aspect("equal")
    ax[1].set_xlabel("x [mm]")
    ax[1].set_ylabel("z [mm]")
    ax[1].set_title(f"vertices, side view ({len(rest)} vertices, {body.mesh.num_tets} tets)")
    ax[1].legend(fontsize=8)
    fig.tight_layout()
    return save(fig, path)


def page(body, run, path):
    """Writes the backward-Euler swing as a web page (stiction.viz, docs/viz.md): the bar's surface
    triangles moving with its vertices; returns ``path``."""
    from stiction.viz import Viewer

    return Viewer(body, title="soft cantilever (backward Euler)").animate(run["xs"], DT).save_html(path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=STEPS, help=f"steps of {DT * 1e3:g} ms (default {STEPS})")
    parser.add_argument("--html", metavar="PATH.html", help="write the swing as a web page (stiction.viz)")
    add_plot_arguments(parser, "soft_cantilever")
    args = parser.parse_args(argv)
    body, tip = bar()
    runs = {name: simulate(body, tip, integrator, args.steps)
            for name, integrator in (("backward Euler", "backward_euler"), ("implicit midpoint", "implicit_midpoint"))}
    x_eq, report = body.static_equilibrium()
    equilibrium = {"tip_z": x_eq[[3 * i + 2 for i in tip]].mean(), "iterations": report["iterations"]}
    print(f"{body.mesh.num_tets} tets, {args.steps} steps of {DT * 1e3:.0f} ms")
    for name, run in runs.items():
        print(f"  {name:<18} tip after {args.steps * DT:g} s {1e3 * run['tip_z'][-1]:8.2f} mm, {run['iterations']:.2f} Newton iterations per step")
    print(f"  static equilibrium tip {1e3 * equilibrium['tip_z']:8.2f} mm ({equilibrium['iterations']} Newton iterations)")
    out = {"runs": runs, "equilibrium": equilibrium, "plot": plot(body, runs, equilibrium, plot_path(args))}
    if args.html:
        out["html"] = page(body, runs["backward Euler"], args.html)
        print(f"wrote {args.html}")
    return out


if __name__ == "__main__":
    main()
