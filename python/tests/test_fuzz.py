"""Fuzz-style test of bad input: 200 random bad calls over the Python API.

Every call must raise, in-process, an exception of one of the ``ALLOWED`` classes with
a non-empty message. The contract (also in docs/python.md, "Errors"):

* ``stiction.StictionError`` and its subclasses for everything stiction itself
  validates (``InputError``, also a ``ValueError``, for bad arguments: shapes, dtypes,
  NaN/inf, unknown names, bad options; ``ModelError``, ``LoadError``,
  ``NumericalError``);
* ``TypeError`` when Python's argument parsing rejects an argument of the wrong type
  before stiction sees it (``None`` for a float, a list for a string);
* ``OverflowError`` when argument parsing rejects an integer out of the range of its
  Rust type (a negative ``seed`` or sample size); stiction's own counts and indices
  (``max_iterations``, ``threads``, ``group``/``mask``, ``Tape[i]``) raise
  ``InputError``/``IndexError`` instead;
* ``IndexError`` for an out-of-range ``Tape[i]``;
* ``ValueError``/``KeyError`` are allowed with their standard Python meanings.

A ``pyo3_runtime.PanicException`` (a ``BaseException``: a Rust panic) or a crash of the
interpreter fails the run. The calls are drawn with a seeded numpy generator, so a
failure names a reproducible case id.
"""

import numpy as np
import pytest

import stiction
from stiction import ModelBuilder, ParamSpec, Simulator, Tape, samples

ALLOWED = (stiction.StictionError, ValueError, TypeError, IndexError, KeyError, OverflowError)
SEED = 20261122
NCALLS = 200

PEND = samples.pendulum_chain(2)
ARM = samples.arm7()
CART = samples.cartpole()
BOX = samples.bodies_on_plane(1)
MODELS = [PEND, ARM, CART, BOX]


def _bad_vector(rng, n):
    """A value that is not a finite float vector of length ``n``."""
    choices = [
        lambda: np.zeros(n + 1 + int(rng.integers(3))),
        lambda: np.zeros(max(n - 1, 0)),
        lambda: np.zeros((n, 1)),
        lambda: np.zeros((1, n)),
        lambda: 1.5,
        lambda: "abc",
        lambda: ["x"] * n,
        lambda: [None] * n,
        lambda: None,
        lambda: {"q": 1.0},
        lambda: object(),
        lambda: np.zeros(n, dtype=complex) + 1j,
        lambda: np.ones(n, dtype=bool),
        lambda: [[1.0, 2.0], [3.0]],
        lambda: [1.0] * (n - 1) + [[1.0, 2.0]],
        lambda: _nonfinite(rng, np.zeros(n)),
        lambda: np.array([b"ab"] * n),
        lambda: np.zeros(n, dtype=object),
    ]
    return choices[int(rng.integers(len(choices)))]()


def _nonfinite(rng, x):
    x = np.array(x, dtype=float)
    x.flat[int(rng.integers(x.size))] = [np.nan, np.inf, -np.inf][int(rng.integers(3))]
    return x


def _bad_matrix(rng, rows, cols):
    """A value that is not a finite (rows, cols) float matrix."""
    choices = [
        lambda: np.zeros((rows, cols + 1)),
        lambda: np.zeros(cols),
        lambda: np.zeros((rows, cols, 1)),
        lambda: [[0.0] * cols, [0.0] * (cols + 1)],
        lambda: np.full((rows, cols), "s"),
        lambda: np.zeros((rows, cols), dtype=complex),
        lambda: np.zeros((rows, cols), dtype=bool),
        lambda: None if rows > 0 else "x",
        lambda: _nonfinite(rng, np.zeros((rows, cols))),
        lambda: {"a": 1},
    ]
    return choices[int(rng.integers(len(choices)))]()


def _bad_dt(rng, allow_none=False):
    bad = [0.0, -1e-3, np.nan, np.inf, -np.inf, "0.001", [1e-3], {}] + ([] if allow_none else [None])
    return bad[int(rng.integers(len(bad)))]


def _bad_name(rng, model):
    link = model.body_names[-1]
    return [
        "mass:no_such_link",
        f"mas:{link}",
        "bogus",
        "gravity:x",
        "mass:",
        "damping:no_joint",
        f"mass:{link}x",
        "",
        "rest:",
        ":",
        "com:world",
    ][int(rng.integers(11))]


def _bad_params(rng, model):
    choices = [
        lambda: [_bad_name(rng, model)],
        lambda: _bad_name(rng, model),
        lambda: 3,
        lambda: [1, 2],
        lambda: {"mass": 1},
        lambda: ["gravity", "gravity"],
        lambda: [["gravity"]],
        lambda: ParamSpec(ARM, ["mass:link3"]) if model is not ARM else ParamSpec(PEND, ["gravity", "mass:link1"]),
    ]
    return choices[int(rng.integers(len(choices)))]()


def _bad_contact(rng):
    return [
        {"bogus": 1},
        {"margin": -1.0},
        {"margin": np.nan},
        {"erp": "x"},
        {"erp": 2.0},
        {"enabled": 1},
        {"max_pivots": -3},
        {"max_pivots": 2.5},
        {"model": "rubber"},
        {"solver": 3},
        {"bounce_gradients": "sometimes"},
        {"tolerance": -1.0},
        {1: 2},
        {"warm_start": None},
        [1, 2],
        "yes",
        3,
    ][int(rng.integers(17))]


def _state(model, rng):
    return model.random_configuration(int(rng.integers(100))), rng.standard_normal(model.nv), np.zeros(model.nv)


# ---- the generators: each returns a thunk that must raise -------------------------


def g_model_vector(rng):
    m = MODELS[int(rng.integers(len(MODELS)))]
    q, v, tau = _state(m, rng)
    which = int(rng.integers(9))
    if which == 0:
        return lambda: m.mass_matrix(_bad_vector(rng, m.nq))
    if which == 1:
        return lambda: m.forward_dynamics(q, _bad_vector(rng, m.nv), tau)
    if which == 2:
        return lambda: m.inverse_dynamics(_bad_vector(rng, m.nq), v, tau)
    if which == 3:
        return lambda: m.aba_derivatives(q, v, _bad_vector(rng, m.nv))
    if which == 4:
        return lambda: m.rnea_derivatives(q, v, tau, wrenches=_bad_matrix(rng, m.nbodies, 6))
    if which == 5:
        return lambda: m.body_jacobian(_bad_vector(rng, m.nq), 0)
    if which == 6:
        return lambda: m.kinetic_energy(q, _bad_vector(rng, m.nv))
    if which == 7:
        return lambda: m.difference(q, _bad_vector(rng, m.nq))
    return lambda: m.center_of_mass(_bad_vector(rng, m.nq))


def g_model_misc(rng):
    m = MODELS[int(rng.integers(len(MODELS)))]
    q, v, _ = _state(m, rng)
    calls = [
        lambda: m.integrate(q, v, [np.nan, np.inf, None, "x"][int(rng.integers(4))]),
        lambda: m.body_jacobian(q, ["no_such_body", 10_000, -1, 2.5, None][int(rng.integers(5))]),
        lambda: m.body_jacobian(q, 0, frame=["bogus", "", 3][int(rng.integers(3))]),
        lambda: m.body_index("no_such_body"),
        lambda: m.joint_q_index("no_such_joint"),
        lambda: m.with_gravity(_bad_vector(rng, 3)),
        lambda: m.contacts(q, margin=[-1.0, np.nan, "x"][int(rng.integers(3))]),
        lambda: m.contacts(_bad_vector(rng, m.nq)),
        lambda: m.random_configuration(seed=[-1, "x", None, 1.5, 2**70][int(rng.integers(5))]),
        lambda: samples.pendulum_chain([-1, 0, 2.5, None][int(rng.integers(4))]),
        lambda: m.forward_kinematics(_bad_vector(rng, m.nq)),
    ]
    return calls[int(rng.integers(len(calls)))]


def g_simulator_new(rng):
    m = MODELS[int(rng.integers(len(MODELS)))]
    calls = [
        lambda: Simulator(m, dt=_bad_dt(rng, allow_none=True)),  # None: the default time step
        lambda: Simulator(m, gravity=_bad_vector(rng, 3)),
        lambda: Simulator(m, velocity_products=["rk4", "", None, 1][int(rng.integers(4))]),
        lambda: Simulator(m, params=_bad_params(rng, m)),
        lambda: Simulator(m, contact=_bad_contact(rng)),
        lambda: Simulator(m, tolerance=[np.nan, -1.0, 0.0, "x"][int(rng.integers(4))]),
        lambda: Simulator(m, max_iterations=[-1, 0, 2.5, None][int(rng.integers(4))]),
        lambda: Simulator([None, "arm7", 3, {}][int(rng.integers(4))]),
    ]
    return calls[int(rng.integers(len(calls)))]


def g_step(rng):
    m = MODELS[int(rng.integers(len(MODELS)))]
    sim = Simulator(m, dt=2e-3)
    q, v, tau = _state(m, rng)
    record = bool(rng.integers(2))
    calls = [
        lambda: sim.step(_bad_vector(rng, m.nq), v, tau, record=record),
        lambda: sim.step(q, _bad_vector(rng, m.nv), tau, record=record),
        lambda: sim.step(q, v, _bad_vector(rng, m.nv), record=record),
        lambda: sim.step(q, v, tau, wrenches=_bad_matrix(rng, m.nbodies, 6), record=record),
        lambda: sim.step(q, v, tau, record=[None, "yes", [1]][int(rng.integers(3))]),
    ]
    return calls[int(rng.integers(len(calls)))]


def g_rollout(rng):
    m = MODELS[int(rng.integers(len(MODELS)))]
    sim = Simulator(m, dt=2e-3, params=["gravity"])
    q, v, _ = _state(m, rng)
    T = int(rng.integers(1, 5))
    taus = np.zeros((T, m.nv))
    record = bool(rng.integers(2))
    calls = [
        lambda: sim.rollout(q, v, _bad_matrix(rng, T, m.nv), record=record),
        lambda: sim.rollout(_bad_vector(rng, m.nq), v, taus, record=record),
        lambda: sim.rollout(q, _bad_vector(rng, m.nv), taus, record=record),
        lambda: sim.rollout_batch(np.tile(q, (2, 1)), np.zeros((3, m.nv)), np.zeros((2, T, m.nv))),
        lambda: sim.rollout_batch(np.tile(q, (2, 1)), np.zeros((2, m.nv)), _bad_matrix(rng, 2, m.nv)),
        lambda: sim.rollout_batch(
            np.tile(q, (2, 1)), np.zeros((2, m.nv)), np.zeros((2, T, m.nv)), thetas=_bad_matrix(rng, 2, 3)
        ),
        lambda: sim.rollout_batch(
            np.tile(q, (2, 1)), np.zeros((2, m.nv)), np.zeros((2, T, m.nv)), threads=[-1, "x", 1.5][int(rng.integers(3))]
        ),
        lambda: sim.rollout_batch(_bad_matrix(rng, 2, m.nq), np.zeros((2, m.nv)), np.zeros((2, T, m.nv))),
    ]
    return calls[int(rng.integers(len(calls)))]


def g_params(rng):
    m = MODELS[int(rng.integers(len(MODELS)))]
    spec = ParamSpec(m, ["gravity", f"mass:{m.body_names[-1]}"])
    calls = [
        lambda: ParamSpec(m, _bad_params(rng, m)),
        lambda: spec.get(m, _bad_name(rng, m)),
        lambda: spec.get(m, [None, 3, ["gravity"]][int(rng.integers(3))]),
        lambda: spec.set(m, {_bad_name(rng, m): 1.0}),
        lambda: spec.set(m, {"gravity": _bad_vector(rng, 3)}),
        lambda: spec.set(m, {f"mass:{m.body_names[-1]}": [-1.0, np.nan, "x", [1.0, 2.0], None][int(rng.integers(5))]}),
        lambda: spec.set(m, [["gravity", 1.0], 3, "gravity", None][int(rng.integers(4))]),
        lambda: spec.set(m, {3: 1.0}),
        lambda: spec.apply(m, _bad_vector(rng, len(spec))),
        lambda: spec.values(ARM if m is not ARM else PEND),
        lambda: spec.slice(_bad_name(rng, m)),
    ]
    return calls[int(rng.integers(len(calls)))]


def g_tape(rng):
    m = [PEND, CART][int(rng.integers(2))]
    sim = Simulator(m, dt=2e-3, params=["gravity"])
    q, v, _ = _state(m, rng)
    T = int(rng.integers(1, 4))
    _, _, tape = sim.rollout(q, v, np.zeros((T, m.nv)), record=True)
    _, _, rec = sim.step(q, v, np.zeros(m.nv), record=True)
    calls = [
        lambda: tape[[T, -T - 1, 100, 2**80, -(2**80)][int(rng.integers(5))]],
        lambda: tape["x"],
        lambda: Tape().backward(),
        lambda: tape.backward(grad_states=(_bad_matrix(rng, T + 1, m.nv), np.zeros((T + 1, m.nv)))),
        lambda: tape.backward(grad_states=np.zeros((T + 1, m.nv))),
        lambda: tape.backward(grad_states=(np.zeros((T, m.nv)), np.zeros((T + 1, m.nv)))),
        lambda: tape.backward(grad_controls=_bad_matrix(rng, T, m.nv)),
        lambda: rec.vjp(_bad_vector(rng, m.nv), np.zeros(m.nv)),
        lambda: rec.vjp(np.zeros(m.nv), _bad_vector(rng, m.nv)),
        lambda: tape.append([None, "rec", tape][int(rng.integers(3))]),
    ]
    return calls[int(rng.integers(len(calls)))]


def g_gradcheck(rng):
    m = [PEND, CART][int(rng.integers(2))]
    q, v, tau = _state(m, rng)
    calls = [
        lambda: stiction.gradcheck(m, _bad_vector(rng, m.nq), v, tau),
        lambda: stiction.gradcheck(m, q, v, _bad_vector(rng, m.nv)),
        lambda: stiction.gradcheck(m, q, v, tau, params=_bad_params(rng, m)),
        lambda: stiction.gradcheck(m, q, v, tau, dt=_bad_dt(rng)),
        lambda: stiction.gradcheck(m, q, v, tau, method=["forward", "", None][int(rng.integers(3))]),
        lambda: stiction.gradcheck(m, q, v, tau, step=[0.0, -1.0, np.nan][int(rng.integers(3))]),
        lambda: stiction.gradcheck(m, q, v, tau, rel_tol=[np.nan, -1.0, "x"][int(rng.integers(3))]),
        lambda: stiction.gradcheck(m, q, v, tau, contact=_bad_contact(rng)),
    ]
    return calls[int(rng.integers(len(calls)))]


def g_builder(rng):
    def build(kind):
        b = ModelBuilder("fuzz").add_link("a", mass=1.0, inertia=[0.1, 0, 0, 0.1, 0, 0.1])
        if kind == 0:
            b.add_joint("j", "revolute", "world", "a", axis=_bad_vector(rng, 3))
        elif kind == 1:
            b.add_joint("j", ["hinge", "", "universal"][int(rng.integers(3))], "world", "a")
        elif kind == 2:
            b.add_joint("j", "revolute", "world", "nowhere").build()
        elif kind == 3:
            b.add_link("c", mass=[-1.0, np.nan, np.inf][int(rng.integers(3))]).add_joint(
                "j", "revolute", "world", "c"
            ).build()
        elif kind == 4:
            b.add_link("d", inertia=_bad_matrix(rng, 3, 3))
        elif kind == 5:
            b.add_joint("j", "revolute", "world", "a").add_collision(
                "a", ["blob", "sphere", "box", "capsule", "mesh"][int(rng.integers(5))]
            )
        elif kind == 6:
            b.add_joint("j", "revolute", "world", "a").add_collision(
                "a", "sphere", radius=[-1.0, 0.0, np.nan][int(rng.integers(3))]
            ).build()
        elif kind == 7:
            b.add_collision("nolink", "sphere", radius=0.1)
        elif kind == 8:
            b.add_joint("j", "revolute", "world", "a", lower=[[0.0, 1.0]], upper=1.0)
        elif kind == 9:
            b.add_joint("j", "revolute", "world", "a").add_collision(
                "a", "mesh", vertices=np.zeros((3, 3)), triangles=[[0, 1, 7]]
            )
        elif kind == 10:
            b.set_gravity(_bad_vector(rng, 3))
        elif kind == 11:
            b.add_collision("a", "sphere", radius=0.1, **{["group", "mask"][int(rng.integers(2))]: [-1, 2**32, 1.5][int(rng.integers(3))]})
        else:
            b.add_joint("j", "revolute", "world", "a").add_joint("j", "revolute", "world", "a").build()

    kind = int(rng.integers(13))
    return lambda: build(kind)


def g_load(rng, tmp):
    bad_urdf = [
        "",
        "<robot",
        "<robot name='r'><link name='a'/><joint name='j' type='revolute'><parent link='a'/>"
        "<child link='zz'/></joint></robot>",
        "not xml at all",
        "<robot name='r'><link name='a'><inertial><mass value='-1'/></inertial></link></robot>",
        "<robot name='r'><link name='a'><inertial><mass value='nan'/></inertial></link></robot>",
    ]
    which = int(rng.integers(8))
    if which < 4:
        path = tmp / f"bad{int(rng.integers(1_000_000))}.urdf"
        path.write_text(bad_urdf[int(rng.integers(len(bad_urdf)))])
        return lambda: stiction.Model.from_urdf(path)
    if which == 4:
        return lambda: stiction.Model.from_urdf([tmp / "missing.urdf", tmp, None, 3][int(rng.integers(4))])
    if which == 5:
        return lambda: stiction.Model.from_json(["{", "[]", "{}", '{"name": 3}', 3, None][int(rng.integers(6))])
    path = tmp / f"scene{int(rng.integers(1_000_000))}.json"
    path.write_text(
        [
            "{",
            "{}",
            '{"sample": "arm7", "params": ["mass:nope"]}',
            '{"sample": "nope"}',
            '{"sample": "arm7", "options": {"dt": -1}}',
            '{"sample": "arm7", "state": {"q": [1], "v": []}}',
        ][int(rng.integers(6))]
    )
    return lambda: stiction.load_scene([path, tmp / "missing.json"][int(rng.integers(2))])


GENERATORS = [
    g_model_vector,
    g_model_misc,
    g_simulator_new,
    g_step,
    g_rollout,
    g_params,
    g_tape,
    g_gradcheck,
    g_builder,
    g_load,
]


@pytest.mark.parametrize("case", range(NCALLS))
def test_bad_call_raises_cleanly(case, tmp_path):
    rng = np.random.default_rng([SEED, case])
    gen = GENERATORS[case % len(GENERATORS)]
    thunk = gen(rng, tmp_path) if gen is g_load else gen(rng)
    with pytest.raises(ALLOWED) as info:
        thunk()
    assert str(info.value).strip(), f"{type(info.value).__name__} without a message"



# ---- targeted checks of the conversion rules the fuzz relies on ---------------------


def test_numeric_dtypes_and_layouts_are_accepted():
    m = ARM
    ref = m.mass_matrix(np.zeros(7))
    for q in (
        [0] * 7,
        (0.0,) * 7,
        np.zeros(7, dtype=np.int32),
        np.zeros(7, dtype=np.uint8),
        np.zeros(7, dtype=np.float32),
        np.zeros(7, dtype=np.float16),
        np.zeros(14)[::2],  # non-contiguous view
        np.zeros((7, 2))[:, 1],
    ):
        np.testing.assert_array_equal(m.mass_matrix(q), ref)
    taus = np.asfortranarray(np.ones((3, 7)))
    sim = Simulator(m)
    Q, _ = sim.rollout(m.neutral(), np.zeros(7), taus)
    Q2, _ = sim.rollout(m.neutral(), np.zeros(7), np.ascontiguousarray(taus))
    np.testing.assert_array_equal(Q, Q2)
    # float32 values are widened exactly, not rounded through text.
    x = np.float32(0.1)
    q32 = np.full(7, x, dtype=np.float32)
    np.testing.assert_array_equal(m.mass_matrix(q32), m.mass_matrix(q32.astype(np.float64)))


@pytest.mark.parametrize(
    "bad,match",
    [
        (np.zeros(7, dtype=bool), "booleans"),
        ([True] * 7, "booleans"),
        (np.zeros(7, dtype=complex), "complex"),
        (["0"] * 7, "dtype <U1"),
        (np.zeros(7, dtype=object), "dtype object"),
        ([None] * 7, "dtype object"),
        ([[0.0]] * 6 + [[0.0, 1.0]], "cannot be converted"),
    ],
)
def test_non_numeric_dtypes_are_refused(bad, match):
    with pytest.raises(stiction.InputError, match=match):
        ARM.mass_matrix(bad)


def test_own_counts_raise_input_error_not_overflow():
    with pytest.raises(stiction.InputError, match=r"max_iterations must be an integer >= 1, got int \(-1\)"):
        Simulator(ARM, max_iterations=-1)
    with pytest.raises(stiction.InputError, match="max_iterations"):
        Simulator(ARM, max_iterations=True)
    assert Simulator(ARM, max_iterations=np.int64(5)).dt == 1e-3
    sim = Simulator(CART)
    args = (np.zeros((1, 2)), np.zeros((1, 2)), np.zeros((1, 3, 2)))
    for threads in (0, -1, 2**70):
        with pytest.raises(stiction.InputError, match="threads must be an integer >= 1"):
            sim.rollout_batch(*args, threads=threads)
    assert sim.rollout_batch(*args, threads=1)[0].shape == (1, 3, 2)
    b = ModelBuilder("b").add_link("a", mass=1.0)
    with pytest.raises(stiction.InputError, match=r"mask must be an integer in 0..2\*\*32"):
        b.add_collision("a", "sphere", radius=0.1, mask=2**32)
    with pytest.raises(stiction.InputError, match="group must be an integer >= 0"):
        b.add_collision("a", "sphere", radius=0.1, group=-1)
    _, _, tape = sim.rollout(np.zeros(2), np.zeros(2), np.zeros((2, 2)), record=True)
    with pytest.raises(IndexError, match="out of range"):
        tape[2**80]
    with pytest.raises(TypeError, match="tape indices must be integers"):
        tape["0"]
    assert tape[np.int64(-1)].dt == sim.dt


def test_model_without_degrees_of_freedom():
    # A welded body: nq = nv = 0. Every call works on empty arrays (found by the audit:
    # the recorded step's Jacobians used to panic on zero-length chunks).
    m = ModelBuilder("welded").add_link("a", mass=1.0, inertia=[0.1, 0, 0, 0.1, 0, 0.1])
    m = m.add_joint("weld", "fixed", "world", "a").build()
    assert (m.nq, m.nv) == (0, 0)
    sim = Simulator(m, params=["mass:a", "gravity"])
    q1, v1, rec = sim.step([], [], [], record=True)
    assert q1.shape == v1.shape == (0,)
    jac = rec.jacobians()
    assert jac["dv_dq"].shape == (0, 0) and jac["dv_dtheta"].shape == (0, 4)
    assert rec.vjp([], [])["theta"].shape == (4,)
    _, _, tape = sim.rollout([], [], np.zeros((3, 0)), record=True)
    assert tape.backward()["tau"].shape == (3, 0)
    assert stiction.gradcheck(m, [], [], [], params=["mass:a", "gravity"]).passed
    assert sim.rollout_batch(np.zeros((2, 0)), np.zeros((2, 0)), np.zeros((2, 3, 0)))[0].shape == (2, 3, 0)


def test_zero_quaternions_raise():
    # Model.difference used to return NaN for a zero quaternion (audit finding).
    h = samples.humanoid()
    q = h.neutral()
    for call in (
        lambda: h.difference(np.zeros(h.nq), q),
        lambda: h.difference(q, np.zeros(h.nq)),
        lambda: h.integrate(np.zeros(h.nq), np.zeros(h.nv), 0.1),
        lambda: h.normalize(np.zeros(h.nq)),
        lambda: h.mass_matrix(np.zeros(h.nq)),
    ):
        with pytest.raises(stiction.InputError, match="expected a unit quaternion"):
            call()
