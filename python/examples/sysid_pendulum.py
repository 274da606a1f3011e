"""System identification from Python: recover the two link masses of a double pendulum from
noisy joint trajectories with `stiction.sysid.fit` (Levenberg–Marquardt on exact Jacobians).

Run: python python/examples/sysid_pendulum.py [--noise SIGMA] [--plot PATH.png | --no-plot] [--html PATH.html]
"""

import argparse

import numpy as np

import stiction
from stiction import sysid

from _plotting import add_plot_arguments, plot_path, pyplot, save


def identify(noise=1e-3, jacobians="analytic", seed=0, verbose=True):
    base = stiction.samples.pendulum_chain(2, mass=1.0)
    names = ["mass:link0", "mass:link1"]
    hidden = [1.4, 0.8]
    truth = stiction.ParamSpec(base, names).apply(base, hidden)
    sim = stiction.Simulator(truth, dt=0.01, contact=False)
    rng = np.random.default_rng(seed)
    experiments = []
    for k in range(2):
        t = np.arange(200) * 0.01
        taus = np.column_stack([3.0 * np.sin((2 + k) * t), 2.0 * np.cos((3 + k) * t)])
        q0, v0 = [0.2 * (k + 1), -0.3], [0.0, 0.0]
        q, _ = sim.rollout(q0, v0, taus)
        q_noisy = q + noise * rng.standard_normal(q.shape)
        experiments.append(dict(q0=q0, v0=v0, controls=taus, q=q_noisy, sigma_q=max(noise, 1e-6)))
    guess = stiction.Simulator(base, dt=0.01, contact=False)
    fit = sysid.fit(guess, names, experiments, jacobians=jacobians)
    fit["experiments"] = experiments
    if verbose:
        print(fit["report"])
        for name, true, value, sd in zip(names, hidden, fit["theta"], fit["std_dev"]):
            print(f"{name}: true {true:.4f}, fitted {value:.4f} ± {sd:.4f} ({100 * (value - true) / true:+.2f} %)")
    return hidden, fit


def plot(hidden, fit, path):
    plt = pyplot(path)
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.semilogy(fit["cost_history"], "o-")
    ax.set_xlabel("Levenberg–Marquardt iteration")
    ax.set_ylabel("cost ½Σ(r/σ)²")
    errors = ", ".join(f"{n} {100 * (v - h) / h:+.2f} %" for n, h, v in zip(fit["names"], hidden, fit["theta"]))
    ax.set_title(f"double pendulum masses: {errors}", fontsize=9)
    fig.tight_layout()
    return save(fig, path)


def page(fit, path):
    """Writes the first experiment as simulated with the identified masses as a web page
    (stiction.viz, docs/viz.md); returns ``path``."""
    from stiction.viz import Viewer

    e = fit["experiments"][0]
    q = stiction.Simulator(fit["model"], dt=0.01, contact=False).rollout(e["q0"], e["v0"], e["controls"])[0]
    viewer = Viewer(fit["model"], title="double pendulum, identified masses", frames=True)
    return viewer.animate(np.vstack([e["q0"], q]), 0.01).save_html(path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--noise", type=float, default=1e-3, help="joint-angle noise σ (rad)")
    parser.add_argument("--html", metavar="PATH.html", help="write the identified motion as a web page (stiction.viz)")
    add_plot_arguments(parser, "sysid_pendulum")
    args = parser.parse_args(argv)
    hidden, fit = identify(args.noise)
    fit["plot"] = plot(hidden, fit, plot_path(args))
    if args.html:
        fit["html"] = page(fit, args.html)
        print(f"wrote {args.html}")
    return hidden, fit


if __name__ == "__main__":
    main()
