"""Contact in the simulator from Python: the `contact=` options, the constraint stage of
a step (`StepRecord.constraints`, `Simulator.last_constraints()`), the LCP counters in
`Simulator.stats`, and Jacobians, VJPs, tapes and `gradcheck` through contact."""

import numpy as np
import pytest

import stiction
from stiction import InputError, ModelBuilder

G = 9.81
DT = 1e-3


def box_on_ground(z=0.05, friction=0.5):
    """A 1 kg box (0.2 × 0.4 × 0.1 m) on a free joint, resting on the ground plane when
    ``z`` is its half height."""
    b = ModelBuilder("box_on_ground")
    b.add_link("box", mass=1.0, inertia=np.diag([0.0141667, 0.0041667, 0.0166667]))
    b.add_joint("free", "free", "world", "box", origin_xyz=(0.0, 0.0, z))
    b.add_collision("box", "box", half_extents=(0.1, 0.2, 0.05), friction=friction)
    b.add_collision("world", "plane", friction=friction)
    return b.build()


def ball_on_ground(z=0.1 - 2e-4, mass=0.5, radius=0.1, friction=0.5):
    """A ball on a free joint, pressed 0.2 mm into the ground by default (the scene of
    ``tests/contact_gradients.rs``)."""
    b = ModelBuilder("ball_on_ground")
    b.add_link("ball", mass=mass, inertia=np.eye(3) * 0.4 * mass * radius**2)
    b.add_joint("free", "free", "world", "ball", origin_xyz=(0.0, 0.0, z))
    b.add_collision("ball", "sphere", radius=radius, friction=friction)
    b.add_collision("world", "plane", friction=friction)
    return b.build()


def sliding_velocity(speed=3.0):
    v = np.zeros(6)
    v[4] = speed  # linear y ([angular; linear] twist)
    return v


# --- options -------------------------------------------------------------------------


def test_contact_options_defaults_and_round_trip():
    m = ball_on_ground()
    sim = stiction.Simulator(m, dt=DT)
    o = sim.contact_options
    assert set(o) == {
        "enabled",
        "model",
        "solver",
        "margin",
        "penetration",
        "erp",
        "position_regularization",
        "penetration_tolerance",
        "normal_compliance",
        "friction_compliance",
        "restitution_threshold",
        "joint_limit_margin",
        "warm_start",
        "bounce_gradients",
        "tolerance",
        "max_pivots",
        "pgs_iterations",
        "pgs_tolerance",
        "standardize",
        "friction_iterations",
        "work_limit",
        "ncp",
    }
    assert o["ncp"] == {
        "function": "fischer_burmeister",
        "max_iterations": 200,
        "tolerance": 1e-12,
        "damping": 0.75,
        "linear": "direct",
        "cr_iterations": 200,
        "preconditioner": True,
        "fallback_sweeps": 200,
    }
    assert o["enabled"] is True and o["warm_start"] is True and o["bounce_gradients"] == "discrete"
    assert o["erp"] == 1.0 and o["standardize"] is True and o["position_regularization"] == 1e-3
    assert o["penetration_tolerance"] == 1e-9 and o["normal_compliance"] == 0.0
    assert o["friction_compliance"] == 0.0
    assert o["model"] == "coulomb" and o["solver"] == "auto" and o["penetration"] == "split"
    custom = dict(
        o,
        model="no_slip",
        solver="boxed_lcp",
        margin=0.01,
        penetration="velocity",
        erp=0.5,
        position_regularization=0.0,
        penetration_tolerance=1e-6,
        normal_compliance=1e-3,
        friction_compliance=2e-3,
        warm_start=False,
        bounce_gradients="continuous_time",
        tolerance=1e-9,
        max_pivots=77,
        pgs_iterations=123,
        pgs_tolerance=0.0,
        standardize=False,
        friction_iterations=5,
        work_limit=float("inf"),
        restitution_threshold=0.1,
        joint_limit_margin=0.02,
        ncp=dict(
            o["ncp"], function="min_map", linear="cr", cr_iterations=50, preconditioner=False, damping=1.0, fallback_sweeps=250
        ),
    )
    sim2 = stiction.Simulator(m, dt=DT, contact=custom)
    assert sim2.contact_options == custom
    # A partial dict keeps the other defaults; numpy scalars are accepted.
    sim3 = stiction.Simulator(m, dt=DT, contact={"margin": np.float64(0.02), "pgs_iterations": np.int64(9)})
    assert sim3.contact_options == dict(o, margin=0.02, pgs_iterations=9)
    assert stiction.Simulator(m, contact=False).contact_options == dict(o, enabled=False)
    assert stiction.Simulator(m, contact=True).contact_options == o
    assert stiction.Simulator(m, contact=None).contact_options == o
    assert stiction.Simulator(m, contact=np.False_).contact_options["enabled"] is False
    assert stiction.Simulator(m, contact={"standardize": np.bool_(False)}).contact_options["standardize"] is False


@pytest.mark.parametrize(
    "contact, match",
    [
        ({"bogus": 1.0}, "unknown contact option 'bogus'"),
        ({"lcp": {}}, "unknown contact option 'lcp'"),
        ({"erp": 2.0}, "erp"),
        ({"erp": 0.0}, "erp"),
        ({"position_regularization": -1e-3}, "position_regularization"),
        ({"position_regularization": float("nan")}, "position_regularization"),
        ({"penetration_tolerance": -1e-9}, "penetration_tolerance"),
        ({"penetration_tolerance": float("inf")}, "penetration_tolerance"),
        ({"normal_compliance": -1e-3}, "normal_compliance"),
        ({"normal_compliance": float("nan")}, "normal_compliance"),
        ({"friction_compliance": -1.0}, "friction_compliance"),
        ({"friction_compliance": float("inf")}, "friction_compliance"),
        ({"margin": -1.0}, "margin"),
        ({"margin": float("nan")}, "margin"),
        ({"restitution_threshold": float("inf")}, "restitution_threshold"),
        ({"joint_limit_margin": -0.1}, "joint_limit_margin"),
        ({"tolerance": 0.0}, "tolerance"),
        ({"pgs_tolerance": -1.0}, "pgs_tolerance"),
        ({"max_pivots": -1}, "max_pivots"),
        ({"pgs_iterations": 2.5}, "pgs_iterations"),
        ({"friction_iterations": True}, "friction_iterations"),
        ({"work_limit": 0.0}, "work_limit"),
        ({"work_limit": float("nan")}, "work_limit"),
        ({"work_limit": "1e8"}, "work_limit"),
        ({"margin": np.True_}, "margin"),
        ({"enabled": 1}, "enabled"),
        ({"warm_start": "yes"}, "warm_start"),
        ({"standardize": None}, "standardize"),
        ({"margin": "0.1"}, "margin"),
        ({"bounce_gradients": "continuous"}, "bounce_gradients"),
        ({"bounce_gradients": 1}, "bounce_gradients"),
        ({"model": "noslip"}, "'model' must be one of 'coulomb', 'no_slip', 'viscous'"),
        ({"model": None}, "model"),
        ({"solver": "lemke"}, "'solver' must be one of 'auto', 'boxed_lcp', 'ncp'"),
        ({"ncp": {"function": "fb"}}, "'ncp.function' must be one of 'min_map', 'fischer_burmeister'"),
        ({"ncp": {"damping": 0.0}}, "ncp damping"),
        ({"ncp": {"tolerance": -1.0}}, "ncp tolerance"),
        ({"ncp": {"max_iterations": 0}}, "ncp max_iterations"),
        ({"ncp": {"bogus": 1}}, "unknown ncp option 'bogus'"),
        ({"ncp": 1.0}, "'ncp' must be a dict"),
        ({1: 2}, "names must be strings"),
        ("on", "contact must be None, a bool or a dict"),
        (1, "contact must be None, a bool or a dict"),
    ],
)
def test_bad_contact_options_raise_input_error(contact, match):
    m = ball_on_ground()
    with pytest.raises(InputError, match=match):
        stiction.Simulator(m, dt=DT, contact=contact)
    # gradcheck shares the parser.
    with pytest.raises(InputError, match=match):
        stiction.gradcheck(m, m.neutral(), np.zeros(6), np.zeros(6), contact=contact)


def test_input_error_is_a_value_error():
    with pytest.raises(ValueError):
        stiction.Simulator(ball_on_ground(), contact={"erp": -1.0})


# --- the constraint stage of a step --------------------------------------------------


def test_resting_box_has_four_clamping_contacts_carrying_its_weight():
    m = box_on_ground()
    sim = stiction.Simulator(m, dt=DT)
    q0, v0 = m.neutral(), np.zeros(6)
    q1, v1, rec = sim.step(q0, v0, np.zeros(6), record=True)
    c = rec.constraints
    assert c is not None
    assert len(c["points"]) == 4 and c["points"].shape == (4, 3) and c["normals"].shape == (4, 3)
    corners = sorted(map(tuple, np.round(c["points"][:, :2], 12)))
    assert corners == sorted((sx * 0.1, sy * 0.2) for sx in (-1, 1) for sy in (-1, 1))
    np.testing.assert_allclose(c["normals"], np.tile([0.0, 0.0, -1.0], (4, 1)), atol=1e-12)
    np.testing.assert_allclose(c["distances"], 0.0, atol=1e-12)
    np.testing.assert_array_equal(c["depths"], -c["distances"])
    assert c["bodies"] == [("box", "world")] * 4
    assert c["contact_kinds"] == ["vertex-face"] * 4
    np.testing.assert_allclose(c["friction"], 0.5)
    assert c["bounce"] == [False] * 4
    # Rows: normal, friction t1, friction t2 per contact.
    m_rows = 12
    assert c["impulses"].shape == (m_rows,) and c["bias"].shape == (m_rows,) and c["bounds"].shape == (m_rows, 2)
    assert c["kinds"] == ["contact_normal", "contact_friction", "contact_friction"] * 4
    np.testing.assert_array_equal(c["contact"], np.repeat(np.arange(4), 3))
    np.testing.assert_array_equal(c["direction"], np.tile([-1, 0, 1], 4))
    np.testing.assert_array_equal(c["dof"], -1)
    assert c["joints"] == [None] * m_rows
    assert c["states"] == ["clamping"] * m_rows
    normal = np.array(c["kinds"]) == "contact_normal"
    fn = c["impulses"][normal]
    assert np.all(fn > 0)
    np.testing.assert_allclose(fn.sum(), 1.0 * G * DT, rtol=1e-6)
    # The standardized solution shares the weight evenly and needs no friction.
    np.testing.assert_allclose(fn, G * DT / 4, rtol=1e-6)
    np.testing.assert_allclose(c["impulses"][~normal], 0.0, atol=1e-12)
    np.testing.assert_allclose(c["bounds"][~normal][:, 1], 0.5 * np.repeat(fn, 2), rtol=1e-12)
    np.testing.assert_array_equal(c["bounds"][normal], np.tile([0.0, np.inf], (4, 1)))
    # v_free is the contact-free update; the impulse stops the fall.
    np.testing.assert_allclose(c["v_free"], [0, 0, 0, 0, 0, -G * DT], atol=1e-12)
    np.testing.assert_allclose(v1, 0.0, atol=1e-10)
    np.testing.assert_allclose(q1, q0, atol=1e-12)
    lcp = c["lcp"]
    assert lcp["path"] == "first_guess" and lcp["islands"] == 1
    assert lcp["residual"] <= 1e-10 and lcp["standardized"] is True and lcp["fallbacks"] == 0
    assert lcp["warm_start_attempted"] is False  # the first step starts cold
    # The simulator reports the same stage.
    last = sim.last_constraints()
    assert last["states"] == c["states"]
    np.testing.assert_array_equal(last["impulses"], c["impulses"])


def test_sliding_ball_has_friction_at_its_bound():
    m = ball_on_ground()
    sim = stiction.Simulator(m, dt=DT, contact={"warm_start": False})
    v0 = sliding_velocity()
    _, v1, rec = sim.step(m.neutral(), v0, np.zeros(6), record=True)
    c = rec.constraints
    assert c["kinds"] == ["contact_normal", "contact_friction", "contact_friction"]
    assert c["states"][0] == "clamping"
    at_bound = [i for i in (1, 2) if c["states"][i] in ("at_lower", "at_upper")]
    assert at_bound, c["states"]
    f = c["impulses"]
    mu = c["friction"][0]
    assert mu == 0.5 and f[0] > 0
    for i in at_bound:
        sign = 1.0 if c["states"][i] == "at_upper" else -1.0
        np.testing.assert_allclose(f[i], sign * mu * f[0], rtol=1e-12)
        np.testing.assert_allclose(c["bounds"][i], [-mu * f[0], mu * f[0]], rtol=1e-12)
    # Friction slows the ball down along y by at most μ·(normal impulse)/m.
    assert 0.0 < v0[4] - v1[4] <= mu * f[0] / 0.5 + 1e-12
    np.testing.assert_allclose(c["depths"], [2e-4], atol=1e-12)


def test_contact_disabled_gives_no_constraints_and_the_ball_falls_through():
    m = ball_on_ground(z=0.1)
    sim = stiction.Simulator(m, dt=DT, contact=False)
    assert sim.last_constraints() is None
    q, v = m.neutral(), np.zeros(6)
    q, v, rec = sim.step(q, v, np.zeros(6), record=True)
    assert rec.constraints is None and sim.last_constraints() is None
    Q, V = sim.rollout(q, v, np.zeros((199, 6)))
    # q holds the free joint's offset from its origin (the ball's centre at 0.1 m).
    assert Q[-1, 2] < -0.15  # ½ g t² ≈ 0.196 m after 0.2 s
    assert sim.last_constraints() is None
    s = sim.stats
    assert s["steps"] == 200 and s["lcp_solves"] == 0
    # With contact on, it stays on the ground.
    sim = stiction.Simulator(m, dt=DT)
    Q, V = sim.rollout(m.neutral(), np.zeros(6), np.zeros((200, 6)))
    assert abs(Q[-1, 2]) < 1e-6
    assert sim.last_constraints() is not None


def test_stats_count_lcp_solves_and_warm_starts():
    m = box_on_ground()
    sim = stiction.Simulator(m, dt=DT)
    s0 = sim.stats
    for key in ("steps", "midpoint_iterations", "midpoint_fallbacks", "lcp_solves", "warm_start_hits",
                "lcp_fallbacks", "unstandardized_solves", "ppm_solves", "work_limited_solves"):
        assert s0[key] == 0, key
    sim.rollout(m.neutral(), np.zeros(6), np.zeros((20, 6)))
    s = sim.stats
    assert s["steps"] == 20 and s["lcp_solves"] == 20
    # The box stays at rest: every step after the first accepts the previous classification.
    assert s["warm_start_hits"] >= 15
    assert s["lcp_fallbacks"] == 0 and s["unstandardized_solves"] == 0 and s["work_limited_solves"] == 0
    last = sim.last_constraints()
    assert last["lcp"]["warm_start_attempted"] is True
    assert last["lcp"]["warm_start_hit"] is True and last["lcp"]["path"] == "warm_start"
    # After reset_warm_start the next step starts cold.
    sim.reset_warm_start()
    sim.step(m.neutral(), np.zeros(6), np.zeros(6))
    assert sim.last_constraints()["lcp"]["warm_start_attempted"] is False
    assert sim.stats["lcp_solves"] == 21 and sim.stats["warm_start_hits"] == s["warm_start_hits"]
    # Without warm start, no hits.
    sim = stiction.Simulator(m, dt=DT, contact={"warm_start": False})
    sim.rollout(m.neutral(), np.zeros(6), np.zeros((5, 6)))
    assert sim.stats["lcp_solves"] == 5 and sim.stats["warm_start_hits"] == 0


def test_joint_limit_rows():
    b = ModelBuilder("cart")
    b.add_link("cart", mass=1.0, inertia=np.eye(3) * 0.01)
    b.add_joint("slide", "prismatic", "world", "cart", axis=(1.0, 0.0, 0.0), lower=-0.5, upper=0.5)
    m = b.build()
    sim = stiction.Simulator(m, dt=DT)
    q, v, rec = sim.step([0.0], [1.0], [0.0], record=True)
    assert rec.constraints is None  # both limits farther than joint_limit_margin
    q, v, rec = sim.step([0.4999], [-1.0], [0.0], record=True)
    c = rec.constraints  # within the margin of the upper limit, moving away
    assert c["kinds"] == ["joint_upper"] and c["states"] == ["separating"] and c["impulses"][0] == 0.0
    q, v, rec = sim.step([0.4999], [2.0], [0.0], record=True)
    c = rec.constraints
    assert c["kinds"] == ["joint_upper"] and c["states"] == ["clamping"]
    np.testing.assert_array_equal(c["contact"], [-1])
    np.testing.assert_array_equal(c["dof"], [0])
    assert c["joints"] == ["slide"]
    assert c["points"].shape == (0, 3) and c["bodies"] == [] and c["depths"].shape == (0,)
    assert c["impulses"][0] > 0
    assert q[0] <= 0.5 + 1e-12


# --- derivatives through contact -----------------------------------------------------


def test_jacobians_vjp_and_tape_through_sliding_contact():
    m = ball_on_ground()
    params = ["mass:ball", "friction:ball"]
    sim = stiction.Simulator(m, dt=DT, params=params, contact={"warm_start": False})
    q0, v0 = m.neutral(), sliding_velocity()
    Q, V, tape = sim.rollout(q0, v0, np.zeros((3, 6)), record=True)
    assert len(tape) == 3
    recs = [tape[t] for t in range(3)]
    for r in recs:
        assert r.constraints is not None and r.nparams == 2
    J = [r.jacobians() for r in recs]
    # Friction at its bound: the step depends on the friction coefficient.
    assert np.abs(J[0]["dv_dtheta"][:, 1]).max() > 1e-3
    # VJP = Jᵀ g for one step.
    rng = np.random.default_rng(5)
    gq, gv = rng.standard_normal(6), rng.standard_normal(6)
    g = recs[0].vjp(gq, gv)
    j = J[0]
    np.testing.assert_allclose(g["q"], j["dq_dq"].T @ gq + j["dv_dq"].T @ gv, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(g["v"], j["dq_dv"].T @ gq + j["dv_dv"].T @ gv, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(g["tau"], j["dq_dtau"].T @ gq + j["dv_dtau"].T @ gv, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(g["theta"], j["dq_dtheta"].T @ gq + j["dv_dtheta"].T @ gv, rtol=1e-9, atol=1e-12)
    # Tape.backward of a terminal loss equals the chained Jacobians.
    gqT, gvT = rng.standard_normal(6), rng.standard_normal(6)
    gqs, gvs = np.zeros((4, 6)), np.zeros((4, 6))
    gqs[-1], gvs[-1] = gqT, gvT
    out = tape.backward(grad_states=(gqs, gvs))
    lq, lv, ltheta = gqT, gvT, np.zeros(2)
    ltau = []
    for j in reversed(J):
        ltheta = ltheta + j["dq_dtheta"].T @ lq + j["dv_dtheta"].T @ lv
        ltau.append(j["dq_dtau"].T @ lq + j["dv_dtau"].T @ lv)
        lq, lv = j["dq_dq"].T @ lq + j["dv_dq"].T @ lv, j["dq_dv"].T @ lq + j["dv_dv"].T @ lv
    np.testing.assert_allclose(out["q0"], lq, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(out["v0"], lv, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(out["theta"], ltheta, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(out["tau"], np.array(ltau[::-1]), rtol=1e-9, atol=1e-12)


def test_records_of_one_simulator_share_buffers_without_changing_results():
    """The records of one simulator share the backward pass's buffers. A dropped box's
    records in flight (no contacts), closing in (four separating) and landed (four
    clamping), their Jacobians
    and VJPs computed in shuffled order and from several threads at once, equal those of
    the same steps recorded by a rollout (whose records take fresh buffers per call)."""
    from concurrent.futures import ThreadPoolExecutor

    m = box_on_ground(z=0.07)
    sim = stiction.Simulator(m, dt=DT, params=["mass:box", "friction:box"], contact={"warm_start": False})
    q, v = m.neutral(), np.zeros(6)
    tau = np.array([0.0, 0.0, 0.3, 2.0, 0.0, 0.0])
    steps = 100
    shared = []
    for _ in range(steps):
        q, v, rec = sim.step(q, v, tau, record=True)
        shared.append(rec)
    _, _, tape = sim.rollout(m.neutral(), np.zeros(6), np.tile(tau, (steps, 1)), record=True)
    fresh = [tape[t] for t in range(steps)]
    ncontacts = {len(r.constraints["points"]) if r.constraints else 0 for r in fresh}
    assert 0 in ncontacts and max(ncontacts) >= 4, ncontacts
    rng = np.random.default_rng(11)
    gq, gv = rng.standard_normal(6), rng.standard_normal(6)
    expected = [(r.jacobians(), r.vjp(gq, gv)) for r in fresh]

    def check(t):
        j, g = shared[t].jacobians(), shared[t].vjp(gq, gv)
        for k in j:
            np.testing.assert_array_equal(j[k], expected[t][0][k], err_msg=f"step {t}: {k}")
        for k in g:
            np.testing.assert_array_equal(g[k], expected[t][1][k], err_msg=f"step {t}: VJP {k}")

    for t in rng.permutation(steps):
        check(t)
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(check, list(rng.permutation(steps)) * 3))


def ridders_check(model, q0, v0, params, /, **contact):
    """``stiction.gradcheck`` of one contact step (zero torques) against Ridders'
    differences to 1e-6, step 1e-4, floor 1e-4 (the floor: see
    ``test_gradcheck_sliding_ball_through_contact``), warm start off, with the contact
    options ``contact`` (the first four arguments are positional-only, so that a contact
    option may be called ``model``)."""
    return stiction.gradcheck(
        model,
        q0,
        v0,
        np.zeros(6),
        params=params,
        dt=DT,
        method="ridders",
        rel_tol=1e-6,
        step=1e-4,
        abs_floor=1e-4,
        contact={"warm_start": False, **contact},
    )


def test_gradcheck_sliding_ball_through_contact():
    # rel_tol 1e-6 with abs_floor 1e-4: each FD evaluation solves an LCP whose rounding
    # noise divided by the FD step leaves ~1e-10 absolute noise in v⁺, which entries below
    # 1e-4 of their block's scale cannot resolve (tests/contact_gradients.rs).
    m = ball_on_ground()
    q0, v0 = m.neutral(), sliding_velocity()
    report = ridders_check(m, q0, v0, ["mass:ball", "friction:ball"])
    assert report.passed, str(report)
    names = {b["name"] for b in report.blocks}
    assert "dv+/dtheta" in names
    theta = [b for b in report.blocks if b["name"] == "dv+/dtheta"][0]
    assert theta["scale"] > 1e-3  # the friction column is exercised


def test_gradcheck_contact_option_changes_the_step():
    # With contact disabled the ball is in free fall: the θ block has no friction column.
    m = ball_on_ground()
    off = stiction.gradcheck(
        m, m.neutral(), sliding_velocity(), np.zeros(6), params=["friction:ball"], contact=False, step=1e-4
    )
    assert off.passed
    theta = [b for b in off.blocks if b["name"] == "dv+/dtheta"][0]
    assert theta["scale"] == 0.0


def test_stubs_declare_the_contact_api():
    import ast
    import pathlib

    tree = ast.parse((pathlib.Path(stiction.__file__).parent / "_stiction.pyi").read_text())
    declared = {n.name: n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    sim = {n.name: n for n in declared["Simulator"].body if isinstance(n, ast.FunctionDef)}
    assert {"contact_options", "last_constraints", "reset_warm_start"} <= set(sim)
    assert "contact" in [a.arg for a in sim["__init__"].args.args]
    assert "contact" in [a.arg for a in declared["gradcheck"].args.args]
    rec = {n.name for n in declared["StepRecord"].body if isinstance(n, ast.FunctionDef)}
    assert "constraints" in rec


# --- contact models ----------------------------------------------------------------------


def viscous_box(mu_v):
    """The box of :func:`box_on_ground` touching the ground, with viscous friction ``mu_v``
    (N·s/m) on both shapes."""
    b = ModelBuilder("viscous_box")
    b.add_link("box", mass=1.0, inertia=np.diag([0.0141667, 0.0041667, 0.0166667]))
    b.add_joint("free", "free", "world", "box", origin_xyz=(0.0, 0.0, 0.05 - 1e-7))
    b.add_collision("box", "box", half_extents=(0.1, 0.2, 0.05), friction=0.3, viscous_friction=mu_v)
    b.add_collision("world", "plane", friction=0.3, viscous_friction=mu_v)
    return b.build()


def test_no_slip_model_holds_a_pushed_box():
    # 5 N sideways: Coulomb (μ = 0.3) slides, no-slip does not move at all.
    m = viscous_box(0.0)
    tau = np.zeros(6)
    tau[3] = 5.0
    moved = {}
    for model in ("coulomb", "no_slip"):
        sim = stiction.Simulator(m, dt=DT, contact={"model": model})
        q, v = m.neutral(), np.zeros(6)
        for _ in range(100):
            q, v = sim.step(q, v, tau)
        moved[model] = abs(q[0])
        # The no-slip rows are solved by the pivoting solver (PPM).
        assert sim.stats["ppm_solves"] == (100 if model == "no_slip" else 0)
    assert moved["no_slip"] < 1e-12 and moved["coulomb"] > 1e-3


def test_viscous_model_decays_like_linear_damping():
    # Four corners with μ_v each: v(t) = v0 exp(−4 μ_v t / m).
    mu_v = 0.25
    m = viscous_box(mu_v)
    sim = stiction.Simulator(m, dt=DT, contact={"model": "viscous"})
    q, v = m.neutral(), np.zeros(6)
    v[3] = 0.5
    for _ in range(500):
        q, v = sim.step(q, v, np.zeros(6))
    exact = 0.5 * np.exp(-4.0 * mu_v * 0.5)
    assert abs(v[3] - exact) < 0.01 * exact


def test_gradcheck_viscous_friction_parameter():
    m = viscous_box(2.0)
    q0, v0 = m.neutral(), np.zeros(6)
    q0[2] = -2e-4  # pressed 0.2 mm in (q is relative to the joint origin)
    v0[3] = 0.5
    params = ["mass:box", "viscous_friction:box", "viscous_friction:world"]
    report = ridders_check(m, q0, v0, params, model="viscous")
    assert report.passed, str(report)
    theta = [b for b in report.blocks if b["name"] == "dv+/dtheta"][0]
    assert theta["scale"] > 1e-3  # the viscous columns are exercised


def test_a_pinched_ball_is_relaxed_and_counted():
    """A ball penetrating the ground and a ceiling plane at once: the velocity recovery
    asks it to move up and down, an LCP with no solution. The step solves it again without
    the recovery biases (counted in ``relaxed_solves``): the ball is held vertically and
    keeps its horizontal velocity (frictionless planes)."""
    b = ModelBuilder("ball_pinched")
    b.add_link("ball", mass=0.5, inertia=np.eye(3) * 0.4 * 0.5 * 0.1**2)
    b.add_joint("free", "free", "world", "ball", origin_xyz=(0.0, 0.0, 0.075))
    b.add_collision("ball", "sphere", radius=0.1, friction=0.0)
    b.add_collision("world", "plane", friction=0.0)
    b.add_collision("world", "plane", origin_xyz=(0.0, 0.0, 0.15), origin_rpy=(np.pi, 0.0, 0.0), friction=0.0)
    m = b.build()
    velocity = {"penetration": "velocity"}
    sim = stiction.Simulator(m, dt=DT, contact=velocity)
    v = np.array([0.0, 0.0, 0.0, 0.5, -0.2, 0.0])
    q1, v1 = sim.step(m.neutral(), v, np.zeros(6))
    assert abs(v1[5]) < 1e-12
    assert np.allclose(v1[3:5], v[3:5], atol=1e-12)
    assert sim.stats["relaxed_solves"] == 1
    assert sim.stats["inexact_solves"] == 0
    last = sim.last_constraints()
    assert last["relaxed"] is True and last["correction_dropped"] is False
    assert last["passes"] == 2 and last["limit_violations"] == []
    assert last["lcp"]["residual"] <= 1e-10
    # A ball on the ground alone is pushed out as usual, not relaxed.
    alone = ball_on_ground(z=0.075, friction=0.0)
    sim = stiction.Simulator(alone, dt=DT, contact=velocity)
    _, v1 = sim.step(alone.neutral(), v, np.zeros(6))
    assert v1[5] > 1.0
    assert sim.stats["relaxed_solves"] == 0
    assert sim.last_constraints()["relaxed"] is False
    # The default, split recovery: the velocity stage only stops the approach (feasible),
    # and the regularized position stage holds the ball between the planes (equal depths:
    # it stays at its height), with nothing relaxed or dropped.
    sim = stiction.Simulator(m, dt=DT)
    q1, v1 = sim.step(m.neutral(), v, np.zeros(6))
    assert abs(v1[5]) < 1e-12 and abs(q1[2] - m.neutral()[2]) < 1e-12
    assert np.allclose(v1[3:5], v[3:5], atol=1e-12)
    assert sim.stats["relaxed_solves"] == 0 and sim.stats["position_corrections"] == 1
    assert sim.last_constraints()["relaxed"] is False and sim.last_constraints()["correction_dropped"] is False


def test_ncp_solver_keeps_a_sliding_ball_on_its_direction_with_exact_gradients():
    """`contact={"solver": "ncp"}` (issue #20): the ball slides at 30° from the contact
    frame's tangents; its isotropic friction cone slows it along its own velocity by
    μ g per second (to round-off), where the boxed LCP's pyramid turns it. Its step
    Jacobians match Ridders differences, and the counters say what solved it."""
    m = ball_on_ground()
    angle = np.deg2rad(30.0)
    v0 = np.zeros(6)
    v0[3], v0[4] = 2.0 * np.cos(angle), 2.0 * np.sin(angle)
    turned, speed = {}, {}
    for solver in ("boxed_lcp", "ncp"):
        sim = stiction.Simulator(m, dt=DT, contact={"solver": solver})
        q, v = m.neutral(), v0
        for _ in range(50):
            q, v = sim.step(q, v, np.zeros(6))
        turned[solver] = abs(np.arctan2(v[4], v[3]) - angle)
        speed[solver] = np.hypot(v[3], v[4])
        if solver == "ncp":
            assert sim.stats["ncp_solves"] == 50 and sim.stats["newton_iterations"] > 0
            assert sim.stats["inexact_solves"] == 0
            _, _, rec = sim.step(q, v, np.zeros(6), record=True)
            c = rec.constraints
            # Warm-started from the previous step's forces: the mode is found at once.
            assert c["lcp"]["path"] == "newton" and c["lcp"]["warm_start_attempted"]
            # In the slip frame: the first friction row along the slip, at −μ f_n.
            assert c["states"][1] == "at_lower" and c["states"][2] == "clamping"
            np.testing.assert_allclose(c["impulses"][1], -0.5 * c["impulses"][0], rtol=1e-12)
    assert turned["ncp"] < 1e-12, turned
    assert turned["boxed_lcp"] > 1e-3, turned
    # While it slides (its slip falls by 3.5 μ g t, friction spinning it up), friction
    # μ m g slows its centre by μ g t.
    np.testing.assert_allclose(2.0 - speed["ncp"], 0.5 * 9.81 * 50 * DT, rtol=1e-6)
    report = ridders_check(m, m.neutral(), v0, ["mass:ball", "friction:ball"], solver="ncp")
    assert report.passed, str(report)


def test_compliant_contacts_settle_at_the_closed_form_depth_and_give_smooth_ncp_steps():
    """`normal_compliance` and `friction_compliance` (docs/contact.md, "Compliant
    contacts"): a 2 kg ball under the velocity recovery settles `ρ g h²/erp` deep; a box
    sliding and spinning on four corners under the NCP solver, not smooth when rigid,
    has step Jacobians that match Ridders differences."""
    rho, erp = 1e-3, 0.5
    m = ball_on_ground(z=0.1, mass=2.0)
    contact = {"normal_compliance": rho, "penetration": "velocity", "erp": erp}
    sim = stiction.Simulator(m, dt=DT, contact=contact)
    q, v = m.neutral(), np.zeros(6)
    for _ in range(400):
        q, v = sim.step(q, v, np.zeros(6))
    # The joint's origin holds the ball's start height: q[2] is its displacement.
    np.testing.assert_allclose(-q[2], rho * G * DT**2 / erp, rtol=1e-3)
    assert np.abs(v).max() < 1e-9
    rigid = stiction.Simulator(m, dt=DT, contact={"penetration": "velocity", "erp": erp})
    q, v = m.neutral(), np.zeros(6)
    for _ in range(400):
        q, v = rigid.step(q, v, np.zeros(6))
    assert abs(q[2]) < 1e-12

    box = box_on_ground(z=0.05 - 2e-4, friction=0.3)
    v0 = np.array([0.0, 0.0, 1.5, 0.8, 0.8, 0.0])
    params = ["mass:box", "friction:box"]
    report = ridders_check(box, box.neutral(), v0, params, solver="ncp", normal_compliance=rho)
    assert report.passed, str(report)
