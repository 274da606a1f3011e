"""Cartpole swing-up with iLQR from Python (the Rust example `cargo run --release --example
cartpole_swingup` does the same): from hanging to upright in 2.5 s with |force| ≤ 20 N on the cart,
then the same problem by single shooting (L-BFGS on Tape.backward gradients) for comparison.

Run: python python/examples/cartpole_swingup.py [--fd] [--no-shooting] [--csv PATH] [--plot PATH.png | --no-plot]
"""

import argparse
import time

import numpy as np

import stiction
from stiction import trajopt

from _plotting import add_plot_arguments, plot_path, pyplot, save

DT = 0.02


# The swing-up problem: 125 steps of 20 ms, cart force within ±20 N, the pole unactuated.
STEPS = 125
PROBLEM = dict(
    target_q=[0.0, np.pi],
    control_weight=[1e-2, 1.0],
    terminal_weight=[100.0, 1000.0, 100.0, 100.0],
    lower=[-20.0, 0.0],
    upper=[20.0, 0.0],
)


def swing_up(jacobians="analytic", verbose=True):
    model = stiction.samples.cartpole()
    sim = stiction.Simulator(model, dt=DT, contact=False)
    start = time.perf_counter()
    result = trajopt.ilqr(
        sim,
        model.neutral(),
        np.zeros(2),
        np.zeros((STEPS, 2)),
        **PROBLEM,
        jacobians=jacobians,
        callback=(lambda p: print(f"  iter {int(p['iteration']):3d}  cost {p['cost']:.6e}")
                  if verbose and int(p["iteration"]) % 25 == 0 else None),
    )
    elapsed = time.perf_counter() - start
    q, v = result["q"][-1], result["v"][-1]
    if verbose:
        print(f"{jacobians} Jacobians: {result['iterations']} iterations ({result['stop']}), "
              f"cost {result['cost_history'][0]:.4e} -> {result['cost']:.4e}, {elapsed:.3f} s")
        print(f"  final: |theta - pi| = {abs(q[1] - np.pi):.2e} rad, |thetadot| = {abs(v[1]):.2e} rad/s, "
              f"cart x = {q[0]:+.3f} m, max |force| = {np.abs(result['controls'][:, 0]).max():.2f} N")
    return result


def shoot(verbose=True):
    """The same problem by single shooting: L-BFGS over all 125 controls, one reverse pass over the
    recorded rollout per gradient. It makes slower progress than iLQR on this swing-up."""
    model = stiction.samples.cartpole()
    sim = stiction.Simulator(model, dt=DT, contact=False)
    result = trajopt.shooting(sim, model.neutral(), np.zeros(2), np.zeros((STEPS, 2)), **PROBLEM, max_iterations=500)
    q, v = result["q"][-1], result["v"][-1]
    if verbose:
        print(f"single shooting (L-BFGS, Tape.backward gradients): {result['iterations']} iterations "
              f"({result['stop']}), cost {result['cost_history'][0]:.4e} -> {result['cost']:.4e}, "
              f"{result['wall_time']:.3f} s ({result['cost_evaluations']} rollouts, "
              f"{result['gradient_evaluations']} gradients)")
        print(f"  final: |theta - pi| = {abs(q[1] - np.pi):.2e} rad, |thetadot| = {abs(v[1]):.2e} rad/s")
    return result


def plot(result, path):
    plt = pyplot(path)
    if plt is None:
        return None
    t = np.arange(len(result["q"])) * DT
    q, v, u = result["q"], result["v"], result["controls"]
    fig, ax = plt.subplots(2, 2, figsize=(10, 6.5))
    ax[0, 0].plot(t, q[:, 1], label="pole angle θ")
    ax[0, 0].axhline(np.pi, color="k", lw=0.8, ls=":", label="upright (θ = π)")
    ax[0, 0].set_ylabel("θ [rad]")
    ax[0, 0].set_title(f"cartpole swing-up (iLQR): |θ_T − π| = {abs(q[-1, 1] - np.pi):.1e} rad")
    ax[0, 0].legend(fontsize=8)
    ax[0, 1].plot(t, q[:, 0], label="cart x [m]")
    ax[0, 1].plot(t, v[:, 1], label="θ̇ [rad/s]")
    ax[0, 1].set_title("cart position, pole rate")
    ax[0, 1].legend(fontsize=8)
    ax[1, 0].step(t[:-1], u[:, 0], where="post")
    ax[1, 0].set_ylabel("cart force [N]")
    ax[1, 0].set_xlabel("t [s]")
    ax[1, 1].semilogy(result["cost_history"])
    ax[1, 1].set_xlabel("iLQR iteration")
    ax[1, 1].set_ylabel("cost")
    ax[1, 1].set_title(f"{result['iterations']} iterations ({result['stop']})")
    ax[0, 1].set_xlabel("t [s]")
    fig.tight_layout()
    return save(fig, path)


def page(result, path):
    """Writes the swing-up as a web page (stiction.viz, docs/viz.md); returns ``path``."""
    from stiction.viz import Viewer

    viewer = Viewer(stiction.samples.cartpole(), title="cartpole swing-up (iLQR)")
    return viewer.animate(result["q"], DT).save_html(path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fd", action="store_true", help="also run with finite-difference Jacobians")
    parser.add_argument("--no-shooting", action="store_true", help="skip the single-shooting comparison")
    parser.add_argument("--csv", help="write t, x, theta, xdot, thetadot, force to this file")
    parser.add_argument("--html", metavar="PATH.html", help="write the swing-up as a web page (stiction.viz)")
    add_plot_arguments(parser, "cartpole_swingup")
    args = parser.parse_args(argv)
    result = swing_up("analytic")
    if args.fd:
        swing_up("finite_difference")
    if not args.no_shooting:
        result["shooting"] = shoot()
    if args.csv:
        t = np.arange(len(result["q"])) * DT
        force = np.append(result["controls"][:, 0], 0.0)
        table = np.column_stack([t, result["q"], result["v"], force])
        np.savetxt(args.csv, table, delimiter=",", header="t,x,theta,xdot,thetadot,force", comments="")
        print(f"wrote {args.csv}")
    result["plot"] = plot(result, plot_path(args))
    if args.html:
        result["html"] = page(result, args.html)
        print(f"wrote {args.html}")
    return result


if __name__ == "__main__":
    main()
