"""`stiction.torch.world_rollout` and `stiction.jax.world_rollout`: world rollouts as
differentiable functions of the start state, the controls and the material parameters θ.
The bindings behind them (`World.rollout_batch`, `WorldTape.vjp_batch`, the coordinate maps)
against single rollouts bit for bit; the gradients of a scalar loss against central
differences on a soft block in sticking contact with the ground (one contact mode for the
whole difference step) and on a free-floating box whose configuration has a quaternion."""

import numpy as np
import pytest

import stiction
from stiction import InputError, ModelBuilder, Particles, SoftBody, SoftSystem, StaticGeometry, TetMesh, World, WorldTape

DT = 1e-3
STEPS = 3


def soft_block_scene(batch=2):
    """A 10 × 10 × 4 cm block of 2 × 2 × 1 cells, 0.2 mm into the ground (μ = 1), jittered and
    moving down under small random vertex forces: its nine bottom vertices stick for the whole
    rollout. A batch of start states and forces; θ = the block's five parameters, perturbed per
    rollout. Newton is solved to round-off so that central differences see a smooth map."""
    mesh = TetMesh.box((2, 2, 1), (0.1, 0.1, 0.04), origin=(-0.05, -0.05, -2e-4))
    body = SoftBody(mesh, material="neo_hookean", youngs_modulus=5e4, poisson=0.3, density=1000.0,
                    damping=(0.5, 0.005))
    world = World([StaticGeometry.ground(friction=1.0), SoftSystem(body, friction=1.0, tolerance=1e-12)], dt=DT)
    rng = np.random.default_rng(31)
    n = body.ndof
    q0 = body.rest_positions + rng.uniform(-3e-5, 3e-5, (batch, n))
    v0 = np.where(np.arange(n) % 3 == 2, -0.02, 0.0) + rng.uniform(-2e-3, 2e-3, (batch, n))
    controls = rng.uniform(-0.05, 0.05, (batch, STEPS, n))
    theta = world.param_values() * (1.0 + 0.05 * rng.random((batch, len(world.param_names))))
    wq = rng.standard_normal((batch, STEPS, world.nq))
    wv = 1e-3 * rng.standard_normal((batch, STEPS, world.nv))
    return world, (q0, v0, controls, theta), (wq, wv)


def free_box_scene():
    """A free box (turned, spinning) and a particle falling side by side, far above the ground:
    ``nq = 7 + 3``, ``nv = 6 + 3``; the box's quaternion is given off the unit sphere."""
    b = ModelBuilder("box")
    b.add_link("box", mass=1.0, inertia=np.diag([0.0141667, 0.0041667, 0.0166667]))
    b.add_joint("free", "free", "world", "box")
    b.add_collision("box", "box", half_extents=(0.1, 0.2, 0.05))
    world = World([StaticGeometry.ground(), b.build(), Particles([0.3], 0.02)], dt=1e-2)
    half = 0.2
    q0 = np.array([0.0, 0.0, 1.0, 1.1 * np.cos(half), 0.0, 0.0, 1.1 * np.sin(half), 0.5, 0.0, 1.0])
    v0 = np.array([0.3, -0.2, 0.5, 0.1, 0.0, 0.2, 0.0, 0.1, 0.0])
    rng = np.random.default_rng(32)
    controls = 0.5 * rng.standard_normal((4, world.nu))
    weights = (rng.standard_normal((4, world.nq)), rng.standard_normal((4, world.nv)))
    return world, (q0, v0, controls), weights


def batch_loss_fd(world, inputs, weights, direction, h, normalize=False):
    """Central difference along ``direction`` of the linear loss of the batch, each rollout run
    on its own by ``World.rollout`` of ``world.with_param_values(θ_b)``."""
    wq, wv = weights

    def loss(s):
        q0, v0, controls, theta = [a + s * d for a, d in zip(inputs, direction)]
        total = 0.0
        for b in range(q0.shape[0]):
            start = world.normalize(q0[b]) if normalize else q0[b]
            Q, V, _ = world.with_param_values(theta[b]).rollout(start, v0[b], controls[b])
            total += float((wq[b] * Q).sum() + (wv[b] * V).sum())
        return total
    return (loss(h) - loss(-h)) / (2 * h)


def soft_direction(inputs, seed):
    """A random direction in (q0, v0, controls, θ), each block scaled so that a step of 1e-6
    moves positions by about 1 µm, velocities by 0.1 mm/s, forces by 1 mN and θ by 1e-5
    relative (the step sizes of the world's step-VJP checks)."""
    rng = np.random.default_rng(seed)
    q0, v0, controls, theta = inputs
    return (rng.standard_normal(q0.shape), 1e2 * rng.standard_normal(v0.shape),
            1e3 * rng.standard_normal(controls.shape), 10.0 * np.abs(theta) * rng.standard_normal(theta.shape))


# --- the bindings --------------------------------------------------------------------


def test_rollout_batch_and_vjp_batch_equal_single_rollouts():
    world, (q0, v0, controls, theta), (wq, wv) = soft_block_scene()
    for thetas in (None, theta):
        Q, V, tapes = world.rollout_batch(q0, v0, controls, thetas=thetas, threads=None if thetas is None else 1)
        assert Q.shape == (2, STEPS, world.nq) and V.shape == (2, STEPS, world.nv) and len(tapes) == 2
        g = WorldTape.vjp_batch(tapes, q0, wq, wv)
        for b in range(2):
            w = world if thetas is None else world.with_param_values(theta[b])
            Qb, Vb, tape = w.rollout(q0[b], v0[b], controls[b])
            assert np.array_equal(Q[b], Qb) and np.array_equal(V[b], Vb)
            ref = tape.backward(wq[b], wv[b], params=True)  # nq == nv: coordinates are tangent
            for k, r in zip(("q0", "v0", "u", "theta"), ref):
                assert np.array_equal(g[k][b], r), k
    g = WorldTape.vjp_batch([tapes[1], tapes[1]], q0[[1, 1]], grad_v=wv)
    assert np.array_equal(g["v0"][0], tapes[1].backward(None, wv[0])[1])
    assert np.array_equal(g["v0"][1], tapes[1].backward(None, wv[1])[1])


def test_coordinate_maps_of_a_world_with_a_quaternion():
    world, (q0, _, _), _ = free_box_scene()
    unit = world.normalize(q0)
    assert np.isclose(np.linalg.norm(unit[3:7]), 1.0) and np.array_equal(unit[7:], q0[7:])
    g = np.arange(1.0, world.nq + 1)
    t = world.tangent_gradient(unit, g)
    assert t.shape == (world.nv,) and np.array_equal(t[6:], g[7:])
    c = world.coordinate_gradient(q0, t)
    assert c.shape == (world.nq,) and abs(c[3:7] @ q0[3:7]) < 1e-12 and np.array_equal(c[7:], t[6:])
    with pytest.raises(InputError, match="world.nv"):
        world.coordinate_gradient(q0, g)
    bad = q0.copy()
    bad[3:7] = 0.0
    with pytest.raises(InputError, match="quaternion"):
        world.normalize(bad)


def test_bad_batches_raise():
    world, (q0, v0, controls, theta), (wq, _) = soft_block_scene()
    with pytest.raises(InputError, match=r"v0 must have shape \(2, "):
        world.rollout_batch(q0, v0[:1], controls)
    with pytest.raises(InputError, match=r"controls must have shape \(B, T, nu\)"):
        world.rollout_batch(q0, v0, controls[0])
    with pytest.raises(InputError, match="thetas"):
        world.rollout_batch(q0, v0, controls, thetas=theta[:, :2])
    bad = controls.copy()
    bad[1, 2, 0] = np.nan
    with pytest.raises(InputError, match="batch rollout 1"):
        world.rollout_batch(q0, v0, bad)
    _, _, tapes = world.rollout_batch(q0, v0, controls)
    with pytest.raises(InputError, match="at least one tape"):
        WorldTape.vjp_batch([], q0[:0])
    with pytest.raises(InputError, match="grad_q"):
        WorldTape.vjp_batch(tapes, q0, wq[:, :1])
    _, _, short = world.rollout_batch(q0[:1], v0[:1], controls[:1, :1])
    with pytest.raises(InputError, match="tape 1 does not match"):
        WorldTape.vjp_batch([tapes[0], short[0]], q0)


# --- PyTorch -------------------------------------------------------------------------


def test_torch_world_rollout_gradients_match_central_differences():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    import stiction.torch as st

    world, inputs, (wq, wv) = soft_block_scene()
    args = [torch.tensor(a, requires_grad=True) for a in inputs]
    Q, V = st.world_rollout(world, *args)
    for b in range(2):
        Qb, Vb, _ = world.with_param_values(inputs[3][b]).rollout(*(a[b] for a in inputs[:3]))
        assert np.array_equal(Q[b].detach().numpy(), Qb) and np.array_equal(V[b].detach().numpy(), Vb)
    ((Q * torch.tensor(wq)).sum() + (V * torch.tensor(wv)).sum()).backward()
    for seed in (41, 42):
        d = soft_direction(inputs, seed)
        analytic = sum(float((a.grad.numpy() * x).sum()) for a, x in zip(args, d))
        fd = batch_loss_fd(world, inputs, (wq, wv), d, 1e-6)
        assert abs(analytic - fd) <= 1e-6 * abs(fd), (analytic, fd)
    # θ = None: the world's own values, not differentiated; one start state shared by the batch.
    x0 = torch.tensor(inputs[0][0], requires_grad=True)
    Q, V = st.world_rollout(world, x0, torch.tensor(inputs[1]), torch.tensor(inputs[2]))
    Q0, _, _ = world.rollout(inputs[0][0], inputs[1][0], inputs[2][0])
    assert np.array_equal(Q[0].detach().numpy(), Q0)
    (Q * torch.tensor(wq)).sum().backward()
    d = np.random.default_rng(43).standard_normal(world.nq)
    shared = (np.tile(inputs[0][0], (2, 1)), inputs[1], inputs[2], np.tile(world.param_values(), (2, 1)))
    zero = [np.zeros_like(a) for a in shared]
    fd = batch_loss_fd(world, shared, (wq, 0 * wv), (np.tile(d, (2, 1)), *zero[1:]), 1e-6)
    assert abs(float(x0.grad.numpy() @ d) - fd) <= 1e-6 * abs(fd)
    with pytest.raises(InputError, match=r"controls must have shape \(\.\.\., T, 54\)"):
        st.world_rollout(world, args[0], args[1], torch.zeros(2, 3, 5, dtype=torch.float64))
    with pytest.raises(InputError, match="do not broadcast"):
        st.world_rollout(world, args[0], args[1][:1].expand(3, -1), args[2])
    with pytest.raises(InputError, match=r"theta must have shape \(\.\.\., 5\)"):
        st.world_rollout(world, args[0], args[1], args[2], args[3][:, :2])
    with pytest.raises(TypeError, match="float64"):
        st.world_rollout(world, args[0].float(), args[1], args[2])


def test_torch_world_rollout_q0_gradient_is_on_coordinates_through_normalize():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    import stiction.torch as st

    world, (q0, v0, controls), (wq, wv) = free_box_scene()
    args = [torch.tensor(a, requires_grad=True) for a in (q0, v0, controls)]
    Q, V = st.world_rollout(world, *args)
    Qr, Vr, _ = world.rollout(world.normalize(q0), v0, controls)
    assert np.array_equal(Q.detach().numpy(), Qr) and np.array_equal(V.detach().numpy(), Vr)
    ((Q * torch.tensor(wq)).sum() + (V * torch.tensor(wv)).sum()).backward()
    g_q0 = args[0].grad.numpy()
    assert abs(g_q0[3:7] @ q0[3:7]) <= 1e-12 * np.abs(g_q0).max()  # nothing along the quaternion
    rng = np.random.default_rng(44)
    theta = np.zeros((1, 0))
    for _ in range(2):
        d = [rng.standard_normal(a.shape) for a in (q0, v0, controls)]
        analytic = sum(float((a.grad.numpy() * x).sum()) for a, x in zip(args, d))
        inputs = (q0[None], v0[None], controls[None], theta)
        fd = batch_loss_fd(world, inputs, (wq[None], wv[None]), (*(x[None] for x in d), theta), 1e-6, normalize=True)
        assert abs(analytic - fd) <= 1e-6 * abs(fd), (analytic, fd)


# --- JAX -----------------------------------------------------------------------------


def test_jax_world_rollout_gradients_match_central_differences_and_vmap():
    jax = pytest.importorskip("jax", reason="jax is not installed")
    import jax.numpy as jnp
    import stiction.jax as sj

    jax.config.update("jax_enable_x64", True)
    world, inputs, (wq, wv) = soft_block_scene()
    jargs = [jnp.asarray(a) for a in inputs]

    def loss(q0, v0, controls, theta):
        Q, V = sj.world_rollout(world, q0, v0, controls, theta)
        return (Q * wq).sum() + (V * wv).sum()

    Q, V = sj.world_rollout(world, *jargs)
    Qm, Vm = jax.vmap(lambda *a: sj.world_rollout(world, *a))(*jargs)
    assert np.array_equal(np.asarray(Q), np.asarray(Qm)) and np.array_equal(np.asarray(V), np.asarray(Vm))
    grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3)))(*jargs)
    d = soft_direction(inputs, 45)
    analytic = sum(float((np.asarray(g) * x).sum()) for g, x in zip(grads, d))
    fd = batch_loss_fd(world, inputs, (wq, wv), d, 1e-6)
    assert abs(analytic - fd) <= 1e-6 * abs(fd), (analytic, fd)
    # jax.jacrev: many cotangents swept over one rollout.
    jac = jax.jacrev(lambda v0: sj.world_rollout(world, jargs[0][0], v0, jargs[2][0])[1][-1, :2])(jargs[1][0])
    _, _, tape = world.rollout(inputs[0][0], inputs[1][0], inputs[2][0])
    for i in range(2):
        gv = np.zeros((STEPS, world.nv))
        gv[-1, i] = 1.0
        assert np.allclose(np.asarray(jac[i]), tape.backward(None, gv)[1], rtol=1e-12, atol=1e-14)
    with pytest.raises(InputError, match=r"q0 must have shape \(\.\.\., 54\)"):
        sj.world_rollout(world, jnp.zeros((2, 53)), jargs[1], jargs[2])


def test_jax_world_rollout_q0_gradient_through_a_quaternion():
    jax = pytest.importorskip("jax", reason="jax is not installed")
    import stiction.jax as sj

    jax.config.update("jax_enable_x64", True)
    world, (q0, v0, controls), (wq, wv) = free_box_scene()

    def loss(q0):
        Q, V = sj.world_rollout(world, q0, v0, controls)
        return (Q * wq).sum() + (V * wv).sum()

    g = np.asarray(jax.grad(loss)(q0))
    d = np.random.default_rng(46).standard_normal(q0.shape)
    theta = np.zeros((1, 0))
    zero = [np.zeros((1,) + a.shape) for a in (v0, controls)]
    fd = batch_loss_fd(world, (q0[None], v0[None], controls[None], theta), (wq[None], wv[None]),
                       (d[None], *zero, theta), 1e-6, normalize=True)
    assert abs(g @ d - fd) <= 1e-6 * abs(fd)
