"""Young's modulus and Poisson's ratio of a soft block from its observed motion, from Python (the
Rust example `cargo run --release --example soft_sysid` does the same): `SoftBody.identify`,
Levenberg–Marquardt on the exact sensitivities of the implicit step, from noise-free positions
and with 0.1 mm of position noise.

A 20 × 10 × 10 cm stable Neo-Hookean block (E = 200 kPa, ν = 0.35; 96 tets) is clamped at x = 0
and released under gravity while a 2 N push acts sideways on its free end; every vertex's
position is observed every 25 ms for 0.3 s (dt = 5 ms). The fit starts at E = 100 kPa, ν = 0.25.

Run: python python/examples/soft_sysid.py [--plot PATH.png | --no-plot] [--html PATH.html]
"""

import argparse

import numpy as np

import stiction

from _plotting import add_plot_arguments, plot_path, pyplot, save
from _splitmix import SplitMix64

DT = 5e-3
STEPS = 60
EVERY = 5
TRUTH = np.array([2e5, 0.35])
GUESS = np.array([1e5, 0.25])
FREE = ["youngs_modulus:0", "poisson:0"]


def block(youngs_modulus, poisson):
    mesh = stiction.TetMesh.box((4, 2, 2), (0.2, 0.1, 0.1))
    clamp = mesh.vertices_where(lambda p: p[0] == 0.0)
    return stiction.SoftBody(mesh, material="neo_hookean", youngs_modulus=youngs_modulus, poisson=poisson,
                             density=1000.0, pin_vertices=clamp)


def experiment(body):
    tip = body.mesh.vertices_where(lambda p: p[0] == 0.2)
    push = np.zeros(body.ndof)
    for i in tip:
        push[3 * i + 1] = 2.0 / len(tip)
    controls = np.tile(push, (STEPS, 1))
    x0, v0 = body.rest_positions, np.zeros(body.ndof)
    xs, _ = body.rollout(x0, v0, controls, dt=DT).states
    return x0, v0, controls, xs, tip


def plot(fits, tip, truth_xs, guess_xs, path):
    plt = pyplot(path)
    if plt is None:
        return None
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    t = np.arange(1, STEPS + 1) * DT
    y = lambda xs: 1e3 * xs[:, [3 * i + 1 for i in tip]].mean(axis=1)
    ax[0].plot(t, y(truth_xs), label="truth (E 200 kPa, ν 0.35)")
    ax[0].plot(t, y(guess_xs), "--", label="start (E 100 kPa, ν 0.25)")
    obs = fits["0.1 mm noise"]["observed"]
    ks = sorted(obs)
    ax[0].plot(np.array(ks) * DT, [1e3 * np.mean([obs[k][3 * i + 1] for i in tip]) for k in ks], "k.", label="observed (0.1 mm noise)")
    ax[0].set_xlabel("t [s]")
    ax[0].set_ylabel("free end, sideways [mm]")
    ax[0].set_title("soft block pushed sideways")
    ax[0].legend(fontsize=8)
    for k, (label, fit) in enumerate(fits.items()):
        err = 100 * (fit["values"] - TRUTH) / TRUTH
        ax[1].bar(np.arange(2) + 0.35 * k, np.abs(err) + 1e-16, width=0.35, label=f"{label} ({fit['iterations']} iterations)")
    ax[1].set_yscale("log")
    ax[1].set_xticks(np.arange(2) + 0.175, ["Young's modulus", "Poisson's ratio"])
    ax[1].set_ylabel("|relative error| [%]")
    ax[1].set_title("fitted parameters")
    ax[1].legend(fontsize=8)
    fig.tight_layout()
    return save(fig, path)


def page(fit, path):
    """Writes the motion of the identified block (fitted to the noisy data) as a web page
    (stiction.viz, docs/viz.md); returns ``path``."""
    from stiction.viz import Viewer

    body = block(*fit["values"])
    x0, _, _, xs, _ = experiment(body)
    return Viewer(body, title="soft sysid: identified block").animate(np.vstack([x0, xs]), DT).save_html(path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--html", metavar="PATH.html", help="write the identified motion as a web page (stiction.viz)")
    add_plot_arguments(parser, "soft_sysid")
    args = parser.parse_args(argv)
    truth = block(*TRUTH)
    x0, v0, controls, xs, tip = experiment(truth)
    guess = block(*GUESS)
    rng = SplitMix64(7)
    fits = {}
    for label, noise in (("noise-free", 0.0), ("0.1 mm noise", 1e-4)):
        observed = {}
        for k in range(EVERY, STEPS + 1, EVERY):
            observed[k] = xs[k - 1] + np.array([noise * rng.normal() for _ in range(truth.ndof)])
        fit = guess.identify(x0, v0, controls, observed, FREE, dt=DT)
        fit["observed"] = observed
        fits[label] = fit
        err = (fit["values"] - TRUTH) / TRUTH
        print(f"{label:<14} {fit['iterations']:>3} iterations, cost {fit['initial_cost']:.3e} -> {fit['cost']:.3e}; "
              f"E {fit['values'][0]:.6e} ({err[0]:+.2e}), ν {fit['values'][1]:.6f} ({err[1]:+.2e})")
    _, _, _, guess_xs, _ = experiment(guess)
    out = {"fits": fits, "plot": plot(fits, tip, xs, guess_xs, plot_path(args))}
    if args.html:
        out["html"] = page(fits["0.1 mm noise"], args.html)
        print(f"wrote {args.html}")
    return out


if __name__ == "__main__":
    main()
