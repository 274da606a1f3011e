"""Push a box to a goal through contact, from Python (the Rust example `cargo run --release --example
box_push` does the same): a sphere pusher on prismatic x/y joints drives a 1 kg box sliding on the ground
(Coulomb friction 0.3) to a goal 15 cm away, by iLQR on the exact step Jacobians (or on finite-difference
Jacobians), with a world-space terminal cost on the box centre (`trajopt.PointCost`, x and y) plus small
control and terminal-velocity terms.

dt = 10 ms, T = 1.5 s (150 steps), pusher forces within ±10 N, the box's free joint unactuated. The
initial guess pushes +x with 4 N for 0.6 s (the box starts sliding), then nothing; iLQR shapes the push.

Run: python python/examples/box_push.py [--no-fd] [--plot PATH.png | --no-plot]
"""

import argparse

import numpy as np

import stiction
from stiction import trajopt

from _plotting import add_plot_arguments, plot_path, pyplot, save

DT = 0.01
STEPS = 150
HALF = np.array([0.1, 0.1, 0.05])  # box half extents (m)
GOAL = np.array([0.15, 0.0])  # goal of the box centre in the plane; it starts at the origin
FORCE_LIMIT = 10.0
PUSHER_RADIUS = 0.04
FRICTION = 0.3


def sphere_inertia(mass, radius):
    i = 0.4 * mass * radius * radius
    return (i, 0.0, 0.0, i, 0.0, i)


def box_inertia(mass, size):
    x2, y2, z2 = np.asarray(size, dtype=float) ** 2
    return (mass / 12 * (y2 + z2), 0.0, 0.0, mass / 12 * (x2 + z2), 0.0, mass / 12 * (x2 + y2))


def push_model():
    """The pusher (x slider and y slider carrying a sphere at the box's mid height) and the box."""
    b = stiction.ModelBuilder("box_push")
    b.add_collision("world", "plane", friction=FRICTION)
    b.add_link("slider", mass=0.5, inertia=sphere_inertia(0.5, 0.02))
    b.add_joint("pusher_x", "prismatic", "world", "slider", axis=(1, 0, 0), origin_xyz=(0, 0, HALF[2]))
    b.add_link("pusher", mass=0.5, inertia=sphere_inertia(0.5, PUSHER_RADIUS))
    b.add_joint("pusher_y", "prismatic", "slider", "pusher", axis=(0, 1, 0))
    b.add_collision("pusher", "sphere", radius=PUSHER_RADIUS, friction=FRICTION)
    b.add_link("box", mass=1.0, inertia=box_inertia(1.0, 2 * HALF))
    b.add_joint("box_free", "free", "world", "box")
    b.add_collision("box", "box", half_extents=HALF, friction=FRICTION)
    return b.build()


def initial_state(model):
    """The pusher 2 cm behind the box's −x face, the box resting at the origin."""
    q = model.neutral()
    q[0] = -HALF[0] - PUSHER_RADIUS - 0.02
    q[4] = HALF[2] - 1e-4
    return q, np.zeros(model.nv)


def initial_controls(model):
    u = np.zeros((STEPS, model.nv))
    u[np.arange(STEPS) * DT < 0.6, 0] = 4.0
    return u


def solve(jacobians="analytic", verbose=True):
    """iLQR on the box push; returns the result dict with ``box_position``, ``goal_error``,
    ``max_force`` and ``monotone`` added."""
    model = push_model()
    nv = model.nv
    q0, v0 = initial_state(model)
    sim = stiction.Simulator(model, dt=DT)
    goal = trajopt.PointCost(model, "box", target=[GOAL[0], GOAL[1], HALF[2]], weight=1e5, axis_weights=[1, 1, 0])
    control_weight = np.zeros(nv)
    control_weight[:2] = 1e-3
    terminal_weight = np.concatenate([np.zeros(nv), np.ones(nv)])
    limit = np.zeros(nv)
    limit[:2] = FORCE_LIMIT

    def log(p):
        if verbose and int(p["iteration"]) % 5 == 0:
            print(f"    iter {int(p['iteration']):3d}  cost {p['cost']:.6e}  step {p['step']:.3f}  "
                  f"mu {p['regularization']:.1e}  {p['elapsed']:.3f} s")

    r = trajopt.ilqr(sim, q0, v0, initial_controls(model), state_weight=0.0, control_weight=control_weight,
                     terminal_weight=terminal_weight, lower=-limit, upper=limit, jacobians=jacobians,
                     max_iterations=100, callback=log, costs=[goal])
    box = r["q"][-1, 2:5]
    r["box_position"] = box
    r["goal_error"] = float(np.hypot(box[0] - GOAL[0], box[1] - GOAL[1]))
    r["max_force"] = float(np.abs(r["controls"][:, :2]).max())
    r["monotone"] = bool(np.all(np.diff(r["cost_history"]) < 0))
    if verbose:
        print(f"  {r['iterations']} iterations ({r['stop']}), cost {r['cost_history'][0]:.4e} -> {r['cost']:.4e}, "
              f"wall time {r['wall_time']:.3f} s (Jacobians {r['jacobian_time']:.3f} s)")
        print(f"  box at ({box[0]:+.4f}, {box[1]:+.4f}, {box[2]:.4f}) m: {r['goal_error'] * 1e3:.2f} mm from the goal; "
              f"max |force| {r['max_force']:.2f} N")
    return r


def plot(r, path):
    plt = pyplot(path)
    if plt is None:
        return None
    t = np.arange(len(r["q"])) * DT
    fig, ax = plt.subplots(3, 1, figsize=(7, 7.5), sharex=False)
    ax[0].plot(t, r["q"][:, 2], label="box centre x")
    ax[0].plot(t, r["q"][:, 3], label="box centre y")
    ax[0].plot(t, r["q"][:, 0], "--", label="pusher centre x")
    ax[0].axhline(GOAL[0], color="k", lw=0.8, ls=":", label=f"goal x = {GOAL[0]} m")
    ax[0].set_ylabel("position [m]")
    ax[0].set_title(f"box push (iLQR): {r['goal_error'] * 1e3:.2f} mm from the goal after {r['iterations']} iterations")
    ax[0].legend(fontsize=8, loc="lower right")
    ax[1].step(t[:-1], r["controls"][:, 0], where="post", label="pusher force x")
    ax[1].step(t[:-1], r["controls"][:, 1], where="post", label="pusher force y")
    ax[1].set_ylabel("force [N]")
    ax[1].set_xlabel("t [s]")
    ax[1].legend(fontsize=8)
    ax[2].semilogy(r["cost_history"], "o-", ms=3)
    ax[2].set_xlabel("iLQR iteration (accepted steps)")
    ax[2].set_ylabel("cost")
    fig.tight_layout()
    return save(fig, path)


def page(r, path):
    """Writes the push as a web page (stiction.viz, docs/viz.md) with the contacts and the goal;
    returns ``path``."""
    from stiction.viz import Viewer

    viewer = Viewer(push_model(), title="box push (iLQR)")
    viewer.animate(r["q"], DT, contacts="auto").add_target([GOAL[0], GOAL[1], HALF[2]], name="goal")
    return viewer.save_html(path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-fd", action="store_true", help="skip the finite-difference run")
    parser.add_argument("--html", metavar="PATH.html", help="write the push as a web page (stiction.viz)")
    add_plot_arguments(parser, "box_push")
    args = parser.parse_args(argv)
    print(f"box push: 1 kg box, friction {FRICTION}, goal ({GOAL[0]:.2f}, {GOAL[1]:.2f}) m from the origin, "
          f"T = {STEPS * DT:g} s, dt = {DT:g} s, |force| <= {FORCE_LIMIT:g} N")
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
