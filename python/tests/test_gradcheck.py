"""stiction.gradcheck and stiction.ParamSpec."""

import numpy as np
import pytest

import stiction
from stiction import GradReport, ParamSpec, Simulator, gradcheck, samples

ARM = samples.arm7()
BLOCK_KEYS = {
    "name", "method", "shape", "max_abs_error", "max_rel_error", "worst_row", "worst_col", "worst",
    "analytic", "fd", "fd_error_estimate", "scale", "passed",
}  # fmt: skip


def _state(model, seed):
    rng = np.random.default_rng(seed)
    return model.random_configuration(seed), rng.standard_normal(model.nv), 5.0 * rng.standard_normal(model.nv)


def test_gradcheck_passes_on_arm7():
    q, v, tau = _state(ARM, 1)
    report = gradcheck(ARM, q, v, tau, params=["mass:link3", "com:link5", "gravity"])
    assert isinstance(report, GradReport)
    assert report.passed and bool(report)
    names = [b["name"] for b in report.blocks]
    assert names == ["dq+/dq", "dq+/dv", "dq+/dtau", "dq+/dtheta", "dv+/dq", "dv+/dv", "dv+/dtau", "dv+/dtheta"]
    for b in report.blocks:
        assert set(b) == BLOCK_KEYS
        assert b["method"] == "ridders" and b["passed"] is True
        assert b["max_rel_error"] <= 1e-6
        assert b["shape"] == (7, 7)  # np = 1 + 3 + 3
    assert report.rel_tol == 1e-6 and report.max_rel_error <= 1e-6
    text = str(report)
    for n in names:
        assert n in text
    assert "ridders" in text and "FAIL" not in text
    assert "passed=True" in repr(report)


def test_gradcheck_options():
    q, v, tau = _state(ARM, 2)
    spec = ParamSpec(ARM, ["placement:joint3"])
    # Central differences at h = 1e-3 reach ~1e-5 relative accuracy; Ridders' 1e-6.
    report = gradcheck(ARM, q, v, tau, params=spec, dt=2e-3, velocity_products="explicit", method="both", rel_tol=1e-4)
    assert report.passed and report.rel_tol == 1e-4
    assert [b["method"] for b in report.blocks] == ["central"] * 8 + ["ridders"] * 8
    assert all(b["max_rel_error"] <= 1e-6 for b in report.blocks if b["method"] == "ridders")
    assert all(b["fd_error_estimate"] is None for b in report.blocks if b["method"] == "central")
    no_theta = gradcheck(ARM, q, v, tau, method="central", rel_tol=1e-4)
    assert no_theta.passed and len(no_theta.blocks) == 6
    # An absurd tolerance fails, and the table says so.
    strict = gradcheck(ARM, q, v, tau, rel_tol=1e-18)
    assert not strict.passed and "FAIL" in str(strict)
    assert any(not b["passed"] for b in strict.blocks)


def test_gradcheck_floating():
    model = samples.random_tree(5, seed=2, floating=True)
    q, v, tau = _state(model, 3)
    assert gradcheck(model, q, v, tau, params=["gravity"]).passed


def test_gradcheck_errors():
    q, v, tau = _state(ARM, 1)
    with pytest.raises(stiction.InputError, match="q has length 6"):
        gradcheck(ARM, q[:6], v, tau)
    with pytest.raises(stiction.InputError, match="method"):
        gradcheck(ARM, q, v, tau, method="forward")
    with pytest.raises(stiction.InputError, match="velocity_products"):
        gradcheck(ARM, q, v, tau, velocity_products="rk4")
    with pytest.raises(stiction.InputError):
        gradcheck(ARM, q, v, tau, params=["mass:nope"])
    with pytest.raises(stiction.InputError):
        gradcheck(ARM, q, v, tau, step=-1.0)


def test_param_spec():
    spec = ParamSpec(ARM, ["mass:link3", "com:link5", "gravity"])
    assert len(spec) == 7
    assert spec.names == [
        "mass:link3", "com:link5.x", "com:link5.y", "com:link5.z", "gravity.x", "gravity.y", "gravity.z",
    ]  # fmt: skip
    assert spec.entries == ["mass:link3", "com:link5", "gravity"]
    theta = spec.values(ARM)
    assert theta.shape == (7,)
    np.testing.assert_allclose(theta[4:], ARM.gravity)
    theta2 = theta.copy()
    theta2[0] += 0.5
    theta2[6] = -1.0
    heavier = spec.apply(ARM, theta2)
    assert isinstance(heavier, stiction.Model)
    np.testing.assert_allclose(spec.values(heavier), theta2)
    np.testing.assert_allclose(heavier.total_mass, ARM.total_mass + 0.5)
    assert spec.apply(ARM, theta) == ARM
    assert ParamSpec(ARM, "gravity").names == ["gravity.x", "gravity.y", "gravity.z"]
    assert ParamSpec(ARM, []).names == [] and len(ParamSpec(ARM, [])) == 0
    assert spec == ParamSpec(ARM, ["mass:link3", "com:link5", "gravity"]) and spec != ParamSpec(ARM, ["gravity"])
    assert "mass:link3" in repr(spec)


def test_param_spec_all_and_available():
    available = ParamSpec.available(ARM)
    assert "mass:link3" in available and "gravity" in available and "damping:joint1" in available
    everything = ParamSpec.all(ARM)
    assert everything.entries == available
    assert len(everything) == len(everything.names) == len(everything.values(ARM))
    assert ParamSpec(ARM, available) == everything


def test_param_spec_errors():
    with pytest.raises(stiction.InputError, match="nope"):
        ParamSpec(ARM, ["mass:nope"])
    with pytest.raises(stiction.InputError):
        ParamSpec(ARM, ["bogus:link3"])
    with pytest.raises(stiction.InputError, match="twice"):
        ParamSpec(ARM, ["gravity", "gravity"])
    with pytest.raises(stiction.InputError):
        ParamSpec(ARM, 3)
    spec = ParamSpec(ARM, ["mass:link3"])
    with pytest.raises(stiction.InputError, match="theta has length 2"):
        spec.apply(ARM, [1.0, 2.0])
    with pytest.raises(stiction.StictionError):
        spec.apply(ARM, [-1.0])  # negative mass
    small = samples.pendulum_chain(1)
    with pytest.raises(stiction.InputError):
        ParamSpec(ARM, ["mass:link7"]).values(small)
    with pytest.raises(stiction.InputError, match="nope"):
        Simulator(ARM, params=["mass:nope"])
    with pytest.raises(stiction.InputError):
        Simulator(small, params=ParamSpec(ARM, ["mass:link7"]))


def test_simulator_params():
    assert len(Simulator(ARM).params) == 0
    spec = ParamSpec(ARM, ["damping:joint2", "gravity"])
    assert Simulator(ARM, params=spec).params == spec
    assert Simulator(ARM, params=["damping:joint2", "gravity"]).params == spec
    # θ values come from the simulated model, gravity override included.
    sim = Simulator(ARM, gravity=(0, 0, -1.0), params=["gravity"])
    np.testing.assert_allclose(sim.params.values(sim.model), [0, 0, -1.0])


def test_stubs_cover_the_new_api():
    """Every public attribute of the classes and functions of this API is in the stubs."""
    import ast
    import pathlib

    tree = ast.parse((pathlib.Path(stiction.__file__).parent / "_stiction.pyi").read_text())
    declared = {n.name: n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    assert "gradcheck" in declared
    for cls in (stiction.ParamSpec, stiction.StepRecord, stiction.Tape, stiction.GradReport, stiction.Simulator):
        node = declared[cls.__name__]
        members = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
        public = {a for a in dir(cls) if not a.startswith("_")}
        assert public <= members, (cls.__name__, public - members)
    model_members = {n.name for n in declared["Model"].body if isinstance(n, ast.FunctionDef)}
    assert {"rnea_derivatives", "aba_derivatives"} <= model_members
