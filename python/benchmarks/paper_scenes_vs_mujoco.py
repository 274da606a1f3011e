"""Issue #20's scenes of the NCP paper side by side in one run: the 20-block arch
(``stiction.samples.arch``, μ = 0.6) and the pile of 54 tables (``stiction.samples.table_pile``,
4.7 kg, μ = 0.7), h = 1/120 s, stepped from rest by Python calls under

- stiction's NCP solver with the paper's conjugate-residual setting (``cr``: 6 Newton × 20 linear
  iterations on the arch, 4 × 20 on the pile),
- the NCP solver with direct solves to convergence (``ncp``),
- the boxed LCP (the default solver, ``boxed_lcp``),
- MuJoCo's ``mj_step`` on the same bodies: one free body per stiction body, its boxes and convex
  meshes as geoms at the same poses, uniform density (the arch: 2000 kg/m³; a table: 4.7 kg over
  its five boxes; checked against ``Model.total_mass``), the same friction, pyramidal cones, the
  Newton solver, and ``multiccd`` on so that a face-on-face pair of convex shapes gets several
  contact points, as stiction's four per joint.

Per run: the median and worst step, the deepest penetration over the run, and how far a body moved:
the arch over the whole run (it should stand), the pile over the last 2 s (it should rest). Each
stiction run is a child process under a wall-clock budget (``--budget``): one that does not finish
reports the steps it made.

Run: ``python python/benchmarks/paper_scenes_vs_mujoco.py [--budget 240] [--write]``
(needs ``pip install mujoco``). ``--write`` replaces the section between the markers in
docs/benchmarks.md.
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

import stiction

sys.path.insert(0, os.path.dirname(__file__))
from contact_scenes_vs_mujoco import fmt_t, in_child, write_section  # noqa: E402

DT = 1.0 / 120.0
# name: (model, friction, simulated seconds, seconds at the end over which "moved" is measured,
# Newton iterations of the conjugate-residual setting, uniform density or None for mass per body)
SCENES = {
    "arch": (lambda: stiction.samples.arch(20), 0.6, 5.0, 5.0, 6),
    "table_pile": (lambda: stiction.samples.table_pile(54, 1), 0.7, 10.0, 2.0, 4),
}


def centres(q, n):
    return np.asarray(q[: 7 * n]).reshape(n, 7)[:, :3]


def run_stiction(name, solver, budget, out):
    build, _, seconds, window, newton = SCENES[name]
    model = build()
    n = model.nbodies
    contact = {"solver": "ncp", "ncp": {"linear": "cr", "cr_iterations": 20, "max_iterations": newton}} \
        if solver == "cr" else {"solver": solver}
    sim = stiction.Simulator(model, dt=DT, contact=contact)
    q, v, tau = model.neutral(), np.zeros(model.nv), np.zeros(model.nv)
    steps = int(round(seconds / DT))
    from_step = steps - int(round(window / DT))
    times, depth, ref, moved = [], 0.0, None, 0.0
    start = time.perf_counter()
    for k in range(steps):
        if k == from_step:
            ref = centres(q, n).copy()
        t0 = time.perf_counter()
        q, v = sim.step(q, v, tau)
        times.append(time.perf_counter() - t0)
        c = sim.last_constraints()
        if c is not None and len(c["depths"]):
            depth = max(depth, float(np.max(c["depths"])))
        if ref is not None:
            moved = max(moved, float(np.max(np.linalg.norm(centres(q, n) - ref, axis=1))))
        if time.perf_counter() - start > budget:
            break
    out.put({"steps": len(times), "of": steps, "median": statistics.median(times) if times else None,
             "worst": max(times) if times else None, "moved": moved if ref is not None else None,
             "depth": depth})


def quat(rot):
    import mujoco

    out = np.zeros(4)
    mujoco.mju_mat2Quat(out, np.ascontiguousarray(rot).reshape(9))
    return out


def volume(vertices, triangles):
    v = vertices[triangles]
    return float(np.sum(np.einsum("ij,ij->i", v[:, 0], np.cross(v[:, 1], v[:, 2])))) / 6.0


def mujoco_xml(model, friction):
    """The stiction model's free bodies as MuJoCo bodies with the same collision geometry."""
    shapes = model.collision_shapes()
    poses = model.shape_poses(model.neutral())
    n = model.nbodies
    by_body = [[] for _ in range(n)]
    for s, (shape, pose) in enumerate(zip(shapes, poses)):
        if shape["body"] is not None:
            by_body[shape["body"]].append((s, shape, pose))
    total_volume = sum(volume(sh["vertices"], sh["triangles"]) for body in by_body for _, sh, _ in body)
    density = model.total_mass / total_volume
    assets, bodies = [], []
    for b, body in enumerate(by_body):
        _, first, first_world = body[0]
        world = first_world @ np.linalg.inv(first["pose"])
        geoms = []
        for s, shape, _ in body:
            local = shape["pose"]
            where = f'pos="{" ".join(map(str, local[:3, 3]))}" quat="{" ".join(map(str, quat(local[:3, :3])))}"'
            if shape["kind"] == "box":
                half = np.max(np.abs(shape["vertices"]), axis=0)
                geoms.append(f'<geom type="box" size="{" ".join(map(str, half))}" {where} density="{density}"/>')
            else:
                verts = " ".join(map(str, shape["vertices"].reshape(-1)))
                assets.append(f'<mesh name="m{s}" vertex="{verts}"/>')
                geoms.append(f'<geom type="mesh" mesh="m{s}" {where} density="{density}"/>')
        bodies.append(f'<body pos="{" ".join(map(str, world[:3, 3]))}" quat="{" ".join(map(str, quat(world[:3, :3])))}">'
                      f'<freejoint/>{"".join(geoms)}</body>')
    return (f'<mujoco><option timestep="{DT}"><flag multiccd="enable"/></option>'
            f'<default><geom friction="{friction} 0.005 0.0001"/></default>'
            f'<asset>{"".join(assets)}</asset><worldbody><geom type="plane" size="50 50 0.1"/>'
            f'{"".join(bodies)}</worldbody></mujoco>'), density


def run_mujoco(name):
    import mujoco

    build, friction, seconds, window, _ = SCENES[name]
    model = build()
    xml, density = mujoco_xml(model, friction)
    m = mujoco.MjModel.from_xml_string(xml)
    mass = float(np.sum(m.body_mass))
    assert abs(mass - model.total_mass) < 1e-6 * model.total_mass, (mass, model.total_mass)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    n = model.nbodies
    steps = int(round(seconds / DT))
    from_step = steps - int(round(window / DT))
    times, depth, ref, moved, ncon = [], 0.0, None, 0.0, 0
    for k in range(steps):
        if k == from_step:
            ref = centres(d.qpos, n).copy()
        t0 = time.perf_counter()
        mujoco.mj_step(m, d)
        times.append(time.perf_counter() - t0)
        ncon = max(ncon, d.ncon)
        if d.ncon:
            depth = max(depth, float(-np.min(d.contact.dist[: d.ncon])))
        if ref is not None:
            moved = max(moved, float(np.max(np.linalg.norm(centres(d.qpos, n) - ref, axis=1))))
    return {"median": statistics.median(times), "worst": max(times), "moved": moved, "depth": depth,
            "contacts": ncon, "density": density}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, default=240.0, help="wall-clock budget of a stiction run (s)")
    ap.add_argument("--scenes", default=",".join(SCENES), help="comma-separated scene names")
    ap.add_argument("--solvers", default="cr,ncp,boxed_lcp", help="comma-separated stiction solvers")
    ap.add_argument("--write", action="store_true", help="write the table into docs/benchmarks.md")
    args = ap.parse_args()
    rows = ["| scene | engine | step (median / worst) | ratio to MuJoCo | max penetration | moved |",
            "|---|---|---|---|---|---|"]
    for name in [s for s in args.scenes.split(",") if s]:
        _, _, seconds, window, newton = SCENES[name]
        over = "the run" if window == seconds else f"the last {window:.0f} s"
        mj = run_mujoco(name)
        rows.append(f"| `{name}` ({seconds:.0f} s; moved over {over}) | MuJoCo `mj_step` ({mj['contacts']} contacts) | "
                    f"{fmt_t(mj['median'])} / {fmt_t(mj['worst'])} | 1 | {mj['depth'] * 1e3:.3f} mm | "
                    f"{mj['moved'] * 1e3:.3f} mm |")
        print(rows[-1], flush=True)
        for solver in [s for s in args.solvers.split(",") if s]:
            label = f"stiction `cr` ({newton} × 20)" if solver == "cr" else f"stiction `{solver}`"
            st = in_child(run_stiction, (name, solver, args.budget), args.budget)
            if st is None or not st["steps"]:
                rows.append(f"| | {label} | no step in {args.budget + 60:.0f} s | — | — | — |")
            else:
                partial = "" if st["steps"] == st["of"] else f" ({st['steps']} of {st['of']} steps in {args.budget:.0f} s)"
                moved = "—" if st["moved"] is None else f"{st['moved'] * 1e3:.3f} mm"
                rows.append(f"| | {label} | {fmt_t(st['median'])} / {fmt_t(st['worst'])}{partial} | "
                            f"{st['median'] / mj['median']:.1f}× | {st['depth'] * 1e3:.3f} mm | {moved} |")
            print(rows[-1], flush=True)
    text = "\n".join(rows) + "\n"
    print()
    print(text)
    if args.write:
        write_section("paper-scenes", text)


if __name__ == "__main__":
    main()
