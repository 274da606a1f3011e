"""Soft bodies in a `stiction.World` from Python: a `SoftBody` (or a `SoftSystem` with
explicit settings, or `World.add_soft_body`) as a system whose boundary vertices touch the
ground and the other systems' shapes. Physics (a block resting on the ground carries its
weight; without contact the world step is the body's own step), the step's VJP against
central finite differences along random directions, the block layout, and errors."""

import numpy as np
import pytest

import stiction
from stiction import InputError, NumericalError, SoftBody, SoftSystem, StaticGeometry, TetMesh, World

G = 9.81
DT = 1e-3


def block(origin_z, cells=(2, 2, 1), material="neo_hookean", pin_bottom=False):
    """A 10 × 10 × 4 cm block (E = 50 kPa, ν = 0.3, 1000 kg/m³, damped) whose bottom face is
    at height ``origin_z``."""
    mesh = TetMesh.box(cells, (0.1, 0.1, 0.04), origin=(-0.05, -0.05, origin_z))
    pins = mesh.vertices_where(lambda p: p[2] == origin_z) if pin_bottom else None
    return SoftBody(mesh, material=material, youngs_modulus=5e4, poisson=0.3, density=1000.0,
                    damping=(0.5, 0.005), pin_vertices=pins)


def rel_err(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-12)


# --- physics --------------------------------------------------------------------------


def test_a_block_settles_on_the_ground_carrying_its_weight():
    """Dropped from rest 2 mm above the ground, the block lands, settles without sinking,
    comes to rest, and the ground's normal impulses per step add up to its weight × dt."""
    body = block(2e-3)
    world = World([StaticGeometry.ground(friction=0.8), body], dt=DT)
    n = body.ndof
    x, v = body.rest_positions, np.zeros(n)
    lowest = np.inf
    impulses = []
    for k in range(600):
        rec = world.step_recorded(x, v)
        x, v = rec.q_next, rec.v_next
        lowest = min(lowest, x[2::3].min())
        if k >= 590:
            assert rec.num_contacts == 9  # the bottom face's 3 × 3 vertices
            impulses.append(rec.impulses[0::3].sum())
    weight_impulse = body.total_mass * G * DT
    assert lowest > -2e-4, f"the block sank {lowest} m into the ground"
    momentum = (body.masses[:, None] * v.reshape(-1, 3)).sum(axis=0)
    assert np.linalg.norm(momentum) < 1e-4 * body.total_mass, momentum
    for impulse in impulses:
        assert abs(impulse - weight_impulse) < 5e-3 * weight_impulse, (impulse, weight_impulse)


@pytest.mark.parametrize("integrator", ["backward_euler", "implicit_midpoint"])
@pytest.mark.parametrize("pinned", [False, True])
def test_without_contact_the_world_step_is_the_soft_step(integrator, pinned):
    """Far above the ground (and held by pins, or falling free, under random vertex forces)
    the world step is `SoftBody.step` with the world's dt: the contact stage adds nothing."""
    body = block(0.3, pin_bottom=pinned)
    rng = np.random.default_rng(5)
    n = body.ndof
    x = body.rest_positions + rng.uniform(-1e-3, 1e-3, n) * (~np.isin(np.arange(n), body.pinned_dofs))
    v = rng.uniform(-0.1, 0.1, n)
    v[body.pinned_dofs] = 0.0
    u = rng.uniform(-0.5, 0.5, n)
    x_ref, v_ref = body.step(x, v, u, dt=DT, integrator=integrator, tolerance=1e-12)
    ground = StaticGeometry.ground()
    soft = SoftSystem(body, integrator=integrator, tolerance=1e-12)
    worlds = [
        World([ground, soft], dt=DT),
        World([ground], dt=DT).add_soft_body(body, integrator=integrator, tolerance=1e-12),
    ]
    if integrator == "backward_euler":
        worlds.append(World([body, ground], dt=DT))  # a SoftBody entry: the default settings
    for world in worlds:
        rec = world.step_recorded(x, v, u)
        assert rec.num_contacts == 0
        soft_index = next(i for i, name in enumerate(world.system_names) if name.startswith("soft body"))
        q_slice, v_slice, u_slice = world.blocks(soft_index)
        assert (q_slice.stop - q_slice.start, u_slice.stop - u_slice.start) == (n, n)
        assert rel_err(rec.q_next[q_slice], x_ref) < 1e-13
        assert np.max(np.abs(rec.v_next[v_slice] - v_ref)) < 1e-9


# --- derivatives ----------------------------------------------------------------------


def block_on_ground(seed, integrator):
    """A 2 × 2 × 1-cell block 0.2 mm into the ground, jittered, moving down and slightly
    sideways under random vertex forces: its nine bottom vertices in sticking contact.
    Newton is solved to round-off so that finite differences see a smooth map."""
    rng = np.random.default_rng(seed)
    body = block(-2e-4)
    n = body.ndof
    x = body.rest_positions + rng.uniform(-3e-5, 3e-5, n)
    v = np.where(np.arange(n) % 3 == 2, -0.02, 0.0) + rng.uniform(-2e-3, 2e-3, n)
    u = rng.uniform(-0.05, 0.05, n)
    soft = SoftSystem(body, friction=1.0, tolerance=1e-12, integrator=integrator)
    world = World([StaticGeometry.ground(friction=1.0), soft], dt=DT)
    return world, x, v, u


@pytest.mark.parametrize("integrator", ["backward_euler", "implicit_midpoint"])
def test_step_vjp_matches_central_differences_on_a_block_on_the_ground(integrator):
    world, x, v, u = block_on_ground(3, integrator)
    rec = world.step_recorded(x, v, u)
    mode = rec.row_states
    assert rec.num_contacts == 9 and set(mode) == {"clamping"}, mode
    assert np.all(rec.impulses[0::3] > 0.0)
    rng = np.random.default_rng(11)
    nv = world.nv
    gq, gv = rng.standard_normal(nv), rng.standard_normal(nv)
    grad_q, grad_v, grad_u = rec.vjp(gq, gv)
    assert grad_q.shape == grad_v.shape == grad_u.shape == (nv,)

    def loss(x_, v_, u_):
        r = world.step_recorded(x_, v_, u_)
        assert r.row_states == mode, "the contact mode changed within the difference step"
        return gq @ world.difference(rec.q_next, r.q_next) + gv @ r.v_next

    # Per-input difference steps: 1 µm, 0.1 mm/s, 1 mN (observed errors 1e-11 .. 4e-9).
    for name, grad, h in (("q", grad_q, 1e-6), ("v", grad_v, 1e-4), ("u", grad_u, 1e-3), ("all", None, 1e-6)):
        for _ in range(3):
            d = rng.standard_normal((3, nv))
            if name != "all":
                d[[k for k, b in enumerate("qvu") if b != name]] = 0.0
            else:
                d[1:] *= [[1e2], [1e3]]  # the v and u steps scaled as above

            def at(e):
                return world.retract(x, e * d[0]), v + e * d[1], u + e * d[2]

            fd = (loss(*at(h)) - loss(*at(-h))) / (2 * h)
            analytic = grad_q @ d[0] + grad_v @ d[1] + grad_u @ d[2]
            assert abs(fd - analytic) <= 1e-6 * abs(analytic), (name, fd, analytic)


def test_a_kept_factor_soft_system_steps_and_differentiates_as_the_direct_one():
    """`linear_solver="kept_factor"` changes how the body's own Newton systems are solved,
    not the world step nor its VJP (the coupling factors its Hessian directly either way)."""
    world, x, v, u = block_on_ground(3, "backward_euler")
    body = block(-2e-4)  # the same body as block_on_ground's
    kept = World([StaticGeometry.ground(friction=1.0),
                  SoftSystem(body, friction=1.0, tolerance=1e-12, linear_solver="kept_factor")], dt=DT)
    a, b = world.step_recorded(x, v, u), kept.step_recorded(x, v, u)
    assert a.row_states == b.row_states
    np.testing.assert_allclose(b.q_next, a.q_next, rtol=0, atol=1e-12)
    np.testing.assert_allclose(b.v_next, a.v_next, rtol=0, atol=1e-9)
    rng = np.random.default_rng(2)
    gq, gv = rng.standard_normal(world.nv), rng.standard_normal(world.nv)
    for ga, gb in zip(a.vjp(gq, gv), b.vjp(gq, gv)):
        assert rel_err(gb, ga) < 1e-8
    with pytest.raises(InputError, match="linear_solver"):
        SoftSystem(body, linear_solver="lu")
    with pytest.raises(InputError, match="linear_solver"):
        World([StaticGeometry.ground()], dt=DT).add_soft_body(body, linear_solver="qr")


def test_tape_backward_chains_the_step_vjps():
    """A 5-step rollout of the block on the ground: the tape's gradient of a loss on the last
    state equals the step VJPs chained by hand."""
    world, x, v, u = block_on_ground(4, "backward_euler")
    steps = 5
    controls = np.tile(u, (steps, 1))
    Q, V, tape = world.rollout(x, v, controls)
    assert Q.shape == (steps, world.nq) and len(tape) == steps
    rng = np.random.default_rng(2)
    gq_last, gv_last = rng.standard_normal(world.nv), rng.standard_normal(world.nv)
    grad_q = np.zeros((steps, world.nv))
    grad_v = np.zeros((steps, world.nv))
    grad_q[-1], grad_v[-1] = gq_last, gv_last
    g_q0, g_v0, g_u = tape.backward(grad_q, grad_v)
    gq, gv = gq_last, gv_last
    by_hand = []
    for k in reversed(range(steps)):
        gq, gv, gu = tape[k].vjp(gq, gv)
        by_hand.append(gu)
    assert rel_err(g_q0, gq) < 1e-12 and rel_err(g_v0, gv) < 1e-12
    assert rel_err(g_u, np.array(by_hand[::-1])) < 1e-12


# --- the Python surface ----------------------------------------------------------------


def test_soft_system_properties_and_add_soft_body():
    body = block(0.0)
    soft = SoftSystem(body, friction=0.6, radius=2e-3, integrator="implicit_midpoint")
    assert soft.body is body
    assert soft.friction == 0.6 and soft.radius == 2e-3 and soft.integrator == "implicit_midpoint"
    surface = np.unique(body.mesh.surface())
    assert soft.contact_vertices.dtype == np.int64
    np.testing.assert_array_equal(soft.contact_vertices, surface)
    assert "SoftSystem" in repr(soft)

    base = World([StaticGeometry.ground(friction=0.5)], dt=2e-3, margin=1e-2, erp=0.5, friction="no_slip",
                 solver="ppm")
    world = base.add_soft_body(body, friction=0.3)
    assert base.num_systems == 1 and base.nq == 0, "add_soft_body must not change the world"
    assert world.num_systems == 2 and world.system_names[-1].startswith("soft body")
    assert (world.dt, world.margin, world.erp, world.friction, world.solver) == (
        base.dt, base.margin, base.erp, base.friction, base.solver)
    assert (world.nq, world.nv, world.nu) == (body.ndof,) * 3
    assert world.blocks(-1) == (slice(0, body.ndof, 1),) * 3
    # Two bodies: the second one's block follows the first's.
    two = world.add_soft_body(block(0.1))
    assert two.num_systems == 3 and two.blocks(2)[0] == slice(body.ndof, 2 * body.ndof, 1)


def test_a_contact_names_the_soft_vertex():
    body = block(-1e-4)
    soft = SoftSystem(body)
    world = World([StaticGeometry.ground(), soft], dt=DT)
    rec = world.step_recorded(body.rest_positions, np.zeros(body.ndof))
    assert rec.num_contacts == 9
    x = body.rest_positions.reshape(-1, 3)
    for c in rec.contacts:
        assert c["side_a"] is None and c["side_b"][0] == 1
        vertex = soft.contact_vertices[c["side_b"][1]]
        np.testing.assert_allclose(c["point"][:2], x[vertex, :2], atol=1e-12)
        assert x[vertex, 2] == -1e-4 and c["friction"] == pytest.approx(0.8)


def test_bad_inputs_raise():
    body = block(0.0)
    for kwargs in ({"friction": -0.1}, {"friction": np.nan}, {"radius": -1e-3}, {"radius": np.inf},
                   {"integrator": "rk4"}, {"tolerance": 0.0}, {"tolerance": np.nan}, {"max_iterations": 0}):
        with pytest.raises(InputError):
            SoftSystem(body, **kwargs)
        with pytest.raises(InputError):
            World([], dt=DT).add_soft_body(body, **kwargs)
    with pytest.raises(TypeError):
        SoftSystem("not a body")
    with pytest.raises(TypeError, match=r"systems\[1\] must be a Model, Particles, StaticGeometry, SoftSystem"):
        World([StaticGeometry.ground(), body.mesh], dt=DT)
    with pytest.raises(TypeError):
        World([], dt=DT).add_soft_body(StaticGeometry.ground())
    with pytest.raises(InputError):
        World([body], dt=-1.0)
    world = World([StaticGeometry.ground(), body], dt=DT)
    n = body.ndof
    x, v = body.rest_positions, np.zeros(n)
    with pytest.raises(InputError, match="world.nq"):
        world.step(x[:-1], v)
    with pytest.raises(InputError, match="soft body"):
        world.step(np.where(np.arange(n) == 4, np.nan, x), v)
    with pytest.raises(InputError):
        world.step(x, v, np.full(n + 1, 0.1))
    rec = world.step_recorded(x, v)
    with pytest.raises(InputError):
        rec.vjp(np.zeros(n - 3), np.zeros(n))
    # Newton allowed one iteration on a violent step: a NumericalError naming the soft step.
    tight = World([SoftSystem(body, max_iterations=1)], dt=0.05)
    with pytest.raises(NumericalError):
        tight.step(x * 1.3, np.full(n, 5.0))


def test_soft_system_lives_in_the_stiction_namespace():
    assert SoftSystem.__module__ == "stiction" and stiction.SoftSystem is SoftSystem
    assert "SoftSystem" in stiction.__all__


# --- attachments and material parameters ---------------------------------------------


def test_a_block_welded_to_the_world_hangs_and_its_weld_impulses_carry_its_weight():
    body = block(0.0, cells=(2, 2, 2))
    n = body.ndof
    x = body.rest_positions
    top = [i for i in range(n // 3) if abs(x[3 * i + 2] - 0.04) < 1e-12]
    assert len(top) == 9
    world = World([SoftSystem(body, friction=0.5)], dt=DT)
    welded = world.weld(x, 0, top)
    assert world.num_attachments == 0 and welded.num_attachments == 9
    q, v = x.copy(), np.zeros(n)
    for _ in range(1500):
        q, v = welded.step(q, v)
    rec = welded.step_recorded(q, v)
    weight_impulse = body.total_mass * 9.81 * DT
    # The welds' z rows (there are no contacts): a row's impulse acts on anchor B (here the
    # world) and its opposite on anchor A (the vertex), so the vertices get -sum.
    vertical = -rec.impulses[2::3].sum()
    assert abs(vertical - weight_impulse) < 1e-3 * weight_impulse, (vertical, weight_impulse)
    assert np.max(np.abs(q[[3 * i + 2 for i in top]] - 0.04)) < 1e-6
    with pytest.raises(InputError):
        world.weld(x, 0, [10_000])
    with pytest.raises(InputError):
        world.weld(x, 3, top)


def test_the_world_vjp_gives_material_parameter_gradients():
    world, x, v, u = block_on_ground(5, "backward_euler")
    names = world.param_names
    assert names == ["1/youngs_modulus:0", "1/poisson:0", "1/density:0", "1/damping_mass", "1/damping_stiffness"]
    theta = world.param_values()
    rec = world.step_recorded(x, v, u)
    rng = np.random.default_rng(3)
    gq, gv = rng.standard_normal(world.nv), rng.standard_normal(world.nv)
    grads = rec.vjp(gq, gv, params=True)
    assert len(grads) == 4 and len(rec.vjp(gq, gv)) == 3
    g_theta = grads[3]

    def loss(t):
        r = world.with_param_values(t).step_recorded(x, v, u)
        return gq @ world.difference(rec.q_next, r.q_next) + gv @ r.v_next

    # Each parameter moved in units of its own size; compared norm-wise (the largest error
    # over θ against the largest scaled derivative: ∂/∂α is 1e3 times smaller than ∂/∂E).
    scale = np.maximum(np.abs(theta), 1.0)
    fd = np.zeros(len(theta))
    for k in range(len(theta)):
        h = 1e-5 * scale[k]
        e = np.zeros(len(theta))
        e[k] = h
        fd[k] = (loss(theta + e) - loss(theta - e)) / (2 * h) * scale[k]
    analytic = g_theta * scale
    assert np.max(np.abs(fd - analytic)) <= 1e-6 * np.max(np.abs(fd)), (names, fd, analytic)
    bad = theta.copy()
    bad[1] = 0.5
    with pytest.raises(stiction.ModelError, match="Poisson"):
        world.with_param_values(bad)
