"""Cartpole swing-up with iLQR from Python (the Rust example `cargo run --release --example
cartpole_swingup` does the same): from hanging to upright in 2.5 s with |force| ≤ 20 N on the cart.

Run: python python/examples/cartpole_swingup.py [--fd] [--csv PATH]
"""

import argparse
import time

import numpy as np

import stiction
from stiction import trajopt


def swing_up(jacobians="analytic", verbose=True):
    model = stiction.samples.cartpole()
    sim = stiction.Simulator(model, dt=0.02, contact=False)
    steps = 125
    start = time.perf_counter()
    result = trajopt.ilqr(
        sim,
        model.neutral(),
        np.zeros(2),
        np.zeros((steps, 2)),
        target_q=[0.0, np.pi],
        control_weight=[1e-2, 1.0],
        terminal_weight=[100.0, 1000.0, 100.0, 100.0],
        lower=[-20.0, 0.0],
        upper=[20.0, 0.0],
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


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fd", action="store_true", help="also run with finite-difference Jacobians")
    parser.add_argument("--csv", help="write t, x, theta, xdot, thetadot, force to this file")
    args = parser.parse_args()
    result = swing_up("analytic")
    if args.fd:
        swing_up("finite_difference")
    if args.csv:
        t = np.arange(len(result["q"])) * 0.02
        force = np.append(result["controls"][:, 0], 0.0)
        table = np.column_stack([t, result["q"], result["v"], force])
        np.savetxt(args.csv, table, delimiter=",", header="t,x,theta,xdot,thetadot,force", comments="")
        print(f"wrote {args.csv}")


if __name__ == "__main__":
    main()
