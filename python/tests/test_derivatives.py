"""Analytic RNEA/ABA derivatives against Ridders finite differences."""

import numpy as np
import pytest
from conftest import assert_jacobian_close, fd_jacobian

import stiction
from stiction import samples

REL = 1e-6


def _unit(n, i):
    e = np.zeros(n)
    e[i] = 1.0
    return e


def _point(model, seed):
    rng = np.random.default_rng(seed)
    q = model.random_configuration(seed)
    v = rng.standard_normal(model.nv)
    a = rng.standard_normal(model.nv)
    return q, v, a


def _wrenches(model, seed):
    return np.random.default_rng(seed + 100).standard_normal((model.nbodies, 6))


FLOATING = samples.random_tree(6, seed=5, floating=True)
CASES = {
    "arm7": samples.arm7(),
    "floating": FLOATING,
    "humanoid": samples.humanoid(),
}


@pytest.mark.parametrize("name", ["arm7", "floating"])
@pytest.mark.parametrize("with_wrenches", [False, True])
def test_rnea_derivatives_vs_fd(name, with_wrenches):
    model = CASES[name]
    nv = model.nv
    q, v, a = _point(model, 3)
    w = _wrenches(model, 3) if with_wrenches else None
    dtau_dq, dtau_dv, M = model.rnea_derivatives(q, v, a, wrenches=w)
    assert dtau_dq.shape == dtau_dv.shape == M.shape == (nv, nv)
    assert dtau_dq.dtype == np.float64

    def along_q(i, eps):  # q perturbed on the manifold: q ⊕ eps e_i
        return model.inverse_dynamics(model.integrate(q, _unit(nv, i), eps), v, a, w)

    def along_v(i, eps):
        return model.inverse_dynamics(q, v + eps * _unit(nv, i), a, w)

    def along_a(i, eps):
        return model.inverse_dynamics(q, v, a + eps * _unit(nv, i), w)

    assert_jacobian_close(dtau_dq, fd_jacobian(along_q, nv), REL, "dtau/dq")
    assert_jacobian_close(dtau_dv, fd_jacobian(along_v, nv), REL, "dtau/dv")
    assert_jacobian_close(M, fd_jacobian(along_a, nv), REL, "M = dtau/da")
    np.testing.assert_allclose(M, model.mass_matrix(q), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["arm7", "floating"])
@pytest.mark.parametrize("with_wrenches", [False, True])
def test_aba_derivatives_vs_fd(name, with_wrenches):
    model = CASES[name]
    nv = model.nv
    q, v, tau = _point(model, 7)
    w = _wrenches(model, 7) if with_wrenches else None
    da_dq, da_dv, Minv = model.aba_derivatives(q, v, tau, wrenches=w)
    assert da_dq.shape == da_dv.shape == Minv.shape == (nv, nv)

    def along_q(i, eps):
        return model.forward_dynamics(model.integrate(q, _unit(nv, i), eps), v, tau, w)

    def along_v(i, eps):
        return model.forward_dynamics(q, v + eps * _unit(nv, i), tau, w)

    def along_tau(i, eps):
        return model.forward_dynamics(q, v, tau + eps * _unit(nv, i), w)

    assert_jacobian_close(da_dq, fd_jacobian(along_q, nv), REL, "da/dq")
    assert_jacobian_close(da_dv, fd_jacobian(along_v, nv), REL, "da/dv")
    assert_jacobian_close(Minv, fd_jacobian(along_tau, nv), REL, "Minv = da/dtau")
    np.testing.assert_allclose(Minv @ model.mass_matrix(q), np.eye(nv), atol=1e-9)


def test_floating_q_columns_are_tangent():
    """A free joint has nq = nv + 1: the q-derivatives have nv columns, not nq."""
    model = FLOATING
    assert model.nq == model.nv + 1
    q, v, a = _point(model, 1)
    dtau_dq, _, _ = model.rnea_derivatives(q, v, a)
    da_dq, _, _ = model.aba_derivatives(q, v, a)
    assert dtau_dq.shape == da_dq.shape == (model.nv, model.nv)


def test_rnea_and_aba_derivatives_agree():
    """At a = ABA(q, v, tau): da/dq = -M⁻¹ dtau/dq and da/dv = -M⁻¹ dtau/dv."""
    model = samples.humanoid()
    q, v, tau = _point(model, 11)
    a = model.forward_dynamics(q, v, tau)
    dtau_dq, dtau_dv, M = model.rnea_derivatives(q, v, a)
    da_dq, da_dv, Minv = model.aba_derivatives(q, v, tau)
    np.testing.assert_allclose(Minv, np.linalg.inv(M), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(da_dq, -np.linalg.solve(M, dtau_dq), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(da_dv, -np.linalg.solve(M, dtau_dv), rtol=1e-7, atol=1e-9)


def test_derivatives_accept_lists_and_input_errors():
    model = samples.pendulum_chain(2)
    out = model.rnea_derivatives([0.1, 0.2], [0.0, 1.0], [0.5, 0.0])
    assert all(x.shape == (2, 2) for x in out)
    with pytest.raises(stiction.InputError, match=r"q has length 3, expected 2 \(model.nq\)"):
        model.rnea_derivatives(np.zeros(3), np.zeros(2), np.zeros(2))
    with pytest.raises(stiction.InputError, match=r"a has length 1"):
        model.rnea_derivatives(np.zeros(2), np.zeros(2), np.zeros(1))
    with pytest.raises(stiction.InputError, match=r"tau has length 3"):
        model.aba_derivatives(np.zeros(2), np.zeros(2), np.zeros(3))
    with pytest.raises(stiction.InputError, match="wrenches"):
        model.aba_derivatives(np.zeros(2), np.zeros(2), np.zeros(2), wrenches=np.zeros((3, 6)))
    with pytest.raises(stiction.InputError, match="not finite"):
        model.aba_derivatives(np.zeros(2), [np.nan, 0.0], np.zeros(2))
