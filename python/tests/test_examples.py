"""The Python examples run and achieve what they print (python/examples)."""

import importlib.util
import pathlib

import numpy as np

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cartpole_swingup_example():
    r = load("cartpole_swingup").swing_up(verbose=False)
    q, v = r["q"][-1], r["v"][-1]
    assert abs(q[1] - np.pi) < 0.05 and abs(v[1]) < 0.1 and r["iterations"] <= 200


def test_sysid_pendulum_example():
    example = load("sysid_pendulum")
    hidden, fit = example.identify(noise=0.0, verbose=False)
    np.testing.assert_allclose(fit["theta"], hidden, rtol=1e-6)
    hidden, fit = example.identify(noise=1e-3, verbose=False)
    np.testing.assert_allclose(fit["theta"], hidden, rtol=0.05)
