"""The Python examples run and achieve what they print (python/examples), with the acceptance numbers
of issue 8, and write their PNG plots when matplotlib is importable."""

import importlib.util
import pathlib
import sys

import numpy as np

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"

try:
    import matplotlib  # noqa: F401

    HAVE_MATPLOTLIB = True
except ImportError:
    HAVE_MATPLOTLIB = False


def load(name):
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))  # the examples import their helpers (_plotting, _splitmix)
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_plot(written, path):
    """A PNG is written to ``path`` when matplotlib is importable, nothing otherwise."""
    if HAVE_MATPLOTLIB:
        assert written == path and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert 5_000 < path.stat().st_size < 400_000
    else:
        assert written is None and not path.exists()


def test_cartpole_swingup_example():
    r = load("cartpole_swingup").swing_up(verbose=False)
    q, v = r["q"][-1], r["v"][-1]
    assert abs(q[1] - np.pi) < 0.05 and abs(v[1]) < 0.1 and r["iterations"] <= 200


def test_cartpole_swingup_main_writes_csv_and_plot(tmp_path, capsys):
    png, csv = tmp_path / "cartpole.png", tmp_path / "cartpole.csv"
    r = load("cartpole_swingup").main(["--plot", str(png), "--csv", str(csv)])
    assert abs(r["q"][-1, 1] - np.pi) < 0.05
    assert csv.read_text().splitlines()[0] == "t,x,theta,xdot,thetadot,force"
    check_plot(r["plot"], png)
    out = capsys.readouterr().out
    assert "final: |theta - pi|" in out and "single shooting" in out
    # Shooting lowers the cost of the zero-force first guess by more than 90 % within its budget.
    s = r["shooting"]
    assert s["cost"] < 0.1 * s["cost_history"][0] and s["iterations"] <= 500


def test_sysid_pendulum_example():
    example = load("sysid_pendulum")
    hidden, fit = example.identify(noise=0.0, verbose=False)
    np.testing.assert_allclose(fit["theta"], hidden, rtol=1e-6)
    hidden, fit = example.identify(noise=1e-3, verbose=False)
    np.testing.assert_allclose(fit["theta"], hidden, rtol=0.05)


def test_sysid_pendulum_main_writes_plot(tmp_path):
    png = tmp_path / "pendulum.png"
    hidden, fit = load("sysid_pendulum").main(["--plot", str(png)])
    check_plot(fit["plot"], png)


def test_box_push_example(tmp_path, capsys):
    png = tmp_path / "box.png"
    out = load("box_push").main(["--no-fd", "--plot", str(png)])
    r = out["analytic"]
    assert r["goal_error"] < 0.01, f"box {r['box_position']}, {r['goal_error']} m from the goal"
    assert r["max_force"] <= 10.0 + 1e-12 and r["monotone"]
    assert np.all(r["controls"][:, 2:] == 0.0)  # the box is not actuated
    check_plot(out["plot"], png)
    assert "mm from the goal" in capsys.readouterr().out


def test_ball_throw_example(tmp_path, capsys):
    png = tmp_path / "ball.png"
    out = load("ball_throw").main(["--no-fd", "--plot", str(png)])
    t = out["analytic"]
    assert t["miss"] < 0.02 and t["bounces"] == 1
    assert all(b <= a for a, b in zip(t["miss_history"], t["miss_history"][1:]))
    check_plot(out["plot"], png)
    assert "miss" in capsys.readouterr().out


def test_ball_throw_jacobians_agree():
    example = load("ball_throw")
    sim = example.simulator()
    v0 = example.GUESS
    _, _, bounces, tape = example.throw(sim, v0, record=True)
    assert bounces == 1
    analytic = example.analytic_jacobian(tape)
    fd = example.fd_jacobian(sim, v0)
    np.testing.assert_allclose(analytic, fd, atol=0.05)


def test_arm_reach_example(tmp_path, capsys):
    png = tmp_path / "arm.png"
    out = load("arm_reach").main(["--no-fd", "--plot", str(png)])
    r = out["analytic"]
    assert r["start_distance"] > 0.4
    assert r["distance"] < 0.02, f"end effector {r['distance']} m from the target"
    assert r["min_clearance"] > 0.0, f"a penalised point entered the obstacle: clearance {r['min_clearance']}"
    assert r["max_torque"] <= 87.0 + 1e-9
    check_plot(out["plot"], png)
    assert "minimum obstacle clearance" in capsys.readouterr().out


def test_sysid_sliding_box_example(tmp_path, capsys):
    png = tmp_path / "box_sysid.png"
    out = load("sysid_sliding_box").main(["--no-fd", "--plot", str(png)])
    clean = out["fits"][("noise-free", "analytic")]
    noisy = out["fits"][("1 mm position noise", "analytic")]
    assert np.all(np.abs(clean["errors"]) < 1.0), clean["errors"]
    assert np.all(np.abs(noisy["errors"]) < 5.0), noisy["errors"]
    check_plot(out["plot"], png)
    assert "summary:" in capsys.readouterr().out


def test_sysid_arm_masses_example(tmp_path, capsys):
    png = tmp_path / "arm_sysid.png"
    out = load("sysid_arm_masses").main(["--no-fd", "--noise-free-only", "--plot", str(png)])
    fit = out["fits"][("noise-free", "analytic")]
    assert fit["worst"] < 2.0, fit["errors"]
    check_plot(out["plot"], png)
    assert "worst error %" in capsys.readouterr().out


def test_examples_skip_the_plot_without_matplotlib(tmp_path, monkeypatch, capsys):
    """Without matplotlib an example prints a one-line notice and writes no PNG."""
    plotting = load("_plotting")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` raise ImportError
    png = tmp_path / "never.png"
    assert plotting.pyplot(png) is None
    assert not png.exists()
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "matplotlib is not installed" in out
    assert plotting.pyplot(None) is None


def test_splitmix_matches_the_rust_generator():
    """The first draws of stiction::math::SplitMix64 (the reference values of the SplitMix64 paper's
    seed-0 stream)."""
    rng = load("_splitmix").SplitMix64(0)
    assert [rng.next_u64() for _ in range(3)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]


def test_soft_cantilever_example(tmp_path, capsys):
    png = tmp_path / "soft_cantilever.png"
    out = load("soft_cantilever").main(["--plot", str(png)])
    eq = out["equilibrium"]["tip_z"]
    assert eq < -0.1
    for name, run in out["runs"].items():
        assert abs(run["tip_z"][-1] - eq) < 1e-4, f"{name}: settled at {run['tip_z'][-1]} vs {eq}"
        assert run["tip_z"].min() < eq - 0.05, f"{name}: the bar should overshoot while it swings"
    check_plot(out["plot"], png)
    assert "static equilibrium" in capsys.readouterr().out


def test_soft_sysid_example(tmp_path):
    png = tmp_path / "soft_sysid.png"
    out = load("soft_sysid").main(["--plot", str(png)])
    truth = np.array([2e5, 0.35])
    clean = (out["fits"]["noise-free"]["values"] - truth) / truth
    noisy = (out["fits"]["0.1 mm noise"]["values"] - truth) / truth
    assert np.all(np.abs(clean) < 1e-6), clean
    assert np.all(np.abs(noisy) < 1e-2), noisy
    check_plot(out["plot"], png)


def load_plot_script():
    path = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "plot_example.py"
    spec = importlib.util.spec_from_file_location("plot_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_plot_example_script_turns_a_csv_into_a_png(tmp_path):
    """scripts/plot_example.py: the CSV the Rust examples write (header row, NaN gaps) becomes a PNG."""
    import pytest

    script = load_plot_script()
    csv = tmp_path / "run.csv"
    rows = ["t,x,z,loss"] + [f"{0.1 * k},{k * 0.2},{1 - (k - 5) ** 2 / 25},{10.0 ** -k if k < 8 else 'NaN'}"
                             for k in range(11)]
    csv.write_text("\n".join(rows) + "\n")
    names, columns = script.read_columns(csv)
    assert names == ["t", "x", "z", "loss"] and np.isnan(columns[3][-1])
    assert script.wants_log(columns[3]) and not script.wants_log(columns[2])
    if HAVE_MATPLOTLIB:
        assert script.main([str(csv), "--xy", "x,z"]) == 0
        assert csv.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(SystemExit, match="no such column"):
        script.main([str(csv), "--x", "time"])
    with pytest.raises(SystemExit, match="--xy x,q"):
        script.main([str(csv), "--xy", "x,q"])
    with pytest.raises(SystemExit, match="no such file"):
        script.main([str(tmp_path / "missing.csv")])
    (tmp_path / "bad.csv").write_text("t,x\n0,1\n1,oops\n")
    with pytest.raises(SystemExit, match="'oops', not a number"):
        script.main([str(tmp_path / "bad.csv")])


def test_soft_ball_drop_example(tmp_path, capsys):
    png = tmp_path / "soft_ball_drop.png"
    out = load("soft_ball_drop").main(["--plot", str(png)])
    free_fall = np.sqrt(2 * 9.81 * 0.10)
    runs = out["runs"]
    for name, r in runs.items():
        assert abs(r["impact_speed"] - free_fall) < 0.05 * free_fall, (name, r["impact_speed"])
        assert 0.5 < r["restitution"] < 1.0, (name, r["restitution"])
        assert r["squash"] < 0.9, f"{name}: the ball should squash visibly, height/width {r['squash']}"
        assert r["apex"] > 0.07 and r["lowest"] > -2e-3, (name, r["apex"], r["lowest"])
        # Contact and the integrators only take energy out.
        assert r["max_energy_increase"] < 1e-9 * r["energy"][0], (name, r["max_energy_increase"])
        assert r["energy"][-1] < r["energy"][0]
    assert runs["implicit midpoint"]["restitution"] > runs["backward Euler"]["restitution"]
    check_plot(out["plot"], png)
    assert "restitution" in capsys.readouterr().out


def test_soft_gripper_example(tmp_path, capsys):
    png = tmp_path / "soft_gripper.png"
    r = load("soft_gripper").main(["--plot", str(png)])
    assert r["raised"] > 0.01, f"the cube rose by {r['raised']} m only"
    assert r["raised"] > 0.9 * r["lift"], (r["raised"], r["lift"])
    assert r["lowest_vertex"] > 0.01 and r["ground"][-1] == 0.0, "the cube still touches the ground"
    assert abs(r["slip"]) < 1e-4 and r["final_speed"] < 1e-3, "the cube is not held still"
    assert r["grip"][-1] > r["weight"] / 2  # friction holds it (μ = 1 on two pads)
    check_plot(r["plot"], png)
    assert "held: grip force" in capsys.readouterr().out
