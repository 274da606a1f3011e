import numpy as np
import pytest

import stiction
from stiction import Simulator, samples


def test_properties():
    m = samples.pendulum_chain(2)
    sim = Simulator(m, dt=0.01)
    assert sim.dt == 0.01
    assert sim.model == m
    assert sim.model is sim.model
    assert Simulator(m).dt == 1e-3
    assert "Simulator(model=Model(" in repr(sim)
    s2 = Simulator(m, gravity=(0, 0, -1.0))
    np.testing.assert_allclose(s2.model.gravity, [0, 0, -1.0])
    np.testing.assert_allclose(m.gravity, [0, 0, -9.81])  # the original is untouched


def test_invalid_dt():
    m = samples.pendulum_chain(1)
    for dt in (0.0, -1e-3, float("nan")):
        with pytest.raises(stiction.InputError, match="time step"):
            Simulator(m, dt=dt)


def test_step_shapes_and_free_fall():
    b = stiction.ModelBuilder("ball").add_link("ball", mass=1.0, inertia=np.eye(3) * 0.01)
    m = b.floating_base().build()
    sim = Simulator(m, dt=0.01)
    q, v = sim.step(m.neutral(), np.zeros(6), np.zeros(6))
    assert q.shape == (7,) and v.shape == (6,) and q.dtype == v.dtype == np.float64
    np.testing.assert_allclose(v, [0, 0, 0, 0, 0, -0.0981], atol=1e-12)
    np.testing.assert_allclose(q[:3], [0, 0, -0.0981 * 0.01], atol=1e-12)


def test_step_with_wrenches():
    b = stiction.ModelBuilder("ball").add_link("ball", mass=2.0, inertia=np.eye(3) * 0.01)
    m = b.floating_base().build()
    sim = Simulator(m, dt=0.01, gravity=(0, 0, 0))
    w = np.array([[0, 0, 0, 4.0, 0, 0]])  # 4 N along +x at the body origin
    _, v = sim.step(m.neutral(), np.zeros(6), np.zeros(6), wrenches=w)
    np.testing.assert_allclose(v, [0, 0, 0, 0.02, 0, 0], atol=1e-12)


def test_pendulum_energy_conservation():
    m = samples.pendulum_chain(1)
    sim = Simulator(m, dt=1e-4)
    q, v = np.array([1.0]), np.array([0.0])
    e0 = m.kinetic_energy(q, v) + m.potential_energy(q)
    tau = np.zeros(1)
    energies = []
    for _ in range(1000):
        q, v = sim.step(q, v, tau)
        energies.append(m.kinetic_energy(q, v) + m.potential_energy(q))
    assert abs(v[0]) > 0.1  # it moved
    drift = np.max(np.abs(np.array(energies) - e0))
    assert drift < 1e-2 * abs(e0), drift


def test_rollout_matches_step():
    m = samples.arm7()
    sim = Simulator(m, dt=1e-3)
    rng = np.random.default_rng(0)
    T = 25
    taus = rng.standard_normal((T, m.nv))
    q0, v0 = m.random_configuration(2), np.zeros(m.nv)
    Q, V = sim.rollout(q0, v0, taus)
    assert Q.shape == (T, m.nq) and V.shape == (T, m.nv)
    assert Q.dtype == V.dtype == np.float64
    q, v = q0, v0
    for t in range(T):
        q, v = sim.step(q, v, taus[t])
        np.testing.assert_array_equal(Q[t], q)
        np.testing.assert_array_equal(V[t], v)
    Q0, V0 = sim.rollout(q0, v0, np.zeros((0, m.nv)))
    assert Q0.shape == (0, m.nq) and V0.shape == (0, m.nv)


def test_rollout_floating(rng):
    m = samples.humanoid()
    sim = Simulator(m, dt=1e-3)
    Q, V = sim.rollout(m.neutral(), np.zeros(m.nv), np.zeros((10, m.nv)))
    assert Q.shape == (10, m.nq)
    assert np.all(np.isfinite(Q))


def test_simulator_input_errors():
    m = samples.pendulum_chain(2)
    sim = Simulator(m)
    with pytest.raises(stiction.InputError, match=r"tau has length 3, expected 2"):
        sim.step(np.zeros(2), np.zeros(2), np.zeros(3))
    with pytest.raises(stiction.InputError, match=r"v\[1\] is not finite"):
        sim.step(np.zeros(2), [0.0, np.nan], np.zeros(2))
    with pytest.raises(stiction.InputError, match=r"taus must have shape \(T, 2\), got shape \(5, 3\)"):
        sim.rollout(np.zeros(2), np.zeros(2), np.zeros((5, 3)))
    with pytest.raises(stiction.InputError, match="taus"):
        sim.rollout(np.zeros(2), np.zeros(2), np.zeros(2))
    with pytest.raises(stiction.InputError, match=r"tau\[0\] is not finite"):
        sim.rollout(np.zeros(2), np.zeros(2), np.array([[0.0, 0.0], [np.inf, 0.0]]))


def test_velocity_products_option_and_stats():
    import numpy as np

    model = stiction.samples.pendulum_chain(2)
    q, v, tau = np.array([1.0, -0.5]), np.array([2.0, 1.0]), np.zeros(2)
    mid = stiction.Simulator(model, dt=1e-2)
    exp = stiction.Simulator(model, dt=1e-2, velocity_products="explicit")
    q1, v1 = mid.step(q, v, tau)
    q2, v2 = exp.step(q, v, tau)
    assert not np.allclose(v1, v2, rtol=0, atol=1e-12)  # the two evaluations differ at O(h²)
    np.testing.assert_allclose(v1, v2, atol=5e-3)
    assert mid.stats["steps"] == 1 and mid.stats["midpoint_iterations"] >= 1
    assert mid.stats["midpoint_fallbacks"] == 0
    assert exp.stats["midpoint_iterations"] == 0
    with pytest.raises(stiction.InputError, match="velocity_products"):
        stiction.Simulator(model, velocity_products="rk4")
    with pytest.raises(stiction.InputError, match="tolerance"):
        stiction.Simulator(model, tolerance=-1.0)


def test_options_round_trip():
    model = stiction.samples.bodies_on_plane(1)
    sim = stiction.Simulator(
        model, dt=2e-3, gravity=[0.0, 0.0, -5.0], velocity_products="explicit", tolerance=1e-10,
        max_iterations=7, params=["gravity"], contact={"erp": 0.5, "model": "viscous"},
    )
    o = sim.options
    assert sorted(o) == ["contact", "dt", "gravity", "max_iterations", "max_speed", "tolerance", "velocity_products"]
    assert o["dt"] == 2e-3 and o["velocity_products"] == "explicit" and o["max_iterations"] == 7
    np.testing.assert_array_equal(o["gravity"], [0.0, 0.0, -5.0])
    assert o["contact"] == sim.contact_options and o["contact"]["erp"] == 0.5
    assert stiction.Simulator(model, dt=1e-3).options["gravity"] is None
    twin = stiction.Simulator(model, **o, params=sim.params)
    q, v, tau = model.neutral(), np.full(model.nv, 0.1), np.zeros(model.nv)
    for a, b in zip(sim.step(q, v, tau), twin.step(q, v, tau)):
        np.testing.assert_array_equal(a, b)
