"""A 7-DoF arm (`stiction.samples.arm7()`, contact and joint limits off) reaches a target with its end
effector around a spherical obstacle placed on the straight path, from Python (the Rust example
`cargo run --release --example arm_reach` does the same): iLQR on the sum of a world-space terminal point
cost (`trajopt.PointCost`), a smooth obstacle penalty on five link points (`trajopt.ObstacleCost`) and a
quadratic control/terminal-velocity cost, with analytic or finite-difference Jacobians.

dt = 10 ms, T = 1.5 s (150 steps), torques within ±87 N·m; the initial guess holds the start
configuration with gravity-compensating torques.

Run: python python/examples/arm_reach.py [--no-fd] [--plot PATH.png | --no-plot]
"""

import argparse

import numpy as np

import stiction
from stiction import trajopt

from _plotting import add_plot_arguments, plot_path, pyplot, save

DT = 0.01
STEPS = 150
RADIUS = 0.08  # obstacle radius (m)
MARGIN = 0.03  # safety margin of the obstacle penalty (m)
Q0 = np.array([0.0, 0.4, 0.0, -1.8, 0.0, 1.6, 0.0])
TOOL = np.array([0.0, 0.0, 0.1])  # the end-effector point on link 7 (its frame)
OFFSET = np.array([-0.1, 0.45, 0.05])  # the target's offset from the start end-effector position (m)


def problem():
    """The model, the target, the obstacle centre (midpoint of start and target), the reach cost and
    the obstacle cost."""
    model = stiction.samples.arm7()
    p0 = trajopt.PointCost(model, "link7", target=np.zeros(3), point=TOOL).position(Q0)
    target = p0 + OFFSET
    center = (p0 + target) / 2
    reach = trajopt.PointCost(model, "link7", target=target, weight=2e3, point=TOOL)
    points = [("link7", TOOL), "link4", "link5", "link6", "link7"]
    obstacle = trajopt.ObstacleCost(model, points, center, RADIUS, MARGIN, running_weight=2e3, terminal_weight=2e3)
    return model, target, center, reach, obstacle


def solve(jacobians="analytic", verbose=True):
    """iLQR on the reach; returns the result dict with ``distance``, ``start_distance``,
    ``min_clearance``, ``clearance`` (per state), ``tool_path`` (T+1, 3) and ``max_torque`` added."""
    model, target, center, reach, obstacle = problem()
    nv = model.nv
    sim = stiction.Simulator(model, dt=DT, contact=False)
    guess = np.tile(model.gravity_forces(Q0), (STEPS, 1))

    def log(p):
        if verbose and int(p["iteration"]) % 10 == 0:
            print(f"    iter {int(p['iteration']):3d}  cost {p['cost']:.6e}  step {p['step']:.3f}  "
                  f"mu {p['regularization']:.1e}  {p['elapsed']:.3f} s")

    r = trajopt.ilqr(sim, Q0, np.zeros(nv), guess, target_q=Q0, state_weight=0.0, control_weight=1e-3,
                     terminal_weight=np.concatenate([np.zeros(nv), np.ones(nv)]), lower=-87.0, upper=87.0,
                     jacobians=jacobians, max_iterations=200, callback=log, costs=[reach, obstacle])
    r["tool_path"] = np.array([reach.position(q) for q in r["q"]])
    r["clearance"] = np.array([obstacle.clearance(q) for q in r["q"]])
    r["distance"] = float(np.linalg.norm(r["tool_path"][-1] - target))
    r["start_distance"] = float(np.linalg.norm(r["tool_path"][0] - target))
    r["min_clearance"] = float(r["clearance"].min())
    r["max_torque"] = float(np.abs(r["controls"]).max())
    r["target"], r["center"] = target, center
    if verbose:
        print(f"  {r['iterations']} iterations ({r['stop']}), cost {r['cost_history'][0]:.4e} -> {r['cost']:.4e}, "
              f"wall time {r['wall_time']:.3f} s (Jacobians {r['jacobian_time']:.3f} s)")
        print(f"  end effector {r['distance'] * 1e3:.2f} mm from the target (started {r['start_distance']:.3f} m away); "
              f"minimum obstacle clearance {r['min_clearance']:+.4f} m; max |torque| {r['max_torque']:.1f} N·m")
    return r


def plot(r, path):
    plt = pyplot(path)
    if plt is None:
        return None
    p, target, center = r["tool_path"], r["target"], r["center"]
    fig, ax = plt.subplots(2, 2, figsize=(10, 8))
    for a, (i, j), names in ((ax[0, 0], (0, 1), "xy"), (ax[0, 1], (1, 2), "yz")):
        a.add_patch(plt.Circle(center[[i, j]], RADIUS, color="C3", alpha=0.35, label="obstacle"))
        a.add_patch(plt.Circle(center[[i, j]], RADIUS + MARGIN, color="C3", fill=False, ls=":", label="+ margin"))
        a.plot([p[0, i], target[i]], [p[0, j], target[j]], color="0.6", ls="--", label="straight path")
        a.plot(p[:, i], p[:, j], color="C0", label="end effector")
        a.plot(p[0, i], p[0, j], "o", color="k", label="start")
        a.plot(target[i], target[j], "x", color="C2", ms=10, mew=2, label="target")
        a.set_aspect("equal")
        a.set_xlabel(f"{names[0]} [m]")
        a.set_ylabel(f"{names[1]} [m]")
        a.set_title(f"end-effector path, {names} projection")
    ax[0, 0].legend(fontsize=7, loc="best")
    t = np.arange(len(p)) * DT
    ax[1, 0].plot(t, r["clearance"], label="closest penalised point")
    ax[1, 0].axhline(0.0, color="C3", lw=0.8, label="obstacle surface")
    ax[1, 0].axhline(MARGIN, color="C3", lw=0.8, ls=":", label="margin")
    ax[1, 0].set_xlabel("t [s]")
    ax[1, 0].set_ylabel("clearance [m]")
    ax[1, 0].legend(fontsize=8)
    ax[1, 1].semilogy(r["cost_history"], "-")
    ax[1, 1].set_xlabel("iLQR iteration")
    ax[1, 1].set_ylabel("cost")
    ax[1, 1].set_title(f"{r['distance'] * 1e3:.2f} mm from the target after {r['iterations']} iterations")
    fig.tight_layout()
    return save(fig, path)


def page(r, path):
    """Writes the reach as a web page (stiction.viz, docs/viz.md) with the target and the obstacle;
    returns ``path``."""
    from stiction.viz import Viewer

    viewer = Viewer(stiction.samples.arm7(), title="arm reach around an obstacle (iLQR)")
    viewer.animate(r["q"], DT).add_target(r["target"], radius=0.02)
    viewer.add_sphere(r["center"], RADIUS, color=(0.84, 0.15, 0.16), opacity=0.35, name="obstacle")
    return viewer.save_html(path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-fd", action="store_true", help="skip the finite-difference run")
    parser.add_argument("--html", metavar="PATH.html", help="write the reach as a web page (stiction.viz)")
    add_plot_arguments(parser, "arm_reach")
    args = parser.parse_args(argv)
    _, target, center, _, _ = problem()
    print(f"arm reach: arm7, T = {STEPS * DT} s, dt = {DT} s; target ({target[0]:+.3f}, {target[1]:+.3f}, "
          f"{target[2]:+.3f}) m, obstacle r = {RADIUS} m (+{MARGIN} m margin) at ({center[0]:+.3f}, "
          f"{center[1]:+.3f}, {center[2]:+.3f}) m on the straight path")
    results = {}
    for jacobians in ["analytic"] + ([] if args.no_fd else ["finite_difference"]):
        print(f"iLQR, {jacobians} Jacobians:")
        results[jacobians] = solve(jacobians)
    results["plot"] = plot(results["analytic"], plot_path(args))
    if args.html:
        results["html"] = page(results["analytic"], args.html)
        print(f"wrote {args.html}")
    return results


if __name__ == "__main__":
    main()
