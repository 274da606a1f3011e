"""stiction.distributed on a local Ray cluster of two worker processes (started here): results
equal the local batch calls bit for bit, a lost worker's chunk is run again, and a failing
rollout names its index in the whole batch."""

import os
import signal
import threading
import time

import numpy as np
import pytest

ray = pytest.importorskip("ray")

import stiction  # noqa: E402
import stiction.distributed as sd  # noqa: E402
from stiction import sysid  # noqa: E402


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A local cluster with two CPUs (two worker processes run the chunks); its workers
    inherit the fault-injection folder."""
    folder = tmp_path_factory.mktemp("faults")
    previous = os.environ.get(sd._FAULT_ENV)
    os.environ[sd._FAULT_ENV] = str(folder)
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             object_store_memory=256 * 2**20)
    yield folder
    ray.shutdown()
    if previous is None:
        os.environ.pop(sd._FAULT_ENV, None)
    else:
        os.environ[sd._FAULT_ENV] = previous


def arm(folder):
    """The next chunk started on a worker kills that worker; returns the trigger file."""
    path = folder / "crash"
    path.write_text("")
    return path


def batch(b=10, steps=40, seed=0):
    sim = stiction.Simulator(stiction.samples.pendulum_chain(3), dt=0.01, params=["mass:link1", "damping:joint2"])
    rng = np.random.default_rng(seed)
    q0 = rng.normal(size=(b, 3)) * 0.3
    v0 = rng.normal(size=(b, 3)) * 0.1
    taus = rng.normal(size=(b, steps, 3))
    thetas = np.column_stack([1.0 + rng.random(b), 0.1 * rng.random(b)])
    return sim, q0, v0, taus, thetas


def assert_equal_dicts(a, b):
    assert sorted(a) == sorted(b)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
        assert a[k].shape == b[k].shape, k


def test_rollout_batch_equals_local_bit_for_bit(cluster):
    sim, q0, v0, taus, thetas = batch()
    local = sim.rollout_batch(q0, v0, taus, thetas)
    for chunk_size in [3, None, 64]:
        out = sd.rollout_batch(sim, q0, v0, taus, thetas, chunk_size=chunk_size, progress=False)
        for a, b in zip(out, local):
            assert a.shape == b.shape
            np.testing.assert_array_equal(a, b)
    # Without parameter values, and the contact model of a different sample.
    sim2 = stiction.Simulator(stiction.samples.bodies_on_plane(2), dt=2e-3, contact={"erp": 0.5})
    q0 = np.tile(sim2.model.neutral(), (5, 1))
    taus = np.zeros((5, 30, sim2.nv))
    local = sim2.rollout_batch(q0, np.zeros((5, sim2.nv)), taus)
    out = sd.rollout_batch(sim2, q0, np.zeros((5, sim2.nv)), taus, chunk_size=2, progress=False)
    for a, b in zip(out, local):
        np.testing.assert_array_equal(a, b)


def test_recorded_tapes_stay_remote_and_vjp_equals_local(cluster):
    sim, q0, v0, taus, thetas = batch()
    Q, V, tapes = sd.rollout_batch(sim, q0, v0, taus, thetas, record=True, chunk_size=3, progress=False)
    Ql, Vl, local = sim.rollout_batch(q0, v0, taus, thetas, record=True)
    np.testing.assert_array_equal(Q, Ql)
    np.testing.assert_array_equal(V, Vl)
    assert len(tapes) == 10 and all(isinstance(t, sd.RemoteTape) and len(t) == 40 for t in tapes)
    rng = np.random.default_rng(1)
    order = [3, 1, 4, 1, 5, 9, 2, 6, 0]  # across chunks, out of order, one tape twice
    gq, gv = rng.normal(size=(9, 40, 3)), rng.normal(size=(9, 40, 3))
    q0s = q0[order] * 1.0
    got = sd.vjp_batch([tapes[i] for i in order], gq, gv, q0s, progress=False)
    want = stiction.Tape.vjp_batch([local[i] for i in order], gq, gv, q0s)
    assert_equal_dicts(got, want)
    got = sd.vjp_batch(tapes, None, gv[:1].repeat(10, axis=0), progress=False)
    want = stiction.Tape.vjp_batch(local, None, gv[:1].repeat(10, axis=0))
    assert_equal_dicts(got, want)
    # Local tapes are differentiated locally, with the same result.
    assert_equal_dicts(sd.vjp_batch(local, gq[:1].repeat(10, axis=0)), stiction.Tape.vjp_batch(local, gq[:1].repeat(10, axis=0)))


def test_vjp_batch_checks_its_arguments(cluster):
    sim, q0, v0, taus, thetas = batch(b=4, steps=5)
    _, _, tapes = sd.rollout_batch(sim, q0, v0, taus, thetas, record=True, chunk_size=2, progress=False)
    _, _, other = sd.rollout_batch(sim, q0, v0, taus[:, :3], thetas, record=True, progress=False)
    with pytest.raises(stiction.InputError, match=r"grad_q must have shape \(B, T, 3\) = \(4, 5, 3\)"):
        sd.vjp_batch(tapes, np.zeros((4, 6, 3)), progress=False)
    with pytest.raises(stiction.InputError, match="tape 4 does not match tape 0"):
        sd.vjp_batch(tapes + other[:1], progress=False)
    with pytest.raises(TypeError, match="not a mix"):
        sd.vjp_batch(tapes + [stiction.Tape()], progress=False)
    with pytest.raises(stiction.InputError, match="at least one tape"):
        sd.vjp_batch([], progress=False)
    g = np.zeros((4, 5, 3))
    g[3, 2, 1] = np.nan
    with pytest.raises(stiction.InputError) as local:
        stiction.Tape.vjp_batch(sim.rollout_batch(q0, v0, taus, thetas, record=True)[2], None, g)
    with pytest.raises(stiction.InputError) as remote:
        sd.vjp_batch(tapes, None, g, progress=False)
    assert str(remote.value) == str(local.value) and "flat index 52" in str(remote.value)
    with pytest.raises(TypeError, match="expected a stiction.Simulator"):
        sd.rollout_batch("sim", q0, v0, taus, progress=False)


def test_a_failing_rollout_names_its_index_in_the_batch(cluster):
    sim, q0, v0, taus, thetas = batch()
    taus[7, 12, 1] = np.nan
    with pytest.raises(stiction.InputError) as local:
        sim.rollout_batch(q0, v0, taus, thetas)
    assert "batch rollout 7" in str(local.value)
    for record in [False, True]:
        with pytest.raises(stiction.InputError) as remote:
            sd.rollout_batch(sim, q0, v0, taus, thetas, record=record, chunk_size=3, progress=False)
        assert str(remote.value) == str(local.value)


def test_shapes_are_checked_before_anything_is_sent(cluster):
    sim, q0, v0, taus, thetas = batch(b=4, steps=5)
    with pytest.raises(stiction.InputError, match=r"v0 must have shape \(B, nv\) = \(4, 3\)"):
        sd.rollout_batch(sim, q0, v0[:3], taus, progress=False)
    with pytest.raises(stiction.InputError, match="taus must have shape"):
        sd.rollout_batch(sim, q0, v0, taus[..., :2], progress=False)
    with pytest.raises(stiction.InputError, match="thetas must have shape"):
        sd.rollout_batch(sim, q0, v0, taus, thetas[:, :1], progress=False)
    with pytest.raises(stiction.InputError, match="chunk_size"):
        sd.rollout_batch(sim, q0, v0, taus, chunk_size=0, progress=False)


def test_simulator_json_round_trip():
    model = stiction.samples.bodies_on_plane(1)
    sim = stiction.Simulator(
        model, dt=2e-3, gravity=[0.0, 0.0, -5.0], velocity_products="explicit", tolerance=1e-10, max_iterations=7,
        params=["gravity", "mass:body0"], contact={"erp": 0.5, "model": "viscous", "pgs_iterations": 17},
        max_speed=float("inf"),
    )
    twin = sd.simulator_from_json(sd.simulator_to_json(sim))
    assert sd.simulator_to_json(twin) == sd.simulator_to_json(sim)
    assert twin.options["max_speed"] == float("inf") and twin.options["contact"]["pgs_iterations"] == 17
    assert twin.params.names == sim.params.names
    q, v, tau = model.neutral(), np.full(model.nv, 0.1), np.zeros(model.nv)
    for a, b in zip(sim.rollout(q, v, np.zeros((20, model.nv))), twin.rollout(q, v, np.zeros((20, model.nv)))):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(stiction.InputError, match="simulator JSON"):
        sd.simulator_from_json('{"format": "something else"}')


def sysid_data(n=64, steps=25):
    base = stiction.samples.pendulum_chain(2, mass=1.0)
    names = ["mass:link0", "mass:link1"]
    true = stiction.ParamSpec(base, names).apply(base, [1.3, 0.8])
    truth = stiction.Simulator(true, dt=0.01, contact=False)
    rng = np.random.default_rng(3)
    data = []
    for _ in range(n):
        q0, v0 = rng.normal(size=2) * 0.5, rng.normal(size=2) * 0.2
        taus = rng.normal(size=(steps, 2))
        q, v = truth.rollout(q0, v0, taus)
        data.append(dict(q0=q0, v0=v0, controls=taus, q=q + rng.normal(size=q.shape) * 1e-3, sigma_q=1e-3))
    return stiction.Simulator(base, dt=0.01, contact=False), names, data


def test_sysid_over_64_trajectories_gives_the_local_fit(cluster):
    guess, names, data = sysid_data()
    local = sysid.fit(guess, names, data, theta0=[1.0, 1.0])
    seen = []
    remote = sd.sysid_fit(guess, names, data, theta0=[1.0, 1.0], callback=seen.append, chunk_size=16, progress=False)
    np.testing.assert_array_equal(remote["theta"], local["theta"])
    np.testing.assert_allclose(local["theta"], [1.3, 0.8], rtol=1e-2)
    for k in ["cost", "initial_cost", "iterations", "converged", "stop", "residual_count", "simulator_steps",
              "jacobian_evaluations"]:
        assert remote[k] == local[k], k
    for k in ["cost_history", "covariance", "std_dev"]:
        np.testing.assert_array_equal(remote[k], local[k], err_msg=k)
    assert len(seen) == local["iterations"]
    # Finite-difference Jacobians (one-sided next to the bounds) too.
    fd_local = sysid.fit(guess, names, data[:8], theta0=[1.0, 1.0], jacobians="finite_difference", max_iterations=3)
    fd = sd.sysid_fit(guess, names, data[:8], theta0=[1.0, 1.0], jacobians="finite_difference", max_iterations=3,
                      chunk_size=3, progress=False)
    np.testing.assert_array_equal(fd["theta"], fd_local["theta"])
    with pytest.raises(stiction.InputError, match="no link named 'nothing'"):
        sd.sysid_fit(guess, ["mass:nothing"], data, progress=False)


def test_a_lost_worker_s_chunk_is_run_again(cluster):
    sim, q0, v0, taus, thetas = batch(b=12)
    local = sim.rollout_batch(q0, v0, taus, thetas)
    trigger = arm(cluster)
    out = sd.rollout_batch(sim, q0, v0, taus, thetas, chunk_size=3, progress=False)
    assert not trigger.exists()  # a worker died
    for a, b in zip(out, local):
        np.testing.assert_array_equal(a, b)


def test_a_worker_killed_from_outside_mid_run_is_replaced(cluster):
    sim, q0, v0, taus, thetas = batch(b=12)
    local = sim.rollout_batch(q0, v0, taus, thetas)
    (cluster / "kill").write_text("")
    pid_file = cluster / "pid"
    killed = []

    def killer():
        # The first chunk's worker announces itself and waits; kill it with SIGKILL.
        for _ in range(600):
            if pid_file.exists():
                pid = int(pid_file.read_text())
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                pid_file.unlink()
                return
            time.sleep(0.05)

    thread = threading.Thread(target=killer)
    thread.start()
    try:
        out = sd.rollout_batch(sim, q0, v0, taus, thetas, chunk_size=3, progress=False)
    finally:
        thread.join()
    assert killed, "no worker was killed"
    for a, b in zip(out, local):
        np.testing.assert_array_equal(a, b)


def test_a_lost_tape_holder_records_its_chunks_again(cluster):
    sim, q0, v0, taus, thetas = batch(b=8)
    _, _, local = sim.rollout_batch(q0, v0, taus, thetas, record=True)
    trigger = arm(cluster)  # dies while recording
    Q, V, tapes = sd.rollout_batch(sim, q0, v0, taus, thetas, record=True, chunk_size=2, progress=False)
    assert not trigger.exists()
    gq = np.random.default_rng(5).normal(size=(8, 40, 3))
    trigger = arm(cluster)  # dies before its backward pass: restarted, it records its chunks again
    got = sd.vjp_batch(tapes, gq, progress=False)
    assert not trigger.exists()
    assert_equal_dicts(got, stiction.Tape.vjp_batch(local, gq))


def test_sysid_survives_a_lost_worker(cluster):
    guess, names, data = sysid_data(n=16, steps=20)
    local = sysid.fit(guess, names, data, theta0=[1.0, 1.0])
    trigger = arm(cluster)
    remote = sd.sysid_fit(guess, names, data, theta0=[1.0, 1.0], chunk_size=4, progress=False)
    assert not trigger.exists()
    np.testing.assert_array_equal(remote["theta"], local["theta"])


def test_progress_bar_and_handles_that_do_not_travel(cluster, capsys):
    pytest.importorskip("tqdm")
    sim, q0, v0, taus, thetas = batch(b=4, steps=5)
    _, _, tapes = sd.rollout_batch(sim, q0, v0, taus, thetas, record=True, chunk_size=2, progress=True)
    sd.vjp_batch(tapes, progress=True)
    err = capsys.readouterr().err
    assert "stiction.distributed" in err and "4/4" in err, err
    import pickle

    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(tapes[0])
