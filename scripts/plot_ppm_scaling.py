"""Plots the PPM vs boxed-LCP scaling table of docs/benchmarks.md into docs/img/ppm_scaling.png.

The figures are copied from the table (criterion means of `cargo bench --bench ppm -- --noplot`);
run with any Python that has matplotlib: `python scripts/plot_ppm_scaling.py`.
"""

import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

n = [4, 16, 64, 256, 1024]
seconds = {
    "PPM no-slip": [5.3e-6, 13.8e-6, 33.2e-6, 140e-6, 586e-6],
    "PPM viscous": [4.5e-6, 9.7e-6, 28.6e-6, 113e-6, 410e-6],
    "Dantzig no-slip (dense)": [17.9e-6, 380e-6, 11.9e-3, 1.47],
    "Dantzig Coulomb (boxed LCP)": [25.0e-6, 2.11e-3, 369e-3, 171.0],
}
fig, ax = plt.subplots(figsize=(6.4, 4.4))
for (label, t), marker in zip(seconds.items(), "os^v"):
    ax.loglog(n[: len(t)], t, marker=marker, label=label)
ax.loglog(n, [5.3e-6 * x / 4 for x in n], "k:", lw=0.8, label="∝ n")
ax.set_xlabel("contact points n (box on a tessellated ground, 3n rows)")
ax.set_ylabel("time per solve (s)")
ax.set_title("Contact solve time vs number of contacts (6 DoF)")
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=8)
fig.tight_layout()
out = pathlib.Path(__file__).resolve().parent.parent / "docs" / "img" / "ppm_scaling.png"
fig.savefig(out, dpi=110)
print(f"wrote {out}")
