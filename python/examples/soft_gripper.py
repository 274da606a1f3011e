"""A rigid two-finger gripper squeezes a soft cube resting on the ground and lifts it by friction
alone, from Python (the Rust example `cargo run --release --example soft_gripper` does the same):
a `stiction.World` of the ground, the gripper (a `Model`) and the cube (a `SoftBody`), with the
controls computed in the loop from the state. The plot shows the finger and base positions, the
cube's centre-of-mass height and the normal contact forces (pads on the cube, ground on the cube).

The gripper: a base (0.5 kg) on a prismatic z joint, two fingers (0.1 kg each) on prismatic x
joints of the base, each carrying a box pad (1 × 8 × 5.4 cm, μ = 1) 1 cm away from the cube at
the start. The cube: 6 cm on a side, 2 × 2 × 2 cells (48 tets), stable Neo-Hookean (E = 50 kPa,
ν = 0.3, ρ = 1000 kg/m³, 216 g), its boundary vertices touching the pads (μ = 1) and the ground
(μ = 0.8). Each joint gets a PD force towards a target: the fingers' targets close smoothly over
0.2 s to 1 cm inside the cube's faces (about 4 N of squeeze each, saturated at 6 N); from 0.35 s
the base's target rises by 5 cm over 0.5 s, with the gripper's weight as a feed-forward force;
then it holds until 1.2 s. dt = 2 ms.

Run: python python/examples/soft_gripper.py [--steps N] [--plot PATH.png | --no-plot] [--html PATH.html]
"""

import argparse

import numpy as np

import stiction
from stiction import ModelBuilder, SoftBody, SoftSystem, StaticGeometry, TetMesh, World

from _plotting import add_plot_arguments, plot_path, pyplot, save

DT = 2e-3
STEPS = 600
SIDE = 0.06          # the cube's side (m)
PAD = (0.005, 0.04, 0.027)   # the pads' half extents (m)
PAD_Z = 0.035        # height of the pads' centres at the base's zero (m)
GAP = 0.01           # gap between each pad and the cube at the start (m)
SQUEEZE = 0.01       # how far the fingers' targets go past the cube's faces (m)
LIFT = 0.05          # how far the base's target rises (m)
G = 9.81
BASE_MASS, FINGER_MASS = 0.5, 0.1
BASE_GAINS = (3000.0, 80.0)          # N/m, N·s/m
FINGER_GAINS = (400.0, 20.0, 6.0)    # N/m, N·s/m, saturation (N)


def gripper():
    """A base on a prismatic z joint; two fingers on prismatic x joints with box pads."""
    b = ModelBuilder("gripper")
    b.add_link("base", mass=BASE_MASS, inertia=np.eye(3) * 1e-3)
    b.add_joint("lift", "prismatic", "world", "base", axis=(0, 0, 1), origin_xyz=(0, 0, PAD_Z))
    x0 = SIDE / 2 + PAD[0] + GAP
    for name, sign in (("left", -1.0), ("right", 1.0)):
        b.add_link(name, mass=FINGER_MASS, inertia=np.eye(3) * 1e-4)
        b.add_joint(f"{name}_slide", "prismatic", "base", name, axis=(1, 0, 0), origin_xyz=(sign * x0, 0, 0))
        b.add_collision(name, "box", half_extents=PAD, friction=1.0)
    return b.build()


def cube():
    mesh = TetMesh.box((2, 2, 2), (SIDE,) * 3, origin=(-SIDE / 2, -SIDE / 2, 0.0))
    return SoftBody(mesh, material="neo_hookean", youngs_modulus=5e4, poisson=0.3, density=1000.0,
                    damping=(0.5, 5e-3))


def smoothstep(s):
    s = np.clip(s, 0.0, 1.0)
    return s * s * (3 - 2 * s)


def control(t, q, v, nu):
    """PD forces on the three joints at time ``t`` from the state (the cube gets none): ``q[0]``
    is the base's height, ``q[1]`` and ``q[2]`` the fingers' travel along +x."""
    kp, kd = BASE_GAINS
    kf, kdf, fmax = FINGER_GAINS
    close = (GAP + SQUEEZE) * smoothstep(t / 0.2)
    lift = LIFT * smoothstep((t - 0.35) / 0.5)
    u = np.zeros(nu)
    u[0] = (BASE_MASS + 2 * FINGER_MASS) * G + kp * (lift - q[0]) - kd * v[0]
    u[1] = np.clip(kf * (close - q[1]) - kdf * v[1], -fmax, fmax)
    u[2] = np.clip(kf * (-close - q[2]) - kdf * v[2], -fmax, fmax)
    return u


def simulate(steps=STEPS):
    model, body = gripper(), cube()
    world = World([StaticGeometry.ground(friction=0.8), model, SoftSystem(body, friction=1.0)], dt=DT)
    cube_q, cube_v, _ = world.blocks(2)
    m = body.masses / body.total_mass
    q = np.r_[np.zeros(model.nq), body.rest_positions]
    v = np.zeros(world.nv)
    com0 = m @ q[cube_q].reshape(-1, 3)[:, 2]
    hist = {k: [] for k in ("t", "base", "left", "right", "com_z", "grip", "ground", "speed")}
    qs, contacts = [q], []  # contacts[k]: those found at qs[k] (the last state's: none computed)
    for k in range(steps):
        u = control(k * DT, q, v, world.nu)
        rec = world.step_recorded(q, v, u)
        q, v = rec.q_next, rec.v_next
        qs.append(q)
        contacts.append(rec.contacts)
        normal = rec.impulses[0::3] / DT
        on_ground = np.array([c["side_a"] is None or c["side_b"] is None for c in rec.contacts], dtype=bool)
        hist["t"].append((k + 1) * DT)
        hist["base"].append(q[0])
        hist["left"].append(q[1])
        hist["right"].append(q[2])
        hist["com_z"].append(m @ q[cube_q].reshape(-1, 3)[:, 2])
        hist["speed"].append(np.linalg.norm(m @ v[cube_v].reshape(-1, 3)))
        hist["grip"].append(normal[~on_ground].sum())
        hist["ground"].append(normal[on_ground].sum())
    hist = {k: np.array(x) for k, x in hist.items()}
    contacts.append([])
    held = hist["t"] >= min(1.0, hist["t"][-1])
    relative = hist["com_z"][held] - hist["base"][held]
    return {
        **hist,
        "com0": com0,
        "raised": hist["com_z"][-1] - com0,
        "lift": hist["base"][-1],
        "lowest_vertex": q[cube_q][2::3].min(),
        "slip": relative[0] - relative[-1],
        "final_speed": hist["speed"][held].max(),
        "weight": body.total_mass * G,
        "body": body,
        "world": world,
        "q": np.array(qs),
        "contacts": contacts,
    }


def plot(r, path):
    plt = pyplot(path)
    if plt is None:
        return None
    fig, ax = plt.subplots(1, 3, figsize=(15, 4))
    t = r["t"]
    ax[0].plot(t, 1e3 * r["left"], label="left finger (+x closes)")
    ax[0].plot(t, 1e3 * r["right"], label="right finger (−x closes)")
    ax[0].plot(t, 1e3 * r["base"], label="base (lift)")
    ax[0].set_ylabel("joint position [mm]")
    ax[0].set_title("gripper")
    ax[1].plot(t, 1e3 * r["com_z"], label="cube centre of mass")
    ax[1].plot(t, 1e3 * (r["com0"] + r["base"]), ls=":", label="start + base lift")
    ax[1].set_ylabel("height [mm]")
    ax[1].set_title(f"soft cube raised {1e3 * r['raised']:.1f} mm")
    ax[2].plot(t, r["grip"], label="pads on the cube")
    ax[2].plot(t, r["ground"], label="ground on the cube")
    ax[2].axhline(r["weight"], color="k", ls=":", label="cube weight")
    ax[2].set_ylabel("total normal force [N]")
    ax[2].set_title("contact forces")
    for a in ax:
        a.set_xlabel("t [s]")
        a.legend(fontsize=8)
    fig.tight_layout()
    return save(fig, path)


def page(r, path):
    """Writes the grasp and lift as a web page (stiction.viz, docs/viz.md): the pads, the cube's
    surface and the contacts; returns ``path``."""
    from stiction.viz import Viewer

    viewer = Viewer(r["world"], title="soft gripper", frames=True)
    return viewer.animate(r["q"], DT, contacts=r["contacts"]).save_html(path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=STEPS, help=f"steps of {DT * 1e3:g} ms (default {STEPS})")
    parser.add_argument("--html", metavar="PATH.html", help="write the grasp as a web page (stiction.viz)")
    add_plot_arguments(parser, "soft_gripper")
    args = parser.parse_args(argv)
    r = simulate(args.steps)
    body = r["body"]
    print(f"gripper (3 joints) and a soft cube ({body.num_vertices} vertices, {body.mesh.num_tets} tets, "
          f"{1e3 * body.total_mass:.0f} g) on the ground; {args.steps} steps of {1e3 * DT:.0f} ms")
    print(f"  cube centre of mass {1e3 * r['com0']:.1f} -> {1e3 * r['com_z'][-1]:.1f} mm (raised "
          f"{1e3 * r['raised']:.1f} mm; base raised {1e3 * r['lift']:.1f} mm), lowest vertex "
          f"{1e3 * r['lowest_vertex']:.1f} mm above the ground")
    print(f"  held: grip force {r['grip'][-1]:.2f} N on a {r['weight']:.2f} N cube, ground force "
          f"{r['ground'][-1]:.2f} N; slip over the last 0.2 s {1e3 * r['slip']:.3f} mm")
    r["plot"] = plot(r, plot_path(args))
    if args.html:
        r["html"] = page(r, args.html)
        print(f"wrote {args.html}")
    return r


if __name__ == "__main__":
    main()
