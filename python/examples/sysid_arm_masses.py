"""System identification of the seven link masses of `stiction.samples.arm7()` from joint-angle
trajectories under rich excitation (sums of sines on every joint), noise-free and with 1 mrad of angle
noise, from Python (the Rust example `cargo run --release --example sysid_arm_masses` does the same):
`stiction.sysid.fit` with analytic sensitivities and with finite differences.

Three 1 s experiments from random configurations at rest (dt = 2 ms, the constraint stage off: no joint
limits), joint angles observed every 10 ms. The fit starts with the masses alternately 30 % high and
30 % low.

Run: python python/examples/sysid_arm_masses.py [--no-fd] [--noise-free-only] [--plot PATH.png | --no-plot] [--html PATH.html]
"""

import argparse

import numpy as np

import stiction
from stiction import sysid

from _plotting import add_plot_arguments, plot_path, pyplot, save
from _splitmix import SplitMix64

DT = 2e-3
STEPS = 500
EVERY = 5
NAMES = [f"mass:link{i}" for i in range(1, 8)]
AMPLITUDES = [12.0, 12.0, 6.0, 6.0, 2.0, 2.0, 1.0]
FREQUENCIES = [1.3, 2.9, 4.7]


def data(model, noise):
    """Three experiments simulated with the true masses; angles observed every 5 steps."""
    noise_rng = SplitMix64(11)
    sim = stiction.Simulator(model, dt=DT, contact=False)
    experiments = []
    for k in range(3):
        rng = SplitMix64(300 + k)
        q0 = model.random_configuration(300 + k) * 0.5
        phase = [rng.range(0.0, 2 * np.pi) for _ in range(21)]
        controls = np.zeros((STEPS, 7))
        for t in range(STEPS):
            s = t * DT
            for i in range(7):
                total = 0.0
                for m, w in enumerate(FREQUENCIES):
                    total += np.sin(2 * np.pi * w * s + phase[3 * i + m])
                controls[t, i] = AMPLITUDES[i] * total / 3.0
        q, _ = sim.rollout(q0, np.zeros(7), controls)
        steps = np.arange(EVERY, STEPS + 1, EVERY)
        observed = q[steps - 1].copy()
        for row in observed:
            for i in range(7):
                row[i] += noise * noise_rng.normal()
        experiments.append(dict(q0=q0, v0=np.zeros(7), controls=controls, q=observed, steps=steps,
                                sigma_q=noise if noise > 0 else 1e-3))
    return experiments


def identify(noise=0.0, jacobians="analytic", verbose=True):
    """Fits the seven link masses; returns the fit dict with ``truth``, ``errors`` (percent) and
    ``worst`` (largest |error|, percent) added."""
    model = stiction.samples.arm7()
    truth = stiction.ParamSpec(model, NAMES).values(model)
    guess = truth * np.where(np.arange(7) % 2 == 0, 1.3, 0.7)
    sim = stiction.Simulator(model, dt=DT, contact=False)
    fit = sysid.fit(sim, NAMES, data(model, noise), theta0=guess, jacobians=jacobians)
    fit["truth"] = truth
    fit["errors"] = 100.0 * (fit["theta"] - truth) / truth
    fit["worst"] = float(np.abs(fit["errors"]).max())
    if verbose:
        print(fit["report"], end="" if fit["report"].endswith("\n") else "\n")
        for name, true, value, sd, err in zip(NAMES, truth, fit["theta"], fit["std_dev"], fit["errors"]):
            print(f"  {name:<11} true {true:.3f} kg  fitted {value:.5f} ± {sd:.1e} kg  error {err:+.4f} %")
    return fit


def plot(fits, path):
    plt = pyplot(path)
    if plt is None:
        return None
    fig, ax = plt.subplots(1, 2, figsize=(12, 4.5))
    for (label, jacobians), fit in fits.items():
        ax[0].semilogy(fit["cost_history"], "o-", ms=3, label=f"{label}, {jacobians}")
    ax[0].set_xlabel("Levenberg–Marquardt iteration")
    ax[0].set_ylabel("cost ½Σ(r/σ)²")
    ax[0].set_title("arm7 link masses: loss per iteration")
    ax[0].legend(fontsize=8)
    x = np.arange(7)
    first = next(iter(fits.values()))
    ax[1].bar(x - 0.3, first["truth"], 0.2, label="true", color="0.5")
    ax[1].bar(x - 0.1, first["theta_initial"], 0.2, label="first guess", color="0.8")
    for n, ((label, jacobians), fit) in enumerate((k, f) for k, f in fits.items() if k[1] == "analytic"):
        ax[1].bar(x + 0.1 + 0.2 * n, fit["theta"], 0.2, label=f"fitted, {label}")
    ax[1].set_xticks(x, [f"link{i}" for i in range(1, 8)])
    ax[1].set_ylabel("mass [kg]")
    ax[1].set_title("link masses")
    ax[1].legend(fontsize=8)
    fig.tight_layout()
    return save(fig, path)


def page(fit, path):
    """Writes the first experiment as simulated with the identified masses as a web page
    (stiction.viz, docs/viz.md); returns ``path``."""
    from stiction.viz import Viewer

    model = stiction.samples.arm7()
    e = data(model, 0.0)[0]
    q = stiction.Simulator(fit["model"], dt=DT, contact=False).rollout(e["q0"], e["v0"], e["controls"])[0]
    viewer = Viewer(fit["model"], title="arm7, identified link masses", frames=True)
    return viewer.animate(np.vstack([e["q0"], q]), DT).save_html(path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-fd", action="store_true", help="skip the finite-difference fits")
    parser.add_argument("--noise-free-only", action="store_true", help="skip the fits to noisy data")
    parser.add_argument("--html", metavar="PATH.html", help="write the identified motion as a web page (stiction.viz)")
    add_plot_arguments(parser, "sysid_arm_masses")
    args = parser.parse_args(argv)
    fits = {}
    cases = [("noise-free", 0.0)] + ([] if args.noise_free_only else [("1 mrad angle noise", 1e-3)])
    for label, noise in cases:
        for jacobians in ["analytic"] + ([] if args.no_fd else ["finite_difference"]):
            print(f"\n== arm7 link masses, {label}, {jacobians} Jacobians ==")
            fits[(label, jacobians)] = identify(noise, jacobians)
    print("\nsummary:")
    print(f"  {'data':<20} {'Jacobians':<17} {'iters':>5} {'wall [s]':>10} {'worst error %':>16}")
    for (label, jacobians), fit in fits.items():
        print(f"  {label:<20} {jacobians:<17} {fit['iterations']:>5} {fit['wall_time']:>10.3f} {fit['worst']:>16.4f}")
    out = {"fits": fits, "plot": plot(fits, plot_path(args))}
    if args.html:
        out["html"] = page(next(iter(fits.values())), args.html)
        print(f"wrote {args.html}")
    return out


if __name__ == "__main__":
    main()
