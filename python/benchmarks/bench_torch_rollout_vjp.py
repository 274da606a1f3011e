"""pytest-benchmark figures for issue 7: a 1,000-step rollout of a 7-DoF arm (``samples.arm7``,
no contact, dt = 1 ms) and its vector-Jacobian product through ``stiction.torch``.

Run: pytest python/benchmarks/bench_torch_rollout_vjp.py --benchmark-only
(needs ``pip install pytest-benchmark``; not part of the test suite). Compare the ``backward``
row with the ``forward`` rows; ``python python/benchmarks/torch_rollout_vjp.py`` prints the ratio.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("pytest_benchmark")

import stiction  # noqa: E402
import stiction.torch as st  # noqa: E402

STEPS = 1000


@pytest.fixture(scope="module")
def problem():
    model = stiction.samples.arm7()
    sim = stiction.Simulator(model, dt=1e-3, contact=False, params=["mass:link3", "com:link5", "damping:joint2"])
    rng = np.random.default_rng(0)
    q0, v0 = 0.4 * rng.standard_normal(7), 0.3 * rng.standard_normal(7)
    taus = 2.0 * rng.standard_normal((STEPS, 7))
    theta = sim.params.values(model)
    weights = torch.tensor(rng.standard_normal((STEPS, 7)))
    return sim, (q0, v0, taus, theta), weights


def leaves(args):
    return [torch.tensor(a, requires_grad=True) for a in args]


def loss_of(Q, V, weights):
    return (Q * weights).sum() + V.square().sum()


def test_rollout_unrecorded(benchmark, problem):
    sim, (q0, v0, taus, _), _ = problem
    benchmark(sim.rollout, q0, v0, taus)


def test_torch_forward_recorded(benchmark, problem):
    sim, args, _ = problem
    tensors = leaves(args)
    benchmark(st.rollout, sim, *tensors)


def test_torch_backward(benchmark, problem):
    sim, args, weights = problem

    def setup():
        tensors = leaves(args)
        return (loss_of(*st.rollout(sim, *tensors), weights),), {}

    benchmark.pedantic(lambda loss: loss.backward(), setup=setup, rounds=30, iterations=1, warmup_rounds=2)
