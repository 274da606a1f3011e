"""Issue #19's measurements, side by side with MuJoCo in one run: contact-rich scenes built
the same way in both engines (boxes of 1 kg and half extent 5 cm, μ = 0.5, no restitution,
dt = 1 ms, gravity −9.81), stepped by Python calls.

Scenes: ``box_on_ground``; ``four_boxes`` (a row on the ground); ``box_on_grid`` (a 1.6 m
slab of 10 kg on a 16 × 16 grid of fixed spheres: 256 supporting contacts); ``pile50`` and
``pile100`` (5 × 5 layers of boxes stacked face on face, 2 and 4 layers), all spawned at
rest, touching. Per scene and engine:

- ``step``: median wall time of one step (``Simulator.step`` / ``mj_step``) and the worst
  step over the run;
- ``step + J``: one step with its full Jacobians (``step(record=True)`` then
  ``StepRecord.jacobians()`` / ``mj_step`` then ``mjd_transitionFD``, centred differences);
- ``moved``: the largest displacement of a box centre over the run (a resting pile must
  stay within 1 mm over 2 s);
- stiction's warm-start hit rate and PGS fallbacks (``Simulator.stats``).

Each stiction scene runs in a child process under a wall-clock budget (``--budget``, 120 s
by default): a scene whose steps do not finish in it is reported with the steps it made.
``bodies_on_plane(n)`` (``stiction.samples``: n free boxes on a 0.35 m grid, 4 contacts
each) gives the growth of the step time with the number of independent bodies, n = 25 …
1,000, beside MuJoCo on the same boxes; the growth exponents are least-squares slopes of
log(time) against log(n), and ``--write`` also plots them (``docs/img/bodies_on_plane.png``,
when matplotlib is installed).

Run: ``python python/benchmarks/contact_scenes_vs_mujoco.py [--seconds 2.0] [--budget 120]
[--write]`` (needs ``pip install mujoco``). ``--write`` replaces the section between the
markers in docs/benchmarks.md with the tables.
"""

import argparse
import multiprocessing as mp
import os
import statistics
import time

import numpy as np

import stiction

DT = 1e-3
MU = 0.5
H = 0.05  # half extent of a box
MASS = 1.0
G = 9.81


def quat_z(yaw):
    return np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])


def scene_boxes(centres, slab=None, grid=None):
    """``centres``: box centres (n, 3). ``slab``: a (half extents, mass, centre) box in place
    of the unit boxes. ``grid``: (k, spacing, radius) fixed spheres under the boxes, in
    place of the ground plane. Returns (stiction model, q0, MuJoCo XML)."""
    b = stiction.ModelBuilder("contact_scene")
    xml = ['<mujoco><option timestep="{}" gravity="0 0 {}"/><worldbody>'.format(DT, -G)]
    fr = f'friction="{MU} 0.005 0.0001"'
    if grid is None:
        b.add_collision("world", "plane", friction=MU)
        xml.append(f'<geom type="plane" size="0 0 1" {fr}/>')
    else:
        k, spacing, r = grid
        offs = (np.arange(k) - (k - 1) / 2) * spacing
        for i, x in enumerate(offs):
            for j, y in enumerate(offs):
                b.add_collision("world", "sphere", radius=r, origin_xyz=(x, y, -r), friction=MU)
                xml.append(f'<geom type="sphere" size="{r}" pos="{x} {y} {-r}" {fr}/>')
    boxes = []
    if slab is not None:
        half, mass, centre = slab
        boxes.append((np.asarray(half), mass, np.asarray(centre)))
    else:
        boxes = [(np.array([H, H, H]), MASS, np.asarray(c)) for c in centres]
    q0 = []
    for i, (half, mass, c) in enumerate(boxes):
        name = f"box{i}"
        ix, iy, iz = mass / 3.0 * np.array([half[1] ** 2 + half[2] ** 2, half[0] ** 2 + half[2] ** 2,
                                            half[0] ** 2 + half[1] ** 2])
        b.add_link(name, mass=mass, inertia=np.diag([ix, iy, iz]))
        b.add_joint(f"{name}_free", "free", "world", name)
        b.add_collision(name, "box", half_extents=half, friction=MU)
        q0.extend([*c, 1.0, 0.0, 0.0, 0.0])
        xml.append(
            f'<body pos="{c[0]} {c[1]} {c[2]}"><freejoint/>'
            f'<geom type="box" size="{half[0]} {half[1]} {half[2]}" mass="{mass}" {fr}/></body>'
        )
    xml.append("</worldbody></mujoco>")
    return b.build(), np.array(q0), "".join(xml)


def pile(layers):
    offs = (np.arange(5) - 2) * (2 * H + 1e-3)
    centres = [(x, y, (2 * l + 1) * H) for l in range(layers) for x in offs for y in offs]
    return scene_boxes(centres)


SCENES = {
    "box_on_ground": lambda: scene_boxes([(0.0, 0.0, H)]),
    "four_boxes": lambda: scene_boxes([(0.35 * i, 0.0, H) for i in range(4)]),
    "box_on_grid": lambda: scene_boxes([], slab=((0.8, 0.8, 0.05), 10.0, (0.0, 0.0, 0.05)), grid=(16, 0.1, 0.01)),
    "pile50": lambda: pile(2),
    "pile100": lambda: pile(4),
}


def bodies_on_plane_xml(n):
    """MuJoCo's twin of ``stiction.samples.bodies_on_plane(n)``: the same boxes (half extents
    0.1 × 0.08 × 0.06 m, 1 kg) on the same 0.35 m grid, 1 mm deep in the plane."""
    side = int(np.ceil(np.sqrt(n)))
    xml = ['<mujoco><option timestep="{}" gravity="0 0 {}"/><worldbody>'.format(DT, -G),
           f'<geom type="plane" size="0 0 1" friction="{MU} 0.005 0.0001"/>']
    for k in range(n):
        x, y = (k % side) * 0.35, (k // side) * 0.35
        xml.append(f'<body pos="{x} {y} {0.06 - 1e-3}"><freejoint/><geom type="box" size="0.1 0.08 0.06" '
                   f'mass="1" friction="{MU} 0.005 0.0001"/></body>')
    xml.append("</worldbody></mujoco>")
    return "".join(xml)


def growth_exponent(ns, times):
    """The least-squares slope of log(time) against log(n)."""
    return float(np.polyfit(np.log(ns), np.log(times), 1)[0])


def median_steps(step, steps, budget):
    times = []
    start = time.perf_counter()
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
        if time.perf_counter() - start > budget:
            break
    return statistics.median(times), len(times)


def bodies_on_plane_growth(budget, plot_path=None):
    """The step of ``bodies_on_plane(n)`` against MuJoCo's, n = 25 … 1,000: table rows."""
    import mujoco

    ns, st_times, mj_times = (25, 50, 100, 200, 400, 1000), [], []
    rows = ["| bodies | stiction step (median) | MuJoCo step (median) | ratio |", "|---|---|---|---|"]
    for n in ns:
        model = stiction.samples.bodies_on_plane(n)
        sim = stiction.Simulator(model, dt=DT)
        state = {"q": model.neutral(), "v": np.zeros(model.nv)}
        tau = np.zeros(model.nv)

        def st_step():
            state["q"], state["v"] = sim.step(state["q"], state["v"], tau)

        for _ in range(50):  # the boxes start 1 mm deep: settle first
            st_step()
        st, st_n = median_steps(st_step, 200, budget)
        m = mujoco.MjModel.from_xml_string(bodies_on_plane_xml(n))
        d = mujoco.MjData(m)
        for _ in range(50):
            mujoco.mj_step(m, d)
        mj, _ = median_steps(lambda: mujoco.mj_step(m, d), 200, budget)
        st_times.append(st)
        mj_times.append(mj)
        rows.append(f"| {n} | {fmt_t(st)} ({st_n} steps) | {fmt_t(mj)} | {st / mj:.1f}× |")
        print(rows[-1], flush=True)
    k_st, k_mj = growth_exponent(ns, st_times), growth_exponent(ns, mj_times)
    rows.append("")
    rows.append(f"Growth from {ns[0]} to {ns[-1]} bodies (least-squares slope of log time against log n): "
                f"stiction n^{k_st:.2f}, MuJoCo n^{k_mj:.2f}.")
    if plot_path is not None:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("matplotlib is not installed: no plot")
        else:
            fig, ax = plt.subplots(figsize=(6, 4))
            ax.loglog(ns, np.array(st_times) * 1e3, "o-", label=f"stiction (n^{k_st:.2f})")
            ax.loglog(ns, np.array(mj_times) * 1e3, "s-", label=f"MuJoCo (n^{k_mj:.2f})")
            ref = st_times[0] * 1e3 * (np.array(ns) / ns[0]) ** 1.2
            ax.loglog(ns, ref, "k--", lw=0.8, label="n^1.2 from stiction's first point")
            ax.set_xlabel("bodies n")
            ax.set_ylabel("median step (ms)")
            ax.set_title("bodies_on_plane(n): one step, dt = 1 ms")
            ax.grid(True, which="both", lw=0.3)
            ax.legend()
            fig.tight_layout()
            fig.savefig(plot_path, dpi=110)
            rows.append("")
            rows.append("![bodies_on_plane step time against n](img/bodies_on_plane.png)")
    return rows


def box_centres(q, n):
    return q.reshape(n, 7)[:, :3]


def run_stiction(name, seconds, budget, out):
    model, q0, _ = SCENES[name]()
    n = len(q0) // 7
    sim = stiction.Simulator(model, dt=DT)
    q, v, tau = q0.copy(), np.zeros(model.nv), np.zeros(model.nv)
    steps = int(round(seconds / DT))
    times, moved = [], 0.0
    start = time.perf_counter()
    for _ in range(steps):
        t0 = time.perf_counter()
        q, v = sim.step(q, v, tau)
        times.append(time.perf_counter() - t0)
        moved = max(moved, float(np.max(np.linalg.norm(box_centres(q, n) - box_centres(q0, n), axis=1))))
        if time.perf_counter() - start > budget:
            break
    jac, jac_error = [], None
    for _ in range(3 if time.perf_counter() - start < budget else 0):
        t0 = time.perf_counter()
        _, _, rec = sim.step(q, v, tau, record=True)
        try:
            rec.jacobians()
        except stiction.StictionError as e:  # reported in the table, not hidden
            jac_error = f"{type(e).__name__}: {e}"
            break
        jac.append(time.perf_counter() - t0)
    s = sim.stats
    out.put({
        "jac_error": jac_error,
        "steps": len(times), "of": steps, "median": statistics.median(times) if times else None,
        "worst": max(times) if times else None, "jac": min(jac) if jac else None, "moved": moved,
        "warm": s["warm_start_hits"] / max(1, s["lcp_solves"]), "fallbacks": s["lcp_fallbacks"],
    })


def run_mujoco(name, seconds):
    import mujoco

    _, q0, xml = SCENES[name]()
    n = len(q0) // 7
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    steps = int(round(seconds / DT))
    times, moved, ncon = [], 0.0, 0
    for _ in range(steps):
        t0 = time.perf_counter()
        mujoco.mj_step(m, d)
        times.append(time.perf_counter() - t0)
        ncon = max(ncon, d.ncon)
        moved = max(moved, float(np.max(np.linalg.norm(box_centres(d.qpos, n) - box_centres(q0, n), axis=1))))
    nx = 2 * m.nv + m.na
    a = np.zeros((nx, nx))
    jac = []
    for _ in range(3):
        t0 = time.perf_counter()
        mujoco.mj_step(m, d)
        mujoco.mjd_transitionFD(m, d, 1e-6, 1, a, None, None, None)
        jac.append(time.perf_counter() - t0)
    return {"median": statistics.median(times), "worst": max(times), "jac": min(jac), "moved": moved,
            "contacts": ncon}


def in_child(target, args, budget):
    """Runs ``target(*args, queue)`` in a child process under a wall-clock budget; returns what
    it put in the queue, or None when it did not finish. The child is spawned (a fresh
    interpreter), not forked: a child forked from this process, which has imported MuJoCo and
    run its scenes, stepped the small scenes about twice as slowly as the same loop run in a
    fresh process (box on the ground: 21 µs against 11 µs per step)."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    p = ctx.Process(target=target, args=(*args, out))
    p.start()
    p.join(budget + 60)
    if p.is_alive():
        p.kill()
        p.join()
        return None
    return out.get() if not out.empty() else None


def stiction_in_child(name, seconds, budget):
    return in_child(run_stiction, (name, seconds, budget), budget)


def write_section(marker, text):
    """Replaces the text between ``<!-- marker:begin -->`` and ``<!-- marker:end -->`` in
    docs/benchmarks.md."""
    path = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "benchmarks.md")
    doc = open(path).read()
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    if begin not in doc:
        raise SystemExit(f"docs/benchmarks.md has no {begin} marker")
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    open(path, "w").write(head + begin + "\n" + text + end + tail)


def fmt_t(x):
    if x is None:
        return "—"
    return f"{x * 1e6:.1f} µs" if x < 1e-3 else (f"{x * 1e3:.2f} ms" if x < 1 else f"{x:.1f} s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=2.0, help="simulated time per scene")
    ap.add_argument("--budget", type=float, default=120.0, help="wall-clock budget of a stiction scene (s)")
    ap.add_argument("--scenes", default=",".join(SCENES), help="comma-separated scene names")
    ap.add_argument("--write", action="store_true", help="write the tables into docs/benchmarks.md")
    args = ap.parse_args()
    rows = ["| scene | contacts (MuJoCo) | stiction step (median / worst) | MuJoCo step (median / worst) | "
            "ratio | stiction step + J | MuJoCo step + FD | ratio | moved: stiction / MuJoCo | "
            "warm-start hits, PGS fallbacks |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name in [s for s in args.scenes.split(",") if s]:
        mj = run_mujoco(name, args.seconds)
        st = stiction_in_child(name, args.seconds, args.budget)
        if st is None:
            rows.append(f"| `{name}` | {mj['contacts']} | did not finish a step in {args.budget + 60:.0f} s | "
                        f"{fmt_t(mj['median'])} / {fmt_t(mj['worst'])} | — | — | {fmt_t(mj['jac'])} | — | "
                        f"— / {mj['moved'] * 1e3:.2f} mm | — |")
        else:
            partial = "" if st["steps"] == st["of"] else f" ({st['steps']} of {st['of']} steps in the budget)"
            ratio = st["median"] / mj["median"]
            jratio = f"{st['jac'] / mj['jac']:.2f}×" if st["jac"] else "—"
            jac = f"failed ({st['jac_error']})" if st["jac_error"] else fmt_t(st["jac"])
            rows.append(
                f"| `{name}` | {mj['contacts']} | {fmt_t(st['median'])} / {fmt_t(st['worst'])}{partial} | "
                f"{fmt_t(mj['median'])} / {fmt_t(mj['worst'])} | {ratio:.2f}× | {jac} | "
                f"{fmt_t(mj['jac'])} | {jratio} | {st['moved'] * 1e3:.2f} mm / {mj['moved'] * 1e3:.2f} mm | "
                f"{100 * st['warm']:.0f} %, {st['fallbacks']} |"
            )
        print(rows[-1], flush=True)
    docs = os.path.join(os.path.dirname(__file__), "..", "..", "docs")
    growth = bodies_on_plane_growth(args.budget, os.path.join(docs, "img", "bodies_on_plane.png") if args.write else None)
    text = "\n".join(rows) + "\n\n`samples.bodies_on_plane(n)` (n boxes on the plane, 4 contacts each), beside MuJoCo on the same boxes:\n\n" + \
        "\n".join(growth) + "\n"
    print()
    print(text)
    if args.write:
        write_section("contact-vs-mujoco", text)

if __name__ == "__main__":
    main()
