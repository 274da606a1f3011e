"""Tape.vjp_batch: batched vector-Jacobian products on coordinates equal per-tape
Tape.backward with the coordinate maps; repeated tapes; clear errors."""

import numpy as np
import pytest

import stiction
from stiction import InputError, Tape
from autodiff_scenes import box_inputs


def test_vjp_batch_equals_tape_backward_with_the_coordinate_maps():
    sim, (q0, v0, taus, theta) = box_inputs(steps=3)
    m = sim.model
    starts = np.stack([q0, q0])
    starts[1, :2] += 0.2
    starts[1, 3:] *= 1.1  # a non-unit start quaternion: the caller's coordinates
    normalized = np.stack([m.normalize(s) for s in starts])
    Q, V, tapes = sim.rollout_batch(normalized, np.stack([v0, v0]), np.stack([taus, taus]), record=True)
    rng = np.random.default_rng(0)
    gQ, gV = rng.standard_normal(Q.shape), rng.standard_normal(V.shape)
    # Tape 1 twice, with the cotangents of rollout 0 the second time.
    out = Tape.vjp_batch([tapes[0], tapes[1], tapes[1]], gQ[[0, 1, 0]], gV[[0, 1, 0]], starts[[0, 1, 1]])
    assert out["q0"].shape == (3, 7) and out["tau"].shape == (3, 3, 6) and out["theta"].shape == (3, 2)
    for b, (r, c) in enumerate([(0, 0), (1, 1), (1, 0)]):
        zero = np.zeros((1, 6))
        gq = np.vstack([zero, m.tangent_gradient(Q[r], gQ[c])])
        gv = np.vstack([zero, gV[c]])
        ref = tapes[r].backward((gq, gv))
        np.testing.assert_allclose(out["q0"][b], m.coordinate_gradient(starts[r], ref["q0"]), rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(out["v0"][b], ref["v0"], rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(out["tau"][b], ref["tau"], rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(out["theta"][b], ref["theta"], rtol=1e-13, atol=1e-15)
    # Without q0 the tapes' own (unit) start states are used; None cotangents are zero.
    only_v = Tape.vjp_batch(tapes, None, gV)
    ref = tapes[0].backward((np.zeros((4, 6)), np.vstack([np.zeros((1, 6)), gV[0]])))
    np.testing.assert_allclose(only_v["q0"][0], m.coordinate_gradient(normalized[0], ref["q0"]), rtol=1e-13)


def test_vjp_batch_errors():
    sim, (q0, v0, taus, theta) = box_inputs(steps=3)
    _, _, tape = sim.rollout(q0, v0, taus, record=True)
    _, _, short = sim.rollout(q0, v0, taus[:2], record=True)
    with pytest.raises(InputError, match="at least one tape"):
        Tape.vjp_batch([])
    with pytest.raises(InputError, match="at least one tape"):
        Tape.vjp_batch([Tape()])
    with pytest.raises(InputError, match="tape 1 does not match"):
        Tape.vjp_batch([tape, short])
    with pytest.raises(InputError, match=r"grad_q must have shape \(B, T, 7\) = \(1, 3, 7\)"):
        Tape.vjp_batch([tape], np.zeros((1, 3, 6)))
    with pytest.raises(InputError, match="non-finite"):
        Tape.vjp_batch([tape], None, np.full((1, 3, 6), np.nan))
    with pytest.raises(InputError, match="q0"):
        Tape.vjp_batch([tape], None, None, np.zeros((2, 7)))
    with pytest.raises(TypeError):
        Tape.vjp_batch([tape, "not a tape"])
    with pytest.raises(stiction.StictionError, match="quaternion"):
        Tape.vjp_batch([tape], None, np.zeros((1, 3, 6)), np.zeros((1, 7)))
