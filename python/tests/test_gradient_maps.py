"""Model.tangent_gradient and Model.coordinate_gradient from Python: batched shapes,
agreement with finite differences of integrate/difference, and errors."""

import numpy as np
import pytest

import stiction


def free_and_ball_model():
    return stiction.samples.all_joint_types()


def test_tangent_gradient_matches_finite_differences_of_integrate():
    m = free_and_ball_model()
    q = m.integrate(m.random_configuration(2), np.zeros(m.nv), 0.0)
    g = np.random.default_rng(1).standard_normal(m.nq)
    eps = 1e-6
    fd = np.array([
        g @ (m.integrate(q, np.eye(m.nv)[j], eps) - m.integrate(q, np.eye(m.nv)[j], -eps)) / (2 * eps)
        for j in range(m.nv)
    ])
    np.testing.assert_allclose(m.tangent_gradient(q, g), fd, rtol=1e-7, atol=1e-8)


def test_coordinate_gradient_matches_finite_differences_of_difference():
    m = free_and_ball_model()
    q = 1.1 * m.random_configuration(3)  # non-unit quaternions
    ref = m.normalize(q)
    g = np.random.default_rng(2).standard_normal(m.nv)
    eps = 1e-6
    fd = np.array([
        g @ (m.difference(ref, q + eps * np.eye(m.nq)[i]) - m.difference(ref, q - eps * np.eye(m.nq)[i])) / (2 * eps)
        for i in range(m.nq)
    ])
    np.testing.assert_allclose(m.coordinate_gradient(q, g), fd, rtol=1e-7, atol=1e-8)


def test_batched_shapes_map_row_by_row():
    m = free_and_ball_model()
    rng = np.random.default_rng(3)
    qs = np.stack([[m.random_configuration(s) for s in range(3)] for _ in range(2)])  # (2, 3, nq)
    gs = rng.standard_normal((2, 3, m.nq))
    out = m.tangent_gradient(qs, gs)
    assert out.shape == (2, 3, m.nv)
    for a in range(2):
        for b in range(3):
            np.testing.assert_array_equal(out[a, b], m.tangent_gradient(qs[a, b], gs[a, b]))
    back = m.coordinate_gradient(qs, out)
    assert back.shape == (2, 3, m.nq)


def test_identity_without_quaternions():
    m = stiction.samples.arm7()
    q, g = m.random_configuration(0), np.arange(7.0)
    np.testing.assert_array_equal(m.tangent_gradient(q, g), g)
    np.testing.assert_array_equal(m.coordinate_gradient(q, g), g)


def test_errors():
    m = free_and_ball_model()
    q = m.neutral()
    with pytest.raises(stiction.InputError, match="model.nq"):
        m.tangent_gradient(q[:-1], np.zeros(m.nq))
    with pytest.raises(stiction.InputError, match="g must have shape"):
        m.tangent_gradient(q, np.zeros(m.nv))
    with pytest.raises(stiction.InputError, match="g must have shape"):
        m.coordinate_gradient(np.stack([q, q]), np.zeros((3, m.nv)))
    with pytest.raises(stiction.InputError):
        m.coordinate_gradient(q, np.full(m.nv, np.nan))
    with pytest.raises(stiction.InputError, match="quaternion"):
        m.tangent_gradient(np.zeros(m.nq), np.zeros(m.nq))
