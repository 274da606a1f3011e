"""Soft bodies from Python (`stiction.TetMesh`, `stiction.SoftBody`, `SoftStepRecord`,
`SoftRollout`): the step's Jacobians and VJP and the rollout's reverse sweep against
central finite differences, the affine patch test, identification of Young's modulus,
meshes (generators, surface, files) and errors."""

from pathlib import Path

import numpy as np
import pytest

import stiction
from stiction import InputError, LoadError, ModelError, NumericalError, SoftBody, SoftRollout, SoftStepRecord, TetMesh

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "soft"
DT = 5e-3
TIGHT = 1e-13  # Newton tolerance (relative to the mesh size) for finite differences
FD_TOL = 1e-5


def bar_body(material="neo_hookean", youngs_modulus=1e5, damping=(2.0, 0.01), **kwargs):
    """A bar 0.3 × 0.1 × 0.1 m of 3 × 1 × 1 cells (16 vertices, 18 tets), clamped at x = 0."""
    mesh = TetMesh.box((3, 1, 1), (0.3, 0.1, 0.1))
    clamp = mesh.vertices_where(lambda p: p[0] <= 1e-12)
    return SoftBody(
        mesh,
        material=material,
        youngs_modulus=youngs_modulus,
        poisson=0.3,
        density=1000.0,
        damping=damping,
        pin_vertices=clamp,
        **kwargs,
    )


def perturbed_state(body, rng):
    """A deformed, moving state (strains of about 1 %), forces and moved pin targets."""
    x = body.rest_positions + 1e-3 * rng.standard_normal(body.ndof)
    v = 0.5 * rng.standard_normal(body.ndof)
    u = 0.5 * rng.standard_normal(body.ndof)
    targets = x[body.pinned_dofs] + 1e-3 * rng.standard_normal(len(body.pinned_dofs))
    return x, v, u, targets


def assert_columns_close(analytic, fd, rel, name):
    """Every column of ``analytic`` matches ``fd`` to ``rel`` times the column's largest entry."""
    analytic, fd = np.asarray(analytic), np.asarray(fd)
    assert analytic.shape == fd.shape, (name, analytic.shape, fd.shape)
    for c in range(fd.shape[1]):
        scale = np.max(np.abs(fd[:, c]))
        err = np.max(np.abs(analytic[:, c] - fd[:, c]))
        assert scale > 0.0 or err == 0.0, f"{name}[:, {c}]: zero column"
        assert err <= rel * scale, f"{name}[:, {c}]: max abs error {err:.3e} > {rel:.0e} * {scale:.3e}"


# --- the step's Jacobians and VJP --------------------------------------------------------


@pytest.fixture(scope="module")
def step_case():
    rng = np.random.default_rng(7)
    body = bar_body()
    x, v, u, targets = perturbed_state(body, rng)
    rec = body.step(x, v, u, targets, dt=DT, tolerance=TIGHT, record=True)
    return body, (x, v, u, targets), rec


def fd_step_columns(body, inputs, which, columns, eps):
    """Central differences of ``(x⁺, v⁺)`` in the entries ``columns`` of input ``which``."""
    cols_x, cols_v = [], []
    for c in columns:
        out = []
        for sign in (1.0, -1.0):
            args = [np.array(a, dtype=float) for a in inputs]
            args[which][c] += sign * eps[c] if np.ndim(eps) else sign * eps
            out.append(body.step(*args, dt=DT, tolerance=TIGHT))
        h = eps[c] if np.ndim(eps) else eps
        cols_x.append((out[0][0] - out[1][0]) / (2 * h))
        cols_v.append((out[0][1] - out[1][1]) / (2 * h))
    return np.stack(cols_x, axis=1), np.stack(cols_v, axis=1)


def test_step_returns_the_record_state(step_case):
    body, (x, v, u, targets), rec = step_case
    assert isinstance(rec, SoftStepRecord)
    x1, v1 = body.step(x, v, u, targets, dt=DT, tolerance=TIGHT)
    np.testing.assert_array_equal(rec.x_next, x1)
    np.testing.assert_array_equal(rec.v_next, v1)
    np.testing.assert_allclose(rec.v_next, (rec.x_next - x) / DT, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(rec.x_next[body.pinned_dofs], targets)
    np.testing.assert_array_equal(rec.x, x)
    np.testing.assert_array_equal(rec.u, u)
    np.testing.assert_array_equal(rec.targets, targets)
    assert rec.dt == DT
    report = rec.report
    assert report["iterations"] >= 2
    assert len(report["step_norms"]) == report["iterations"] == len(report["gradient_norms"])
    assert report["inverted_elements"] == 0
    assert set(report["timings"]) == {"assembly", "factorization", "solve", "line_search"}


@pytest.mark.parametrize(
    "which, name, columns, eps",
    [
        (0, "x", [0, 5, 20, 31, 47], 1e-6),  # a pinned dof (0) and free ones
        (1, "v", list(range(12, 48, 5)), 1e-4),
        (2, "u", list(range(0, 48, 5)), 1e-3),
        (3, "targets", list(range(12)), 1e-6),
    ],
)
def test_step_jacobians_match_central_differences(step_case, which, name, columns, eps):
    body, inputs, rec = step_case
    jac = rec.jacobians()
    fx, fv = fd_step_columns(body, inputs, which, columns, eps)
    assert_columns_close(jac[f"x_{name}"][:, columns], fx, FD_TOL, f"x_{name}")
    assert_columns_close(jac[f"v_{name}"][:, columns], fv, FD_TOL, f"v_{name}")


def test_step_parameter_jacobians_match_central_differences(step_case):
    body, (x, v, u, targets), rec = step_case
    jac = rec.jacobians()
    theta = body.param_values
    assert body.param_names == [
        "youngs_modulus:0",
        "poisson:0",
        "density:0",
        "damping_mass",
        "damping_stiffness",
    ]
    assert jac["x_theta"].shape == (body.ndof, len(theta))
    fx, fv = [], []
    for i in range(len(theta)):
        h = 1e-6 * abs(theta[i])
        out = []
        for sign in (1.0, -1.0):
            t = theta.copy()
            t[i] += sign * h
            out.append(body.with_params(t).step(x, v, u, targets, dt=DT, tolerance=TIGHT))
        fx.append((out[0][0] - out[1][0]) / (2 * h))
        fv.append((out[0][1] - out[1][1]) / (2 * h))
    assert_columns_close(jac["x_theta"], np.stack(fx, axis=1), FD_TOL, "x_theta")
    assert_columns_close(jac["v_theta"], np.stack(fv, axis=1), FD_TOL, "v_theta")


def test_step_vjp_is_the_jacobians_transpose(step_case):
    body, _, rec = step_case
    rng = np.random.default_rng(3)
    gx, gv = rng.standard_normal(body.ndof), rng.standard_normal(body.ndof)
    g = rec.vjp(gx, gv)
    jac = rec.jacobians()
    assert set(jac) == {f"{o}_{i}" for o in "xv" for i in ("x", "v", "u", "targets", "theta")}
    for key in ("x", "v", "u", "targets", "theta"):
        want = jac[f"x_{key}"].T @ gx + jac[f"v_{key}"].T @ gv
        scale = max(np.max(np.abs(want)), 1e-300)
        assert np.max(np.abs(g[key] - want)) <= 1e-9 * scale, key


@pytest.mark.parametrize("solver", ["kept_factor", "kept_factor_f64"])
def test_kept_factor_step_and_vjp_equal_the_direct_ones(step_case, solver):
    body, (x, v, u, targets), rec = step_case
    kept = body.step(x, v, u, targets, dt=DT, tolerance=TIGHT, record=True, linear_solver=solver)
    np.testing.assert_allclose(kept.x_next, rec.x_next, rtol=0, atol=1e-12)
    report = kept.report
    assert report["factorizations"] >= 1
    assert len(report["linear_iterations"]) == report["iterations"]
    assert all(k >= 1 for k in report["linear_iterations"])
    assert rec.report["linear_iterations"] == [] and rec.report["factorizations"] == rec.report["iterations"]
    rng = np.random.default_rng(5)
    gx, gv = rng.standard_normal(body.ndof), rng.standard_normal(body.ndof)
    g, want = kept.vjp(gx, gv), rec.vjp(gx, gv)
    for key in ("x", "v", "u", "targets", "theta"):
        scale = max(np.max(np.abs(want[key])), 1e-300)
        assert np.max(np.abs(g[key] - want[key])) <= 1e-9 * scale, key
    xs, r = body.static_equilibrium(linear_solver=solver)
    xd, _ = body.static_equilibrium()
    np.testing.assert_allclose(xs, xd, rtol=0, atol=1e-11)
    assert r["factorizations"] >= 1


def test_unknown_linear_solver_is_an_input_error():
    body = bar_body()
    x = body.rest_positions
    with pytest.raises(InputError, match="linear_solver 'cholmod'"):
        body.step(x, np.zeros_like(x), linear_solver="cholmod")
    with pytest.raises(InputError, match="kept_factor"):
        body.static_equilibrium(linear_solver="")


# --- rollouts ------------------------------------------------------------------------------


def test_rollout_backward_matches_central_differences():
    rng = np.random.default_rng(11)
    body = bar_body()
    steps = 8
    x0 = body.rest_positions
    v0 = 0.1 * rng.standard_normal(body.ndof)
    controls = 0.5 * rng.standard_normal((steps, body.ndof))
    a = rng.standard_normal((steps, body.ndof))
    b = rng.standard_normal((steps, body.ndof))

    def run(b_, ctrl):
        return b_.rollout(x0, v0, ctrl, dt=DT, tolerance=TIGHT)

    ro = run(body, controls)
    assert isinstance(ro, SoftRollout) and len(ro) == steps
    xs, vs = ro.states
    assert xs.shape == vs.shape == (steps, body.ndof)
    np.testing.assert_array_equal(ro[-1].x_next, xs[-1])
    assert len(ro.reports) == steps
    # Pins held where x0 has them.
    np.testing.assert_array_equal(xs[:, body.pinned_dofs], np.tile(x0[body.pinned_dofs], (steps, 1)))

    g = ro.backward(a, b)
    assert g["u"].shape == (steps, body.ndof)
    assert g["targets"].shape == (steps, len(body.pinned_dofs))
    assert g["x0"].shape == g["v0"].shape == (body.ndof,)

    def loss_difference(plus, minus):
        (xp, vp), (xm, vm) = plus.states, minus.states
        return np.sum(a * (xp - xm)) + np.sum(b * (vp - vm))

    # Young's modulus, relative step 1e-6.
    theta = body.param_values
    k = body.param_names.index("youngs_modulus:0")
    h = 1e-6 * theta[k]
    tp, tm = theta.copy(), theta.copy()
    tp[k] += h
    tm[k] -= h
    fd = loss_difference(run(body.with_params(tp), controls), run(body.with_params(tm), controls)) / (2 * h)
    assert abs(g["theta"][k] - fd) <= FD_TOL * abs(fd), (g["theta"][k], fd)

    # One control entry.
    step, dof = 3, 46
    h = 1e-3
    cp, cm = controls.copy(), controls.copy()
    cp[step, dof] += h
    cm[step, dof] -= h
    fd = loss_difference(run(body, cp), run(body, cm)) / (2 * h)
    assert abs(g["u"][step, dof] - fd) <= FD_TOL * abs(fd), (g["u"][step, dof], fd)

    # Zero cotangents give zero gradients; an empty rollout has no backward.
    assert np.all(ro.backward()["theta"] == 0.0)
    empty = body.rollout(x0, v0, np.zeros((0, body.ndof)))
    assert len(empty) == 0 and empty.states[0].shape == (0, body.ndof)
    with pytest.raises(InputError, match="empty"):
        empty.backward()


# --- statics -------------------------------------------------------------------------------


@pytest.mark.parametrize("material", ["linear", "corotated", "stvk", "neo_hookean"])
def test_static_equilibrium_passes_the_affine_patch_test(material):
    mesh = TetMesh.box((4, 2, 2), (0.4, 0.1, 0.1))
    lo, hi = np.zeros(3), np.array([0.4, 0.1, 0.1])
    boundary = mesh.vertices_where(lambda p: bool(np.any(np.isclose(p, lo) | np.isclose(p, hi))))
    interior = sorted(set(range(mesh.num_vertices)) - set(boundary))
    assert len(interior) == 3
    body = SoftBody(mesh, material=material, gravity=(0.0, 0.0, 0.0), pin_vertices=boundary)
    a = np.array([[1.2, 0.03, -0.02], [0.01, 0.95, 0.04], [-0.03, 0.02, 0.97]])  # stretched along x
    b = np.array([0.01, -0.02, 0.005])
    affine = (mesh.vertices @ a.T + b).ravel()
    x, report = body.static_equilibrium(targets=affine[body.pinned_dofs], tolerance=1e-12)
    assert report["iterations"] >= 1
    np.testing.assert_array_equal(x[body.pinned_dofs], affine[body.pinned_dofs])
    err = np.max(np.abs(x.reshape(-1, 3)[interior] - affine.reshape(-1, 3)[interior]))
    assert err <= 1e-10, err


def test_static_equilibrium_of_an_unheld_body_is_a_numerical_error():
    body = SoftBody(TetMesh.box((1, 1, 1), (1.0, 1.0, 1.0)))
    with pytest.raises(NumericalError, match="pins"):
        body.static_equilibrium()


# --- identification -------------------------------------------------------------------------


def test_identify_recovers_youngs_modulus():
    truth = bar_body(youngs_modulus=1e5, damping=(0.0, 0.0))
    steps = 20
    x0, v0 = truth.rest_positions, np.zeros(truth.ndof)
    controls = np.zeros((steps, truth.ndof))
    tip = truth.mesh.vertices_where(lambda p: p[0] >= 0.3 - 1e-12)
    controls[:, 3 * np.array(tip) + 2] = -2.0  # a downward pull on the free end
    xs, _ = truth.rollout(x0, v0, controls, dt=DT).states
    observed = {k: xs[k - 1] for k in range(2, steps + 1, 2)}
    start = truth.with_params(truth.param_values * np.array([1.3, 1, 1, 1, 1]))
    fit = start.identify(x0, v0, controls, observed, ["youngs_modulus:0"], dt=DT)
    assert set(fit) == {"names", "values", "body", "initial_cost", "cost", "iterations"}
    assert fit["names"] == ["youngs_modulus:0"]
    assert abs(fit["values"][0] - 1e5) <= 1e-6 * 1e5, fit
    assert fit["cost"] < 1e-12 * fit["initial_cost"]
    assert isinstance(fit["body"], SoftBody)
    assert fit["body"].param_values[0] == fit["values"][0]
    with pytest.raises(InputError, match="no parameter 'mass'"):
        start.identify(x0, v0, controls, observed, ["mass"], dt=DT)
    with pytest.raises(InputError, match="step 21"):
        start.identify(x0, v0, controls, {21: xs[0]}, ["youngs_modulus:0"], dt=DT)


# --- the body -----------------------------------------------------------------------------


def test_body_properties_and_elastic_forces():
    body = bar_body(gravity=(0.0, 0.0, -9.0))
    mesh = body.mesh
    assert isinstance(mesh, TetMesh) and mesh.num_tets == 18
    assert body.ndof == 3 * body.num_vertices == 48
    assert body.masses.shape == (16,)
    assert body.total_mass == pytest.approx(1000.0 * 0.3 * 0.1 * 0.1, rel=1e-12)
    assert body.pinned_dofs == [3 * v + k for v in (0, 4, 8, 12) for k in range(3)]
    assert body.damping == (2.0, 0.01)
    np.testing.assert_array_equal(body.gravity, [0.0, 0.0, -9.0])
    np.testing.assert_array_equal(body.rest_positions, mesh.vertices.ravel())
    np.testing.assert_allclose(body.param_values, [1e5, 0.3, 1000.0, 2.0, 0.01])
    x = body.rest_positions
    assert np.max(np.abs(body.elastic_forces(x))) < 1e-9
    # Forces are the negative energy gradient.
    rng = np.random.default_rng(5)
    y = x + 1e-3 * rng.standard_normal(body.ndof)
    f = body.elastic_forces(y)
    for d in (14, 30, 47):
        e = np.zeros(body.ndof)
        e[d] = 1e-7
        fd = -(body.elastic_energy(y + e) - body.elastic_energy(y - e)) / 2e-7
        assert abs(f[d] - fd) <= 1e-5 * np.max(np.abs(f))


def test_region_overrides_and_pin_dofs():
    base = TetMesh.box((2, 1, 1), (0.2, 0.1, 0.1))
    regions = np.repeat([1, 2], 6)
    mesh = TetMesh(base.vertices, base.tets, regions)
    np.testing.assert_array_equal(mesh.regions, regions)
    body = SoftBody(
        mesh,
        material="linear",
        youngs_modulus=2e5,
        regions={2: {"material": "stvk", "density": 500.0}},
        pin_dofs=[(0, 2), (1, 0)],
    )
    assert body.param_names[:6] == [f"{p}:{tag}" for tag in (1, 2) for p in ("youngs_modulus", "poisson", "density")]
    np.testing.assert_allclose(body.param_values, [2e5, 0.3, 1000.0, 2e5, 0.3, 500.0, 0.0, 0.0])
    assert body.pinned_dofs == [2, 3]
    assert body.total_mass == pytest.approx(0.1 * 0.1 * 0.1 * (1000.0 + 500.0), rel=1e-12)
    with pytest.raises(InputError, match="no region 3"):
        SoftBody(mesh, regions={3: {"density": 10.0}})
    with pytest.raises(InputError, match="unknown key 'E'"):
        SoftBody(mesh, regions={1: {"E": 10.0}})
    with pytest.raises(InputError, match="axis"):
        SoftBody(mesh, pin_dofs=[(0, 3)])
    with pytest.raises(InputError, match="vertex 99"):
        SoftBody(mesh, pin_vertices=[99])


def test_with_params_validates():
    body = bar_body()
    theta = body.param_values
    with pytest.raises(InputError, match="values has length 2"):
        body.with_params([1.0, 2.0])
    bad = theta.copy()
    bad[1] = 0.5
    with pytest.raises(ModelError, match="Poisson"):
        body.with_params(bad)


# --- meshes -------------------------------------------------------------------------------


def test_box_counts_and_volumes():
    mesh = TetMesh.box((2, 3, 4), (1.0, 2.0, 3.0), origin=(1.0, 0.0, -1.0))
    assert mesh.num_vertices == 3 * 4 * 5
    assert mesh.num_tets == len(mesh) == 6 * 24
    assert mesh.vertices.shape == (60, 3) and mesh.vertices.dtype == np.float64
    assert mesh.tets.shape == (144, 4) and mesh.tets.dtype == np.int64
    assert mesh.regions.shape == (144,) and np.all(mesh.regions == 0)
    np.testing.assert_allclose(mesh.volumes, 6.0 / 144, rtol=1e-12)
    assert mesh.volumes.sum() == pytest.approx(6.0, rel=1e-12)
    np.testing.assert_allclose(mesh.vertices.min(axis=0), [1.0, 0.0, -1.0])
    np.testing.assert_allclose(mesh.vertices.max(axis=0), [2.0, 2.0, 2.0])
    rod = TetMesh.rod(5, 2, 1.0, 0.2)
    assert rod.num_tets == 6 * 5 * 2 * 2
    np.testing.assert_allclose(rod.vertices.min(axis=0), [0.0, -0.1, -0.1])


def test_surface_is_closed_and_outward():
    mesh = TetMesh.box((3, 2, 2), (0.3, 0.2, 0.2))
    tri = mesh.surface()
    assert tri.dtype == np.int64 and tri.shape == (2 * 2 * (3 * 2 + 2 * 2 + 3 * 2), 3)
    directed = {}
    for a, b, c in tri:
        for e in ((a, b), (b, c), (c, a)):
            directed[e] = directed.get(e, 0) + 1
    # Every edge in exactly two triangles, once in each direction (consistent orientation).
    assert all(n == 1 for n in directed.values())
    assert all((b, a) in directed for a, b in directed)
    p = mesh.vertices
    volume = np.einsum("ij,ij->i", p[tri[:, 0]], np.cross(p[tri[:, 1]], p[tri[:, 2]])).sum() / 6
    assert volume == pytest.approx(0.3 * 0.2 * 0.2, rel=1e-12)


def test_vtu_round_trip(tmp_path):
    mesh = TetMesh.box((2, 1, 1), (0.2, 0.1, 0.1))
    path = tmp_path / "bar.vtu"
    mesh.write_vtu(path)
    back = TetMesh.load(path)
    np.testing.assert_array_equal(back.vertices, mesh.vertices)
    np.testing.assert_array_equal(back.tets, mesh.tets)
    np.testing.assert_array_equal(back.regions, mesh.regions)
    # Deformed positions (flat), cell and point data.
    x = mesh.vertices.ravel() * 1.1
    mesh.write_vtu(
        str(tmp_path / "frame.vtu"),
        positions=x,
        cell_data={"energy": np.arange(mesh.num_tets, dtype=float)},
        point_data={"velocity": np.ones((mesh.num_vertices, 3))},
    )
    np.testing.assert_array_equal(TetMesh.load(tmp_path / "frame.vtu").vertices.ravel(), x)
    with pytest.raises(InputError, match="energy"):
        mesh.write_vtu(tmp_path / "bad.vtu", cell_data={"energy": np.zeros(3)})


def test_fixtures_load_to_the_same_cube():
    meshes = [
        TetMesh.load(FIXTURES / "cube.msh"),
        TetMesh.load(str(FIXTURES / "cube.vtk")),
        TetMesh.load_tetgen(FIXTURES / "cube.node", FIXTURES / "cube.ele"),
    ]
    for m in meshes:
        assert m.num_vertices == 8 and m.num_tets == 6
        np.testing.assert_array_equal(m.vertices, meshes[0].vertices)
        np.testing.assert_array_equal(m.tets, meshes[0].tets)
        np.testing.assert_array_equal(m.regions, [10, 10, 10, 20, 20, 20])
        assert m.volumes.sum() == pytest.approx(1.0, rel=1e-14)
    body = SoftBody(meshes[0], regions={20: {"youngs_modulus": 3e5}})
    assert body.param_names[3] == "youngs_modulus:20"
    assert body.param_values[3] == 3e5


def test_mesh_load_errors(tmp_path):
    with pytest.raises(LoadError, match="missing.msh"):
        TetMesh.load(tmp_path / "missing.msh")
    with pytest.raises(LoadError, match=r"\.obj"):
        TetMesh.load(tmp_path / "mesh.obj")
    with pytest.raises(LoadError):
        TetMesh.load_tetgen(tmp_path / "a.node", FIXTURES / "cube.ele")
    with pytest.raises(ModelError, match="tet 1 is inverted"):
        TetMesh.load_tetgen(FIXTURES / "cube.node", FIXTURES / "cube_inverted.ele")


def test_mesh_validation_errors():
    v = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]])
    assert TetMesh(v[:4], [[0, 1, 2, 3]]).volumes[0] == pytest.approx(1 / 6)
    with pytest.raises(ModelError, match="tet 1 is inverted"):
        TetMesh(v, [[0, 1, 2, 3], [1, 3, 2, 4]])
    with pytest.raises(ModelError, match="vertex 4 belongs to no tet"):
        TetMesh(v, [[0, 1, 2, 3]])
    with pytest.raises(ModelError, match="names vertex 7"):
        TetMesh(v[:4], [[0, 1, 2, 7]])
    with pytest.raises(InputError, match="tets must have shape"):
        TetMesh(v[:4], [0, 1, 2, 3])
    with pytest.raises(InputError, match="non-negative integer"):
        TetMesh(v[:4], [[0, 1, 2, 2.5]])
    with pytest.raises(InputError, match="vertices must have shape"):
        TetMesh(v[:, :2], [[0, 1, 2, 3]])
    with pytest.raises(InputError, match="regions has length 2"):
        TetMesh(v[:4], [[0, 1, 2, 3]], regions=[0, 1])
    with pytest.raises(InputError, match="cells"):
        TetMesh.box((0, 1, 1), (1.0, 1.0, 1.0))
    with pytest.raises(InputError, match="extent"):
        TetMesh.box((1, 1, 1), (1.0, -1.0, 1.0))


# --- errors -------------------------------------------------------------------------------


def test_material_errors():
    mesh = TetMesh.box((1, 1, 1), (1.0, 1.0, 1.0))
    with pytest.raises(ModelError, match="Poisson"):
        SoftBody(mesh, poisson=0.5)
    with pytest.raises(ModelError, match="Young"):
        SoftBody(mesh, youngs_modulus=0.0)
    with pytest.raises(ModelError, match="density"):
        SoftBody(mesh, density=-1.0)
    with pytest.raises(InputError, match="'linear', 'corotated', 'stvk', 'neo_hookean'"):
        SoftBody(mesh, material="rubber")
    with pytest.raises(InputError, match="damping"):
        SoftBody(mesh, damping=(-1.0, 0.0))


def test_state_errors():
    body = bar_body()
    x, v = body.rest_positions, np.zeros(body.ndof)
    bad = x.copy()
    bad[5] = np.nan
    with pytest.raises(InputError, match=r"x\[5\] is not finite"):
        body.step(bad, v)
    with pytest.raises(InputError, match=r"x\[5\] is not finite"):
        body.elastic_forces(bad)
    with pytest.raises(InputError, match="x has length 47, expected 48"):
        body.step(x[:-1], v)
    with pytest.raises(InputError, match="u has length 3"):
        body.step(x, v, u=np.zeros(3))
    with pytest.raises(InputError, match="targets has length 2, expected 12"):
        body.step(x, v, targets=[0.0, 0.0])
    with pytest.raises(InputError, match="dt"):
        body.step(x, v, dt=0.0)
    with pytest.raises(InputError, match="max_iterations"):
        body.step(x, v, max_iterations=0)
    with pytest.raises(InputError, match=r"controls must have shape \(T, 48\)"):
        body.rollout(x, v, np.zeros((3, 5)))
    with pytest.raises(InputError, match=r"controls\[1, 2\] is not finite"):
        body.rollout(x, v, np.where(np.arange(3 * 48).reshape(3, 48) == 50, np.inf, 0.0))
    with pytest.raises(InputError, match=r"targets\[3\] is not finite"):
        body.step(x, v, targets=np.where(np.arange(12) == 3, np.nan, 0.0))
    with pytest.raises(InputError, match=r"values\[0\] is not finite"):
        body.with_params(np.where(np.arange(5) == 0, np.nan, body.param_values))
    with pytest.raises(InputError, match=r"targets must have shape \(3, 12\)"):
        body.rollout(x, v, np.zeros((3, 48)), targets=np.zeros((2, 12)))
    rec = body.step(x, v, record=True)
    with pytest.raises(InputError, match="grad_x_next has length 1"):
        rec.vjp([0.0], np.zeros(48))
    ro = body.rollout(x, v, np.zeros((2, 48)))
    with pytest.raises(InputError, match=r"grad_x must have shape \(2, 48\)"):
        ro.backward(np.zeros((3, 48)))
    with pytest.raises(IndexError):
        ro[2]
    with pytest.raises(NumericalError, match="no convergence"):
        body.step(x, v, u=np.full(48, 1e3), max_iterations=1)


def test_step_defaults_hold_the_pins_and_sag_under_gravity():
    body = bar_body(material="corotated")
    x, v = body.rest_positions, np.zeros(body.ndof)
    for _ in range(5):
        x, v = body.step(x, v, dt=1e-2)
    np.testing.assert_array_equal(x[body.pinned_dofs], body.rest_positions[body.pinned_dofs])
    tip = body.mesh.vertices_where(lambda p: p[0] >= 0.3 - 1e-12)
    assert np.all(x.reshape(-1, 3)[tip, 2] < body.rest_positions.reshape(-1, 3)[tip, 2] - 1e-3)
    assert "SoftBody(" in repr(body) and "corotated" in repr(body)
    assert stiction.TetMesh is TetMesh


@pytest.mark.parametrize("name", ["TetMesh", "SoftBody", "SoftStepRecord", "SoftRollout"])
def test_classes_live_in_the_stiction_namespace(name):
    cls = getattr(stiction, name)
    assert cls.__module__ == "stiction" and name in stiction.__all__


def test_implicit_midpoint_keeps_angular_momentum_and_is_differentiable():
    mesh = stiction.TetMesh.box((2, 1, 1), (0.2, 0.1, 0.1))
    body = stiction.SoftBody(mesh, material="neo_hookean", gravity=(0.0, 0.0, 0.0))
    rng = np.random.default_rng(3)
    x = body.rest_positions + 0.002 * rng.standard_normal(body.ndof)
    pts = x.reshape(-1, 3)
    v = (np.cross([0.0, 0.0, 3.0], pts) + 0.05 * rng.standard_normal(pts.shape)).ravel()
    m = np.repeat(body.masses, 3)

    def angular(x, v):
        return np.cross(x.reshape(-1, 3), (m * v).reshape(-1, 3)).sum(axis=0)

    l0 = angular(x, v)
    for _ in range(20):
        x, v = body.step(x, v, dt=1e-3, integrator="implicit_midpoint")
    assert np.abs(angular(x, v) - l0).max() <= 1e-10 * np.abs(l0).max()
    rec = body.step(x, v, dt=1e-3, integrator="implicit_midpoint", record=True)
    jac = rec.jacobians()
    col = 4
    h = 1e-6
    xp, vp = body.step(x, v + h * np.eye(body.ndof)[col], dt=1e-3, integrator="implicit_midpoint")
    xm, vm = body.step(x, v - h * np.eye(body.ndof)[col], dt=1e-3, integrator="implicit_midpoint")
    fd = (vp - vm) / (2 * h)
    assert np.abs(jac["v_v"][:, col] - fd).max() <= 1e-6 * np.abs(fd).max()
    with pytest.raises(stiction.InputError, match="integrator"):
        body.step(x, v, integrator="rk4")


def _soft_autodiff_scene():
    mesh = stiction.TetMesh.box((2, 1, 1), (0.2, 0.1, 0.1))
    clamp = mesh.vertices_where(lambda p: p[0] == 0.0)
    body = stiction.SoftBody(mesh, material="neo_hookean", youngs_modulus=5e4, damping=(0.2, 0.01), pin_vertices=clamp)
    rng = np.random.default_rng(5)
    x0 = body.rest_positions
    v0 = 0.05 * rng.standard_normal(body.ndof)
    controls = 0.2 * rng.standard_normal((6, body.ndof))
    wx = rng.standard_normal((6, body.ndof))
    wv = 0.01 * rng.standard_normal((6, body.ndof))
    return body, x0, v0, controls, wx, wv


def _soft_loss_fd(body, x0, v0, controls, wx, wv, theta, direction, h):
    """Central difference of the linear loss along a direction in (x0, v0, controls, theta)."""
    def loss(s):
        dx0, dv0, dc, dth = direction
        r = body.with_params(theta + s * dth).rollout(x0 + s * dx0, v0 + s * dv0, controls + s * dc, dt=5e-3)
        X, V = r.states
        return float((wx * X).sum() + (wv * V).sum())
    return (loss(h) - loss(-h)) / (2 * h)


def test_torch_soft_rollout_gradients_match_central_differences():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    import stiction.torch as st

    body, x0, v0, controls, wx, wv = _soft_autodiff_scene()
    theta0 = np.asarray(body.param_values)
    args = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x0, v0, controls, theta0)]
    X, V = st.soft_rollout(body, *args, dt=5e-3)
    ((X * torch.tensor(wx)).sum() + (V * torch.tensor(wv)).sum()).backward()
    rng = np.random.default_rng(9)
    scale = np.abs(theta0) + 1e-2
    direction = (rng.standard_normal(x0.shape) * 1e-3, rng.standard_normal(v0.shape), rng.standard_normal(controls.shape),
                 rng.standard_normal(theta0.shape) * scale)
    analytic = sum(float((a.grad.numpy() * d).sum()) for a, d in zip(args, direction))
    fd = _soft_loss_fd(body, x0, v0, controls, wx, wv, theta0, direction, 1e-5)
    assert abs(analytic - fd) <= 1e-6 * abs(fd)


def test_jax_soft_rollout_gradients_match_central_differences():
    jax = pytest.importorskip("jax", reason="jax is not installed")
    import jax.numpy as jnp
    import stiction.jax as sj

    jax.config.update("jax_enable_x64", True)
    body, x0, v0, controls, wx, wv = _soft_autodiff_scene()
    theta0 = np.asarray(body.param_values)

    def loss(x0, v0, controls, theta):
        X, V = sj.soft_rollout(body, x0, v0, controls, theta, dt=5e-3)
        return (X * wx).sum() + (V * wv).sum()

    grads = jax.grad(loss, argnums=(0, 1, 2, 3))(jnp.asarray(x0), jnp.asarray(v0), jnp.asarray(controls), jnp.asarray(theta0))
    rng = np.random.default_rng(10)
    scale = np.abs(theta0) + 1e-2
    direction = (rng.standard_normal(x0.shape) * 1e-3, rng.standard_normal(v0.shape), rng.standard_normal(controls.shape),
                 rng.standard_normal(theta0.shape) * scale)
    analytic = sum(float((np.asarray(g) * d).sum()) for g, d in zip(grads, direction))
    fd = _soft_loss_fd(body, x0, v0, controls, wx, wv, theta0, direction, 1e-5)
    assert abs(analytic - fd) <= 1e-6 * abs(fd)
    with pytest.raises(stiction.InputError, match="do not broadcast"):
        sj.soft_rollout(body, jnp.zeros((2, body.ndof)), jnp.zeros((3, body.ndof)), controls)


def _soft_batch_scene(batch=3, steps=4):
    """The autodiff scene's body with a batch of perturbed starts, forces and parameters."""
    body, x0, _, _, _, _ = _soft_autodiff_scene()
    rng = np.random.default_rng(21)
    n = body.ndof
    free = np.setdiff1d(np.arange(n), body.pinned_dofs)
    X0 = np.tile(x0, (batch, 1))
    X0[:, free] += 1e-3 * rng.standard_normal((batch, free.size))
    V0 = 0.05 * rng.standard_normal((batch, n))
    U = 0.2 * rng.standard_normal((batch, steps, n))
    TH = np.tile(np.asarray(body.param_values), (batch, 1)) * (1.0 + 0.2 * rng.random((batch, len(body.param_names))))
    WX = rng.standard_normal((batch, steps, n))
    WV = 0.01 * rng.standard_normal((batch, steps, n))
    return body, X0, V0, U, TH, WX, WV


def _soft_batch_loss_fd(body, inputs, weights, direction, h):
    """Central difference of the batch's linear loss along a direction in (X0, V0, U, TH),
    each rollout run on its own with ``SoftBody.rollout``."""
    WX, WV = weights

    def loss(s):
        X0, V0, U, TH = [a + s * d for a, d in zip(inputs, direction)]
        total = 0.0
        for b in range(X0.shape[0]):
            X, V = body.with_params(TH[b]).rollout(X0[b], V0[b], U[b], dt=5e-3).states
            total += float((WX[b] * X).sum() + (WV[b] * V).sum())
        return total
    return (loss(h) - loss(-h)) / (2 * h)


def _batch_direction(inputs, seed):
    rng = np.random.default_rng(seed)
    X0, V0, U, TH = inputs
    return (1e-3 * rng.standard_normal(X0.shape), rng.standard_normal(V0.shape), rng.standard_normal(U.shape),
            rng.standard_normal(TH.shape) * (np.abs(TH) + 1e-2))


def test_soft_rollout_batch_equals_single_rollouts_bit_for_bit():
    body, X0, V0, U, TH, WX, WV = _soft_batch_scene()
    batch, steps, n = U.shape
    pins = body.pinned_dofs
    targets = np.repeat(X0[:, None, pins], steps, axis=1) + 1e-3
    for kwargs in ({}, {"thetas": TH}, {"thetas": TH, "targets": targets, "threads": 1}):
        rollouts = body.rollout_batch(X0, V0, U, dt=5e-3, **kwargs)
        assert len(rollouts) == batch and all(isinstance(r, SoftRollout) for r in rollouts)
        grads = SoftRollout.backward_batch(rollouts, WX, WV, threads=kwargs.get("threads"))
        assert grads["u"].shape == (batch, steps, n) and grads["targets"].shape == (batch, steps, len(pins))
        for b, r in enumerate(rollouts):
            single = body.with_params(TH[b]) if "thetas" in kwargs else body
            t = kwargs["targets"][b] if "targets" in kwargs else None
            ref = single.rollout(X0[b], V0[b], U[b], targets=t, dt=5e-3)
            for got, want in zip(r.states, ref.states):
                assert np.array_equal(got, want)
            g = ref.backward(WX[b], WV[b])
            for k in ("x0", "v0", "u", "targets", "theta"):
                assert np.array_equal(grads[k][b], g[k]), k
    # The same rollout may appear several times; missing cotangents are zero.
    rollouts = body.rollout_batch(X0[:1], V0[:1], U[:1], dt=5e-3)
    twice = SoftRollout.backward_batch([rollouts[0], rollouts[0]], grad_x=WX[:2])
    assert np.array_equal(twice["x0"][0], rollouts[0].backward(WX[0])["x0"])
    assert np.array_equal(twice["theta"][1], rollouts[0].backward(WX[1])["theta"])


def test_soft_rollout_batch_bad_inputs_raise():
    body, X0, V0, U, TH, WX, _ = _soft_batch_scene()
    with pytest.raises(InputError, match=r"v must have shape \(3, 36\)"):
        body.rollout_batch(X0, V0[:2], U)
    with pytest.raises(InputError, match=r"controls must have shape \(B, T, 36\)"):
        body.rollout_batch(X0, V0, U[0])
    with pytest.raises(InputError, match="thetas"):
        body.rollout_batch(X0, V0, U, thetas=TH[:, :2])
    with pytest.raises(InputError, match="targets"):
        body.rollout_batch(X0, V0, U, targets=np.zeros((3, 2, len(body.pinned_dofs))))
    bad = U.copy()
    bad[1, 2, 4] = np.nan
    with pytest.raises(InputError, match="controls"):
        body.rollout_batch(X0, V0, bad)
    bad_theta = TH.copy()
    bad_theta[2, 1] = 0.7  # Poisson's ratio >= 0.5
    with pytest.raises((InputError, ModelError), match="batch rollout 2"):
        body.rollout_batch(X0, V0, U, thetas=bad_theta)
    with pytest.raises(InputError, match="threads"):
        body.rollout_batch(X0, V0, U, threads=0)
    rollouts = body.rollout_batch(X0, V0, U)
    with pytest.raises(InputError, match="at least one rollout"):
        SoftRollout.backward_batch([])
    with pytest.raises(InputError, match="grad_x"):
        SoftRollout.backward_batch(rollouts, WX[:, :2])
    short = body.rollout_batch(X0[:1], V0[:1], U[:1, :2])
    with pytest.raises(InputError, match="rollout 1 does not match"):
        SoftRollout.backward_batch([rollouts[0], short[0]])


def test_torch_soft_rollout_batch_matches_single_rollouts_and_central_differences():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    import stiction.torch as st

    body, X0, V0, U, TH, WX, WV = _soft_batch_scene()
    inputs = (X0, V0, U, TH)
    args = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in inputs]
    X, V = st.soft_rollout(body, *args, dt=5e-3)
    assert X.shape == U.shape and V.shape == U.shape
    for b in range(X0.shape[0]):
        Xb, Vb = st.soft_rollout(body, *(torch.tensor(a[b]) for a in inputs), dt=5e-3)
        assert torch.equal(Xb, X[b]) and torch.equal(Vb, V[b])
    ((X * torch.tensor(WX)).sum() + (V * torch.tensor(WV)).sum()).backward()
    direction = _batch_direction(inputs, 22)
    analytic = sum(float((a.grad.numpy() * d).sum()) for a, d in zip(args, direction))
    fd = _soft_batch_loss_fd(body, inputs, (WX, WV), direction, 1e-5)
    assert abs(analytic - fd) <= 1e-6 * abs(fd)
    # Broadcast: one start state and θ shared by the batch; their gradients sum over it.
    x0 = torch.tensor(X0[0], requires_grad=True)
    theta = torch.tensor(TH[0], requires_grad=True)
    X, V = st.soft_rollout(body, x0, torch.tensor(V0), torch.tensor(U), theta, dt=5e-3)
    (X * torch.tensor(WX)).sum().backward()
    shared = (np.tile(X0[0], (3, 1)), V0, U, np.tile(TH[0], (3, 1)))
    rng = np.random.default_rng(23)
    dx, dth = 1e-3 * rng.standard_normal(X0.shape[1]), rng.standard_normal(TH.shape[1]) * (np.abs(TH[0]) + 1e-2)
    direction = (np.tile(dx, (3, 1)), 0 * V0, 0 * U, np.tile(dth, (3, 1)))
    analytic = float(x0.grad.numpy() @ dx + theta.grad.numpy() @ dth)
    fd = _soft_batch_loss_fd(body, shared, (WX, 0 * WV), direction, 1e-5)
    assert abs(analytic - fd) <= 1e-6 * abs(fd)
    with pytest.raises(InputError, match=r"controls must have shape \(\.\.\., T, 36\)"):
        st.soft_rollout(body, args[0], args[1], torch.zeros(3, 4, 5, dtype=torch.float64))
    with pytest.raises(InputError, match="do not broadcast"):
        st.soft_rollout(body, args[0], args[1][:2], args[2])
    with pytest.raises(InputError, match=r"theta must have shape"):
        st.soft_rollout(body, args[0], args[1], args[2], args[3][:, :2])


def test_jax_soft_rollout_batch_matches_vmap_and_central_differences():
    jax = pytest.importorskip("jax", reason="jax is not installed")
    import jax.numpy as jnp
    import stiction.jax as sj

    jax.config.update("jax_enable_x64", True)
    body, X0, V0, U, TH, WX, WV = _soft_batch_scene()
    inputs = (X0, V0, U, TH)

    def loss(x0, v0, controls, theta):
        X, V = sj.soft_rollout(body, x0, v0, controls, theta, dt=5e-3)
        return (X * WX).sum() + (V * WV).sum()

    jargs = [jnp.asarray(a) for a in inputs]
    X, V = sj.soft_rollout(body, *jargs, dt=5e-3)
    Xm, Vm = jax.vmap(lambda *a: sj.soft_rollout(body, *a, dt=5e-3))(*jargs)
    assert np.array_equal(np.asarray(X), np.asarray(Xm)) and np.array_equal(np.asarray(V), np.asarray(Vm))
    grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3)))(*jargs)
    direction = _batch_direction(inputs, 24)
    analytic = sum(float((np.asarray(g) * d).sum()) for g, d in zip(grads, direction))
    fd = _soft_batch_loss_fd(body, inputs, (WX, WV), direction, 1e-5)
    assert abs(analytic - fd) <= 1e-6 * abs(fd)
    # jax.jacrev sweeps many cotangents over one rollout (batched cotangents, unbatched inputs).
    jac = jax.jacrev(lambda v0: sj.soft_rollout(body, jargs[0][0], v0, jargs[2][0], dt=5e-3)[0][-1, :3])(jargs[1][0])
    assert jac.shape == (3, 36)
    r = body.rollout(X0[0], V0[0], U[0], dt=5e-3)
    for i in range(3):
        gx = np.zeros((4, 36))
        gx[-1, i] = 1.0
        assert np.allclose(np.asarray(jac[i]), r.backward(gx)["v0"], rtol=1e-12, atol=1e-14)
    with pytest.raises(InputError, match=r"x0 must have shape \(\.\.\., 36\)"):
        sj.soft_rollout(body, jnp.zeros((3, 35)), jargs[1], jargs[2])


def test_soft_gradcheck_reports_every_block():
    mesh = stiction.TetMesh.box((2, 1, 1), (0.2, 0.1, 0.1))
    clamp = mesh.vertices_where(lambda p: p[0] == 0.0)
    body = stiction.SoftBody(mesh, material="corotated", youngs_modulus=5e4, damping=(0.2, 0.01), pin_vertices=clamp)
    rng = np.random.default_rng(2)
    x = body.rest_positions + 0.002 * rng.standard_normal(body.ndof)
    v = 0.1 * rng.standard_normal(body.ndof)
    report = body.gradcheck(x, v, dt=1e-2)
    assert report.passed, str(report)
    assert len(report.blocks) == 10
    assert not body.gradcheck(x, v, dt=1e-2, method="central", rel_tol=1e-14).passed
    with pytest.raises(stiction.InputError, match="method"):
        body.gradcheck(x, v, method="forward")
