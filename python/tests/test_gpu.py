"""The GPU conjugate-residual options from Python (docs/gpu.md): ``stiction.gpu`` says
whether a GPU can run them and why not; without one, ``"pcr_gpu"`` warns at
configuration time, solves on the CPU and counts each fallback, with the results of the
CPU path it stands in for. The GPU path itself runs only where a GPU is available."""

import warnings

import numpy as np
import pytest

import stiction
from stiction import ModelBuilder, NumericalError, SoftBody, TetMesh

GPU = stiction.gpu.available()
needs_gpu = pytest.mark.skipif(not GPU, reason=f"no GPU: {stiction.gpu.reason()}")
no_gpu = pytest.mark.skipif(GPU, reason="a GPU is available: the fallback is not taken")


def ball_on_ground():
    b = ModelBuilder("ball_on_ground")
    b.add_link("ball", mass=0.5, inertia=np.eye(3) * 0.4 * 0.5 * 0.1**2)
    b.add_joint("free", "free", "world", "ball", origin_xyz=(0.0, 0.0, 0.1 - 2e-4))
    b.add_collision("ball", "sphere", radius=0.1, friction=0.5)
    b.add_collision("world", "plane", friction=0.5)
    return b.build()


def run(contact, steps=10):
    m = ball_on_ground()
    sim = stiction.Simulator(m, dt=1e-3, contact=contact)
    q, v = m.neutral(), np.array([0.0, 0.0, 0.0, 1.0, 0.5, 0.0])
    for _ in range(steps):
        q, v = sim.step(q, v, np.zeros(6))
    return sim, q, v


def bar_body():
    mesh = TetMesh.box((3, 1, 1), (0.3, 0.1, 0.1))
    clamp = mesh.vertices_where(lambda p: p[0] <= 1e-12)
    return SoftBody(mesh, youngs_modulus=1e5, poisson=0.3, density=1000.0, pin_vertices=clamp)


def test_the_module_is_exported():
    assert stiction.gpu is not None and "gpu" in stiction.__all__
    assert isinstance(stiction.gpu.available(), bool)


@no_gpu
def test_no_gpu_here_and_the_reason_names_what_is_missing():
    assert stiction.gpu.available() is False
    reason = stiction.gpu.reason()
    assert isinstance(reason, str) and reason
    assert any(w in reason.lower() for w in ("driver", "nvrtc", "device")), reason
    with pytest.raises(NumericalError, match="GPU"):
        stiction.gpu.info()


@needs_gpu
def test_gpu_info_describes_the_device():
    assert stiction.gpu.reason() is None
    info = stiction.gpu.info()
    assert info["name"] and info["memory_bytes"] > 0
    assert len(info["compute_capability"]) == 2 and info["nvrtc_version"][0] >= 13


def test_ncp_options_accept_pcr_gpu_and_the_linear_solver_synonym():
    m = ball_on_ground()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sim = stiction.Simulator(m, contact={"solver": "ncp", "ncp": {"linear_solver": "pcr_gpu", "cr_iterations": 77}})
        o = sim.contact_options
        assert o["ncp"]["linear"] == "pcr_gpu" and o["ncp"]["cr_iterations"] == 77
        # Round trip: the dict configures the same options.
        assert stiction.Simulator(m, contact=o).contact_options == o
        assert stiction.Simulator(m, contact={"solver": "ncp", "ncp": {"linear": "pcr_gpu"}}).contact_options[
            "ncp"
        ]["cr_iterations"] == 200
        same = {"solver": "ncp", "ncp": {"linear": "pcr_gpu", "linear_solver": "pcr_gpu"}}
        assert stiction.Simulator(m, contact=same).contact_options["ncp"]["linear"] == "pcr_gpu"
    cr = stiction.Simulator(m, contact={"solver": "ncp", "ncp": {"linear_solver": "cr"}}).contact_options
    assert cr["ncp"]["linear"] == "cr"
    with pytest.raises(stiction.InputError, match="synonyms"):
        stiction.Simulator(m, contact={"solver": "ncp", "ncp": {"linear": "cr", "linear_solver": "pcr_gpu"}})
    with pytest.raises(stiction.InputError, match="pcr_gpu"):
        stiction.Simulator(m, contact={"solver": "ncp", "ncp": {"linear_solver": "gpu"}})


@no_gpu
def test_pcr_gpu_warns_falls_back_and_counts_without_a_gpu():
    contact = {"solver": "ncp", "ncp": {"linear_solver": "pcr_gpu"}}
    with pytest.warns(RuntimeWarning, match="no GPU"):
        sim, q, v = run(contact)
    s = sim.stats
    assert s["ncp_solves"] == 10 and s["newton_iterations"] > 0
    assert s["gpu_fallbacks"] > 0 and s["gpu_linear_solves"] == 0
    lcp = sim.last_constraints()["lcp"]
    # At most one linear solve per Newton iteration (a warm-started step may need none).
    assert lcp["gpu_fallbacks"] <= lcp["newton_iterations"] and lcp["gpu_linear_solves"] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        first, _, _ = run(contact, steps=1)
    lcp = first.last_constraints()["lcp"]
    assert lcp["newton_iterations"] > 0 and lcp["gpu_fallbacks"] > 0
    # Exactly the CPU conjugate residuals it stands in for.
    cpu, q_cpu, v_cpu = run({"solver": "ncp", "ncp": {"linear_solver": "cr"}})
    np.testing.assert_array_equal(q, q_cpu)
    np.testing.assert_array_equal(v, v_cpu)
    assert cpu.stats["gpu_fallbacks"] == 0 and cpu.stats["gpu_linear_solves"] == 0


@needs_gpu
def test_pcr_gpu_solves_on_the_gpu():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        sim, q, v = run({"solver": "ncp", "ncp": {"linear_solver": "pcr_gpu"}})
    assert sim.stats["gpu_linear_solves"] > 0 and sim.stats["gpu_fallbacks"] == 0
    _, q_cpu, v_cpu = run({"solver": "ncp", "ncp": {"linear_solver": "cr"}})
    np.testing.assert_allclose(v, v_cpu, rtol=0, atol=1e-9)


def test_soft_step_with_pcr_gpu_equals_the_direct_step():
    body = bar_body()
    rng = np.random.default_rng(3)
    x = body.rest_positions + 1e-3 * rng.standard_normal(body.ndof)
    v = 0.5 * rng.standard_normal(body.ndof)
    direct = body.step(x, v, dt=5e-3, record=True)
    pcr = body.step(x, v, dt=5e-3, record=True, linear_solver="pcr_gpu")
    r = pcr.report
    assert direct.report["gpu_fallbacks"] == 0
    gx, gv = rng.standard_normal(body.ndof), rng.standard_normal(body.ndof)
    if GPU:
        assert r["gpu_fallbacks"] == 0 and len(r["linear_iterations"]) == r["iterations"]
        np.testing.assert_allclose(pcr.x_next, direct.x_next, rtol=0, atol=1e-10)
    else:
        assert r["gpu_fallbacks"] == r["iterations"] > 0
        np.testing.assert_array_equal(pcr.x_next, direct.x_next)
        np.testing.assert_array_equal(pcr.v_next, direct.v_next)
        g, want = pcr.vjp(gx, gv), direct.vjp(gx, gv)
        for key in want:
            np.testing.assert_array_equal(g[key], want[key])


def test_a_soft_scene_file_selects_pcr_gpu(tmp_path):
    import json
    from pathlib import Path

    scenes = Path(__file__).resolve().parents[2] / "examples" / "scenes"
    soft = sorted(p for p in scenes.glob("*.json") if "soft" in json.loads(p.read_text()))
    raw = json.loads(soft[0].read_text())
    raw["options"]["linear_solver"] = "pcr_gpu"
    path = tmp_path / "pcr_gpu.json"
    path.write_text(json.dumps(raw))
    scene = stiction.load_scene(path)
    assert scene["options"]["linear_solver"] == "pcr_gpu"
    body = scene["body"]
    x, v = body.rest_positions, np.zeros(body.ndof)
    rec = body.step(x, v, record=True, **scene["options"])
    direct = body.step(x, v, record=True, **dict(scene["options"], linear_solver="direct"))
    if not GPU:
        assert rec.report["gpu_fallbacks"] == rec.report["iterations"]
        np.testing.assert_array_equal(rec.x_next, direct.x_next)
