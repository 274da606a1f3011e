"""The numpy core behind :mod:`stiction.torch` and :mod:`stiction.jax`: batched rollouts with
their tapes, and the reverse pass over those tapes, on coordinates.

A rollout maps ``(q0, v0, taus, theta)`` to the states after each step, ``(Q, V)``. The engine
differentiates in the tangent space of the configuration manifold; the frameworks see
coordinates. Two maps bridge them (both in Rust, see ``Model.tangent_gradient`` and
``Model.coordinate_gradient``):

* upstream gradients on the coordinates of ``Q`` become tangent gradients, ``Eᵀ g``;
* the tangent gradient the tape returns for ``q0`` becomes a gradient on the coordinates of
  ``q0`` for the function ``q0 ↦ rollout(normalize(q0))``: quaternions are normalised before
  stepping, so the function is defined (and differentiable) off the unit sphere too.

For models without ball or free joints (``nq == nv``) both maps are the identity.

Shapes: ``q0`` ``(..., nq)``, ``v0`` ``(..., nv)``, ``taus`` ``(..., T, nv)``, ``theta``
``(..., np)`` with one common leading shape (the caller broadcasts); every leading index is an
independent rollout, run in parallel by ``Simulator.rollout_batch`` (rayon, GIL released).
"""

from typing import List, Optional, Sequence, Tuple

import numpy as np

from ._stiction import InputError, SoftRollout, Tape, WorldTape

__all__: List[str] = []


def dims(sim) -> Tuple[int, int, int]:
    """``(nq, nv, np)`` of a simulator: its model's sizes and the length of its ``params``."""
    model = sim.model
    return model.nq, model.nv, len(sim.params)


def default_theta(sim) -> np.ndarray:
    """The simulator's current parameter values θ (its model's values of ``sim.params``)."""
    return np.asarray(sim.params.values(sim.model), dtype=np.float64)


def lead_shape(sim, q0_shape: Sequence[int], v0_shape: Sequence[int], taus_shape: Sequence[int],
               theta_shape: Sequence[int]) -> Tuple[Tuple[int, ...], int]:
    """The broadcast leading (batch) shape of the four inputs and the horizon T; raises
    ``InputError`` with the expected shapes when they do not fit the simulator."""
    nq, nv, npar = dims(sim)

    def check(name, shape, tail, tail_text):
        shape = tuple(shape)
        if len(shape) < len(tail) or shape[len(shape) - len(tail):] != tail:
            raise InputError(f"{name} must have shape (..., {tail_text}), got {shape}")
        return shape[: len(shape) - len(tail)]

    if len(taus_shape) < 2:
        raise InputError(f"taus must have shape (..., T, {nv}) (T steps of model.nv torques), got {tuple(taus_shape)}")
    steps = int(taus_shape[-2])
    if steps < 1:
        raise InputError("taus must hold at least one step (T >= 1)")
    leads = [
        check("q", q0_shape, (nq,), f"{nq}) (model.nq"),
        check("v", v0_shape, (nv,), f"{nv}) (model.nv"),
        check("taus", taus_shape, (steps, nv), f"T, {nv}) (model.nv"),
        check("theta", theta_shape, (npar,), f"{npar}) (len(sim.params)"),
    ]
    try:
        lead = np.broadcast_shapes(*leads)
    except ValueError:
        raise InputError(f"the batch shapes of q, v, taus and theta do not broadcast: {leads}") from None
    return tuple(lead), steps


def forward(sim, q0: np.ndarray, v0: np.ndarray, taus: np.ndarray, theta: np.ndarray, record: bool):
    """Runs the rollouts. The inputs already have the common leading shape ``L`` (broadcast).
    Returns ``(Q, V, tapes, q0_normalised)`` with ``Q`` of shape ``L + (T, nq)``, ``V`` of shape
    ``L + (T, nv)``, ``tapes`` one ``Tape`` per rollout (``None`` without ``record``)."""
    nq, nv, npar = dims(sim)
    lead, steps = q0.shape[:-1], taus.shape[-2]
    batch = int(np.prod(lead, dtype=np.int64))
    q0f = np.ascontiguousarray(q0.reshape(batch, nq), dtype=np.float64)
    v0f = np.ascontiguousarray(v0.reshape(batch, nv), dtype=np.float64)
    tausf = np.ascontiguousarray(taus.reshape(batch, steps, nv), dtype=np.float64)
    thetaf = np.ascontiguousarray(theta.reshape(batch, npar), dtype=np.float64)
    model = sim.model
    if nq != nv:
        q0f = np.stack([model.normalize(row) for row in q0f])
    out = sim.rollout_batch(q0f, v0f, tausf, thetas=thetaf if npar else None, record=record)
    Q = out[0].reshape(lead + (steps, nq))
    V = out[1].reshape(lead + (steps, nv))
    return Q, V, (out[2] if record else None)


def backward(sim, q0: np.ndarray, Q: np.ndarray, tapes, gQ: Optional[np.ndarray], gV: Optional[np.ndarray]):
    """Reverse pass over the tapes of :func:`forward`: given the upstream gradients ``gQ``
    (on coordinates) and ``gV``, ``None`` meaning zero, returns the gradients
    ``(g_q0, g_v0, g_taus, g_theta)``; ``g_q0`` is on the coordinates of ``q0`` (see the module
    docstring). The cotangents may carry more batch entries than the rollouts (their leading
    shape broadcasts with that of ``Q``; ``jax.jacrev`` sweeps many cotangents over one
    rollout): each sweeps the tape it broadcasts onto, and the gradients have the leading shape
    of that broadcast."""
    nq, nv, npar = dims(sim)
    lead_in, steps = Q.shape[:-2], Q.shape[-2]
    lead = np.broadcast_shapes(lead_in, *[g.shape[:-2] for g in (gQ, gV) if g is not None])
    batch = int(np.prod(lead, dtype=np.int64))
    which = np.broadcast_to(np.arange(len(tapes)).reshape(lead_in), lead).ravel()
    q0f = q0.reshape(len(tapes), nq)[which]
    gQf = None if gQ is None else np.broadcast_to(gQ, lead + (steps, nq)).reshape(batch, steps, nq)
    gVf = None if gV is None else np.broadcast_to(gV, lead + (steps, nv)).reshape(batch, steps, nv)
    # One call: coordinate maps and tape sweeps in Rust, in parallel, GIL released.
    grads = Tape.vjp_batch([tapes[r] for r in which], gQf, gVf, q0f)
    g_q0, g_v0, g_taus, g_theta = grads["q0"], grads["v0"], grads["tau"], grads["theta"]
    return (
        g_q0.reshape(lead + (nq,)),
        g_v0.reshape(lead + (nv,)),
        g_taus.reshape(lead + (steps, nv)),
        g_theta.reshape(lead + (npar,)),
    )


def reduce_to(grad: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """Sums a gradient of a broadcast input back to the input's own ``shape`` (numpy or JAX
    arrays: only ``ndim``, ``shape``, ``sum`` and ``reshape`` are used)."""
    shape = tuple(shape)
    extra = grad.ndim - len(shape)
    if extra:
        grad = grad.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, (g, s) in enumerate(zip(grad.shape, shape)) if s == 1 and g != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad.reshape(shape)


# Soft bodies (`stiction.SoftBody`): batched like the rigid rollouts above. Shapes: ``x0`` and
# ``v0`` ``(..., ndof)``, ``controls`` ``(..., T, ndof)``, ``theta`` ``(..., np)`` with one
# common (broadcast) leading shape; every leading index is an independent rollout, run in
# parallel by ``SoftBody.rollout_batch`` and swept by ``SoftRollout.backward_batch``.


def _batch_shape(what, states, controls_shape, nu, unit, theta) -> Tuple[Tuple[int, ...], int]:
    """The broadcast leading (batch) shape of a rollout's inputs and its horizon T. ``states``
    are ``(name, shape, size, size_text)`` of the two start-state arrays, ``theta`` the same
    for the parameters; the controls have shape (..., T, nu), ``unit`` naming what one step
    holds. Raises ``InputError`` with the expected shapes."""

    def lead_of(name, shape, size, size_text):
        shape = tuple(shape)
        if len(shape) < 1 or shape[-1] != size:
            raise InputError(f"{name} must have shape (..., {size}) ({size_text}), got {shape}")
        return shape[:-1]

    controls_shape = tuple(controls_shape)
    if len(controls_shape) < 2 or controls_shape[-1] != nu or controls_shape[-2] < 1:
        raise InputError(f"controls must have shape (..., T, {nu}) with T >= 1 ({unit} per step), "
                         f"got {controls_shape}")
    leads = [lead_of(*states[0]), lead_of(*states[1]), controls_shape[:-2], lead_of(*theta)]
    names = f"{states[0][0]}, {states[1][0]}, controls and {theta[0]}"
    try:
        lead = np.broadcast_shapes(*leads)
    except ValueError:
        raise InputError(f"the batch shapes of {names} do not broadcast: {leads}") from None
    if 0 in lead:
        raise InputError(f"the batch shape {tuple(lead)} of a {what} rollout holds no rollout")
    return tuple(lead), int(controls_shape[-2])


def soft_check(body, x0_shape, v0_shape, controls_shape, theta_shape) -> Tuple[Tuple[int, ...], int]:
    """The broadcast leading (batch) shape of a soft-body rollout's inputs and its horizon T;
    raises ``InputError`` with the expected shapes."""
    n, npar = body.ndof, len(body.param_names)
    states = (("x0", x0_shape, n, "body.ndof"), ("v0", v0_shape, n, "body.ndof"))
    theta = ("theta", theta_shape, npar, "len(body.param_names)")
    return _batch_shape("soft", states, controls_shape, n, "body.ndof vertex forces", theta)


def soft_broadcast(body, x0, v0, controls, theta):
    """The four inputs as float64 numpy arrays broadcast to the common leading shape."""
    lead, steps = soft_check(body, np.shape(x0), np.shape(v0), np.shape(controls), np.shape(theta))
    n, npar = body.ndof, len(body.param_names)
    shapes = (lead + (n,), lead + (n,), lead + (steps, n), lead + (npar,))
    return [np.broadcast_to(np.asarray(a, dtype=np.float64), s) for a, s in zip((x0, v0, controls, theta), shapes)]


def soft_forward(body, x0, v0, controls, theta, dt, integrator):
    """Runs the rollouts of ``body`` (inputs already broadcast, see :func:`soft_broadcast`),
    rollout b with parameters ``theta[b]`` and its pins held where its ``x0`` has them.
    Returns ``(X, V, rollouts)``: the states after each step, shape ``L + (T, ndof)``, and one
    ``SoftRollout`` per rollout (row-major over ``L``)."""
    n, npar = body.ndof, len(body.param_names)
    lead, steps = x0.shape[:-1], controls.shape[-2]
    batch = int(np.prod(lead, dtype=np.int64))
    flat = lambda a, *tail: np.ascontiguousarray(a.reshape((batch,) + tail), dtype=np.float64)  # noqa: E731
    rollouts = body.rollout_batch(flat(x0, n), flat(v0, n), flat(controls, steps, n), thetas=flat(theta, npar),
                                  dt=dt, integrator=integrator)
    states = [r.states for r in rollouts]
    X = np.stack([s[0] for s in states]).reshape(lead + (steps, n))
    V = np.stack([s[1] for s in states]).reshape(lead + (steps, n))
    return X, V, rollouts


def soft_backward(body, X, rollouts, gX, gV):
    """``(∂ℓ/∂x0, ∂ℓ/∂v0, ∂ℓ/∂controls, ∂ℓ/∂θ)`` for upstream gradients ``gX``, ``gV`` on the
    states ``X`` of :func:`soft_forward` (``None``: zero). The pins are held at ``x0``'s pinned
    coordinates, so their targets' gradients (every step) add to those coordinates of
    ``∂ℓ/∂x0``. The cotangents may carry more batch entries than the rollouts (broadcast, as in
    :func:`backward`); the gradients have the leading shape of that broadcast."""
    n, npar = body.ndof, len(body.param_names)
    lead_in, steps = X.shape[:-2], X.shape[-2]
    lead = np.broadcast_shapes(lead_in, *[np.shape(g)[:-2] for g in (gX, gV) if g is not None])
    batch = int(np.prod(lead, dtype=np.int64))
    which = np.broadcast_to(np.arange(len(rollouts)).reshape(lead_in), lead).ravel()
    cot = lambda g: None if g is None else np.ascontiguousarray(  # noqa: E731
        np.broadcast_to(g, lead + (steps, n)).reshape(batch, steps, n), dtype=np.float64)
    g = SoftRollout.backward_batch([rollouts[r] for r in which], cot(gX), cot(gV))
    gx0 = np.array(g["x0"], dtype=np.float64)
    pins = np.asarray(body.pinned_dofs, dtype=np.int64)
    if pins.size:
        gx0[:, pins] += np.asarray(g["targets"]).sum(axis=1)
    return (
        gx0.reshape(lead + (n,)),
        np.asarray(g["v0"]).reshape(lead + (n,)),
        np.asarray(g["u"]).reshape(lead + (steps, n)),
        np.asarray(g["theta"]).reshape(lead + (npar,)),
    )


# Worlds (`stiction.World`): batched like the rigid rollouts. Shapes: ``q0`` ``(..., nq)``,
# ``v0`` ``(..., nv)``, ``controls`` ``(..., T, nu)``, ``theta`` ``(..., np)``; every leading
# index is an independent rollout, run in parallel by ``World.rollout_batch`` and swept by
# ``WorldTape.vjp_batch``. Configurations are coordinates: start quaternions (articulations
# with ball or free joints) are normalised before stepping, upstream gradients on ``Q`` are
# mapped to the tangent space (``World.tangent_gradient``) and the tangent gradient of ``q0``
# back to coordinates (``World.coordinate_gradient``); both are the identity for worlds of
# particles, soft bodies and scalar joints (``nq == nv``).


def world_dims(world) -> Tuple[int, int, int, int]:
    """``(nq, nv, nu, np)`` of a world."""
    return world.nq, world.nv, world.nu, len(world.param_names)


def world_default_theta(world) -> np.ndarray:
    """The world's current parameter values θ."""
    return np.asarray(world.param_values(), dtype=np.float64)


def world_check(world, q0_shape, v0_shape, controls_shape, theta_shape) -> Tuple[Tuple[int, ...], int]:
    """The broadcast leading (batch) shape of a world rollout's inputs and its horizon T;
    raises ``InputError`` with the expected shapes."""
    nq, nv, nu, npar = world_dims(world)
    states = (("q0", q0_shape, nq, "world.nq"), ("v0", v0_shape, nv, "world.nv"))
    theta = ("theta", theta_shape, npar, "len(world.param_names)")
    return _batch_shape("world", states, controls_shape, nu, "world.nu controls", theta)


def world_broadcast(world, q0, v0, controls, theta):
    """The four inputs as float64 numpy arrays broadcast to the common leading shape."""
    lead, steps = world_check(world, np.shape(q0), np.shape(v0), np.shape(controls), np.shape(theta))
    nq, nv, nu, npar = world_dims(world)
    shapes = (lead + (nq,), lead + (nv,), lead + (steps, nu), lead + (npar,))
    return [np.broadcast_to(np.asarray(a, dtype=np.float64), s) for a, s in zip((q0, v0, controls, theta), shapes)]


def world_forward(world, q0, v0, controls, theta, theta_given=True):
    """Runs the rollouts of ``world`` (inputs already broadcast, see :func:`world_broadcast`),
    rollout b on ``world.with_param_values(theta[b])`` when ``theta_given`` (else on ``world``
    itself), from ``q0[b]`` with its quaternions normalised. Returns ``(Q, V, tapes)``: shapes
    ``L + (T, nq)`` and ``L + (T, nv)``, and one ``WorldTape`` per rollout."""
    nq, nv, nu, npar = world_dims(world)
    lead, steps = q0.shape[:-1], controls.shape[-2]
    batch = int(np.prod(lead, dtype=np.int64))
    flat = lambda a, *tail: np.ascontiguousarray(a.reshape((batch,) + tail), dtype=np.float64)  # noqa: E731
    q0f = flat(q0, nq)
    if nq != nv:
        q0f = np.stack([world.normalize(row) for row in q0f])
    thetas = flat(theta, npar) if theta_given and npar else None
    Q, V, tapes = world.rollout_batch(q0f, flat(v0, nv), flat(controls, steps, nu), thetas=thetas)
    return Q.reshape(lead + (steps, nq)), V.reshape(lead + (steps, nv)), tapes


def world_backward(world, q0, Q, tapes, gQ, gV):
    """``(∂ℓ/∂q0, ∂ℓ/∂v0, ∂ℓ/∂controls, ∂ℓ/∂θ)`` for upstream gradients ``gQ`` (on the
    coordinates of ``Q``) and ``gV`` (``None``: zero); ``∂ℓ/∂q0`` is on the coordinates of
    ``q0`` as given (see above). The cotangents may carry more batch entries than the
    rollouts (broadcast, as in :func:`backward`)."""
    nq, nv, nu, npar = world_dims(world)
    lead_in, steps = Q.shape[:-2], Q.shape[-2]
    lead = np.broadcast_shapes(lead_in, *[np.shape(g)[:-2] for g in (gQ, gV) if g is not None])
    batch = int(np.prod(lead, dtype=np.int64))
    which = np.broadcast_to(np.arange(len(tapes)).reshape(lead_in), lead).ravel()
    q0f = np.ascontiguousarray(q0.reshape(len(tapes), nq)[which], dtype=np.float64)

    def cot(g, n):
        if g is None:
            return None
        return np.ascontiguousarray(np.broadcast_to(g, lead + (steps, n)).reshape(batch, steps, n), dtype=np.float64)

    g = WorldTape.vjp_batch([tapes[r] for r in which], q0f, cot(gQ, nq), cot(gV, nv))
    return (
        np.asarray(g["q0"]).reshape(lead + (nq,)),
        np.asarray(g["v0"]).reshape(lead + (nv,)),
        np.asarray(g["u"]).reshape(lead + (steps, nu)),
        np.asarray(g["theta"]).reshape(lead + (npar,)),
    )
