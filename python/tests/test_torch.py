"""stiction.torch: autograd Functions for a step and a rollout, checked with
``torch.autograd.gradcheck`` (central differences of the forward pass) on a contact-free arm
and a box sliding on the ground, plus batching, broadcasting and error handling."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch)")

import stiction  # noqa: E402
import stiction.torch as st  # noqa: E402
from autodiff_scenes import arm_inputs, box_inputs  # noqa: E402

# gradcheck compares every entry of the analytic Jacobian with central differences
# (eps = 1e-6): |analytic − numeric| ≤ atol + rtol·|numeric|. Central differences of these
# smooth branches are good to ~1e-8, so these tolerances catch any real gradient bug.
TOL = dict(eps=1e-6, atol=1e-6, rtol=1e-5)


def tensors(args, grad=True):
    return tuple(torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad) for a in args)


@pytest.mark.parametrize("scene", [arm_inputs, box_inputs], ids=["arm", "box_on_ground"])
def test_rollout_gradcheck(scene):
    sim, args = scene()
    assert torch.autograd.gradcheck(lambda *a: st.rollout(sim, *a), tensors(args), **TOL)


@pytest.mark.parametrize("scene", [arm_inputs, box_inputs], ids=["arm", "box_on_ground"])
def test_step_gradcheck(scene):
    sim, (q0, v0, taus, theta) = scene()
    assert torch.autograd.gradcheck(lambda *a: st.step(sim, *a), tensors((q0, v0, taus[0], theta)), **TOL)


def test_box_rollout_stays_in_contact_with_friction_at_its_bound():
    """The box scene is what it claims: clamping normals, friction at its bound, every step."""
    sim, (q0, v0, taus, theta) = box_inputs()
    _, _, tape = sim.rollout(q0, v0, taus, record=True)
    for t in range(len(tape)):
        c = tape[t].constraints
        assert c is not None and len(c["points"]) == 4
        states = np.array(c["states"]).reshape(4, 3)
        assert (states[:, 0] == "clamping").all()
        assert set(states[:, 1:].ravel()) <= {"at_lower", "at_upper", "tied"}


def test_rollout_matches_the_simulator_and_the_tape():
    sim, (q0, v0, taus, theta) = arm_inputs(steps=20)
    Q, V, tape = sim.rollout(q0, v0, taus, record=True)
    tq = tensors((q0, v0, taus, theta))
    TQ, TV = st.rollout(sim, *tq)
    np.testing.assert_array_equal(TQ.detach().numpy(), Q)
    np.testing.assert_array_equal(TV.detach().numpy(), V)
    # A terminal loss: the Function's gradient equals Tape.backward's.
    w = np.linspace(-1.0, 1.0, 7)
    (TQ[-1] @ torch.tensor(w) + TV[-1].sum()).backward()
    gq, gv = np.zeros((21, 7)), np.zeros((21, 7))
    gq[-1], gv[-1] = w, 1.0
    ref = tape.backward((gq, gv))
    np.testing.assert_allclose(tq[0].grad.numpy(), ref["q0"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(tq[1].grad.numpy(), ref["v0"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(tq[2].grad.numpy(), ref["tau"], rtol=1e-12, atol=1e-14)


def test_batched_rollouts_equal_single_ones_and_broadcast_theta_sums():
    sim, (q0, v0, taus, theta) = arm_inputs(steps=6)
    rng = np.random.default_rng(9)
    B = 3
    q0s = q0 + 0.1 * rng.standard_normal((B, 7))
    tauss = taus + rng.standard_normal((B, 6, 7))
    bq, bt = tensors((q0s, tauss))
    v, th = tensors((v0, theta))  # shared by the batch: broadcast
    Q, V = st.rollout(sim, bq, v, bt, th)
    assert Q.shape == (B, 6, 7) and V.shape == (B, 6, 7)
    (Q.square().sum() + V.sum()).backward()
    g_v, g_th = np.zeros(7), np.zeros(len(theta))
    for b in range(B):
        sq, sv, stt, sth = tensors((q0s[b], v0, tauss[b], theta))
        Qb, Vb = st.rollout(sim, sq, sv, stt, sth)
        np.testing.assert_array_equal(Qb.detach().numpy(), Q[b].detach().numpy())
        (Qb.square().sum() + Vb.sum()).backward()
        np.testing.assert_allclose(bq.grad[b].numpy(), sq.grad.numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(bt.grad[b].numpy(), stt.grad.numpy(), rtol=1e-12, atol=1e-14)
        g_v += sv.grad.numpy()
        g_th += sth.grad.numpy()
    np.testing.assert_allclose(v.grad.numpy(), g_v, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(th.grad.numpy(), g_th, rtol=1e-12, atol=1e-14)


def test_batched_gradcheck_on_the_box():
    sim, (q0, v0, taus, theta) = box_inputs(steps=2)
    q0s = np.stack([q0, q0])
    q0s[1, :2] += 0.3  # a second box elsewhere on the plane
    v0s = np.stack([v0, 0.5 * v0])
    args = tensors((q0s, v0s, taus, theta))
    assert torch.autograd.gradcheck(lambda *a: st.rollout(sim, *a), args, **TOL)


def test_quaternion_gradient_is_tangent_to_the_unit_sphere():
    """Start quaternions are normalised, so scaling one changes nothing: its gradient is
    orthogonal to it, and a non-unit start gives the same rollout as the unit one."""
    sim, (q0, v0, taus, theta) = box_inputs()
    scaled = q0.copy()
    scaled[3:] *= 1.2
    q = torch.tensor(scaled, requires_grad=True)
    Q, V = st.rollout(sim, q, torch.tensor(v0), torch.tensor(taus), torch.tensor(theta))
    Q1, _ = st.rollout(sim, torch.tensor(q0), torch.tensor(v0), torch.tensor(taus), torch.tensor(theta))
    np.testing.assert_allclose(Q.detach().numpy(), Q1.numpy(), rtol=0, atol=1e-15)
    (Q[-1].sum() + V[-1].sum()).backward()
    g = q.grad.numpy()
    assert abs(g[3:] @ scaled[3:]) < 1e-12 * np.abs(g).max()
    assert np.abs(g[3:]).max() > 1e-3


def test_theta_none_uses_the_model_values_and_gets_no_gradient():
    sim, (q0, v0, taus, theta) = arm_inputs()
    tq = tensors((q0,))[0]
    Q, _ = st.rollout(sim, tq, torch.tensor(v0), torch.tensor(taus))
    Q2, _ = st.rollout(sim, torch.tensor(q0), torch.tensor(v0), torch.tensor(taus), torch.tensor(theta))
    np.testing.assert_array_equal(Q.detach().numpy(), Q2.numpy())
    Q.sum().backward()
    assert tq.grad is not None


def test_no_recording_without_gradients():
    sim, (q0, v0, taus, theta) = arm_inputs()
    with torch.no_grad():
        Q, V = st.rollout(sim, *tensors((q0, v0, taus, theta), grad=False))
    assert not Q.requires_grad


def test_bad_inputs_raise_clear_errors():
    sim, (q0, v0, taus, theta) = arm_inputs()
    with pytest.raises(TypeError, match="float64"):
        st.rollout(sim, torch.tensor(q0, dtype=torch.float32), v0, taus)
    with pytest.raises(stiction.InputError, match=r"q must have shape \(\.\.\., 7\)"):
        st.rollout(sim, torch.zeros(6, dtype=torch.float64), v0, taus)
    with pytest.raises(stiction.InputError, match="taus"):
        st.rollout(sim, q0, v0, torch.zeros(7, dtype=torch.float64))
    with pytest.raises(stiction.InputError, match="theta"):
        st.rollout(sim, q0, v0, taus, torch.zeros(2, dtype=torch.float64))
    with pytest.raises(stiction.InputError, match="do not broadcast"):
        st.rollout(sim, torch.zeros((2, 7), dtype=torch.float64), torch.zeros((3, 7), dtype=torch.float64), taus)
    nan = q0.copy()
    nan[2] = np.nan
    with pytest.raises(stiction.StictionError):
        st.rollout(sim, torch.tensor(nan), v0, taus)
    with pytest.raises(TypeError):
        st.rollout(sim, "not an array", v0, taus)
