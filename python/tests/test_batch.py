"""Simulator.rollout_batch: B rollouts in parallel, equal to sequential rollouts."""

import numpy as np
import pytest

import stiction
from stiction import InputError


def setup(params=None):
    model = stiction.samples.cartpole()
    sim = stiction.Simulator(model, dt=0.01, contact=False, params=params)
    rng = np.random.default_rng(0)
    b, t = 12, 40
    q0 = rng.uniform(-1, 1, (b, 2))
    v0 = rng.uniform(-1, 1, (b, 2))
    taus = rng.uniform(-2, 2, (b, t, 2))
    return model, sim, q0, v0, taus


@pytest.mark.parametrize("threads", [None, 1, 2])
def test_batch_equals_sequential_rollouts(threads):
    model, sim, q0, v0, taus = setup()
    Q, V = sim.rollout_batch(q0, v0, taus, threads=threads)
    assert Q.shape == (12, 40, 2) and V.shape == (12, 40, 2)
    for i in range(12):
        qs, vs = sim.rollout(q0[i], v0[i], taus[i])
        np.testing.assert_array_equal(Q[i], qs)
        np.testing.assert_array_equal(V[i], vs)


def test_batch_with_parameters_and_tapes():
    model, sim, q0, v0, taus = setup(params=["mass:pole"])
    thetas = np.linspace(0.1, 0.4, 12)[:, None]
    Q, V, tapes = sim.rollout_batch(q0, v0, taus, thetas=thetas, record=True)
    assert len(tapes) == 12
    for i in (0, 7):
        m = stiction.ParamSpec(model, ["mass:pole"]).apply(model, thetas[i])
        s = stiction.Simulator(m, dt=0.01, contact=False)
        qs, _ = s.rollout(q0[i], v0[i], taus[i])
        np.testing.assert_array_equal(Q[i], qs)
        assert len(tapes[i]) == 40


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(q0=np.zeros((12, 3))), "q0"),
        (dict(v0=np.zeros((11, 2))), "v0"),
        (dict(taus=np.zeros((12, 40, 3))), "taus"),
        (dict(taus=np.zeros((12, 40))), "taus"),
        (dict(thetas=np.zeros((12, 1))), "batch rollout 0"),
        (dict(threads=0), "thread"),
    ],
)
def test_bad_batches_raise(kw, match):
    model, sim, q0, v0, taus = setup(params=["mass:pole"])
    args = dict(q0=q0, v0=v0, taus=taus)
    args.update(kw)
    with pytest.raises(InputError, match=match):
        sim.rollout_batch(**args)
