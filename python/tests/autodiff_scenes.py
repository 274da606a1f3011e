"""Scenes shared by the PyTorch and JAX wrapper tests: a contact-free 7-DoF arm and a box
sliding on the ground (four clamping contacts, friction at its bound), both away from
contact-mode switches so finite differences see one smooth branch."""

import numpy as np

import stiction
from stiction import ModelBuilder

ARM_PARAMS = ["mass:link3", "com:link5", "damping:joint2"]
BOX_PARAMS = ["mass:box", "friction:box"]


def arm():
    """The arm, its simulator (no contact, θ = a mass, a COM and a damping) and a rollout's
    inputs ``(q0, v0, taus, theta)`` for ``steps`` steps."""
    model = stiction.samples.arm7()
    names = [n for n in ARM_PARAMS if n in stiction.ParamSpec.available(model)]
    sim = stiction.Simulator(model, dt=0.01, contact=False, params=names)
    rng = np.random.default_rng(3)
    q0 = 0.4 * rng.standard_normal(7)
    v0 = 0.3 * rng.standard_normal(7)
    return sim, q0, v0, rng, sim.params.values(model)


def arm_inputs(steps=8):
    sim, q0, v0, rng, theta = arm()
    taus = 2.0 * rng.standard_normal((steps, 7))
    return sim, (q0, v0, taus, theta)


def box_model(friction=0.5):
    """A 1 kg box (0.2 × 0.4 × 0.1 m) on a free joint over the ground plane."""
    b = ModelBuilder("box_on_ground")
    b.add_link("box", mass=1.0, inertia=np.diag([0.0141667, 0.0041667, 0.0166667]))
    b.add_joint("free", "free", "world", "box")
    b.add_collision("box", "box", half_extents=(0.1, 0.2, 0.05), friction=friction)
    b.add_collision("world", "plane", friction=friction)
    return b.build()


def box_inputs(steps=4):
    """The box resting on the ground (touching it), turned 0.3 rad about z (so its quaternion is
    not the identity), sliding at 1.5 m/s: every contact clamps and friction sits at its
    bound for the whole rollout.

    With the velocity penetration recovery, whose bias ``φ/h`` is linear through φ = 0: a body
    resting on the ground sits at φ = 0, which is a mode boundary of the default, split
    recovery (its velocity-stage bias ``max(φ, 0)/h`` has a kink there; docs/contact.md), so
    finite differences across it see two branches. The wrappers are tested on one branch."""
    model = box_model()
    contact = {"warm_start": False, "penetration": "velocity"}
    sim = stiction.Simulator(model, dt=1e-3, params=BOX_PARAMS, contact=contact)
    half = 0.15
    q0 = np.array([0.0, 0.0, 0.05, np.cos(half), 0.0, 0.0, np.sin(half)])
    v0 = np.array([0.0, 0.0, 0.05, 1.2, 0.9, 0.0])  # [angular; linear], body frame
    taus = np.tile([0.0, 0.0, 0.01, 0.3, -0.2, 0.0], (steps, 1))
    return sim, (q0, v0, taus, sim.params.values(model))
