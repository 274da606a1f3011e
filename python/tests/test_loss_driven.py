"""The loss-driven contact strategy from Python (`strategy="loss_driven"` on StepRecord.vjp
and Tape.backward): a ball resting on the ground under an upward push smaller than its weight.
Exact gradients see a clamping contact that cancels any change of the push; the loss-driven
strategy, asked for more upward velocity, differentiates the contact as separating."""

import numpy as np
import pytest

import stiction
from stiction import ModelBuilder

DT, MASS, RADIUS = 1e-3, 0.5, 0.1


def resting_ball():
    b = ModelBuilder("ball_on_ground")
    b.add_link("ball", mass=MASS, inertia=np.eye(3) * 0.4 * MASS * RADIUS**2)
    b.add_joint("free", "free", "world", "ball", origin_xyz=(0.0, 0.0, RADIUS))
    b.add_collision("ball", "sphere", radius=RADIUS, friction=0.5)
    b.add_collision("world", "plane", friction=0.5)
    m = b.build()
    sim = stiction.Simulator(m, dt=DT, contact={"warm_start": False})
    tau = np.zeros(6)
    tau[5] = 0.5 * MASS * 9.81  # half the weight, upward: the ball stays down
    return sim, m.neutral(), np.zeros(6), tau


def test_vjp_strategies_on_a_resting_ball():
    sim, q, v, tau = resting_ball()
    _, v_next, rec = sim.step(q, v, tau, record=True)
    assert abs(v_next[5]) < 1e-9 and rec.constraints["states"][0] == "clamping"
    up = np.zeros(6)
    up[5] = -1.0  # ℓ = −v_z⁺: the loss wants the ball to rise
    exact = rec.vjp(np.zeros(6), up)
    assert sorted(exact) == ["q", "tau", "theta", "v"]  # exact: no strategy counters
    assert abs(exact["tau"][5]) < 1e-12  # the contact cancels any change of the push
    driven = rec.vjp(np.zeros(6), up, strategy="loss_driven")
    assert driven["strategy"] == {
        "constrained_steps": 1,
        "loss_driven_tried": 1,
        "loss_driven_used": 1,
        "inexact_steps": 0,
    }
    # Differentiated as separating: dv_z⁺/dτ_z = h/m, so ∂ℓ/∂τ_z = −h/m.
    assert driven["tau"][5] == pytest.approx(-DT / MASS, rel=1e-9)
    # A loss that wants the ball pressed down keeps the exact (clamping) gradients.
    down = rec.vjp(np.zeros(6), -up, strategy="loss_driven")
    assert down["strategy"]["loss_driven_used"] == 0
    np.testing.assert_array_equal(down["tau"], -exact["tau"])


def test_tape_backward_strategy_and_errors():
    sim, q, v, tau = resting_ball()
    _, _, tape = sim.rollout(q, v, np.tile(tau, (5, 1)), record=True)
    gq, gv = np.zeros((6, 6)), np.zeros((6, 6))
    gv[-1, 5] = -1.0
    exact = tape.backward((gq, gv))
    driven = tape.backward((gq, gv), strategy="loss_driven")
    assert "strategy" not in exact
    assert driven["strategy"]["constrained_steps"] == 5 and driven["strategy"]["loss_driven_used"] >= 1
    assert abs(exact["tau"][:, 5]).max() < 1e-12 < abs(driven["tau"][:, 5]).max()
    with pytest.raises(stiction.InputError, match="strategy must be 'exact' or 'loss_driven'"):
        tape.backward((gq, gv), strategy="bogus")
    with pytest.raises(stiction.InputError, match="strategy"):
        tape[0].vjp(np.zeros(6), np.zeros(6), strategy="")
