"""`stiction.World` from Python: several systems (a `Model`, `Particles`, `StaticGeometry`)
stepped through one constraint stage. Physics against closed forms, the step's VJP and
the tape's reverse sweep against central finite differences, block layout, and errors."""

import numpy as np
import pytest

import stiction
from stiction import InputError, ModelBuilder, Particles, StaticGeometry, World

G = 9.81
DT = 1e-3
FD_STEP = 1e-6
FD_TOL = 1e-5


def rot_y(angle):
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def hinged_board(mu):
    """A board (2 kg, half extents 0.3 × 0.15 × 0.02 m, centred 0.3 m along x) on a hinge
    about y at the origin (the scene of ``tests/world.rs``)."""
    half = np.array([0.3, 0.15, 0.02])
    mass = 2.0
    hx, hy, hz = half**2
    inertia = mass / 3.0 * np.diag([hy + hz, hx + hz, hx + hy])
    b = ModelBuilder("hinged_board")
    b.add_link("board", mass=mass, com=(0.3, 0.0, 0.0), inertia=inertia)
    b.add_joint("hinge", "revolute", "world", "board", axis=(0.0, 1.0, 0.0))
    b.add_collision("board", "box", half_extents=half, origin_xyz=(0.3, 0.0, 0.0), friction=mu)
    return b.build()


def particle_on_board(mu, tilt=0.3, speed=0.0):
    """A 0.3 kg particle of radius 2 cm on the hinged board tilted by ``tilt`` (downhill
    towards +x), 1 mm into it, 0.25 m from the hinge, moving along the board at
    ``speed``. Returns ``(world, q, v, u)``."""
    r = 0.02
    world = World([hinged_board(mu), Particles([0.3], [r], friction=mu)], dt=DT)
    rot = rot_y(tilt)
    p = rot @ np.array([0.25, 0.01, 0.02 + r - 1e-3])
    vp = rot @ np.array([speed, 0.02, 0.0])
    q = np.r_[tilt, p]
    v = np.r_[0.1, vp]
    u = np.array([0.5, 0.1, -0.2, 0.05])
    return world, q, v, u


def falling_particles():
    """Two particles (0.4 and 1.1 kg, radius 3 cm), the lighter 1.5 mm above the ground and
    the heavier 2 mm from it, above and beside it, falling and approaching: the lighter one
    hits the ground and the heavier one within a few steps. Returns ``(world, q, v)``."""
    r = 0.03
    world = World([StaticGeometry.ground(friction=0.4), Particles([0.4, 1.1], r, friction=0.4)], dt=DT)
    p1 = np.array([0.0, 0.0, r + 1.5e-3])
    d = np.array([0.8, 0.1, 0.59])
    p2 = p1 + d / np.linalg.norm(d) * (2 * r + 2e-3)
    q = np.r_[p1, p2]
    v = np.array([0.3, 0.05, -0.6, -0.4, 0.0, -0.9])
    return world, q, v


def rel_err(a, b):
    return np.max(np.abs(np.asarray(a) - np.asarray(b)) / np.maximum(np.abs(b), 1.0))


# --- physics ---------------------------------------------------------------------------


def test_a_particle_resting_on_the_ground_keeps_still_with_the_weight_impulse():
    m = 0.37
    world = World([StaticGeometry.ground(friction=0.5), Particles([m], [0.01], friction=0.5)], dt=DT)
    rec = world.step_recorded([0.2, -0.1, 0.01], np.zeros(3), np.zeros(3))
    assert rec.num_contacts == 1
    assert np.max(np.abs(rec.v_next)) < 1e-12
    np.testing.assert_allclose(rec.q_next, [0.2, -0.1, 0.01], atol=1e-15)
    assert rec.impulses.shape == (3,)
    assert abs(rec.impulses[0] - m * G * DT) < 1e-12 * m * G * DT + 1e-15
    np.testing.assert_allclose(rec.impulses[1:], 0.0, atol=1e-15)
    (c,) = rec.contacts
    assert c["side_a"] is None and c["side_b"] == (1, 0)
    np.testing.assert_allclose(c["normal"], [0.0, 0.0, 1.0], atol=1e-15)
    np.testing.assert_allclose(c["point"], [0.2, -0.1, 0.0], atol=1e-15)
    assert abs(c["distance"]) < 1e-15 and c["friction"] == 0.5
    # The normal row is the normal itself (a particle's twist is [0; v]).
    np.testing.assert_allclose(rec.constraint_jacobian[0], [0.0, 0.0, 1.0], atol=1e-15)
    # The unrecorded step agrees.
    q1, v1 = world.step([0.2, -0.1, 0.01], np.zeros(3))
    np.testing.assert_array_equal(q1, rec.q_next)
    np.testing.assert_array_equal(v1, rec.v_next)


def test_a_particle_slides_down_a_tilted_ground_at_the_coulomb_acceleration():
    theta, mu, m = 0.4, 0.2, 0.8
    world = World([StaticGeometry.ground(friction=mu, tilt=theta), Particles([m], [0.01], friction=mu)], dt=DT)
    normal = rot_y(theta) @ np.array([0.0, 0.0, 1.0])
    down = rot_y(theta) @ np.array([1.0, 0.0, 0.0])
    assert down[2] < 0
    q, v = normal * 0.01, np.zeros(3)
    steps = 200
    qs, vs, tape = world.rollout(q, v, np.zeros((steps, 3)))
    assert qs.shape == (steps, 3) and vs.shape == (steps, 3) and len(tape) == steps
    expected = G * (np.sin(theta) - mu * np.cos(theta)) * DT * steps
    assert abs(vs[-1] @ down - expected) < 1e-9 * expected
    assert abs(vs[-1] @ normal) < 1e-9


def test_particle_and_hinged_board_share_one_contact():
    world, q, v, u = particle_on_board(0.8)
    rec = world.step_recorded(q, v, u)
    (c,) = rec.contacts
    assert c["side_a"] == (0, 0) and c["side_b"] == (1, 0)
    j = rec.constraint_jacobian
    assert j.shape == (3, 4)
    np.testing.assert_allclose(j[0, 1:], c["normal"], atol=1e-14)
    assert rec.row_states == ["clamping"] * 3


# --- derivatives ----------------------------------------------------------------------


@pytest.mark.parametrize("solver", ["boxed_lcp", "ncp"])
@pytest.mark.parametrize("mu, speed, sliding", [(0.8, 0.0, False), (0.1, 0.3, True)])
def test_step_vjp_matches_central_differences_on_a_hinged_board(mu, speed, sliding, solver):
    world, q, v, u = particle_on_board(mu, speed=speed)
    if solver != "boxed_lcp":
        world = World([hinged_board(mu), Particles([0.3], [0.02], friction=mu)], dt=DT, solver=solver)
    rec = world.step_recorded(q, v, u)
    mode = rec.row_states
    assert ("at_lower" in mode or "at_upper" in mode) == sliding, mode
    q_ref = rec.q_next
    rng = np.random.default_rng(7)
    nv, nu = world.nv, world.nu
    gq, gv = rng.standard_normal(nv), rng.standard_normal(nv)
    grad_q, grad_v, grad_u = rec.vjp(gq, gv)
    assert grad_q.shape == (nv,) and grad_v.shape == (nv,) and grad_u.shape == (nu,)

    def loss(q_, v_, u_):
        r = world.step_recorded(q_, v_, u_)
        assert r.row_states == mode, "the contact mode changed within the difference step"
        return gq @ world.difference(q_ref, r.q_next) + gv @ r.v_next

    def central(perturb):
        return (loss(*perturb(FD_STEP)) - loss(*perturb(-FD_STEP))) / (2 * FD_STEP)

    fd_q = [central(lambda e, k=k: (world.retract(q, e * np.eye(nv)[k]), v, u)) for k in range(nv)]
    fd_v = [central(lambda e, k=k: (q, v + e * np.eye(nv)[k], u)) for k in range(nv)]
    fd_u = [central(lambda e, k=k: (q, v, u + e * np.eye(nu)[k])) for k in range(nu)]
    assert rel_err(grad_q, fd_q) < FD_TOL, (grad_q, fd_q)
    assert rel_err(grad_v, fd_v) < FD_TOL, (grad_v, fd_v)
    assert rel_err(grad_u, fd_u) < FD_TOL, (grad_u, fd_u)


def test_tape_backward_matches_central_differences_over_a_rollout_through_contact():
    world, q0, v0 = falling_particles()
    steps = 10
    rng = np.random.default_rng(3)
    nv, nu = world.nv, world.nu
    controls = rng.standard_normal((steps, nu)) * 0.5
    qs, vs, tape = world.rollout(q0, v0, controls)
    assert len(tape) == steps
    # The lighter particle hits the ground and the heavier one along the rollout.
    sides = {
        (c["side_a"], c["side_b"])
        for k in range(steps)
        for c, s in zip(tape[k].contacts, np.reshape(tape[k].row_states, (-1, 3)))
        if s[0] == "clamping"
    }
    assert (None, (1, 0)) in sides and ((1, 0), (1, 1)) in sides, sides
    modes = [tape[k].row_states for k in range(steps)]
    wq, wv = rng.standard_normal((steps, nv)), rng.standard_normal((steps, nv))
    grad_q0, grad_v0, grad_u = tape.backward(wq, wv)
    assert grad_q0.shape == (nv,) and grad_v0.shape == (nv,) and grad_u.shape == (steps, nu)

    def loss(q, v, u):
        qs_, vs_, tape_ = world.rollout(q, v, u)
        assert [tape_[k].row_states for k in range(steps)] == modes, "a contact mode changed"
        return sum(wq[k] @ world.difference(qs[k], qs_[k]) + wv[k] @ vs_[k] for k in range(steps))

    def central(perturb):
        return (loss(*perturb(FD_STEP)) - loss(*perturb(-FD_STEP))) / (2 * FD_STEP)

    e = np.eye(nv)
    fd_v0 = [central(lambda h, k=k: (q0, v0 + h * e[k], controls)) for k in range(nv)]
    fd_q0 = [central(lambda h, k=k: (world.retract(q0, h * e[k]), v0, controls)) for k in range(nv)]

    def at(t, k, h):
        u = controls.copy()
        u[t, k] += h
        return u

    fd_u3 = [central(lambda h, k=k: (q0, v0, at(3, k, h))) for k in range(nu)]
    assert rel_err(grad_v0, fd_v0) < FD_TOL, (grad_v0, fd_v0)
    assert rel_err(grad_q0, fd_q0) < FD_TOL, (grad_q0, fd_q0)
    assert rel_err(grad_u[3], fd_u3) < FD_TOL, (grad_u[3], fd_u3)
    # The tape's sweep is the chain of the records' VJPs.
    gq, gv = wq[-1], wv[-1]
    for k in reversed(range(steps)):
        gq, gv, gu = tape[k].vjp(gq, gv)
        np.testing.assert_allclose(gu, grad_u[k], rtol=1e-12, atol=1e-14)
        if k > 0:
            gq, gv = gq + wq[k - 1], gv + wv[k - 1]
    np.testing.assert_allclose(gv, grad_v0, rtol=1e-12, atol=1e-14)
    # None means a zero cotangent.
    _, gv_only, _ = tape.backward(None, wv)
    _, gv_both, _ = tape.backward(np.zeros((steps, nv)), wv)
    np.testing.assert_array_equal(gv_only, gv_both)


# --- systems and blocks ----------------------------------------------------------------


def test_a_model_is_a_system_with_its_own_blocks():
    b = ModelBuilder("box")
    b.add_link("box", mass=1.5, inertia=np.diag([0.01, 0.02, 0.03]))
    b.add_joint("free", "free", "world", "box")
    b.add_collision("box", "box", half_extents=(0.2, 0.15, 0.05))
    box = b.build()
    assert (box.nq, box.nv) == (7, 6)
    world = World([StaticGeometry.ground(), box, Particles([0.2, 0.7], 0.015)], dt=DT)
    assert world.num_systems == 3
    assert (world.nq, world.nv, world.nu) == (13, 12, 12)
    assert world.blocks(0) == (slice(0, 0, 1), slice(0, 0, 1), slice(0, 0, 1))
    assert world.blocks(1) == (slice(0, 7, 1), slice(0, 6, 1), slice(0, 6, 1))
    assert world.blocks(2) == (slice(7, 13, 1), slice(6, 12, 1), slice(6, 12, 1))
    assert world.blocks(-1) == world.blocks(2)
    with pytest.raises(IndexError):
        world.blocks(3)
    assert world.dt == DT and world.margin > 0 and 0 <= world.erp <= 1
    assert len(world.system_names) == 3
    # The box rests 1 mm in the ground, the particles on its top, 1 mm in.
    q = np.zeros(world.nq)
    qb, vb, ub = world.blocks(1)
    qp, vp, up = world.blocks(2)
    q[qb] = box.neutral()
    q[qb][2] = 0.05 - 1e-3
    q[qp] = [0.1, 0.05, 0.1 - 1e-3 + 0.015 - 1e-3, -0.12, -0.04, 0.1 - 1e-3 + 0.015 - 1e-3]
    rec = world.step_recorded(q, np.zeros(world.nv))
    sides = [(c["side_a"], c["side_b"]) for c in rec.contacts]
    assert sides.count((None, (1, 0))) == 4
    assert sorted(s for s in sides if s[0] is not None) == [((1, 0), (2, 0)), ((1, 0), (2, 1))]
    assert rec.constraint_jacobian.shape == (3 * len(sides), world.nv)
    # The quaternion stays unit; retract and difference are inverse.
    assert abs(np.linalg.norm(rec.q_next[3:7]) - 1.0) < 1e-12
    dq = np.random.default_rng(0).standard_normal(world.nv) * 0.1
    q1 = world.retract(q, dq)
    assert abs(np.linalg.norm(q1[3:7]) - 1.0) < 1e-12
    np.testing.assert_allclose(world.difference(q, q1), dq, atol=1e-12)


def test_particles_and_static_geometry_properties():
    p = Particles([1.0, 2.0], 0.1, gravity=(0.0, 0.0, -1.0), self_collision=False)
    assert len(p) == 2
    np.testing.assert_array_equal(p.masses, [1.0, 2.0])
    np.testing.assert_array_equal(p.radii, [0.1, 0.1])
    np.testing.assert_array_equal(p.gravity, [0.0, 0.0, -1.0])
    assert StaticGeometry.ground().num_shapes == 1
    # Without self-collision, two overlapping particles pass through each other.
    world = World([p])
    rec = world.step_recorded([0, 0, 0, 0.05, 0, 0], np.zeros(6))
    assert rec.num_contacts == 0
    rec = World([Particles([1.0, 2.0], 0.1)]).step_recorded([0, 0, 0, 0.05, 0, 0], np.zeros(6))
    assert rec.num_contacts == 1


# --- errors ---------------------------------------------------------------------------


def test_bad_inputs_raise_the_library_exceptions():
    world, q, v, u = particle_on_board(0.5)
    # NaN input: the class the Simulator raises for NaN input.
    sim = stiction.Simulator(hinged_board(0.5))
    with pytest.raises(stiction.StictionError) as sim_err:
        sim.step([0.1], [np.nan], [0.0])
    bad = v.copy()
    bad[2] = np.nan
    with pytest.raises(stiction.StictionError) as world_err:
        world.step(q, bad, u)
    assert type(world_err.value) is type(sim_err.value) is InputError
    assert "system 1" in str(world_err.value) or "particle" in str(world_err.value)
    # Wrong sizes.
    with pytest.raises(InputError, match="world.nu"):
        world.step(q, v, np.zeros(3))
    with pytest.raises(InputError, match="world.nq"):
        world.step(q[:-1], v, u)
    with pytest.raises(InputError):
        world.rollout(q, v, np.zeros((5, 3)))
    with pytest.raises(InputError):
        world.retract(q, np.zeros(3))
    rec = world.step_recorded(q, v, u)
    with pytest.raises(InputError):
        rec.vjp(np.zeros(2), np.zeros(world.nv))
    with pytest.raises(InputError):
        rec.vjp(np.full(world.nv, np.nan), np.zeros(world.nv))
    _, _, tape = world.rollout(q, v, np.tile(u, (3, 1)))
    with pytest.raises(InputError):
        tape.backward(np.zeros((2, world.nv)), np.zeros((3, world.nv)))
    with pytest.raises(InputError):
        tape.backward(np.full((3, world.nv), np.inf), None)
    _, _, empty = world.rollout(q, v, np.zeros((0, world.nu)))
    assert len(empty) == 0
    with pytest.raises(InputError):
        empty.backward()
    with pytest.raises(IndexError):
        tape[3]
    # Invalid systems and options.
    with pytest.raises(InputError, match="mass"):
        Particles([1.0, -2.0], [0.1, 0.1])
    with pytest.raises(InputError):
        Particles([1.0], [0.1, 0.1])
    with pytest.raises(InputError):
        Particles([1.0], [-0.1])
    with pytest.raises(InputError):
        Particles([1.0], [0.1], friction=-1.0)
    with pytest.raises(InputError):
        Particles([1.0], [0.1], gravity=(0.0, np.nan, 0.0))
    with pytest.raises(InputError):
        StaticGeometry.ground(friction=np.nan)
    with pytest.raises(InputError):
        World([StaticGeometry.ground()], dt=-1.0)
    with pytest.raises(InputError):
        World([StaticGeometry.ground()], erp=2.0)
    with pytest.raises(TypeError, match="systems\\[1\\]"):
        World([StaticGeometry.ground(), "particles"])


def test_no_slip_worlds_step_alike_with_the_boxed_lcp_and_the_ppm():
    """Two solvers behind one interface: with no-slip friction the boxed LCP and the PPM
    give the same step (the tangential velocity at the contact ends at zero) and the
    same VJP, each through its own backward pass."""
    _, q, v, u = particle_on_board(0.1, speed=0.3)
    model = hinged_board(0.1)
    worlds = [
        World([model, Particles([0.3], [0.02], friction=0.1)], dt=DT, friction="no_slip", solver=s)
        for s in ("boxed_lcp", "ppm")
    ]
    assert [w.solver for w in worlds] == ["boxed LCP", "PPM"]
    assert all(w.friction == "no_slip" for w in worlds)
    recs = [w.step_recorded(q, v, u) for w in worlds]
    np.testing.assert_allclose(recs[0].v_next, recs[1].v_next, rtol=0, atol=1e-10)
    j = recs[0].constraint_jacobian
    assert np.max(np.abs(j[1:3] @ recs[0].v_next)) < 1e-10
    rng = np.random.default_rng(3)
    gq, gv = rng.normal(size=worlds[0].nv), rng.normal(size=worlds[0].nv)
    grads = [r.vjp(gq, gv) for r in recs]
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)
    with pytest.raises(InputError):
        World([model], friction="viscous")
    with pytest.raises(InputError):
        World([model], solver="newton")


def test_the_simulator_takes_a_world_and_steps_it_as_the_world_does():
    world, q, v, u = particle_on_board(0.8)
    sim = stiction.Simulator(world)
    assert sim.world is world and sim.dt == world.dt and (sim.nq, sim.nv) == (world.nq, world.nv)
    assert repr(sim).startswith("Simulator(world=World(")
    q1, v1 = sim.step(q, v, u)
    wq, wv = world.step(q, v, u)
    np.testing.assert_array_equal(q1, wq)
    np.testing.assert_array_equal(v1, wv)
    q2, v2, rec = sim.step(q, v, u, record=True)
    assert isinstance(rec, stiction.WorldStepRecord)
    np.testing.assert_array_equal(q2, wq)
    np.testing.assert_array_equal(rec.v_next, wv)
    # Its VJP is the world's.
    gq, gv = np.ones(world.nv), np.linspace(-1.0, 1.0, world.nv)
    mine, theirs = rec.vjp(gq, gv), world.step_recorded(q, v, u).vjp(gq, gv)
    for a, b in zip(mine, theirs):
        np.testing.assert_array_equal(a, b)
    us = np.tile(u, (5, 1))
    qs, vs = sim.rollout(q, v, us)
    wqs, wvs, _ = world.rollout(q, v, us)
    np.testing.assert_array_equal(qs, wqs)
    np.testing.assert_array_equal(vs, wvs)
    qs, vs, tape = sim.rollout(q, v, us, record=True)
    assert isinstance(tape, stiction.WorldTape)
    np.testing.assert_array_equal(qs, wqs)
    sim.reset_warm_start()  # a world keeps no warm start: nothing happens
    # A model simulator has no world; a world simulator no single model.
    board_sim = stiction.Simulator(hinged_board(0.5), dt=None)
    assert board_sim.world is None and board_sim.dt == 1e-3 and board_sim.nv == 1
    for feature in (
        lambda: sim.model,
        lambda: sim.params,
        lambda: sim.stats,
        lambda: sim.options,
        lambda: sim.last_constraints(),
        lambda: sim.contacts(q),
        lambda: sim.step(q, v, u, wrenches=np.zeros((1, 6))),
        lambda: sim.rollout_batch(q[None], v[None], us[None]),
    ):
        with pytest.raises(TypeError, match="steps a World"):
            feature()
    # The world's options are the world's.
    with pytest.raises(InputError, match="world's options"):
        stiction.Simulator(world, dt=2e-3)
    with pytest.raises(InputError, match="world's options"):
        stiction.Simulator(world, gravity=(0.0, 0.0, -1.0))
    assert stiction.Simulator(world, dt=world.dt).dt == world.dt
    with pytest.raises(TypeError, match="a Model or a World"):
        stiction.Simulator("board")


def test_the_ncp_solver_slides_along_the_velocity_where_the_boxed_lcp_bends_it():
    """Isotropic Coulomb friction (issue #20): a particle sliding on the ground at 30°
    from the x axis keeps its direction under the NCP solver's cone; the boxed LCP's
    pyramid (a box per tangent row) turns it towards a facet diagonal."""
    angle = np.deg2rad(30.0)
    q = np.array([0.0, 0.0, 0.03])
    v = np.array([0.4 * np.cos(angle), 0.4 * np.sin(angle), 0.0])
    turned = {}
    for solver in ("boxed_lcp", "ncp"):
        world = World([StaticGeometry.ground(friction=0.5), Particles([1.0], 0.03, friction=0.5)], dt=DT, solver=solver)
        q1, v1 = q, v
        for _ in range(20):
            q1, v1 = world.step(q1, v1, np.zeros(world.nu))
        turned[solver] = abs(np.arctan2(v1[1], v1[0]) - angle)
        # Slowed by μ g for 20 steps either way.
        assert np.linalg.norm(v1[:2]) < 0.4
    assert world.solver == "NCP (non-smooth Newton)"
    assert turned["ncp"] < 1e-9, turned
    assert turned["boxed_lcp"] > 1e-3, turned
