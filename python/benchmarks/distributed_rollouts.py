"""Issue #24's benchmark: throughput (simulator steps per second) of 1,024 rollouts of 1,000
steps of the 7-dof arm (``stiction.samples.arm7()``, dt = 1 ms, random torques), run

* locally: ``Simulator.rollout_batch`` on rayon's pool (all cores), and on one thread;
* with ``stiction.distributed.rollout_batch`` on a local Ray cluster of 1 and of 2 worker
  processes (``ray.init(num_cpus=k)``, chunks of 64 rollouts, one rayon thread per chunk);

and the serialisation overhead per chunk, against the chunk's compute time (one thread):
the simulator's JSON written and read back (``simulator_to_json``, ``simulator_from_json``;
workers cache it, so this is the worst case of a first chunk) plus the chunk's inputs
(q0, v0, taus) and results (Q, V) through pickle protocol 5, Ray's serialisation of
arrays; and, end to end, the time one chunk of 16, 64 or 256 rollouts takes through one Ray
worker beyond the same chunk run locally on one thread. The issue asks for at most 10 % at chunks of 64 rollouts or more.

Run: python python/benchmarks/distributed_rollouts.py [--rollouts 1024] [--steps 1000]
(needs ``pip install ray``). The figures are in docs/distributed.md and docs/benchmarks.md.
"""

import argparse
import os
import pickle
import platform
import time

import numpy as np
import ray

import stiction
import stiction.distributed as sd


def inputs(sim, rollouts, steps, seed=0):
    rng = np.random.default_rng(seed)
    q0 = np.tile(sim.model.neutral(), (rollouts, 1)) + 0.1 * rng.standard_normal((rollouts, sim.nq))
    v0 = 0.1 * rng.standard_normal((rollouts, sim.nv))
    taus = 2.0 * rng.standard_normal((rollouts, steps, sim.nv))
    return q0, v0, taus


def best(f, repeat):
    """The fastest of ``repeat`` runs of ``f`` (seconds) and its last result."""
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times), out


def serialisation(sim, q0, v0, taus, q, v, repeat):
    """Seconds to serialise and read back one chunk's simulator, inputs and results."""
    def once():
        text = sd.simulator_to_json(sim)
        sd.simulator_from_json(text)
        for payload in [(q0, v0, taus), (q, v)]:
            pickle.loads(pickle.dumps(payload, protocol=5))
    return best(once, repeat)[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--chunk", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    sim = stiction.Simulator(stiction.samples.arm7(), dt=1e-3)
    q0, v0, taus = inputs(sim, args.rollouts, args.steps)
    total = args.rollouts * args.steps
    print(f"# {args.rollouts} rollouts x {args.steps} steps of arm7 (nv = {sim.nv}); {os.cpu_count()} cores, "
          f"{platform.processor() or platform.machine()}, Ray {ray.__version__}")
    rows = []
    t, local = best(lambda: sim.rollout_batch(q0, v0, taus), args.repeat)
    rows.append(("local rollout_batch, rayon (all cores)", t))
    t1, _ = best(lambda: sim.rollout_batch(q0, v0, taus, threads=1), args.repeat)
    rows.append(("local rollout_batch, 1 thread", t1))
    one_chunk = []
    for workers in [1, 2]:
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
        # Warm the worker processes (imports, simulator cache) outside the timing.
        sd.rollout_batch(sim, q0[: 2 * workers], v0[: 2 * workers], taus[: 2 * workers, :10], chunk_size=1,
                         progress=False)
        t, out = best(lambda: sd.rollout_batch(sim, q0, v0, taus, chunk_size=args.chunk, progress=False),
                      args.repeat)
        assert all(np.array_equal(a, b) for a, b in zip(out, local)), "distributed results differ from local"
        rows.append((f"stiction.distributed, Ray, {workers} worker{'s' if workers > 1 else ''} "
                     f"(chunks of {args.chunk})", t))
        if workers == 1:
            # One chunk through Ray against the same chunk locally on one thread, interleaved
            # (the machine's other load hits both alike), best of five.
            for n in [16, 64, 256]:
                if n > args.rollouts:
                    continue
                s = slice(0, n)
                local_t, ray_t = [], []
                for _ in range(5):
                    local_t.append(best(lambda: sim.rollout_batch(q0[s], v0[s], taus[s], threads=1), 1)[0])
                    ray_t.append(best(lambda: sd.rollout_batch(sim, q0[s], v0[s], taus[s], chunk_size=n,
                                                               progress=False), 1)[0])
                one_chunk.append((n, min(local_t), min(ray_t)))
        ray.shutdown()
    print()
    print("| run | wall time (s) | steps/s | vs. local 1 thread |")
    print("|---|---:|---:|---:|")
    for name, t in rows:
        print(f"| {name} | {t:.2f} | {total / t:,.0f} | {t1 / t:.2f}x |")
    print()
    print("One chunk end to end through one Ray worker against the same chunk locally on one thread")
    print("(interleaved, best of 5):")
    print()
    print("| chunk (rollouts) | local (ms) | through Ray (ms) | overhead per chunk (ms) | overhead |")
    print("|---:|---:|---:|---:|---:|")
    for n, tl, tr in one_chunk:
        print(f"| {n} | {1e3 * tl:.1f} | {1e3 * tr:.1f} | {1e3 * (tr - tl):.1f} | {100 * (tr - tl) / tl:.1f} % |")
    print()
    print("| chunk (rollouts) | compute, 1 thread (ms) | serialisation (ms) | overhead |")
    print("|---:|---:|---:|---:|")
    for n in [8, 16, 64, 128, 256]:
        if n > args.rollouts:
            break
        s = slice(0, n)
        tc, (q, v) = best(lambda: sim.rollout_batch(q0[s], v0[s], taus[s], threads=1), args.repeat)
        ts = serialisation(sim, q0[s], v0[s], taus[s], q, v, 5)
        print(f"| {n} | {1e3 * tc:.1f} | {1e3 * ts:.2f} | {100 * ts / tc:.2f} % |")


if __name__ == "__main__":
    main()
