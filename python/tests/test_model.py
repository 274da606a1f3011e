import copy
import pickle

import numpy as np
import pytest

import stiction
from stiction import samples

from conftest import random_state


def test_version_and_exports():
    assert isinstance(stiction.__version__, str) and stiction.__version__
    for name in stiction.__all__:
        assert hasattr(stiction, name), name
    assert set(samples.__all__) >= {"pendulum_chain", "arm7", "humanoid", "all_joint_types", "random_tree"}


def test_properties(model):
    assert isinstance(model.name, str)
    assert model.nq >= model.nv > 0
    assert model.nbodies == len(model.body_names)
    assert len(model.joint_names) <= model.nbodies
    g = model.gravity
    assert g.dtype == np.float64 and g.shape == (3,)
    np.testing.assert_allclose(g, [0, 0, -9.81])
    assert model.total_mass > 0
    assert model.lower_limits.shape == (model.nq,)
    assert model.upper_limits.shape == (model.nq,)
    assert model.velocity_limits.shape == (model.nv,)
    assert model.effort_limits.shape == (model.nv,)
    assert repr(model).startswith("Model(name=")


def test_indices():
    m = samples.pendulum_chain(3)
    assert m.joint_names == ["joint0", "joint1", "joint2"]
    assert m.body_names == ["link0", "link1", "link2"]
    assert [m.joint_q_index(n) for n in m.joint_names] == [0, 1, 2]
    assert [m.joint_v_index(n) for n in m.joint_names] == [0, 1, 2]
    assert m.body_index("link2") == 2
    h = samples.humanoid()
    assert h.joint_q_index(h.joint_names[0]) == 0
    assert h.nq - h.nv >= 1  # the free root stores a quaternion
    with pytest.raises(stiction.InputError, match="no joint named 'nope'"):
        m.joint_q_index("nope")
    with pytest.raises(ValueError):
        m.joint_v_index("nope")
    with pytest.raises(stiction.InputError):
        m.body_index("nope")


def test_configuration_ops(model, rng):
    q0 = model.neutral()
    assert q0.shape == (model.nq,) and q0.dtype == np.float64
    q = model.random_configuration(7)
    np.testing.assert_array_equal(q, model.random_configuration(seed=7))
    assert not np.array_equal(q, model.random_configuration(8))
    v = rng.standard_normal(model.nv)
    q1 = model.integrate(q, v, 0.1)
    assert q1.shape == (model.nq,)
    np.testing.assert_allclose(model.difference(q, q1), 0.1 * v, atol=1e-9)
    np.testing.assert_allclose(model.difference(q, q), np.zeros(model.nv), atol=1e-12)
    np.testing.assert_allclose(model.normalize(q), q, atol=1e-12)


def test_accepts_array_likes():
    m = samples.pendulum_chain(2)
    a = m.forward_dynamics([0.1, 0.2], (0, 0), np.array([0, 0], dtype=np.int32))
    b = m.forward_dynamics(np.array([0.1, 0.2]), np.zeros(2), np.zeros(2))
    np.testing.assert_array_equal(a, b)
    # non-contiguous input
    q = np.array([[0.1, 9.0], [0.2, 9.0]])[:, 0]
    np.testing.assert_array_equal(m.forward_dynamics(q, np.zeros(2), np.zeros(2)), b)


def test_mass_matrix_symmetric_positive_definite(model):
    for seed in range(3):
        q = model.random_configuration(seed)
        M = model.mass_matrix(q)
        assert M.shape == (model.nv, model.nv) and M.dtype == np.float64
        np.testing.assert_allclose(M, M.T, atol=1e-12)
        assert np.linalg.eigvalsh(M).min() > 0


def test_mass_matrix_columns_from_inverse_dynamics(model, rng):
    q, v = random_state(model, rng, seed=2)
    M = model.mass_matrix(q)
    bias = model.bias_forces(q, v)
    for k in range(model.nv):
        e = np.zeros(model.nv)
        e[k] = 1.0
        col = model.inverse_dynamics(q, v, e) - bias
        np.testing.assert_allclose(col, M[:, k], atol=1e-9 * max(1.0, np.abs(M).max()))


def test_forward_inverse_round_trip(model, rng):
    for seed in range(3):
        q, v = random_state(model, rng, seed=seed)
        tau = rng.standard_normal(model.nv)
        a = model.forward_dynamics(q, v, tau)
        assert a.shape == (model.nv,) and a.dtype == np.float64
        np.testing.assert_allclose(model.inverse_dynamics(q, v, a), tau, atol=1e-10, rtol=0)
        a2 = rng.standard_normal(model.nv)
        np.testing.assert_allclose(model.forward_dynamics(q, v, model.inverse_dynamics(q, v, a2)), a2, atol=1e-8)


def test_bias_and_gravity(model, rng):
    q, v = random_state(model, rng)
    np.testing.assert_allclose(model.bias_forces(q, np.zeros(model.nv)), model.gravity_forces(q), atol=1e-12)
    np.testing.assert_allclose(
        model.inverse_dynamics(q, v, np.zeros(model.nv)), model.bias_forces(q, v), atol=1e-12
    )


def test_wrenches_in_dynamics(rng):
    m = samples.arm7()
    q, v = random_state(m, rng)
    tau = rng.standard_normal(m.nv)
    w = rng.standard_normal((m.nbodies, 6))
    a = m.forward_dynamics(q, v, tau, wrenches=w)
    np.testing.assert_allclose(m.inverse_dynamics(q, v, a, wrenches=w), tau, atol=1e-10)
    assert not np.allclose(a, m.forward_dynamics(q, v, tau))
    with pytest.raises(stiction.InputError, match="wrenches"):
        m.forward_dynamics(q, v, tau, wrenches=np.zeros((m.nbodies, 3)))


def test_energy_and_mass_matrix(model, rng):
    q, v = random_state(model, rng)
    ke = model.kinetic_energy(q, v)
    assert isinstance(ke, float)
    np.testing.assert_allclose(ke, 0.5 * v @ model.mass_matrix(q) @ v, rtol=1e-10)
    assert isinstance(model.potential_energy(q), float)


def test_gravity_forces_are_potential_gradient():
    m = samples.arm7()
    q = m.random_configuration(1)
    g = m.gravity_forces(q)
    h = 1e-6
    num = np.array(
        [(m.potential_energy(q + h * e) - m.potential_energy(q - h * e)) / (2 * h) for e in np.eye(m.nv)]
    )
    np.testing.assert_allclose(g, num, atol=1e-6)


def test_forward_kinematics_and_jacobian():
    m = samples.pendulum_chain(2, length=1.0)
    poses = m.forward_kinematics(m.neutral())
    assert isinstance(poses, list) and len(poses) == m.nbodies
    for T in poses:
        assert T.shape == (4, 4) and T.dtype == np.float64
        np.testing.assert_allclose(T[3], [0, 0, 0, 1])
        np.testing.assert_allclose(T[:3, :3] @ T[:3, :3].T, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(poses[1][:3, 3], [0, 0, -1.0], atol=1e-12)
    # rotating the first hinge by 90 degrees about y swings link1's origin to -x
    poses = m.forward_kinematics([np.pi / 2, 0.0])
    np.testing.assert_allclose(poses[1][:3, 3], [-1.0, 0, 0], atol=1e-12)

    J = m.body_jacobian(m.neutral(), "link1")
    assert J.shape == (6, m.nv)
    np.testing.assert_allclose(J[:3], [[0, 0], [1, 1], [0, 0]], atol=1e-12)
    np.testing.assert_array_equal(m.body_jacobian(m.neutral(), 1), J)
    for frame in ("world", "local", "local_world_aligned"):
        assert m.body_jacobian(m.neutral(), 1, frame=frame).shape == (6, 2)
    with pytest.raises(stiction.InputError, match="frame"):
        m.body_jacobian(m.neutral(), 1, frame="bogus")
    with pytest.raises(stiction.InputError, match="out of range"):
        m.body_jacobian(m.neutral(), 5)
    with pytest.raises(stiction.InputError, match="no body named"):
        m.body_jacobian(m.neutral(), "nope")


def test_jacobian_matches_velocity(rng):
    m = samples.arm7()
    q, v = random_state(m, rng)
    b = m.nbodies - 1
    J = m.body_jacobian(q, b, frame="local_world_aligned")
    h = 1e-7
    T0 = m.forward_kinematics(q)[b]
    T1 = m.forward_kinematics(m.integrate(q, v, h))[b]
    np.testing.assert_allclose((T1[:3, 3] - T0[:3, 3]) / h, (J @ v)[3:], atol=1e-5)


def test_center_of_mass_and_momentum(rng):
    m = samples.pendulum_chain(1, length=2.0, mass=3.0)
    c = m.center_of_mass(m.neutral())
    assert c.shape == (3,) and c.dtype == np.float64
    np.testing.assert_allclose(c, [0, 0, -1.0], atol=1e-12)
    np.testing.assert_allclose(m.potential_energy(m.neutral()), 3.0 * 9.81 * -1.0, rtol=1e-12)
    h = samples.humanoid()
    q, v = random_state(h, rng)
    assert h.momentum(q, v).shape == (6,)


def test_json_round_trip(model):
    s = model.to_json()
    m2 = stiction.Model.from_json(s)
    assert m2 == model
    assert m2.to_json() == s
    q = model.random_configuration(4)
    np.testing.assert_array_equal(m2.mass_matrix(q), model.mass_matrix(q))


def test_pickle_and_copy(model):
    m2 = pickle.loads(pickle.dumps(model))
    assert m2 == model and m2 is not model
    assert copy.deepcopy(model) == model


def test_with_gravity():
    m = samples.pendulum_chain(1)
    m0 = m.with_gravity([0, 0, 0])
    np.testing.assert_allclose(m0.gravity_forces(m0.neutral()), [0.0])
    np.testing.assert_allclose(m.gravity, [0, 0, -9.81])


def test_samples():
    assert samples.pendulum_chain(4).nv == 4
    assert samples.arm7().nv == 7
    assert samples.humanoid().nv == 50
    assert samples.spatial_chain(5).nv == 5
    assert samples.binary_tree(3).nbodies == 7
    assert samples.random_tree(6, seed=1).nbodies == 6
    f = samples.random_tree(6, seed=1, floating=True)
    assert f.nq - f.nv >= 1
    types = samples.all_joint_types()
    assert types.nq > types.nv
    with pytest.raises(stiction.InputError, match="n must be at least 1"):
        samples.pendulum_chain(0)
    with pytest.raises(stiction.InputError, match="mass"):
        samples.pendulum_chain(2, mass=-1.0)


def test_thread_safety():
    import threading

    m = samples.humanoid()
    q = m.random_configuration(0)
    ref = m.mass_matrix(q)
    errors = []

    def work():
        for _ in range(50):
            if not np.array_equal(m.mass_matrix(q), ref):
                errors.append("mismatch")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
