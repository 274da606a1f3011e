"""Plots the soft-body step's growth with the number of tets into docs/img/soft_step_scaling.png.

Reads criterion's means from `target/criterion/soft/{step,step_kept}/N/new/estimates.json`, so run
`cargo bench --bench soft -- --noplot "soft/"` first, then `python scripts/plot_soft_scaling.py`
with any Python that has matplotlib.
"""

import json
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

root = pathlib.Path(__file__).resolve().parent.parent
criterion = root / "target" / "criterion" / "soft"
labels = {
    "step": "direct: a Cholesky factorization per Newton iteration",
    "step_kept": "kept factor: one f32 factorization, PCG per iteration",
}
# The bench's sizes (6 c³ tets for c = 6, 9, 12, 16, 20); other directories are older runs.
sizes = [1_296, 4_374, 10_368, 24_576, 48_000]
fig, ax = plt.subplots(figsize=(6.4, 4.4))
for (bench, label), marker in zip(labels.items(), "os"):
    points = []
    for size in sizes:
        est = criterion / bench / str(size) / "new" / "estimates.json"
        if est.exists():
            points.append((size, json.loads(est.read_text())["mean"]["point_estimate"] * 1e-9))
    if not points:
        sys.exit(f"no criterion results under {criterion / bench}: run the bench first")
    n, t = zip(*points)
    ax.loglog(n, t, marker=marker, label=label)
    for x, y in points:
        text = f"{y:.2f} s" if y >= 1 else f"{y * 1e3:.3g} ms"
        ax.annotate(text, (x, y), textcoords="offset points", xytext=(4, -10), fontsize=7)
ax.axhline(0.05, color="k", ls=":", lw=0.8, label="50 ms (issue #21, 10k tets)")
ax.axvline(10_368, color="grey", ls=":", lw=0.8)
ax.set_xticks(sizes, [f"{n:,}" for n in sizes], fontsize=7)
ax.minorticks_off()
ax.set_xlabel("tets (clamped Neo-Hookean block, c³ cells × 6)")
ax.set_ylabel("one implicit step, dt = 10 ms (s)")
ax.set_title("Soft-body step time vs mesh size (one core)")
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=8)
fig.tight_layout()
out = root / "docs" / "img" / "soft_step_scaling.png"
fig.savefig(out, dpi=110)
print(f"wrote {out}")
