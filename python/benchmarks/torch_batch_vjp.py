"""Batched rollouts and their VJP through ``stiction.torch``: 1,024 cartpoles (``samples.cartpole``,
no contact, dt = 0.01) × 100 steps, random start states and torques, loss ``|Q|² + ΣV``.

Run: python python/benchmarks/torch_batch_vjp.py

Prints the medians of 7 runs of ``Simulator.rollout_batch`` (nothing recorded), the torch forward
(records a tape per rollout), the torch backward, and ``Tape.vjp_batch`` alone on 2 threads and 1.
"""

import statistics
import time

import numpy as np
import torch

import stiction
import stiction.torch as st
from stiction import Tape


def median_time(f, repeats=7):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    model = stiction.samples.cartpole()
    sim = stiction.Simulator(model, dt=0.01, contact=False)
    rng = np.random.default_rng(0)
    batch, steps = 1024, 100
    q0, v0 = rng.uniform(-1, 1, (batch, 2)), rng.uniform(-1, 1, (batch, 2))
    taus = rng.uniform(-2, 2, (batch, steps, 2))
    leaves = [torch.tensor(a, requires_grad=True) for a in (q0, v0, taus)]

    def backward_once():
        Q, V = st.rollout(sim, *leaves)
        loss = Q.square().sum() + V.sum()
        start = time.perf_counter()
        loss.backward()
        return time.perf_counter() - start

    plain = median_time(lambda: sim.rollout_batch(q0, v0, taus))
    forward = median_time(lambda: st.rollout(sim, *leaves))
    backward = statistics.median(backward_once() for _ in range(7))
    Q, V, tapes = sim.rollout_batch(q0, v0, taus, record=True)
    gQ, gV = 2 * Q, np.ones_like(V)
    vjp2 = median_time(lambda: Tape.vjp_batch(tapes, gQ, gV, q0, threads=2))
    vjp1 = median_time(lambda: Tape.vjp_batch(tapes, gQ, gV, q0, threads=1))
    n = batch * steps
    print(f"{batch} cartpoles x {steps} steps ({n:,} steps), medians of 7")
    print(f"  Simulator.rollout_batch (not recorded): {plain * 1e3:7.1f} ms  ({n / plain:,.0f} steps/s)")
    print(f"  stiction.torch.rollout forward        : {forward * 1e3:7.1f} ms  ({n / forward:,.0f} steps/s)")
    print(f"  backward                              : {backward * 1e3:7.1f} ms  ({n / backward:,.0f} steps/s)")
    print(f"  Tape.vjp_batch, 2 threads             : {vjp2 * 1e3:7.1f} ms")
    print(f"  Tape.vjp_batch, 1 thread              : {vjp1 * 1e3:7.1f} ms")


if __name__ == "__main__":
    main()
