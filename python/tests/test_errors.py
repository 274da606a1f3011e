import numpy as np
import pytest

import stiction
from stiction import samples


def test_hierarchy():
    for cls in (stiction.ModelError, stiction.LoadError, stiction.NumericalError, stiction.InputError):
        assert issubclass(cls, stiction.StictionError)
    assert issubclass(stiction.StictionError, Exception)
    assert issubclass(stiction.InputError, ValueError)
    assert stiction.InputError.__module__ == "stiction"
    assert stiction.StictionError.__module__ == "stiction"
    assert issubclass(stiction.LoadWarning, UserWarning)


@pytest.mark.parametrize(
    "call,arg,expected",
    [
        (lambda m, x: m.mass_matrix(x), "q", "model.nq"),
        (lambda m, x: m.bias_forces(m.neutral(), x), "v", "model.nv"),
        (lambda m, x: m.inverse_dynamics(m.neutral(), np.zeros(m.nv), x), "a", "model.nv"),
        (lambda m, x: m.forward_dynamics(m.neutral(), np.zeros(m.nv), x), "tau", "model.nv"),
        (lambda m, x: m.integrate(m.neutral(), x, 0.1), "v", "model.nv"),
        (lambda m, x: m.difference(x, m.neutral()), "q0", "model.nq"),
        (lambda m, x: m.difference(m.neutral(), x), "q1", "model.nq"),
        (lambda m, x: m.potential_energy(x), "q", "model.nq"),
        (lambda m, x: m.forward_kinematics(x), "q", "model.nq"),
    ],
)
def test_wrong_length(call, arg, expected):
    m = samples.arm7()
    with pytest.raises(stiction.InputError, match=rf"^{arg} has length 3, expected 7 \({expected}\)$"):
        call(m, np.zeros(3))
    with pytest.raises(ValueError):
        call(m, [1.0])
    with pytest.raises(stiction.InputError, match=rf"{arg} must be a 1-D array"):
        call(m, np.zeros((7, 1)))


def test_not_convertible():
    m = samples.pendulum_chain(2)
    # Strings are refused, not parsed as numbers (numpy would turn "1.5" into 1.5).
    with pytest.raises(stiction.InputError, match=r"q must be a real numeric array-like, got list \(numpy dtype <U"):
        m.mass_matrix(["1.5", "2"])
    with pytest.raises(stiction.InputError, match="q must be a real numeric array-like, got NoneType"):
        m.mass_matrix(None)
    with pytest.raises(stiction.InputError, match="q cannot be converted"):
        m.mass_matrix([[1.0], [2.0, 3.0]])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_state_names_argument(bad):
    m = samples.arm7()
    q, v, z = m.neutral(), np.zeros(m.nv), np.zeros(m.nv)
    qb = q.copy()
    qb[3] = bad
    vb = v.copy()
    vb[2] = bad
    with pytest.raises(stiction.InputError, match=r"^q\[3\] is not finite"):
        m.forward_dynamics(qb, v, z)
    with pytest.raises(stiction.InputError, match=r"^v\[2\] is not finite"):
        m.forward_dynamics(q, vb, z)
    with pytest.raises(stiction.InputError, match=r"^tau\[2\] is not finite"):
        m.forward_dynamics(q, v, vb)
    with pytest.raises(stiction.InputError, match=r"^a\[2\] is not finite"):
        m.inverse_dynamics(q, v, vb)
    with pytest.raises(stiction.InputError, match=r"^q\[3\] is not finite"):
        m.mass_matrix(qb)
    with pytest.raises(ValueError, match=r"q\[3\]"):
        stiction.Simulator(m).step(qb, v, z)


def test_bad_quaternion():
    m = samples.humanoid()
    q = m.neutral()
    q[3:7] = 0.0
    with pytest.raises(stiction.InputError, match="quaternion of joint"):
        m.mass_matrix(q)


def test_numerical_error():
    # finite inputs whose acceleration overflows
    m = samples.pendulum_chain(1)
    with pytest.raises(stiction.NumericalError, match="non-finite acceleration"):
        m.forward_dynamics(m.neutral(), [0.0], [1e308])
    with pytest.raises(stiction.NumericalError):
        stiction.Simulator(m).step(m.neutral(), [0.0], [1e308])
    assert not issubclass(stiction.NumericalError, ValueError)


def test_divergence_names_the_joint():
    # The bare humanoid at dt = 10 ms in zero gravity: a finger spins up until the step diverges.
    m = samples.humanoid()
    sim = stiction.Simulator(m, dt=1e-2, gravity=[0.0, 0.0, 0.0])
    rng = np.random.default_rng(1)
    q, v = m.neutral(), np.zeros(m.nv)
    v[6:] = rng.uniform(-5.0, 5.0, m.nv - 6)
    tau = np.zeros(m.nv)
    with pytest.raises(stiction.NumericalError, match=r"diverged at joint '\w+'.*max_speed is 1e4"):
        for _ in range(2000):
            q, v = sim.step(q, v, tau)
            assert np.abs(v).max() <= 1e4
    with pytest.raises(stiction.InputError, match="max_speed"):
        stiction.Simulator(m, max_speed=0.0)


def test_humanoid_on_ground_stands_on_its_plane():
    m = samples.humanoid_on_ground()
    assert m.nv == 50
    sim = stiction.Simulator(m)
    q, v = m.neutral(), np.zeros(m.nv)
    for _ in range(100):
        q, v = sim.step(q, v, np.zeros(m.nv))
    # It settles on its soles: the pelvis barely sinks.
    assert abs(q[2]) < 5e-3


def test_from_json_errors():
    with pytest.raises(stiction.InputError, match="invalid model JSON"):
        stiction.Model.from_json("{not json")
    m = samples.pendulum_chain(1)
    bad = m.to_json().replace('"mass": 1.0', '"mass": -1.0')
    assert bad != m.to_json()
    with pytest.raises(stiction.ModelError, match="invalid mass"):
        stiction.Model.from_json(bad)


def test_no_constructor():
    with pytest.raises(TypeError):
        stiction.Model()
