"""JAX wrappers over stiction's recorded steps (optional: needs ``jax``).

:func:`rollout` and :func:`step` are ``jax.custom_vjp`` functions whose forward and backward
passes call the Rust engine through ``jax.pure_callback``, so they work under ``jax.jit``,
``jax.grad`` and ``jax.vmap`` (batched calls reach the engine as one parallel batch). The
backward pass re-runs the rollout with recording and sweeps its tape in Rust
(``Tape.backward``): no tape is kept between the two passes, so the functions stay pure.
:func:`soft_rollout` and :func:`world_rollout` do the same for a :class:`stiction.SoftBody` and a
:class:`stiction.World`.

>>> import jax, jax.numpy as jnp, stiction, stiction.jax as sj
>>> jax.config.update("jax_enable_x64", True)
>>> sim = stiction.Simulator(stiction.samples.pendulum_chain(2), dt=0.01)
>>> loss = lambda q0: sj.rollout(sim, q0, jnp.zeros(2), jnp.zeros((50, 2)))[0][-1].sum()
>>> jax.grad(loss)(jnp.array([0.3, -0.2])).shape
(2,)

Conventions are those of :mod:`stiction.torch`: float64 (enable ``jax_enable_x64``), shapes
``q`` ``(..., nq)``, ``v`` ``(..., nv)``, torques ``(..., T, nv)``, ``theta`` ``(..., np)``
(``None``: the simulator's values, not differentiated); start quaternions are normalised before
stepping. Forward-mode differentiation (``jax.jvp``, ``jax.jacfwd``) is not available: use
reverse mode (``jax.grad``, ``jax.vjp``, ``jax.jacrev``).
"""

from functools import partial
from typing import Tuple

import numpy as np

try:
    import jax
    import jax.numpy as jnp
except ImportError as e:  # pragma: no cover - exercised by test_optional_imports
    raise ImportError("stiction.jax needs JAX: pip install jax") from e

from . import _autodiff

__all__ = ["rollout", "soft_rollout", "step", "world_rollout"]


def _check_x64():
    if not jax.config.jax_enable_x64:
        raise TypeError(
            "stiction.jax needs 64-bit floats: call jax.config.update('jax_enable_x64', True) "
            "before creating arrays"
        )


def _shapes(sim, q0, v0, taus, theta):
    lead, steps = _autodiff.lead_shape(sim, q0.shape, v0.shape, taus.shape, theta.shape)
    nq, nv, npar = _autodiff.dims(sim)
    return lead, steps, (lead + (nq,), lead + (nv,), lead + (steps, nv), lead + (npar,))


def _broadcast(args, shapes):
    return [np.broadcast_to(np.asarray(a, dtype=np.float64), s) for a, s in zip(args, shapes)]


def _forward_host(sim, q0, v0, taus, theta):
    """Host side of the forward pass: numpy in, ``(Q, V)`` out."""
    _, _, shapes = _shapes(sim, q0, v0, taus, theta)
    Q, V, _ = _autodiff.forward(sim, *_broadcast((q0, v0, taus, theta), shapes), record=False)
    return Q, V


def _backward_host(sim, q0, v0, taus, theta, gQ, gV):
    """Host side of the backward pass: re-runs the rollout with recording, sweeps the tapes."""
    _, _, shapes = _shapes(sim, q0, v0, taus, theta)
    args = _broadcast((q0, v0, taus, theta), shapes)
    Q, _, tapes = _autodiff.forward(sim, *args, record=True)
    # Under vmap the cotangents and the inputs are batched independently (jax.jacrev batches
    # only the cotangents): the backward pass broadcasts them onto the rollouts.
    return _autodiff.backward(sim, args[0], Q, tapes, np.asarray(gQ), np.asarray(gV))


def _result_shapes(sim, q0, v0, taus, theta):
    lead, steps, _ = _shapes(sim, q0, v0, taus, theta)
    nq, nv, _ = _autodiff.dims(sim)
    return (
        jax.ShapeDtypeStruct(lead + (steps, nq), jnp.float64),
        jax.ShapeDtypeStruct(lead + (steps, nv), jnp.float64),
    )


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def _rollout(sim, q0, v0, taus, theta):
    return jax.pure_callback(
        partial(_forward_host, sim), _result_shapes(sim, q0, v0, taus, theta), q0, v0, taus, theta,
        vmap_method="expand_dims",
    )


def _rollout_fwd(sim, q0, v0, taus, theta):
    return _rollout(sim, q0, v0, taus, theta), (q0, v0, taus, theta)


def _rollout_bwd(sim, residuals, cotangents):
    q0, v0, taus, theta = residuals
    gQ, gV = cotangents
    _, _, shapes = _shapes(sim, q0, v0, taus, theta)
    grads = jax.pure_callback(
        partial(_backward_host, sim), tuple(jax.ShapeDtypeStruct(s, jnp.float64) for s in shapes),
        q0, v0, taus, theta, gQ, gV, vmap_method="expand_dims",
    )
    # The host returns gradients of the broadcast inputs; sum them back to each input's shape.
    return tuple(_autodiff.reduce_to(g, jnp.shape(a)) for g, a in zip(grads, residuals))


_rollout.defvjp(_rollout_fwd, _rollout_bwd)


def _array(x, name):
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.float64)
    if x.dtype != jnp.float64:
        raise TypeError(f"{name} must be float64, got {x.dtype}")
    return x


def rollout(sim, q0, v0, taus, theta=None) -> Tuple[jax.Array, jax.Array]:
    """``T`` simulator steps from ``(q0, v0)`` under the torques ``taus``; returns ``(Q, V)``, the
    states after each step, shapes ``(..., T, nq)`` and ``(..., T, nv)``. Differentiable (reverse
    mode) with respect to ``q0``, ``v0``, ``taus`` and ``theta``; see the module docstring.

    :raises TypeError: 64-bit floats are not enabled, or an input is not float64.
    :raises InputError: shapes that do not fit the model (at trace time), NaN inputs or a failed
        step (when the callback runs).
    """
    _check_x64()
    q0, v0, taus = _array(q0, "q0"), _array(v0, "v0"), _array(taus, "taus")
    theta = _array(_autodiff.default_theta(sim) if theta is None else theta, "theta")
    _shapes(sim, q0, v0, taus, theta)  # shape errors at call (trace) time
    return _rollout(sim, q0, v0, taus, theta)


def step(sim, q, v, tau, theta=None) -> Tuple[jax.Array, jax.Array]:
    """One simulator step: ``(q⁺, v⁺)`` with the shapes of ``q`` and ``v``; ``tau`` has shape
    ``(..., nv)``. Arguments as :func:`rollout`."""
    _check_x64()
    Q, V = rollout(sim, q, v, jnp.expand_dims(_array(tau, "tau"), -2), theta)
    return Q[..., 0, :], V[..., 0, :]


def _soft_result_shapes(body, x0, v0, controls, theta):
    lead, steps = _autodiff.soft_check(body, jnp.shape(x0), jnp.shape(v0), jnp.shape(controls), jnp.shape(theta))
    shape = lead + (steps, body.ndof)
    return jax.ShapeDtypeStruct(shape, jnp.float64), jax.ShapeDtypeStruct(shape, jnp.float64)


def _soft_forward_host(body, options, x0, v0, controls, theta):
    """Host side of the forward pass: numpy in, ``(X, V)`` out."""
    X, V, _ = _autodiff.soft_forward(body, *_autodiff.soft_broadcast(body, x0, v0, controls, theta), *options)
    return X, V


def _soft_backward_host(body, options, x0, v0, controls, theta, gX, gV):
    """Host side of the backward pass: re-runs the rollouts with recording, sweeps them."""
    X, _, rollouts = _autodiff.soft_forward(body, *_autodiff.soft_broadcast(body, x0, v0, controls, theta), *options)
    return _autodiff.soft_backward(body, X, rollouts, np.asarray(gX), np.asarray(gV))


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def _soft_rollout(body, options, x0, v0, controls, theta):
    return jax.pure_callback(
        partial(_soft_forward_host, body, options), _soft_result_shapes(body, x0, v0, controls, theta),
        x0, v0, controls, theta, vmap_method="expand_dims",
    )


def _soft_rollout_fwd(body, options, x0, v0, controls, theta):
    return _soft_rollout(body, options, x0, v0, controls, theta), (x0, v0, controls, theta)


def _soft_rollout_bwd(body, options, residuals, cotangents):
    x0, v0, controls, theta = residuals
    gX, gV = cotangents
    lead, steps = _autodiff.soft_check(body, jnp.shape(x0), jnp.shape(v0), jnp.shape(controls), jnp.shape(theta))
    n, npar = body.ndof, len(body.param_names)
    shapes = (lead + (n,), lead + (n,), lead + (steps, n), lead + (npar,))
    grads = jax.pure_callback(
        partial(_soft_backward_host, body, options), tuple(jax.ShapeDtypeStruct(s, jnp.float64) for s in shapes),
        x0, v0, controls, theta, gX, gV, vmap_method="expand_dims",
    )
    # The host returns gradients of the broadcast inputs; sum them back to each input's shape.
    return tuple(_autodiff.reduce_to(g, jnp.shape(a)) for g, a in zip(grads, residuals))


_soft_rollout.defvjp(_soft_rollout_fwd, _soft_rollout_bwd)


def soft_rollout(body, x0, v0, controls, theta=None, dt=1e-3, integrator="backward_euler"):
    """``T`` steps of a :class:`stiction.SoftBody` from ``(x0, v0)`` under the vertex forces
    ``controls`` (shape ``(..., T, ndof)``); returns ``(X, V)``, the states after each step,
    shapes ``(..., T, ndof)``. Differentiable (reverse mode) with respect to ``x0``, ``v0``,
    ``controls`` and ``theta`` (the values of ``body.param_names``; ``None``: the body's own, not
    differentiated). The pins are held where ``x0`` has them (so they move with it). Leading
    batch dimensions broadcast as in :func:`rollout`; a batch (explicit, or from ``jax.vmap``)
    reaches the engine as one parallel ``SoftBody.rollout_batch``. Arguments as
    :func:`stiction.torch.soft_rollout`.
    """
    _check_x64()
    x0, v0, controls = _array(x0, "x0"), _array(v0, "v0"), _array(controls, "controls")
    theta = _array(np.asarray(body.param_values) if theta is None else theta, "theta")
    _autodiff.soft_check(body, x0.shape, v0.shape, controls.shape, theta.shape)
    return _soft_rollout(body, (float(dt), integrator), x0, v0, controls, theta)


def _world_shapes(world, q0, v0, controls, theta):
    lead, steps = _autodiff.world_check(world, jnp.shape(q0), jnp.shape(v0), jnp.shape(controls), jnp.shape(theta))
    nq, nv, nu, npar = _autodiff.world_dims(world)
    return lead, steps, (lead + (nq,), lead + (nv,), lead + (steps, nu), lead + (npar,))


def _world_forward_host(world, theta_given, q0, v0, controls, theta):
    """Host side of the forward pass: numpy in, ``(Q, V)`` out."""
    args = _autodiff.world_broadcast(world, q0, v0, controls, theta)
    Q, V, _ = _autodiff.world_forward(world, *args, theta_given=theta_given)
    return Q, V


def _world_backward_host(world, theta_given, q0, v0, controls, theta, gQ, gV):
    """Host side of the backward pass: re-runs the rollouts with recording, sweeps the tapes."""
    args = _autodiff.world_broadcast(world, q0, v0, controls, theta)
    Q, _, tapes = _autodiff.world_forward(world, *args, theta_given=theta_given)
    return _autodiff.world_backward(world, args[0], Q, tapes, np.asarray(gQ), np.asarray(gV))


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def _world_rollout(world, theta_given, q0, v0, controls, theta):
    lead, steps, _ = _world_shapes(world, q0, v0, controls, theta)
    nq, nv, _, _ = _autodiff.world_dims(world)
    result = (jax.ShapeDtypeStruct(lead + (steps, nq), jnp.float64), jax.ShapeDtypeStruct(lead + (steps, nv), jnp.float64))
    return jax.pure_callback(partial(_world_forward_host, world, theta_given), result, q0, v0, controls, theta,
                             vmap_method="expand_dims")


def _world_rollout_fwd(world, theta_given, q0, v0, controls, theta):
    return _world_rollout(world, theta_given, q0, v0, controls, theta), (q0, v0, controls, theta)


def _world_rollout_bwd(world, theta_given, residuals, cotangents):
    gQ, gV = cotangents
    _, _, shapes = _world_shapes(world, *residuals)
    grads = jax.pure_callback(
        partial(_world_backward_host, world, theta_given), tuple(jax.ShapeDtypeStruct(s, jnp.float64) for s in shapes),
        *residuals, gQ, gV, vmap_method="expand_dims",
    )
    return tuple(_autodiff.reduce_to(g, jnp.shape(a)) for g, a in zip(grads, residuals))


_world_rollout.defvjp(_world_rollout_fwd, _world_rollout_bwd)


def world_rollout(world, q0, v0, controls, theta=None) -> Tuple[jax.Array, jax.Array]:
    """``T`` steps of a :class:`stiction.World` from ``(q0, v0)`` under the controls
    ``controls`` (shape ``(..., T, nu)``); returns ``(Q, V)``, the states after each step,
    shapes ``(..., T, nq)`` and ``(..., T, nv)``. Differentiable (reverse mode) with respect to
    ``q0``, ``v0``, ``controls`` and ``theta`` (the values of ``world.param_names``; ``None``: the
    world's own, not differentiated). Leading batch dimensions broadcast as in :func:`rollout`;
    a batch (explicit, or from ``jax.vmap``) reaches the engine as one parallel
    ``World.rollout_batch``. Coordinates and the meaning of the gradient of ``q0`` (quaternions
    normalised, gradient on the coordinates of ``q ↦ rollout(normalize(q))``) are those of
    :func:`stiction.torch.world_rollout`.

    :raises TypeError: 64-bit floats are not enabled, or an input is not float64.
    :raises InputError: shapes that do not fit the world (at trace time), non-finite inputs or
        a failed step (when the callback runs).
    """
    _check_x64()
    q0, v0, controls = _array(q0, "q0"), _array(v0, "v0"), _array(controls, "controls")
    theta_given = theta is not None
    theta = _array(_autodiff.world_default_theta(world) if theta is None else theta, "theta")
    _world_shapes(world, q0, v0, controls, theta)  # shape errors at call (trace) time
    return _world_rollout(world, theta_given, q0, v0, controls, theta)
