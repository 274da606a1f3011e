"""Recorded steps (Jacobians, VJPs) and tapes (backward through rollouts) against
Ridders finite differences of the simulator."""

import numpy as np
import pytest
from conftest import assert_jacobian_close, fd_jacobian, ridders

import stiction
from stiction import ParamSpec, Simulator, StepRecord, Tape, samples

REL = 1e-6
ARM = samples.arm7()
NAMES = ["mass:link3", "com:link5", "placement:joint4", "gravity"]
KEYS = ["dq_dq", "dq_dv", "dq_dtau", "dq_dtheta", "dv_dq", "dv_dv", "dv_dtau", "dv_dtheta"]


def _unit(n, i):
    e = np.zeros(n)
    e[i] = 1.0
    return e


def _state(model, seed):
    rng = np.random.default_rng(seed)
    return model.random_configuration(seed), rng.standard_normal(model.nv), 5.0 * rng.standard_normal(model.nv)


def test_step_record_properties():
    sim = Simulator(ARM, dt=2e-3, params=NAMES)
    q, v, tau = _state(ARM, 1)
    out = sim.step(q, v, tau)
    assert isinstance(out, tuple) and len(out) == 2
    q1, v1, rec = sim.step(q, v, tau, record=True)
    assert isinstance(rec, StepRecord)
    np.testing.assert_array_equal(q1, out[0])
    np.testing.assert_array_equal(v1, out[1])
    np.testing.assert_array_equal(rec.q, q)
    np.testing.assert_array_equal(rec.v, v)
    np.testing.assert_array_equal(rec.tau, tau)
    np.testing.assert_array_equal(rec.q_next, q1)
    np.testing.assert_array_equal(rec.v_next, v1)
    assert rec.dt == 2e-3 and rec.fell_back is False and rec.nparams == len(sim.params) == 10
    assert "StepRecord" in repr(rec)


@pytest.mark.parametrize("velocity_products", ["midpoint", "explicit"])
def test_step_jacobians_vs_fd(velocity_products):
    model, nv = ARM, ARM.nv
    spec = ParamSpec(model, NAMES)
    theta0 = spec.values(model)
    dt = 1e-3
    sim = Simulator(model, dt=dt, params=spec, velocity_products=velocity_products)
    q, v, tau = _state(model, 2)
    q1, v1, rec = sim.step(q, v, tau, record=True)
    J = rec.jacobians()
    assert sorted(J) == sorted(KEYS)
    for k in KEYS:
        assert J[k].shape == (nv, len(spec) if k.endswith("theta") else nv), k

    def out(sim_, q_, v_, tau_):
        qn, vn = sim_.step(q_, v_, tau_)
        return np.concatenate([model.difference(q1, qn), vn - v1])  # q⁺ in the tangent space

    cols = {
        "q": fd_jacobian(lambda i, e: out(sim, model.integrate(q, _unit(nv, i), e), v, tau), nv, 1e-3),
        "v": fd_jacobian(lambda i, e: out(sim, q, v + e * _unit(nv, i), tau), nv, 1e-3),
        "tau": fd_jacobian(lambda i, e: out(sim, q, v, tau + e * _unit(nv, i)), nv, 1e-3),
    }
    for x, fd in cols.items():
        assert_jacobian_close(J[f"dq_d{x}"], fd[:nv], REL, f"dq+/d{x}", floor=0.0)
        assert_jacobian_close(J[f"dv_d{x}"], fd[nv:], REL, f"dv+/d{x}", floor=0.0)

    # θ columns through ParamSpec.apply on a rebuilt model and a fresh simulator.
    def along_theta(k, e):
        m = spec.apply(model, theta0 + e * _unit(len(spec), k))
        return out(Simulator(m, dt=dt, velocity_products=velocity_products), q, v, tau)

    for k in (0, 2, 6, 9):  # mass, com.y, placement.z, gravity.z
        fd = ridders(lambda e: along_theta(k, e), 5e-2)[0]
        assert_jacobian_close(J["dq_dtheta"][:, k], fd[:nv], REL, f"dq+/dtheta[{k}]", floor=0.0)
        assert_jacobian_close(J["dv_dtheta"][:, k], fd[nv:], REL, f"dv+/dtheta[{k}]", floor=0.0)


def test_step_jacobians_floating():
    """q-columns and q⁺-rows in the tangent space for a free-floating tree."""
    model = samples.random_tree(5, seed=4, floating=True)
    nv = model.nv
    sim = Simulator(model, dt=1e-3)
    q, v, tau = _state(model, 4)
    q1, v1, rec = sim.step(q, v, tau, record=True)
    J = rec.jacobians()
    assert J["dq_dq"].shape == (nv, nv) and J["dq_dtheta"].shape == (nv, 0)

    def out(q_, v_):
        qn, vn = sim.step(q_, v_, tau)
        return np.concatenate([model.difference(q1, qn), vn - v1])

    fq = fd_jacobian(lambda i, e: out(model.integrate(q, _unit(nv, i), e), v), nv, 1e-3)
    fv = fd_jacobian(lambda i, e: out(q, v + e * _unit(nv, i)), nv, 1e-3)
    assert_jacobian_close(J["dq_dq"], fq[:nv], REL, "dq+/dq", floor=0.0)
    assert_jacobian_close(J["dv_dq"], fq[nv:], REL, "dv+/dq", floor=0.0)
    assert_jacobian_close(J["dq_dv"], fv[:nv], REL, "dq+/dv", floor=0.0)
    assert_jacobian_close(J["dv_dv"], fv[nv:], REL, "dv+/dv", floor=0.0)


def test_vjp_is_jacobian_transpose():
    sim = Simulator(ARM, dt=1e-3, params=NAMES)
    q, v, tau = _state(ARM, 5)
    _, _, rec = sim.step(q, v, tau, record=True)
    J = rec.jacobians()
    rng = np.random.default_rng(9)
    gq, gv = rng.standard_normal(ARM.nv), rng.standard_normal(ARM.nv)
    g = rec.vjp(gq, gv)
    assert sorted(g) == ["q", "tau", "theta", "v"]
    for key, x in (("q", "q"), ("v", "v"), ("tau", "tau"), ("theta", "theta")):
        expected = J[f"dq_d{x}"].T @ gq + J[f"dv_d{x}"].T @ gv
        np.testing.assert_allclose(g[key], expected, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(expected).max()))
    with pytest.raises(stiction.InputError, match="grad_q_next has length 3"):
        rec.vjp(np.zeros(3), gv)
    with pytest.raises(stiction.InputError, match="grad_v_next"):
        rec.vjp(gq, np.zeros((7, 1)))


# A 50-step quadratic loss L = Σ_t ½ wq |q_t - q*|² + ½ wv |v_t|² + Σ_t ½ wu |τ_t|².
T, WQ, WV, WU = 50, 1.0, 0.1, 1e-3
LOSS_PARAMS = ["mass:link3", "com:link6", "damping:joint2", "gravity"]


def _arm_with_damping():
    # Positive damping so that central differences in θ keep the model valid.
    spec = ParamSpec(ARM, ["damping:joint2"])
    return spec.apply(ARM, [0.5])


def _loss(sim, model, q0, v0, taus, q_ref):
    Q, V = sim.rollout(q0, v0, taus)
    Q = np.vstack([q0, Q])
    V = np.vstack([v0, V])
    return 0.5 * WQ * np.sum((Q - q_ref) ** 2) + 0.5 * WV * np.sum(V**2) + 0.5 * WU * np.sum(taus**2)


def test_tape_backward_vs_fd():
    model = _arm_with_damping()
    nv = model.nv
    spec = ParamSpec(model, LOSS_PARAMS)
    theta0 = spec.values(model)
    dt = 2e-3
    sim = Simulator(model, dt=dt, params=spec)
    rng = np.random.default_rng(21)
    q0, v0 = model.random_configuration(6), 0.5 * rng.standard_normal(nv)
    taus = 3.0 * rng.standard_normal((T, nv))
    q_ref = model.random_configuration(7)

    Q, V, tape = sim.rollout(q0, v0, taus, record=True)
    assert isinstance(tape, Tape) and len(tape) == T
    Qa, Va = np.vstack([q0, Q]), np.vstack([v0, V])  # arm7 is fixed-base: q is Euclidean
    g = tape.backward((WQ * (Qa - q_ref), WV * Va), WU * taus)
    assert g["q0"].shape == (nv,) and g["v0"].shape == (nv,)
    assert g["tau"].shape == (T, nv) and g["theta"].shape == (len(spec),)

    L = lambda q0_=q0, v0_=v0, taus_=taus, sim_=sim: _loss(sim_, model, q0_, v0_, taus_, q_ref)  # noqa: E731

    def check(analytic, fd, name):
        err = abs(analytic - fd)
        assert err <= REL * max(abs(fd), 1e-3 * np.abs(g["tau"]).max()), f"{name}: {analytic} vs {fd}"

    for i in range(nv):
        check(g["q0"][i], ridders(lambda e: L(q0_=model.integrate(q0, _unit(nv, i), e)), 1e-3)[0], f"q0[{i}]")
        check(g["v0"][i], ridders(lambda e: L(v0_=v0 + e * _unit(nv, i)), 1e-3)[0], f"v0[{i}]")
    for t, j in ((0, 0), (0, 3), (17, 6), (30, 2), (T - 1, 4)):
        d = np.zeros((T, nv))
        d[t, j] = 1.0
        check(g["tau"][t, j], ridders(lambda e: L(taus_=taus + e * d), 1e-2)[0], f"tau[{t},{j}]")
    for k in range(len(spec)):

        def along(e, k=k):
            m = spec.apply(model, theta0 + e * _unit(len(spec), k))
            return L(sim_=Simulator(m, dt=dt))

        check(g["theta"][k], ridders(along, 1e-3)[0], f"theta[{k}] ({spec.names[k]})")


def test_tape_backward_partial_gradients():
    """Only a terminal loss: grad_states zero except the last row; no control gradient."""
    sim = Simulator(ARM, dt=1e-3)
    q0, v0, _ = _state(ARM, 8)
    taus = np.random.default_rng(2).standard_normal((10, ARM.nv))
    _, _, tape = sim.rollout(q0, v0, taus, record=True)
    gq, gv = np.zeros((11, ARM.nv)), np.zeros((11, ARM.nv))
    gv[-1] = 1.0
    full = tape.backward((gq, gv))
    assert full["theta"].shape == (0,)
    # The same by chaining the step VJPs by hand.
    lq, lv = np.zeros(ARM.nv), np.ones(ARM.nv)
    tau_grads = []
    for t in reversed(range(len(tape))):
        s = tape[t].vjp(lq, lv)
        lq, lv = s["q"], s["v"]
        tau_grads.append(s["tau"])
    np.testing.assert_allclose(full["q0"], lq, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(full["v0"], lv, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(full["tau"], np.array(tau_grads[::-1]), rtol=1e-12, atol=1e-14)
    # No gradients at all: everything is zero.
    zero = tape.backward()
    assert not np.any(zero["q0"]) and not np.any(zero["tau"])
    # Controls only.
    gc = tape.backward(grad_controls=np.ones((10, ARM.nv)))
    np.testing.assert_array_equal(gc["tau"][-1], np.ones(ARM.nv))


def test_rollout_record_matches_manual_loop():
    sim = Simulator(ARM, dt=1e-3, params=["mass:link2", "gravity"])
    q0, v0, _ = _state(ARM, 3)
    taus = np.random.default_rng(3).standard_normal((20, ARM.nv))
    Q, V, tape = sim.rollout(q0, v0, taus, record=True)
    Q2, V2 = sim.rollout(q0, v0, taus)
    np.testing.assert_array_equal(Q, Q2)
    np.testing.assert_array_equal(V, V2)
    manual = Tape()
    q, v = q0, v0
    for t in range(len(taus)):
        q, v, rec = sim.step(q, v, taus[t], record=True)
        manual.append(rec)
        np.testing.assert_array_equal(Q[t], q)
        np.testing.assert_array_equal(V[t], v)
        np.testing.assert_array_equal(tape[t].q_next, rec.q_next)
        np.testing.assert_array_equal(tape[t].tau, taus[t])
    assert len(manual) == len(tape) == 20
    np.testing.assert_array_equal(tape[-1].v_next, V[-1])
    rng = np.random.default_rng(4)
    gs = (rng.standard_normal((21, ARM.nv)), rng.standard_normal((21, ARM.nv)))
    gc = rng.standard_normal((20, ARM.nv))
    a, b = tape.backward(gs, gc), manual.backward(gs, gc)
    for k in ("q0", "v0", "tau", "theta"):
        np.testing.assert_array_equal(a[k], b[k])
    with pytest.raises(IndexError):
        tape[20]


def test_tape_errors():
    with pytest.raises(stiction.InputError, match="empty"):
        Tape().backward()
    assert len(Tape()) == 0
    sim = Simulator(ARM, dt=1e-3)
    q0, v0, _ = _state(ARM, 1)
    _, _, tape = sim.rollout(q0, v0, np.zeros((4, ARM.nv)), record=True)
    with pytest.raises(stiction.InputError, match=r"grad_states\[0\] must have shape \(5, 7\)"):
        tape.backward((np.zeros((4, 7)), np.zeros((5, 7))))
    with pytest.raises(stiction.InputError, match=r"grad_states\[1\]"):
        tape.backward((np.zeros((5, 7)), np.zeros((5, 6))))
    with pytest.raises(stiction.InputError, match="pair"):
        tape.backward(np.zeros((5, 7)))
    with pytest.raises(stiction.InputError, match=r"grad_controls must have shape \(4, 7\)"):
        tape.backward(grad_controls=np.zeros((5, 7)))
    with pytest.raises(stiction.InputError, match="not finite"):
        tape.backward(grad_controls=np.full((4, 7), np.nan))
    # Records of another model cannot be mixed in.
    other = Simulator(samples.pendulum_chain(2), dt=1e-3)
    _, _, rec = other.step(np.zeros(2), np.zeros(2), np.zeros(2), record=True)
    with pytest.raises(stiction.InputError, match="tape record 4 comes from model"):
        tape.append(rec)
    assert len(tape) == 4
    with pytest.raises(TypeError):
        tape.append("not a record")
