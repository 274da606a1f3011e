"""Batched rollouts, their gradients and system identification over a Ray cluster
(optional: needs ``ray``, ``pip install "stiction[ray]"``). See ``docs/distributed.md``.

The functions take the arguments and return the results of their local counterparts —
:meth:`stiction.Simulator.rollout_batch`, :meth:`stiction.Tape.vjp_batch` and
:func:`stiction.sysid.fit` — bit for bit: the batch is split into chunks of consecutive
rollouts (or trajectories), each chunk runs the Rust batch (rayon) on one node, and the
results come back in the submitted order.

What travels: the simulator as JSON (:func:`simulator_to_json`: the model's
``Model.to_json``, every option and the parameter names; put once into Ray's object store
and cached per worker process), the inputs and results as float64 arrays. No stiction
object is pickled. With ``record=True`` the tapes stay in the worker process that recorded
them (a Ray actor per worker); the driver gets :class:`RemoteTape` handles, and
:func:`vjp_batch` on them runs the backward pass there: only cotangents and gradients
travel.

Faults: a chunk whose worker process dies is run again (Ray task retries). A tape-holding
actor that dies is restarted (Ray actor restarts) and records its chunks again, from the
inputs the driver keeps in the object store, the first time they are asked for: rollouts
are deterministic, so the tapes and the gradients are the same. A rollout that fails
raises the local error (``InputError``, ``NumericalError``, ...) with its index in the
whole batch. With ``progress=True`` (default) a ``tqdm`` bar counts finished rollouts when
``tqdm`` is installed.

>>> import numpy as np, ray, stiction, stiction.distributed as sd
>>> _ = ray.init(num_cpus=2, include_dashboard=False)          # doctest: +SKIP
>>> sim = stiction.Simulator(stiction.samples.pendulum_chain(2), dt=0.01)
>>> Q, V = sd.rollout_batch(sim, np.zeros((8, 2)), np.zeros((8, 2)), np.zeros((8, 50, 2)))  # doctest: +SKIP
>>> Q.shape                                                      # doctest: +SKIP
(8, 50, 2)
"""

import hashlib
import json
import math
import os
import re
import time
import uuid
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

try:
    import ray
except ImportError as e:  # pragma: no cover - exercised by test_optional_imports
    raise ImportError('stiction.distributed needs Ray: pip install ray (or pip install "stiction[ray]")') from e

from . import _stiction
from ._stiction import InputError, Model, Simulator, StictionError, Tape

__all__ = [
    "RemoteTape",
    "rollout_batch",
    "simulator_from_json",
    "simulator_to_json",
    "sysid_fit",
    "vjp_batch",
]

# Retries of a chunk whose worker process was lost, and restarts of a tape-holding actor.
_RETRIES = 3
# Fault injection for the tests: when this environment variable names a folder holding a
# file `crash`, the first worker to start a chunk removes the file and exits at once (a lost
# worker); with a file `kill` instead, it removes it, writes its process id to `pid` and
# waits (up to a minute) for the test to kill it. Workers inherit the variable from the
# process that started the local cluster.
_FAULT_ENV = "STICTION_FAULT_INJECTION"
# Simulators rebuilt from JSON in this worker process, by the digest of their JSON.
_SIMULATORS: Dict[str, Simulator] = {}


def simulator_to_json(sim: Simulator) -> str:
    """The simulator of a model as JSON: the model (``Model.to_json``), every option
    (``Simulator.options``) and the parameter names of θ; :func:`simulator_from_json` makes
    an equal simulator (same steps, bit for bit). World simulators are not supported.

    :raises TypeError: a simulator of a ``World``.
    """
    if not isinstance(sim, Simulator):
        raise TypeError(f"expected a stiction.Simulator, got {type(sim).__name__}")
    if sim.world is not None:
        raise TypeError("stiction.distributed runs simulators of a Model, not of a World")
    options = dict(sim.options)
    if options["gravity"] is not None:
        options["gravity"] = [float(g) for g in options["gravity"]]
    return json.dumps(
        {"format": "stiction.Simulator", "version": 1, "model": sim.model.to_json(), "options": options,
         "params": list(sim.params.entries)},
        allow_nan=True,
    )


def simulator_from_json(text: str) -> Simulator:
    """The simulator of :func:`simulator_to_json`'s text.

    :raises InputError: text that is not such JSON (or a model the loader rejects).
    """
    try:
        d = json.loads(text)
        if d.get("format") != "stiction.Simulator":
            raise ValueError("not a stiction.Simulator document")
        model, options, params = d["model"], d["options"], d["params"]
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise InputError(f"simulator JSON: {e}") from None
    return Simulator(Model.from_json(model), **options, params=params)


def _simulator(text: str) -> Simulator:
    """The simulator of ``text``, built once per worker process."""
    key = hashlib.sha256(text.encode()).hexdigest()
    sim = _SIMULATORS.get(key)
    if sim is None:
        if len(_SIMULATORS) >= 16:
            _SIMULATORS.clear()
        sim = _SIMULATORS[key] = simulator_from_json(text)
    return sim


def _maybe_crash() -> None:
    """The fault-injection hook (see ``_FAULT_ENV``)."""
    folder = os.environ.get(_FAULT_ENV)
    if not folder:
        return
    try:
        os.unlink(os.path.join(folder, "crash"))
        os._exit(1)
    except FileNotFoundError:
        pass
    try:
        os.unlink(os.path.join(folder, "kill"))
    except FileNotFoundError:
        return
    with open(os.path.join(folder, "pid.tmp"), "w") as f:
        f.write(str(os.getpid()))
    os.replace(os.path.join(folder, "pid.tmp"), os.path.join(folder, "pid"))
    time.sleep(60)


_ROLLOUT = re.compile(r"batch rollout (\d+)")


def _failure(e: Exception, index: Callable[[int], int]) -> tuple:
    """A stiction error raised in a chunk, as data: its class name and its message with the
    chunk's rollout index replaced by ``index(i)``, the index in the whole batch."""
    message = _ROLLOUT.sub(lambda m: f"batch rollout {index(int(m.group(1)))}", str(e), count=1)
    return ("stiction-error", type(e).__name__, message)


def _is_failure(x) -> bool:
    return isinstance(x, tuple) and len(x) == 3 and isinstance(x[0], str) and x[0] == "stiction-error"


def _raise(failure: tuple):
    cls = getattr(_stiction, failure[1], None)
    if not (isinstance(cls, type) and issubclass(cls, StictionError)):
        cls = StictionError
    raise cls(failure[2])


def _ensure_ray() -> None:
    if not ray.is_initialized():
        ray.init()


def _progress_bar(enabled: bool, total: int, unit: str):
    """A tqdm bar when enabled and tqdm is installed, else None."""
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit=unit, desc="stiction.distributed")


def _gather(refs: List, sizes: List[int], progress: bool, unit: str) -> List:
    """``ray.get`` of ``refs`` in submitted order, advancing a progress bar by ``sizes``."""
    bar = _progress_bar(progress, sum(sizes), unit)
    if bar is None:
        return ray.get(refs)
    size = {r: n for r, n in zip(refs, sizes)}
    pending = list(refs)
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for r in done:
                bar.update(size[r])
    finally:
        bar.close()
    return ray.get(refs)


def _chunks(n: int, chunk_size: Optional[int]) -> List[range]:
    """Consecutive ranges covering ``0..n``: of ``chunk_size`` (default: at most 64, and
    about one chunk per CPU of the cluster for small batches)."""
    if chunk_size is None:
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        chunk_size = max(1, min(64, math.ceil(n / cpus)))
    if not (isinstance(chunk_size, (int, np.integer)) and not isinstance(chunk_size, bool) and chunk_size >= 1):
        raise InputError(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
    return [range(a, min(a + chunk_size, n)) for a in range(0, n, chunk_size)]


def _float_array(x, name: str) -> np.ndarray:
    try:
        return np.ascontiguousarray(np.asarray(x, dtype=np.float64))
    except (TypeError, ValueError) as e:
        raise InputError(f"{name} must be an array of numbers ({e})") from None


def _rollout_inputs(sim: Simulator, q0, v0, taus, thetas):
    """The checked batch arrays (shapes as ``Simulator.rollout_batch`` takes them)."""
    nq, nv, np_ = sim.nq, sim.nv, len(sim.params)
    q0, v0, taus = _float_array(q0, "q0"), _float_array(v0, "v0"), _float_array(taus, "taus")
    if q0.ndim != 2 or q0.shape[1] != nq:
        raise InputError(f"q0 must have shape (B, nq) = (B, {nq}), got {q0.shape}")
    b = q0.shape[0]
    if v0.shape != (b, nv):
        raise InputError(f"v0 must have shape (B, nv) = ({b}, {nv}), got {v0.shape}")
    if taus.ndim != 3 or taus.shape[0] != b or taus.shape[2] != nv:
        raise InputError(f"taus must have shape (B, T, nv) = ({b}, T, {nv}), got {taus.shape}")
    if thetas is not None:
        thetas = _float_array(thetas, "thetas")
        if thetas.shape != (b, np_):
            raise InputError(f"thetas must have shape (B, np) = ({b}, {np_}), got {thetas.shape}")
    return q0, v0, taus, thetas


@ray.remote(max_retries=_RETRIES)
def _rollout_chunk(sim_json: str, start: int, q0, v0, taus, thetas, threads):
    """One chunk of :func:`rollout_batch` (no tapes)."""
    _maybe_crash()
    try:
        return _simulator(sim_json).rollout_batch(q0, v0, taus, thetas, threads=threads)
    except StictionError as e:
        return _failure(e, lambda i: start + i)


@ray.remote(max_restarts=_RETRIES, max_task_retries=_RETRIES)
class _TapeHolder:
    """A worker process holding the tapes of the chunks it recorded, by chunk key."""

    def __init__(self):
        self._tapes: Dict[str, list] = {}

    def _record(self, key: str, sim_json: str, inputs, threads):
        q0, v0, taus, thetas = inputs
        out = _simulator(sim_json).rollout_batch(q0, v0, taus, thetas, record=True, threads=threads)
        self._tapes[key] = out[2]
        return out

    def record(self, key: str, start: int, sim_json: str, inputs, threads):
        """Records a chunk, keeps its tapes; returns ``(Q, V)``."""
        _maybe_crash()
        try:
            q, v, _ = self._record(key, sim_json, inputs, threads)
        except StictionError as e:
            return _failure(e, lambda i: start + i)
        return q, v

    def vjp(self, key: str, recipe: list, rows: List[int], positions: List[int], grads: tuple, threads):
        """``Tape.vjp_batch`` over the tapes ``rows`` of a chunk; a chunk this process no
        longer holds (a restarted actor) is recorded again from ``recipe`` (object refs of
        the simulator JSON and the inputs)."""
        _maybe_crash()
        try:
            tapes = self._tapes.get(key)
            if tapes is None:
                sim_json, inputs = ray.get(recipe)
                tapes = self._record(key, sim_json, inputs, None)[2]
            grad_q, grad_v, q0 = grads
            return Tape.vjp_batch([tapes[i] for i in rows], grad_q, grad_v, q0, threads=threads)
        except StictionError as e:
            return _failure(e, lambda i: positions[i])

    def release(self, key: str) -> None:
        """Forgets a chunk's tapes."""
        self._tapes.pop(key, None)


class _Holder:
    """A tape-holding actor and the number of its chunks that handles still refer to."""

    def __init__(self, actor):
        self.actor, self.live = actor, 0


class _Chunk:
    """A recorded chunk: its actor, key, recipe and shapes. Forgotten on the actor when
    no handle refers to it any more (the actor itself ends with its last chunk)."""

    def __init__(self, holder: _Holder, key: str, recipe: list, steps: int, nq: int, nv: int, np_: int):
        self.holder, self.actor, self.key, self.recipe = holder, holder.actor, key, recipe
        self.steps, self.nq, self.nv, self.np = steps, nq, nv, np_
        holder.live += 1

    def __del__(self):
        self.holder.live -= 1
        if self.holder.live > 0:
            try:
                self.actor.release.remote(self.key)
            except Exception:  # noqa: BLE001 - Ray may be shut down already
                pass


class RemoteTape:
    """A handle to a tape recorded by :func:`rollout_batch` (``record=True``) and held by
    the worker that recorded it; :func:`vjp_batch` differentiates it there. ``len(tape)``
    is its number of steps. Handles are not serialisable; the tapes are freed when their
    handles are."""

    __slots__ = ("_chunk", "_row")

    def __init__(self, chunk: _Chunk, row: int):
        self._chunk, self._row = chunk, row

    def __len__(self) -> int:
        return self._chunk.steps

    def __repr__(self) -> str:
        return f"RemoteTape(steps={self._chunk.steps}, chunk={self._chunk.key[:8]}, row={self._row})"

    def __reduce__(self):
        raise TypeError("a RemoteTape is a handle of this driver; it cannot be pickled")


def _actor_count(workers: Optional[int], nchunks: int) -> int:
    if workers is None:
        workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
    if not (isinstance(workers, (int, np.integer)) and not isinstance(workers, bool) and workers >= 1):
        raise InputError(f"workers must be an integer >= 1, got {workers!r}")
    return max(1, min(int(workers), nchunks))


def rollout_batch(
    sim: Simulator,
    q0,
    v0,
    taus,
    thetas=None,
    record: bool = False,
    *,
    chunk_size: Optional[int] = None,
    threads: Optional[int] = 1,
    workers: Optional[int] = None,
    progress: bool = True,
):
    """:meth:`stiction.Simulator.rollout_batch` over the Ray cluster (``ray.init()`` is called
    when Ray is not initialised yet): ``(Q, V)`` of shapes (B, T, nq) and (B, T, nv), equal
    bit for bit to the local call; with ``record=True``, ``(Q, V, tapes)`` with a
    :class:`RemoteTape` per rollout.

    :param chunk_size: rollouts per chunk (a Ray task, or an actor call with ``record``);
        default: about one chunk per cluster CPU, at most 64.
    :param threads: rayon threads per chunk (default 1: one chunk per Ray CPU; ``None``: all
        the node's cores).
    :param workers: with ``record``, the number of tape-holding actors (default: the
        cluster's CPUs); chunks go to them in turn.
    :param progress: a tqdm progress bar of finished rollouts (when tqdm is installed).
    :raises InputError: wrong shapes; a failing rollout's error names its index in the batch.
    """
    _ensure_ray()
    sim_json = simulator_to_json(sim)
    q0, v0, taus, thetas = _rollout_inputs(sim, q0, v0, taus, thetas)
    b = q0.shape[0]
    if b == 0:
        return sim.rollout_batch(q0, v0, taus, thetas, record=record, threads=threads)
    chunks = _chunks(b, chunk_size)
    sim_ref = ray.put(sim_json)

    def part(c: range):
        s = slice(c.start, c.stop)
        return q0[s], v0[s], taus[s], None if thetas is None else thetas[s]

    if not record:
        refs = [_rollout_chunk.remote(sim_ref, c.start, *part(c), threads) for c in chunks]
        outs = _gather(refs, [len(c) for c in chunks], progress, "rollout")
        for out in outs:
            if _is_failure(out):
                _raise(out)
        return np.concatenate([o[0] for o in outs]), np.concatenate([o[1] for o in outs])
    holders = [_Holder(_TapeHolder.remote()) for _ in range(_actor_count(workers, len(chunks)))]
    refs, handles = [], []
    for k, c in enumerate(chunks):
        holder, key = holders[k % len(holders)], uuid.uuid4().hex
        inputs_ref = ray.put(part(c))
        refs.append(holder.actor.record.remote(key, c.start, sim_ref, inputs_ref, threads))
        handles.append(_Chunk(holder, key, [sim_ref, inputs_ref], taus.shape[1], sim.nq, sim.nv, len(sim.params)))
    outs = _gather(refs, [len(c) for c in chunks], progress, "rollout")
    for out in outs:
        if _is_failure(out):
            _raise(out)
    tapes = [RemoteTape(h, i) for h, c in zip(handles, chunks) for i in range(len(c))]
    return np.concatenate([o[0] for o in outs]), np.concatenate([o[1] for o in outs]), tapes


def vjp_batch(tapes: Sequence, grad_q=None, grad_v=None, q0=None, threads: Optional[int] = 1, *,
              progress: bool = True) -> Dict[str, np.ndarray]:
    """:meth:`stiction.Tape.vjp_batch` of :class:`RemoteTape` handles, each chunk's backward
    pass on the worker holding its tapes (only the cotangents and the gradients travel):
    ``{"q0": (B, nq), "v0": (B, nv), "tau": (B, T, nv), "theta": (B, np)}``, equal bit for
    bit to the local call on the same tapes. A list of local ``Tape`` objects is
    differentiated here (``Tape.vjp_batch``; local tapes do not travel).

    :param threads: rayon threads per chunk (default 1; ``None``: all the node's cores).
    :raises InputError: an empty list, tapes of different lengths or models, wrong shapes;
        a failing rollout's error names its index in ``tapes``.
    :raises TypeError: a list mixing local tapes and handles, or other objects.
    """
    tapes = list(tapes)
    if tapes and all(isinstance(t, Tape) for t in tapes):
        return Tape.vjp_batch(tapes, grad_q, grad_v, q0, threads=threads)
    if not all(isinstance(t, RemoteTape) for t in tapes):
        raise TypeError("vjp_batch takes a list of RemoteTape handles (rollout_batch(..., record=True)) "
                        "or a list of local Tape objects, not a mix or other objects")
    if not tapes:
        raise InputError("vjp_batch needs at least one tape, and tapes with at least one step")
    c0 = tapes[0]._chunk
    b, steps, nq, nv, np_ = len(tapes), c0.steps, c0.nq, c0.nv, c0.np
    for i, t in enumerate(tapes):
        c = t._chunk
        if (c.steps, c.nq, c.nv, c.np) != (steps, nq, nv, np_):
            raise InputError(f"tape {i} does not match tape 0 (every tape needs {steps} steps of a model with "
                             f"nq = {nq}, nv = {nv} and {np_} parameters)")

    def rows3(x, name: str, n: int):
        if x is None:
            return None
        a = _float_array(x, name)
        if a.shape != (b, steps, n):
            raise InputError(f"{name} must have shape (B, T, {n}) = ({b}, {steps}, {n}), got {a.shape}")
        bad = np.flatnonzero(~np.isfinite(a))
        if bad.size:
            x = a.flat[bad[0]]
            shown = "NaN" if np.isnan(x) else ("inf" if x > 0 else "-inf")  # as the local call prints it
            raise InputError(f"{name} has a non-finite entry ({shown}) at flat index {bad[0]}")
        return a

    grad_q, grad_v = rows3(grad_q, "grad_q", nq), rows3(grad_v, "grad_v", nv)
    if q0 is not None:
        q0 = _float_array(q0, "q0")
        if q0.shape != (b, nq):
            raise InputError(f"q0 must have shape (B, nq) = ({b}, {nq}), got {q0.shape}")
    _ensure_ray()
    # Positions of the batch per chunk, in order of first appearance.
    groups: Dict[int, tuple] = {}
    for pos, t in enumerate(tapes):
        groups.setdefault(id(t._chunk), (t._chunk, [], []))
        groups[id(t._chunk)][1].append(t._row)
        groups[id(t._chunk)][2].append(pos)
    refs, sizes, order = [], [], []
    for chunk, rows, positions in groups.values():
        idx = np.asarray(positions)
        grads = tuple(None if g is None else g[idx] for g in (grad_q, grad_v, q0))
        refs.append(chunk.actor.vjp.remote(chunk.key, chunk.recipe, rows, positions, grads, threads))
        sizes.append(len(rows))
        order.append(idx)
    outs = _gather(refs, sizes, progress, "tape")
    for out in outs:
        if _is_failure(out):
            _raise(out)
    result = {
        "q0": np.empty((b, nq)),
        "v0": np.empty((b, nv)),
        "tau": np.empty((b, steps, nv)),
        "theta": np.empty((b, np_)),
    }
    for idx, out in zip(order, outs):
        for k, a in result.items():
            a[idx] = out[k]
    return result


@ray.remote(max_retries=_RETRIES)
def _sysid_chunk(sim_json: str, start: int, params, trajectories, theta, jacobian, lower, upper, jacobians):
    """Residuals (and Jacobian) of one slice of a fit's trajectories."""
    _maybe_crash()
    try:
        return _stiction._sysid_evaluate(_simulator(sim_json), params, trajectories, theta, jacobian, lower, upper,
                                         jacobians)
    except StictionError as e:
        return _failure(e, lambda i: start + i)


def sysid_fit(
    sim: Simulator,
    params: Sequence[str],
    trajectories: List[Dict[str, Any]],
    theta0=None,
    lower=None,
    upper=None,
    jacobians: str = "analytic",
    max_iterations: int = 100,
    callback: Optional[Callable[[Dict[str, Any]], Any]] = None,
    *,
    chunk_size: Optional[int] = None,
    progress: bool = True,
) -> Dict[str, Any]:
    """:func:`stiction.sysid.fit` with the residuals and Jacobians of the trajectories computed
    over the Ray cluster, a chunk of consecutive trajectories per task (the trajectories and
    the simulator's JSON are put into the object store once; each evaluation sends θ and
    gets residuals and Jacobian rows back). The Levenberg–Marquardt iteration runs here, on
    the same numbers as the local fit: the result equals ``sysid.fit``'s (same arguments,
    same report; ``wall_time`` and ``jacobian_time`` differ).

    :param chunk_size: trajectories per task (default: about one chunk per cluster CPU).
    :param progress: a tqdm bar of the iterations (when tqdm is installed).
    :raises InputError: as ``sysid.fit`` (checked here before anything is sent).
    """
    _ensure_ray()
    if not isinstance(trajectories, list):
        raise InputError("trajectories must be a list of dicts (q0, v0, controls, q, ...)")
    params = list(params)
    sim_ref = ray.put(simulator_to_json(sim))
    chunks = _chunks(len(trajectories), chunk_size) if trajectories else []
    parts = [ray.put(trajectories[c.start:c.stop]) for c in chunks]
    bar = _progress_bar(progress, max_iterations, "iteration")

    def evaluate(theta, jacobian: bool, trial: bool):
        refs = [
            _sysid_chunk.remote(sim_ref, c.start, params, p, theta, jacobian, lower, upper, jacobians)
            for c, p in zip(chunks, parts)
        ]
        outs = ray.get(refs)
        for out in outs:
            if _is_failure(out):
                if trial:
                    return None
                _raise(out)
        r = np.concatenate([o[0] for o in outs])
        jac = np.concatenate([o[1] for o in outs]) if jacobian else None
        return r, jac, int(sum(o[2] for o in outs))

    def report(info):
        if bar is not None:
            bar.update(1)
            bar.set_postfix(cost=info["cost"])
        if callback is not None:
            callback(info)

    try:
        return _stiction._sysid_fit(sim, params, trajectories, theta0, lower, upper, jacobians, max_iterations,
                                    report, evaluate)
    finally:
        if bar is not None:
            bar.close()
