"""Cost of a rollout's vector-Jacobian product through ``stiction.torch`` against the forward
rollout: a 7-DoF arm (``samples.arm7``, no contact, dt = 1 ms), 1,000 steps, a loss on the whole
trajectory, gradients with respect to q0, v0, the torques and θ (three parameters).

Run: python python/benchmarks/torch_rollout_vjp.py [--steps 1000] [--repeats 30]

Prints the median wall time of
* ``Simulator.rollout`` (plain numpy rollout, nothing recorded),
* the torch forward (``stiction.torch.rollout`` with ``requires_grad``: records a tape),
* the torch backward (``loss.backward()``: the sweep over the Rust tape),
and the ratio backward / forward that issue 7 bounds by 5.
"""

import argparse
import statistics
import time

import numpy as np
import torch

import stiction
import stiction.torch as st


def median_time(f, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    model = stiction.samples.arm7()
    sim = stiction.Simulator(model, dt=1e-3, contact=False, params=["mass:link3", "com:link5", "damping:joint2"])
    rng = np.random.default_rng(0)
    q0 = 0.4 * rng.standard_normal(7)
    v0 = 0.3 * rng.standard_normal(7)
    taus = 2.0 * rng.standard_normal((args.steps, 7))
    theta = sim.params.values(model)
    tensors = [torch.tensor(a, requires_grad=True) for a in (q0, v0, taus, theta)]
    weights = torch.tensor(rng.standard_normal((args.steps, 7)))

    def plain():
        sim.rollout(q0, v0, taus)

    def forward():
        return st.rollout(sim, *tensors)

    def loss_of(out):
        Q, V = out
        return (Q * weights).sum() + V.square().sum()

    def backward():
        for t in tensors:
            t.grad = None
        loss.backward()

    for _ in range(3):  # warm up
        plain()
        loss_of(forward()).backward()
    t_plain = median_time(plain, args.repeats)
    t_forward = median_time(forward, args.repeats)
    # Time the backward alone: a fresh graph per repeat, built outside the timer.
    samples = []
    for _ in range(args.repeats):
        loss = loss_of(forward())
        start = time.perf_counter()
        backward()
        samples.append(time.perf_counter() - start)
    t_backward = statistics.median(samples)
    print(f"arm7, {args.steps} steps, dt 1 ms, {torch.get_num_threads()} torch threads, median of {args.repeats}")
    print(f"  Simulator.rollout (not recorded) : {t_plain * 1e3:8.3f} ms")
    print(f"  stiction.torch.rollout forward   : {t_forward * 1e3:8.3f} ms  (records the tape)")
    print(f"  backward (VJP over the tape)     : {t_backward * 1e3:8.3f} ms")
    print(f"  backward / forward               : {t_backward / t_forward:8.2f}x")
    print(f"  backward / unrecorded rollout    : {t_backward / t_plain:8.2f}x")


if __name__ == "__main__":
    main()
