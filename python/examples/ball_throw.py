"""Throw a ball so that, after exactly one bounce, it passes through a target point at a given time, from
Python (the Rust example `cargo run --release --example ball_throw` does the same): Gauss–Newton
(Levenberg–Marquardt damped) on the initial linear velocity v0, with the 3 × 3 Jacobian ∂p_T/∂v0 of the
final ball position from three reverse passes over the recorded rollout (`Tape.backward`, seeded with the
unit vectors on the free joint's linear part at x_T), or from central finite differences of the rollout (6 rollouts).

A 0.2 kg ball (radius 5 cm, restitution 0.7, frictionless; the ground alike) starts 1 m above the ground;
the target is (2.0, 0.5, 0.45) m at T = 1 s (dt = 1 ms), after one bounce. Trials that would bounce twice
or not at all are rejected by the step control. The Jacobians are those of the discrete step
(`bounce_gradients="discrete"`); see docs/trajopt.md for where they miss the bounce-timing term.

Run: python python/examples/ball_throw.py [--no-fd] [--plot PATH.png | --no-plot] [--html PATH.html]
"""

import argparse
import time

import numpy as np

import stiction

from _plotting import add_plot_arguments, plot_path, pyplot, save

DT = 1e-3
STEPS = 1000
RADIUS = 0.05
TARGET = np.array([2.0, 0.5, 0.45])
START = np.array([0.0, 0.0, 1.0])
GUESS = np.array([1.0, 0.0, 1.0])


def ball_model():
    """The ball (free joint) on a ground plane; both frictionless with restitution 0.7."""
    i = 0.4 * 0.2 * RADIUS**2
    b = stiction.ModelBuilder("ball_throw")
    b.add_collision("world", "plane", friction=0.0, restitution=0.7)
    b.add_link("ball", mass=0.2, inertia=(i, 0.0, 0.0, i, 0.0, i))
    b.add_joint("ball_free", "free", "world", "ball")
    b.add_collision("ball", "sphere", radius=RADIUS, friction=0.0, restitution=0.7)
    return b.build()


def simulator(bounce_gradients="discrete"):
    return stiction.Simulator(ball_model(), dt=DT, contact={"bounce_gradients": bounce_gradients})


def throw(sim, v0, record=False):
    """A rollout from the throw velocity ``v0`` (world frame): the positions (T+1, 3), the final
    state, the number of bounces (the vertical velocity turning from falling to rising) and the tape."""
    sim.reset_warm_start()
    q0 = np.concatenate([START, [1.0, 0.0, 0.0, 0.0]])
    # The free joint's velocity is [ω; ṗ]: body angular, world linear velocity.
    v = np.concatenate([np.zeros(3), v0])
    out = sim.rollout(q0, v, np.zeros((STEPS, 6)), record=record)
    qs, vs = np.vstack([q0, out[0]]), np.vstack([v, out[1]])
    vz = vs[:, 5]
    bounces = int(np.sum((vz[:-1] < -0.1) & (vz[1:] > 0.0)))
    return qs[:, :3], (qs[-1], vs[-1]), bounces, out[2] if record else None


def analytic_jacobian(tape):
    """∂p_T/∂v0 by three reverse passes: the seed of row k at x_T is the tangent-space gradient of
    p_k, e_k on the free joint's linear part (p(q ⊕ δ) = p + δ_p)."""
    jac = np.zeros((3, 3))
    for k in range(3):
        gq = np.zeros((len(tape) + 1, 6))
        gq[-1, 3 + k] = 1.0
        g = tape.backward((gq, np.zeros_like(gq)))
        jac[k] = g["v0"][3:]  # v0's linear part is the initial world-frame velocity
    return jac


def fd_jacobian(sim, v0, eps=1e-6):
    jac = np.zeros((3, 3))
    for k in range(3):
        dv = np.zeros(3)
        dv[k] = eps
        jac[:, k] = (throw(sim, v0 + dv)[0][-1] - throw(sim, v0 - dv)[0][-1]) / (2 * eps)
    return jac


def optimise(sim, gradients="analytic", tol=1e-4, max_iterations=50, verbose=True):
    """Levenberg–Marquardt on r(v0) = p_T(v0) − p* until |r| < tol; a trial is accepted when |r| drops
    and the rollout bounces exactly once. Returns a dict: ``v0``, ``final_position``, ``miss``,
    ``miss_history``, ``iterations``, ``bounces``, ``rollouts``, ``wall_time``, ``path`` (T+1, 3) and
    ``guess_path``."""
    start = time.perf_counter()
    analytic = gradients == "analytic"
    v0 = GUESS.copy()
    path, x_t, bounces, tape = throw(sim, v0, analytic)
    guess_path = path
    rollouts = 1
    r = path[-1] - TARGET
    history = [float(np.linalg.norm(r))]
    lam = 1e-3
    iterations = 0
    while np.linalg.norm(r) >= tol and iterations < max_iterations:
        iterations += 1
        if analytic:
            jac = analytic_jacobian(tape)
        else:
            jac = fd_jacobian(sim, v0)
            rollouts += 6
        jtj, jtr = jac.T @ jac, jac.T @ r
        accepted = False
        for _ in range(20):
            try:
                step = np.linalg.solve(jtj + np.diag(np.diag(jtj)) * lam, -jtr)
            except np.linalg.LinAlgError:
                lam *= 10.0
                continue
            trial = throw(sim, v0 + step, analytic)
            rollouts += 1
            trial_r = trial[0][-1] - TARGET
            if trial[2] == 1 and np.linalg.norm(trial_r) < np.linalg.norm(r):
                v0, (path, x_t, bounces, tape), r = v0 + step, trial, trial_r
                lam = max(lam / 10.0, 1e-9)
                accepted = True
                break
            lam *= 10.0
        history.append(float(np.linalg.norm(r)))
        if verbose:
            print(f"    iter {iterations:2d}  miss {history[-1]:.3e} m  v0 = ({v0[0]:+.4f}, {v0[1]:+.4f}, {v0[2]:+.4f}) m/s")
        if not accepted:
            break
    return dict(v0=v0, final_position=path[-1], miss=history[-1], miss_history=history, iterations=iterations,
                bounces=bounces, rollouts=rollouts, wall_time=time.perf_counter() - start, path=path,
                guess_path=guess_path)


def plot(t, path):
    plt = pyplot(path)
    if plt is None:
        return None
    fig, ax = plt.subplots(1, 3, figsize=(13, 4), gridspec_kw={"width_ratios": [2, 1.2, 1.2]})
    p, g = t["path"], t["guess_path"]
    bounce = int(np.argmin(p[:, 2]))
    ax[0].plot(g[:, 0], g[:, 2], color="0.7", ls="--", label="first guess")
    ax[0].plot(p[:, 0], p[:, 2], label="optimised throw")
    ax[0].plot(*p[bounce, [0, 2]], "v", color="C1", label="bounce")
    ax[0].plot(TARGET[0], TARGET[2], "x", color="C3", ms=10, mew=2, label="target at T = 1 s")
    ax[0].plot(START[0], START[2], "o", color="k", label="start")
    ax[0].axhline(RADIUS, color="0.3", lw=0.8, ls=":", label="ball centre at ground contact")
    ax[0].set_xlabel("x [m]")
    ax[0].set_ylabel("z [m]")
    ax[0].set_title(f"ball throw: miss {t['miss']:.1e} m after {t['iterations']} iterations")
    ax[0].legend(fontsize=8)
    ax[1].plot(g[:, 0], g[:, 1], color="0.7", ls="--")
    ax[1].plot(p[:, 0], p[:, 1])
    ax[1].plot(TARGET[0], TARGET[1], "x", color="C3", ms=10, mew=2)
    ax[1].plot(*p[bounce, :2], "v", color="C1")
    ax[1].set_xlabel("x [m]")
    ax[1].set_ylabel("y [m]")
    ax[1].set_title("top view")
    ax[2].semilogy(t["miss_history"], "o-")
    ax[2].set_xlabel("Gauss–Newton iteration")
    ax[2].set_ylabel("|p_T − target| [m]")
    fig.tight_layout()
    return save(fig, path)


def page(t, path):
    """Writes the optimised throw as a web page (stiction.viz, docs/viz.md) with the contacts and
    the target; returns ``path``."""
    from stiction.viz import Viewer

    sim = simulator()
    q0 = np.concatenate([START, [1.0, 0.0, 0.0, 0.0]])
    q = sim.rollout(q0, np.concatenate([np.zeros(3), t["v0"]]), np.zeros((STEPS, 6)))[0]
    viewer = Viewer(sim.model, title="ball throw (Gauss-Newton)")
    viewer.animate(np.vstack([q0, q]), DT, contacts="auto").add_target(TARGET)
    return viewer.save_html(path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-fd", action="store_true", help="skip the finite-difference run")
    parser.add_argument("--html", metavar="PATH.html", help="write the throw as a web page (stiction.viz)")
    add_plot_arguments(parser, "ball_throw")
    args = parser.parse_args(argv)
    print(f"ball throw: ball r = {RADIUS} m, restitution 0.7, from {START.tolist()} to hit {TARGET.tolist()} "
          f"at T = {STEPS * DT:g} s after one bounce (dt = {DT * 1e3:g} ms)")
    runs = [("analytic (Tape.backward), discrete bounce Jacobians", "analytic")]
    if not args.no_fd:
        runs.append(("finite differences", "finite_difference"))
    results = {}
    for label, gradients in runs:
        print(f"{label}:")
        t = optimise(simulator(), gradients)
        v0 = t["v0"]
        print(f"  miss {t['miss']:.2e} m after {t['iterations']} iterations ({t['rollouts']} rollouts, "
              f"{t['bounces']} bounce), wall time {t['wall_time']:.3f} s, "
              f"v0 = ({v0[0]:+.4f}, {v0[1]:+.4f}, {v0[2]:+.4f}) m/s")
        results[gradients] = t
    print("summary:")
    for (label, gradients) in runs:
        t = results[gradients]
        print(f"  {label:<60} miss {t['miss']:.2e} m  {t['iterations']:2d} iterations  {t['wall_time']:.3f} s")
    results["plot"] = plot(results["analytic"], plot_path(args))
    if args.html:
        results["html"] = page(results["analytic"], args.html)
        print(f"wrote {args.html}")
    return results


if __name__ == "__main__":
    main()
