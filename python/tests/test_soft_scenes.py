"""Soft-body scene files from Python: stiction.load_scene and stiction.gradcheck_scene
(docs/gradients.md, "Scene files")."""

import json
from pathlib import Path

import numpy as np
import pytest

import stiction

SCENES = Path(__file__).resolve().parents[2] / "examples" / "scenes"
SOFT_SCENES = sorted(p for p in SCENES.glob("*.json") if "soft" in json.loads(p.read_text()))


def test_a_scene_file_selects_the_kept_factor_solver(tmp_path):
    raw = json.loads(SOFT_SCENES[0].read_text())
    raw["options"]["linear_solver"] = "kept_factor"
    path = tmp_path / "kept.json"
    path.write_text(json.dumps(raw))
    scene = stiction.load_scene(path)
    assert scene["options"]["linear_solver"] == "kept_factor"
    body = scene["body"]
    x, v = body.rest_positions, np.zeros(body.ndof)
    rec = body.step(x, v, record=True, **scene["options"])
    assert rec.report["factorizations"] >= 1 and len(rec.report["linear_iterations"]) == rec.report["iterations"]
    raw["options"]["linear_solver"] = "cg"
    path.write_text(json.dumps(raw))
    with pytest.raises(stiction.InputError, match="options.linear_solver must be"):
        stiction.load_scene(path)


def test_there_are_soft_example_scenes():
    assert [p.name for p in SOFT_SCENES] == ["soft_bar.json", "soft_two_region_block.json"]


@pytest.mark.parametrize("path", SOFT_SCENES, ids=lambda p: p.stem)
def test_load_soft_scene(path):
    raw = json.loads(path.read_text())
    scene = stiction.load_scene(path)
    assert scene["kind"] == "soft"
    assert scene["description"] == raw["description"]
    assert scene["tolerance"] == raw["tolerance"]
    body = scene["body"]
    assert isinstance(body, stiction.SoftBody)
    options = scene["options"]
    assert set(options) == {"dt", "tolerance", "max_iterations", "line_search", "integrator", "linear_solver"}
    assert options["dt"] == scene["dt"] == raw["options"]["dt"]
    assert options["integrator"] == raw["options"]["integrator"]
    assert options["linear_solver"] == raw["options"].get("linear_solver", "direct")
    assert scene["x"] is None and scene["v"] is None and scene["u"] is None and scene["targets"] is None
    # The options are the keyword arguments of SoftBody.step.
    x, v = body.rest_positions, np.zeros(body.ndof)
    x1, _ = body.step(x, v, **options)
    assert x1.shape == (body.ndof,)
    # The pins hold the vertices on the clamped plane.
    axis = {"x": 0, "y": 1, "z": 2}[raw["soft"]["pin"]["where"]["axis"]]
    on_plane = np.flatnonzero(body.mesh.vertices[:, axis] == raw["soft"]["pin"]["where"]["at"])
    assert body.pinned_dofs == sorted(3 * i + k for i in on_plane for k in range(3))
    regions = raw["soft"].get("regions", {})
    assert len(body.param_names) == 3 * (1 + len(regions)) + 2


def test_two_region_block():
    scene = stiction.load_scene(SCENES / "soft_two_region_block.json")
    body = scene["body"]
    assert sorted(set(body.mesh.regions.tolist())) == [0, 1]
    np.testing.assert_allclose(body.param_values[:6], [2e5, 0.3, 1000.0, 1e6, 0.4, 1200.0])
    centroids = body.mesh.vertices[body.mesh.tets].mean(axis=1)
    np.testing.assert_array_equal(body.mesh.regions, (centroids[:, 0] > 0.1).astype(int))


def test_gradcheck_scene_soft():
    reports = stiction.gradcheck_scene(SCENES / "soft_bar.json", states=2, seed=1)
    assert len(reports) == 2
    for r in reports:
        assert isinstance(r, stiction.GradReport) and r.passed, str(r)
        assert [b["name"] for b in r.blocks] == [
            "dx+/dx", "dx+/dv", "dx+/du", "dx+/dtargets", "dx+/dtheta",
            "dv+/dx", "dv+/dv", "dv+/du", "dv+/dtargets", "dv+/dtheta",
        ]  # fmt: skip
        assert r.rel_tol == 1e-6 and "soft body" in r.title
    # The same cases from the same seed; a strict tolerance fails.
    strict = stiction.gradcheck_scene(SCENES / "soft_bar.json", states=1, seed=1, method="central", rel_tol=1e-17)
    assert len(strict) == 1 and not strict[0].passed


def test_gradcheck_scene_rigid():
    (report,) = stiction.gradcheck_scene(SCENES / "arm7.json")
    assert report.passed and "dq+/dtheta" in str(report)


def test_soft_scene_with_state_and_control(tmp_path):
    mesh = {"box": {"cells": [2, 1, 1], "extent": [0.2, 0.1, 0.1]}}
    material = {"model": "corotated", "youngs_modulus": 5e4, "poisson": 0.3, "density": 1000}
    base = {"soft": {"mesh": mesh, "material": material, "pin": {"vertices": [0, 3]}}}
    body = stiction.load_scene(_write(tmp_path, "plain.json", base))["body"]
    rng = np.random.default_rng(0)
    x = body.rest_positions + 0.001 * rng.standard_normal(body.ndof)
    v = 0.05 * rng.standard_normal(body.ndof)
    u = 0.1 * rng.standard_normal(body.ndof)
    targets = x[body.pinned_dofs]
    full = dict(base, state={"x": x.tolist(), "v": v.tolist()}, control={"u": u.tolist(), "targets": targets.tolist()})
    full["options"] = {"dt": 0.01}
    path = _write(tmp_path, "full.json", full)
    scene = stiction.load_scene(path)
    np.testing.assert_array_equal(scene["x"], x)
    np.testing.assert_array_equal(scene["v"], v)
    np.testing.assert_array_equal(scene["u"], u)
    np.testing.assert_array_equal(scene["targets"], targets)
    (report,) = stiction.gradcheck_scene(path)
    assert report.passed, str(report)
    # The first case is the scene's state: the same check as SoftBody.gradcheck.
    direct = scene["body"].gradcheck(x, v, u, targets, dt=0.01)
    assert direct.max_rel_error == pytest.approx(report.max_rel_error, rel=1e-6, abs=1e-15)


def _write(tmp_path, name, obj):
    path = tmp_path / name
    path.write_text(json.dumps(obj))
    return path


def test_soft_scene_errors(tmp_path):
    mesh = {"box": {"cells": [2, 1, 1], "extent": [0.2, 0.1, 0.1]}}
    material = {"model": "neo_hookean", "youngs_modulus": 2e5, "poisson": 0.3, "density": 1000}
    cases = [
        ({"soft": {"mesh": mesh, "material": material, "colour": 1}}, stiction.InputError, "unknown field `colour`"),
        ({"soft": {"mesh": {}, "material": material}}, stiction.InputError, "exactly one mesh source"),
        ({"soft": {"mesh": mesh, "material": dict(material, poisson=0.5)}}, stiction.InputError, "poisson"),
        (
            {"soft": {"mesh": mesh, "material": material, "pin": {"where": {"axis": "x", "at": 0.05}}}},
            stiction.InputError,
            "soft.pin.where: no vertex has x = 0.05",
        ),
        ({"soft": {"mesh": {"file": "missing.msh"}, "material": material}}, stiction.LoadError, "missing.msh"),
        ({"soft": {"mesh": mesh, "material": material}, "options": {"integrator": "rk4"}}, stiction.InputError, "rk4"),
    ]
    for k, (obj, error, match) in enumerate(cases):
        path = _write(tmp_path, f"bad{k}.json", obj)
        with pytest.raises(error, match=match):
            stiction.load_scene(path)
        with pytest.raises(error, match=match):
            stiction.gradcheck_scene(path)
    ok = _write(tmp_path, "ok.json", {"soft": {"mesh": mesh, "material": material}})
    with pytest.raises(stiction.InputError, match="states"):
        stiction.gradcheck_scene(ok, states=0)
    with pytest.raises(stiction.InputError, match="method"):
        stiction.gradcheck_scene(ok, method="forward")
    with pytest.raises(stiction.InputError):
        stiction.gradcheck_scene(ok, step=-1.0)
