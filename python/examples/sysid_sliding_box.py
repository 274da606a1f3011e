"""System identification of a sliding box from Python (the Rust example `cargo run --release --example
sysid_sliding_box` does the same): recover its mass and its friction coefficient from observed positions
with `stiction.sysid.fit` (Levenberg–Marquardt on the analytic sensitivities, or on finite differences),
from noise-free data and with 1 mm of position noise.

A 1 kg box (20 × 16 × 12 cm) slides on the ground at 1 m/s, pushed through its centre along x by
f(t) = 3 + 2 sin(2πt / 0.4 s) N; box friction 0.4, ground friction 0.2 (a contact uses their mean, 0.3).
The varying push separates f/m from μg in the acceleration, so mass and friction are both identifiable.
Positions are observed every 10 ms for 0.8 s; the fit starts 40 % heavy and 35 % low in friction.

Run: python python/examples/sysid_sliding_box.py [--no-fd] [--plot PATH.png | --no-plot] [--html PATH.html]
"""

import argparse

import numpy as np

import stiction
from stiction import sysid

from _plotting import add_plot_arguments, plot_path, pyplot, save
from _splitmix import SplitMix64

DT = 2e-3
STEPS = 400
EVERY = 5  # observe every 5th state (10 ms)
NAMES = ["mass:box", "friction:box"]
TRUTH = np.array([1.0, 0.4])
GUESS = np.array([1.4, 0.26])
HALF = np.array([0.1, 0.08, 0.06])


def box_model():
    b = stiction.ModelBuilder("sliding_box")
    b.add_collision("world", "plane", friction=0.2)
    x2, y2, z2 = (2 * HALF) ** 2
    m = TRUTH[0]
    b.add_link("box", mass=m, inertia=(m / 12 * (y2 + z2), 0, 0, m / 12 * (x2 + z2), 0, m / 12 * (x2 + y2)))
    b.add_joint("box_free", "free", "world", "box")
    b.add_collision("box", "box", half_extents=HALF, friction=TRUTH[1])
    return b.build()


def data(model, noise):
    """The experiment simulated with the true parameters; positions observed every 5 steps with
    ``noise`` metres of Gaussian noise (the orientation is not observed: σ = inf)."""
    q0 = model.neutral()
    q0[2] = HALF[2] - 1e-4
    v0 = np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0])
    t = np.arange(STEPS) * DT
    controls = np.zeros((STEPS, 6))
    controls[:, 3] = 3.0 + 2.0 * np.sin(2 * np.pi * t / 0.4)
    q, _ = stiction.Simulator(model, dt=DT).rollout(q0, v0, controls)
    steps = np.arange(EVERY, STEPS + 1, EVERY)
    observed = q[steps - 1].copy()
    rng = SplitMix64(7)
    for row in observed:
        for k in range(3):
            row[k] += noise * rng.normal()
    sigma = [np.inf, np.inf, np.inf, 1e-3, 1e-3, 1e-3]
    return dict(q0=q0, v0=v0, controls=controls, q=observed, steps=steps, sigma_q=sigma)


def identify(noise=0.0, jacobians="analytic", verbose=True):
    """Fits mass and friction to the data with ``noise``; returns the fit dict with ``data`` and
    ``errors`` (percent) added."""
    model = box_model()
    experiment = data(model, noise)

    def log(p):
        if verbose:
            print(f"    iter {int(p['iteration']):2d}  cost {p['cost']:.4e}  "
                  f"{'accepted' if p['accepted'] else 'rejected'}  lambda {p['damping']:.1e}")

    fit = sysid.fit(stiction.Simulator(model, dt=DT), NAMES, [experiment], theta0=GUESS, jacobians=jacobians,
                    callback=log)
    fit["errors"] = 100.0 * (fit["theta"] - TRUTH) / TRUTH
    fit["data"] = experiment
    if verbose:
        print(fit["report"], end="" if fit["report"].endswith("\n") else "\n")
        for name, true, value, sd, err in zip(NAMES, TRUTH, fit["theta"], fit["std_dev"], fit["errors"]):
            print(f"  {name:<13} true {true:.4f}  fitted {value:.6f} ± {sd:.1e}  error {err:+.4f} %")
    return fit


def plot(fits, path):
    plt = pyplot(path)
    if plt is None:
        return None
    model = box_model()
    fig, ax = plt.subplots(1, 2, figsize=(12, 4.5))
    noisy = fits[("1 mm position noise", "analytic")]
    d = noisy["data"]
    t = np.arange(STEPS + 1) * DT
    guess_model = stiction.ParamSpec(model, NAMES).apply(model, GUESS)
    for label, m, style in (("first guess", guess_model, "--"), ("fitted (noisy data)", noisy["model"], "-")):
        q, _ = stiction.Simulator(m, dt=DT).rollout(d["q0"], d["v0"], d["controls"])
        ax[0].plot(t, np.concatenate([[d["q0"][0]], q[:, 0]]), style, label=label)
    ax[0].plot(d["steps"] * DT, d["q"][:, 0], ".", ms=3, color="k", label="observed x (1 mm noise)")
    ax[0].set_xlabel("t [s]")
    ax[0].set_ylabel("box x [m]")
    ax[0].set_title("sliding box: observed and simulated positions")
    ax[0].legend(fontsize=8)
    for (label, jacobians), fit in fits.items():
        ax[1].semilogy(fit["cost_history"], "o-", ms=3,
                       label=f"{label}, {jacobians}: mass {fit['errors'][0]:+.2f} %, friction {fit['errors'][1]:+.2f} %")
    ax[1].set_xlabel("Levenberg–Marquardt iteration")
    ax[1].set_ylabel("cost ½Σ(r/σ)²")
    ax[1].set_title("loss per iteration")
    ax[1].legend(fontsize=7)
    fig.tight_layout()
    return save(fig, path)


def page(fit, path):
    """Writes the experiment as simulated with the identified mass and friction (fitted to the
    noisy data) as a web page with the contacts (stiction.viz, docs/viz.md); returns ``path``."""
    from stiction.viz import Viewer

    d = fit["data"]
    q = stiction.Simulator(fit["model"], dt=DT).rollout(d["q0"], d["v0"], d["controls"])[0]
    viewer = Viewer(fit["model"], title="sliding box, identified mass and friction")
    return viewer.animate(np.vstack([d["q0"], q]), DT, contacts="auto").save_html(path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-fd", action="store_true", help="skip the finite-difference fits")
    parser.add_argument("--html", metavar="PATH.html", help="write the identified motion as a web page (stiction.viz)")
    add_plot_arguments(parser, "sysid_sliding_box")
    args = parser.parse_args(argv)
    print(f"sliding box: {STEPS} steps of {DT * 1e3} ms, push 3 + 2 sin(2πt/0.4 s) N, true mass {TRUTH[0]} kg, "
          f"friction:box {TRUTH[1]} (ground 0.2)")
    fits = {}
    for label, noise in (("noise-free", 0.0), ("1 mm position noise", 1e-3)):
        for jacobians in ["analytic"] + ([] if args.no_fd else ["finite_difference"]):
            print(f"\n== {label}, {jacobians} Jacobians ==")
            fits[(label, jacobians)] = identify(noise, jacobians)
    print("\nsummary:")
    print(f"  {'data':<20} {'Jacobians':<17} {'iters':>5} {'wall [s]':>10} {'mass err %':>12} {'fric err %':>12}")
    for (label, jacobians), fit in fits.items():
        print(f"  {label:<20} {jacobians:<17} {fit['iterations']:>5} {fit['wall_time']:>10.3f} "
              f"{fit['errors'][0]:>+12.4f} {fit['errors'][1]:>+12.4f}")
    out = {"fits": fits, "plot": plot(fits, plot_path(args))}
    if args.html:
        out["html"] = page(fits[("1 mm position noise", "analytic")], args.html)
        print(f"wrote {args.html}")
    return out


if __name__ == "__main__":
    main()
