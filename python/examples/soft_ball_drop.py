"""A stable Neo-Hookean ball dropped on the ground in a `stiction.World`, from Python (the Rust
example `cargo run --release --example soft_ball_drop` does the same): it falls, squashes on
impact, bounces and settles. Backward Euler beside the implicit midpoint rule, which keeps more of
the bounce; the plot shows the centre-of-mass height, the total energy (kinetic, gravitational,
elastic: it never grows) and the ball's height-to-width ratio over time.

The ball (radius 5 cm, E = 100 kPa, ν = 0.35, ρ = 1000 kg/m³, stiffness damping 1 ms) is a cube
of 4 × 4 × 4 cells (384 tets) mapped onto a sphere: each vertex p of the cube [−1, 1]³ goes to
R s S(p / s), with s = ‖p‖∞ its shell and S the smooth map of the cube's surface onto the unit
sphere (x ↦ x √(1 − y²/2 − z²/2 + y²z²/3), likewise for y and z), so the shells become concentric
spheres and no tet turns over (`TetMesh` checks). Its boundary vertices touch the ground
(μ = 0.8) as points. Released at rest 10 cm above the ground, stepped for 0.7 s at dt = 1 ms.

Run: python python/examples/soft_ball_drop.py [--steps N] [--plot PATH.png | --no-plot] [--html PATH.html]
"""

import argparse

import numpy as np

import stiction

from _plotting import add_plot_arguments, plot_path, pyplot, save

DT = 1e-3
STEPS = 700
RADIUS = 0.05
DROP = 0.10


def ball_mesh(cells, radius, center):
    """A ball of ``radius`` centred at ``center``: the cube [−1, 1]³ of ``cells``³ cells mapped onto it."""
    cube = stiction.TetMesh.box((cells,) * 3, (2.0, 2.0, 2.0), origin=(-1.0, -1.0, -1.0))
    p = cube.vertices
    s = np.abs(p).max(axis=1)
    unit = np.divide(p, s[:, None], out=np.zeros_like(p), where=s[:, None] > 0)
    x, y, z = (unit**2).T
    stretch = np.sqrt(np.stack([1 - y / 2 - z / 2 + y * z / 3,
                                1 - z / 2 - x / 2 + z * x / 3,
                                1 - x / 2 - y / 2 + x * y / 3], axis=1))
    return stiction.TetMesh(np.asarray(center) + radius * s[:, None] * unit * stretch, cube.tets)


def ball():
    mesh = ball_mesh(4, RADIUS, (0.0, 0.0, RADIUS + DROP))
    return stiction.SoftBody(mesh, material="neo_hookean", youngs_modulus=1e5, poisson=0.35, density=1000.0,
                             damping=(0.0, 1e-3))


def energy(body, x, v):
    """Kinetic + gravitational + elastic energy (J)."""
    m = body.masses
    return (0.5 * m @ (v.reshape(-1, 3) ** 2).sum(axis=1) - m @ (x.reshape(-1, 3) @ body.gravity)
            + body.elastic_energy(x))


def drop(body, integrator, steps=STEPS):
    """Drops the ball once; returns its history (``x``: the vertex positions per step, and the
    ``world``) and the bounce."""
    world = stiction.World([stiction.StaticGeometry.ground(friction=0.8),
                            stiction.SoftSystem(body, friction=0.8, integrator=integrator)], dt=DT)
    m = body.masses / body.total_mass
    x, v = body.rest_positions, np.zeros(body.ndof)
    rows = []
    xs = [x]

    def row(t, x, v, contacts):
        p = x.reshape(-1, 3)
        aspect = np.ptp(p[:, 2]) / np.ptp(p[:, 0])
        rows.append((t, m @ p[:, 2], m @ v.reshape(-1, 3)[:, 2], energy(body, x, v), aspect, contacts, p[:, 2].min()))

    row(0.0, x, v, 0)
    for k in range(steps):
        rec = world.step_recorded(x, v)
        x, v = rec.q_next, rec.v_next
        xs.append(x)
        row((k + 1) * DT, x, v, rec.num_contacts)
    t, com_z, com_vz, e, aspect, contacts, lowest = (np.array(c) for c in zip(*rows))
    first = int(np.argmax(contacts > 0))
    last = first + int(np.argmax(contacts[first:] == 0))
    second = last + int(np.argmax(contacts[last:] > 0)) if np.any(contacts[last:] > 0) else len(t)
    impact = -com_vz[first - 1]
    rebound = com_vz[first:second].max() if second > first else 0.0
    return {
        "t": t, "com_z": com_z, "energy": e, "aspect": aspect, "contacts": contacts,
        "impact_speed": impact, "rebound_speed": rebound, "restitution": rebound / impact,
        "squash": aspect[first:last].min() if last > first else aspect.min(), "contact_time": (last - first) * DT,
        "apex": com_z[last:second].max() if second > last else com_z[-1],
        "max_energy_increase": np.diff(e).max(), "lowest": lowest.min(), "x": np.array(xs), "world": world,
    }


def plot(runs, path):
    plt = pyplot(path)
    if plt is None:
        return None
    fig, ax = plt.subplots(1, 3, figsize=(15, 4))
    for name, r in runs.items():
        ax[0].plot(r["t"], 1e3 * r["com_z"], label=f"{name} (restitution {r['restitution']:.2f})")
        ax[1].plot(r["t"], r["energy"], label=name)
        ax[2].plot(r["t"], r["aspect"], label=f"{name} (min {r['squash']:.3f})")
    ax[0].axhline(1e3 * RADIUS, color="k", ls=":", label="radius (touching)")
    ax[0].set_ylabel("centre-of-mass height [mm]")
    ax[0].set_title("Neo-Hookean ball dropped from 10 cm")
    ax[1].set_ylabel("total energy [J]")
    ax[1].set_title("kinetic + gravitational + elastic")
    ax[2].set_ylabel("height / width")
    ax[2].set_title("squash")
    for a in ax:
        a.set_xlabel("t [s]")
        a.legend(fontsize=8)
    fig.tight_layout()
    return save(fig, path)


def page(runs, path):
    """Writes the implicit-midpoint drop as a web page (stiction.viz, docs/viz.md): the ball's
    surface triangles moving with its vertices; returns ``path``."""
    from stiction.viz import Viewer

    r = runs["implicit midpoint"]
    return Viewer(r["world"], title="soft ball drop (implicit midpoint)").animate(r["x"], DT).save_html(path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=STEPS, help=f"steps of {DT * 1e3:g} ms (default {STEPS})")
    parser.add_argument("--html", metavar="PATH.html", help="write the drop as a web page (stiction.viz)")
    add_plot_arguments(parser, "soft_ball_drop")
    args = parser.parse_args(argv)
    body = ball()
    print(f"ball: {body.num_vertices} vertices, {body.mesh.num_tets} tets, {body.total_mass:.3f} kg, "
          f"dropped from {100 * DROP:.0f} cm; {args.steps} steps of {1e3 * DT:.0f} ms")
    runs = {name: drop(body, integrator, args.steps)
            for name, integrator in (("backward Euler", "backward_euler"), ("implicit midpoint", "implicit_midpoint"))}
    for name, r in runs.items():
        print(f"  {name:<18} impact {r['impact_speed']:.3f} m/s, rebound {r['rebound_speed']:.3f} m/s "
              f"(restitution {r['restitution']:.2f}), contact {1e3 * r['contact_time']:.0f} ms, "
              f"squash (height/width) {r['squash']:.3f}, apex {1e3 * r['apex']:.1f} mm, "
              f"energy {r['energy'][0]:.4f} -> {r['energy'][-1]:.4f} J")
    out = {"runs": runs, "plot": plot(runs, plot_path(args))}
    if args.html:
        out["html"] = page(runs, args.html)
        print(f"wrote {args.html}")
    return out


if __name__ == "__main__":
    main()
