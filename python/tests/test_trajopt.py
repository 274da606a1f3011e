"""stiction.trajopt: iLQR and single shooting from Python (the Rust loops of stiction::optim)."""

import numpy as np
import pytest

import stiction
from stiction import InputError, trajopt

DT = 0.02
STEPS = 125


def swingup(**kw):
    """The cartpole swing-up of examples/cartpole_swingup.rs: hanging to upright in 2.5 s,
    |force| ≤ 20 N on the cart, the pole unactuated (bounds [0, 0])."""
    model = stiction.samples.cartpole()
    sim = stiction.Simulator(model, dt=DT, contact=False)
    args = dict(
        target_q=[0.0, np.pi],
        control_weight=[1e-2, 1.0],
        terminal_weight=[100.0, 1000.0, 100.0, 100.0],
        lower=[-20.0, 0.0],
        upper=[20.0, 0.0],
    )
    args.update(kw)
    return model, sim, args


def test_ilqr_swings_the_cartpole_up():
    model, sim, args = swingup()
    seen = []
    r = trajopt.ilqr(sim, model.neutral(), np.zeros(2), np.zeros((STEPS, 2)), callback=seen.append, **args)
    q, v = r["q"], r["v"]
    assert q.shape == (STEPS + 1, 2) and v.shape == (STEPS + 1, 2) and r["controls"].shape == (STEPS, 2)
    assert abs(q[-1, 1] - np.pi) < 0.05 and abs(v[-1, 1]) < 0.1
    assert r["iterations"] <= 200
    assert np.all(np.abs(r["controls"][:, 0]) <= 20.0 + 1e-12) and np.all(r["controls"][:, 1] == 0.0)
    hist = r["cost_history"]
    assert np.all(np.diff(hist) <= 0.0) and hist[-1] == pytest.approx(r["cost"])
    assert len(seen) == r["iterations"] and seen[-1]["cost"] == pytest.approx(r["cost"])
    assert len(r["feedback"]) == STEPS and r["feedback"][0].shape == (2, 4)
    # The returned trajectory is the simulator's rollout of the returned controls.
    qs, vs = sim.rollout(model.neutral(), np.zeros(2), r["controls"])
    np.testing.assert_allclose(qs[-1], q[-1], atol=1e-12)


def test_ilqr_with_finite_difference_jacobians_agrees():
    model, sim, args = swingup()
    a = trajopt.ilqr(sim, model.neutral(), np.zeros(2), np.zeros((STEPS, 2)), **args)
    f = trajopt.ilqr(sim, model.neutral(), np.zeros(2), np.zeros((STEPS, 2)), jacobians="finite_difference", **args)
    np.testing.assert_allclose(f["q"][-1], a["q"][-1], atol=1e-3)
    assert f["cost"] == pytest.approx(a["cost"], rel=1e-4)


def test_shooting_reduces_the_cost_and_respects_bounds():
    model, sim, args = swingup(lower=[-3.0, 0.0], upper=[3.0, 0.0])
    r = trajopt.shooting(sim, model.neutral(), np.zeros(2), np.zeros((50, 2)), max_iterations=30, **args)
    assert r["cost"] < 0.9 * r["cost_history"][0]
    assert np.all(np.abs(r["controls"][:, 0]) <= 3.0 + 1e-12) and np.all(r["controls"][:, 1] == 0.0)


def test_callback_exception_is_raised():
    model, sim, args = swingup()

    def stop(progress):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        trajopt.ilqr(sim, model.neutral(), np.zeros(2), np.zeros((10, 2)), max_iterations=3, callback=stop, **args)


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(controls=np.zeros((10, 3))), "controls"),
        (dict(controls=np.zeros((0, 2))), "at least one step"),
        (dict(q0=[0.0, np.nan]), "not finite"),
        (dict(target_q=[0.0]), "target_q"),
        (dict(state_weight=np.ones(3)), "state_weight"),
        (dict(terminal_weight=np.arange(16.0).reshape(4, 4)), "symmetric"),
        (dict(lower=[1.0, 0.0], upper=[-1.0, 0.0]), "bound"),
        (dict(jacobians="magic"), "jacobians"),
    ],
)
def test_bad_input_raises(kw, match):
    model, sim, args = swingup()
    call = dict(q0=model.neutral(), v0=np.zeros(2), controls=np.zeros((10, 2)))
    call.update(args)
    call.update(kw)
    with pytest.raises(InputError, match=match):
        trajopt.ilqr(sim, **call)


def test_multiple_shooting_swings_the_cartpole_up():
    pytest.importorskip("scipy")
    model, sim, args = swingup()
    steps = 50
    sim = stiction.Simulator(model, dt=0.05, contact=False)
    r = trajopt.multiple_shooting(sim, model.neutral(), np.zeros(2), np.zeros((steps, 2)), max_iterations=300, **args)
    q, v = r["q"], r["v"]
    assert r["success"], r["message"]
    assert r["max_defect"] < 1e-6
    assert abs(q[-1, 1] - np.pi) < 0.05 and abs(v[-1, 1]) < 0.1
    assert np.all(np.abs(r["controls"][:, 0]) <= 20.0 + 1e-9) and np.all(np.abs(r["controls"][:, 1]) <= 1e-12)
    # The optimised states are the simulator's rollout of the optimised controls (feasibility).
    qs, vs = sim.rollout(model.neutral(), np.zeros(2), r["controls"])
    np.testing.assert_allclose(qs[-1], q[-1], atol=1e-4)


def test_multiple_shooting_rejects_quaternion_models_and_bad_input():
    pytest.importorskip("scipy")
    free = stiction.samples.bodies_on_plane(1, "sphere")
    sim = stiction.Simulator(free, dt=0.01)
    with pytest.raises(InputError, match="quaternion"):
        trajopt.multiple_shooting(sim, free.neutral(), np.zeros(6), np.zeros((5, 6)), target_q=free.neutral())
    model, sim, args = swingup()
    with pytest.raises(InputError, match="method"):
        trajopt.multiple_shooting(sim, model.neutral(), np.zeros(2), np.zeros((5, 2)), method="magic", **args)
    with pytest.raises(InputError, match="controls"):
        trajopt.multiple_shooting(sim, model.neutral(), np.zeros(2), np.zeros((5, 3)), **args)
