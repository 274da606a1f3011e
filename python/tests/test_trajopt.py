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


# ---- world-space costs: PointCost, ObstacleCost --------------------------------------------------------------


def world_point(model, q, body, point):
    """The world position of ``point`` (body frame) of ``body`` from forward kinematics."""
    pose = model.forward_kinematics(q)[model.body_index(body)]
    return pose[:3, :3] @ np.asarray(point, dtype=float) + pose[:3, 3]


def test_point_cost_position_is_the_forward_kinematics_point():
    model = stiction.samples.arm7()
    tool = [0.01, -0.02, 0.1]
    by_name = trajopt.PointCost(model, "link7", target=[0.3, 0.2, 0.5], weight=5.0, point=tool)
    by_index = trajopt.PointCost(model, model.body_index("link7"), target=[0.3, 0.2, 0.5], point=tool)
    assert by_name.body == by_index.body == "link7"
    np.testing.assert_array_equal(by_name.point, tool)
    assert by_name.weight == 5.0 and by_name.running_weight == 0.0
    np.testing.assert_array_equal(by_name.axis_weights, [1.0, 1.0, 1.0])
    for seed in range(3):
        q = model.random_configuration(seed)
        np.testing.assert_allclose(by_name.position(q), world_point(model, q, "link7", tool), atol=1e-12)
        np.testing.assert_array_equal(by_name.position(q), by_index.position(q))
    assert "link7" in repr(by_name)


def test_obstacle_cost_clearance_is_the_closest_point():
    model = stiction.samples.arm7()
    center = np.array([0.4, 0.1, 0.4])
    points = [("link7", [0.0, 0.0, 0.1]), "link4", 5]
    c = trajopt.ObstacleCost(model, points, center, radius=0.08, margin=0.03, running_weight=10.0)
    assert c.bodies == ["link7", "link4", model.body_names[5]]
    assert c.points.shape == (3, 3) and c.terminal_weight == 10.0 and c.margin == 0.03
    q = model.random_configuration(4)
    expected = min(
        np.linalg.norm(world_point(model, q, b, p) - center) - 0.08
        for b, p in [("link7", [0, 0, 0.1]), ("link4", [0, 0, 0]), (model.body_names[5], [0, 0, 0])]
    )
    assert c.clearance(q) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda m: trajopt.PointCost(m, "nope", target=[0, 0, 0]), "no body named 'nope'"),
        (lambda m: trajopt.PointCost(m, 99, target=[0, 0, 0]), "out of range"),
        (lambda m: trajopt.PointCost(m, -1, target=[0, 0, 0]), "out of range"),
        (lambda m: trajopt.PointCost(m, 1.5, target=[0, 0, 0]), "body name"),
        (lambda m: trajopt.PointCost(m, "link7", target=[0, 0]), "target"),
        (lambda m: trajopt.PointCost(m, "link7", target=[0, 0, np.nan]), "target"),
        (lambda m: trajopt.PointCost(m, "link7", target=[0, 0, 0], weight=-1.0), "terminal weight"),
        (lambda m: trajopt.PointCost(m, "link7", target=[0, 0, 0], running_weight=np.inf), "running weight"),
        (lambda m: trajopt.PointCost(m, "link7", target=[0, 0, 0], axis_weights=[1, -1, 0]), "axis weight"),
        (lambda m: trajopt.PointCost(m, "link7", target=[0, 0, 0], point=[0, 0]), "point"),
        (lambda m: trajopt.ObstacleCost(m, [], [0, 0, 0], 0.1), "no body points"),
        (lambda m: trajopt.ObstacleCost(m, "link7", [0, 0, 0], 0.1), "sequence"),
        (lambda m: trajopt.ObstacleCost(m, 3.0, [0, 0, 0], 0.1), "sequence"),
        (lambda m: trajopt.ObstacleCost(m, [("link7", [0, 0, 0], 1)], [0, 0, 0], 0.1), "pair"),
        (lambda m: trajopt.ObstacleCost(m, ["nope"], [0, 0, 0], 0.1), "no body named 'nope'"),
        (lambda m: trajopt.ObstacleCost(m, ["link7"], [0, 0, 0], -0.1), "radius"),
        (lambda m: trajopt.ObstacleCost(m, ["link7"], [0, 0, 0], 0.1, margin=np.nan), "margin"),
        (lambda m: trajopt.ObstacleCost(m, ["link7"], [0, 0, 0], 0.1, terminal_weight=-2.0), "terminal weight"),
        (lambda m: trajopt.PointCost(m, "link7", target=[0, 0, 0]).position(np.zeros(3)), "q has length 3"),
        (lambda m: trajopt.ObstacleCost(m, ["link7"], [0, 0, 0], 0.1).clearance(np.full(7, np.nan)), "not finite"),
    ],
)
def test_world_cost_bad_input_raises(make, match):
    with pytest.raises(InputError, match=match):
        make(stiction.samples.arm7())


def reach_problem():
    """A 2-link pendulum chain swinging its tip to a point: a terminal PointCost plus control effort."""
    model = stiction.samples.pendulum_chain(2, length=0.5)
    sim = stiction.Simulator(model, dt=0.02, contact=False)
    tip = [0.0, 0.0, -0.5]
    target = world_point(model, [0.8, 0.6], "link1", tip)
    cost = trajopt.PointCost(model, "link1", target=target, weight=1e3, point=tip)
    return model, sim, cost, target


def test_ilqr_with_a_point_cost_reaches_the_target_and_reports_the_summed_cost():
    model, sim, cost, target = reach_problem()
    steps = 60
    r = trajopt.ilqr(sim, [0.0, 0.0], [0.0, 0.0], np.zeros((steps, 2)), control_weight=1e-3,
                     terminal_weight=[0.0, 0.0, 1.0, 1.0], costs=cost)
    assert np.linalg.norm(cost.position(r["q"][-1]) - target) < 5e-3
    # The reported cost is the quadratic part (target_q defaults to the neutral configuration)
    # plus the point term.
    e_v = r["v"][-1]
    expected = 0.5 * 1e-3 * np.sum(r["controls"] ** 2) + 0.5 * e_v @ e_v
    expected += 0.5 * 1e3 * np.sum((cost.position(r["q"][-1]) - target) ** 2)
    assert r["cost"] == pytest.approx(expected, rel=1e-9)
    fd = trajopt.ilqr(sim, [0.0, 0.0], [0.0, 0.0], np.zeros((steps, 2)), control_weight=1e-3,
                      terminal_weight=[0.0, 0.0, 1.0, 1.0], costs=[cost], jacobians="finite_difference")
    assert fd["cost"] == pytest.approx(r["cost"], rel=1e-4)


def test_shooting_with_a_point_cost_reduces_it():
    model, sim, cost, target = reach_problem()
    r = trajopt.shooting(sim, [0.0, 0.0], [0.0, 0.0], np.zeros((60, 2)), control_weight=1e-3,
                         terminal_weight=0.0, costs=(cost,), max_iterations=200)
    assert r["cost"] < 1e-2 * r["cost_history"][0]
    assert np.linalg.norm(cost.position(r["q"][-1]) - target) < 2e-2


def test_ilqr_obstacle_cost_keeps_the_tip_out():
    model, sim, cost, target = reach_problem()
    args = (sim, [0.0, 0.0], [0.0, 0.0], np.zeros((60, 2)))
    weights = dict(control_weight=1e-3, terminal_weight=[0.0, 0.0, 1.0, 1.0])
    free = trajopt.ilqr(*args, costs=[cost], **weights)
    # A sphere 1 cm off the unobstructed tip path, halfway through.
    center = cost.position(free["q"][30]) + [0.0, 0.0, 0.01]
    avoid = trajopt.ObstacleCost(model, [("link1", [0, 0, -0.5])], center, radius=0.05, margin=0.02,
                                 running_weight=1e3)
    assert min(avoid.clearance(q) for q in free["q"]) < -0.03
    r = trajopt.ilqr(*args, costs=[cost, avoid], **weights)
    assert min(avoid.clearance(q) for q in r["q"]) > 0.01
    assert np.linalg.norm(cost.position(r["q"][-1]) - target) < 2e-3


def test_costs_argument_is_checked():
    model, sim, cost, target = reach_problem()
    args = (sim, [0.0, 0.0], [0.0, 0.0], np.zeros((5, 2)))
    with pytest.raises(InputError, match=r"costs\[1\] must be a stiction.trajopt.PointCost or ObstacleCost"):
        trajopt.ilqr(*args, costs=[cost, 3.0])
    with pytest.raises(InputError, match="costs must be a PointCost"):
        trajopt.ilqr(*args, costs=3.0)
    arm_cost = trajopt.PointCost(stiction.samples.arm7(), "link7", target=[0, 0, 0])
    with pytest.raises(InputError, match="no body named 'link7'"):
        trajopt.shooting(*args, costs=[arm_cost])


def test_stubs_declare_the_world_costs():
    """The stubs declare every public attribute of PointCost and ObstacleCost and the ``costs``
    argument of _ilqr and _shooting."""
    import ast
    import pathlib

    tree = ast.parse((pathlib.Path(stiction.__file__).parent / "_stiction.pyi").read_text())
    declared = {n.name: n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    for cls in (trajopt.PointCost, trajopt.ObstacleCost):
        members = {n.name for n in declared[cls.__name__].body if isinstance(n, ast.FunctionDef)}
        public = {a for a in dir(cls) if not a.startswith("_")}
        assert public <= members, (cls.__name__, public - members)
    for fn in ("_ilqr", "_shooting"):
        assert "costs" in [a.arg for a in declared[fn].args.args]
