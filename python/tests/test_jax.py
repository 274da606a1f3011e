"""stiction.jax: custom_vjp wrappers (through pure_callback) for a step and a rollout, checked
with ``jax.test_util.check_grads`` (reverse mode against finite differences) on a
contact-free arm and a box sliding on the ground, under jit and vmap, and against the torch-free
reference, ``Tape.backward``."""

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="jax is not installed (pip install jax)")

import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

import stiction  # noqa: E402
import stiction.jax as sj  # noqa: E402
from autodiff_scenes import arm_inputs, box_inputs  # noqa: E402


@pytest.fixture(autouse=True)
def x64():
    """64-bit floats for these tests only (restored afterwards)."""
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", before)


# check_grads compares the VJP with central differences of step eps along random directions;
# the branches are smooth, so 1e-6 relative/absolute catches any real gradient bug.
TOL = dict(order=1, modes=["rev"], eps=1e-6, atol=1e-6, rtol=1e-6)


def arrays(args):
    return tuple(jnp.asarray(np.asarray(a, dtype=np.float64)) for a in args)


@pytest.mark.parametrize("scene", [arm_inputs, box_inputs], ids=["arm", "box_on_ground"])
def test_rollout_check_grads(scene):
    sim, args = scene()
    check_grads(lambda *a: sj.rollout(sim, *a), arrays(args), **TOL)


def fd_jacobians(f, args, eps=1e-6):
    """Central-difference Jacobians of the concatenated, flattened outputs of ``f`` with
    respect to each argument, entry by entry (as ``torch.autograd.gradcheck`` does)."""
    def flat(*a):
        return np.concatenate([np.ravel(o) for o in f(*a)])

    jacs = []
    for i, a in enumerate(args):
        a = np.asarray(a, dtype=np.float64)
        cols = []
        for k in range(a.size):
            d = np.zeros(a.size)
            d[k] = eps
            plus = [*args[:i], jnp.asarray(a + d.reshape(a.shape)), *args[i + 1:]]
            minus = [*args[:i], jnp.asarray(a - d.reshape(a.shape)), *args[i + 1:]]
            cols.append((flat(*plus) - flat(*minus)) / (2 * eps))
        jacs.append(np.stack(cols, axis=1))
    return jacs


@pytest.mark.parametrize("scene", [arm_inputs, box_inputs], ids=["arm", "box_on_ground"])
def test_rollout_jacrev_equals_central_differences(scene):
    """Every entry of the reverse-mode Jacobian against central differences:
    |analytic − numeric| ≤ 1e-6 + 1e-5·|numeric| (check_grads tests one random direction)."""
    sim, args = scene(4)
    args = arrays(args)

    def f(*a):
        Q, V = sj.rollout(sim, *a)
        return jnp.concatenate([Q.ravel(), V.ravel()])

    analytic = jax.jacrev(f, argnums=(0, 1, 2, 3))(*args)
    numeric = fd_jacobians(lambda *a: (f(*a),), args)
    for name, a, n in zip(["q0", "v0", "taus", "theta"], analytic, numeric):
        a = np.asarray(a).reshape(n.shape)
        np.testing.assert_allclose(a, n, rtol=1e-5, atol=1e-6, err_msg=f"d(Q, V)/d{name}")


@pytest.mark.parametrize("scene", [arm_inputs, box_inputs], ids=["arm", "box_on_ground"])
def test_step_check_grads(scene):
    sim, (q0, v0, taus, theta) = scene()
    check_grads(lambda *a: sj.step(sim, *a), arrays((q0, v0, taus[0], theta)), **TOL)


def test_grad_equals_tape_backward_under_jit():
    sim, (q0, v0, taus, theta) = arm_inputs(steps=20)
    w = np.linspace(-1.0, 1.0, 7)

    @jax.jit
    def loss(q0, v0, taus):
        Q, V = sj.rollout(sim, q0, v0, taus)
        return Q[-1] @ w + V[-1].sum()

    g = jax.grad(loss, argnums=(0, 1, 2))(*arrays((q0, v0, taus)))
    _, _, tape = sim.rollout(q0, v0, taus, record=True)
    gq, gv = np.zeros((21, 7)), np.zeros((21, 7))
    gq[-1], gv[-1] = w, 1.0
    ref = tape.backward((gq, gv))
    np.testing.assert_allclose(g[0], ref["q0"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(g[1], ref["v0"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(g[2], ref["tau"], rtol=1e-12, atol=1e-14)


def test_vmap_equals_a_loop_and_explicit_batches():
    sim, (q0, v0, taus, theta) = arm_inputs(steps=5)
    rng = np.random.default_rng(4)
    q0s = jnp.asarray(q0 + 0.1 * rng.standard_normal((3, 7)))
    v0, taus, theta = arrays((v0, taus, theta))

    def loss(q0, theta):
        Q, V = sj.rollout(sim, q0, v0, taus, theta)
        return (Q**2).sum() + V.sum()

    batched = jax.vmap(jax.grad(loss, argnums=(0, 1)), in_axes=(0, None))(q0s, theta)
    for b in range(3):
        single = jax.grad(loss, argnums=(0, 1))(q0s[b], theta)
        np.testing.assert_allclose(batched[0][b], single[0], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(batched[1][b], single[1], rtol=1e-12, atol=1e-14)
    # An explicit leading batch dimension with a shared theta: its gradient is the sum.
    g_theta = jax.grad(lambda th: sum(loss(q0s[b], th) for b in range(3)))(theta)
    g_batch = jax.grad(lambda th: loss(q0s, th))(theta)
    np.testing.assert_allclose(g_batch, g_theta, rtol=1e-12, atol=1e-14)


def test_batched_box_check_grads():
    sim, (q0, v0, taus, theta) = box_inputs(steps=2)
    q0s = np.stack([q0, q0])
    q0s[1, :2] += 0.3
    check_grads(lambda *a: sj.rollout(sim, *a), arrays((q0s, v0, taus, theta)), **TOL)


def test_errors():
    sim, (q0, v0, taus, theta) = arm_inputs()
    with pytest.raises(stiction.InputError, match=r"q must have shape"):
        sj.rollout(sim, jnp.zeros(6), v0, taus)
    with pytest.raises(stiction.InputError, match="theta"):
        sj.rollout(sim, q0, v0, taus, jnp.zeros(1))
    jax.config.update("jax_enable_x64", False)
    with pytest.raises(TypeError, match="jax_enable_x64"):
        sj.rollout(sim, q0, v0, taus)
    jax.config.update("jax_enable_x64", True)
    nan = np.array(q0)
    nan[0] = np.nan
    with pytest.raises(Exception, match="not finite|NaN|nan"):
        jax.block_until_ready(sj.rollout(sim, jnp.asarray(nan), v0, taus))
