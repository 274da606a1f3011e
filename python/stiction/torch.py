"""PyTorch autograd Functions over stiction's recorded steps (optional: needs ``torch``).

:func:`rollout` runs ``T`` steps in one call (a Rust loop, GIL released) and records a tape per
rollout; its backward pass runs over those tapes in Rust (``Tape.backward``), not step by step in
Python. :func:`step` is the one-step case. Both are differentiable with respect to the start
state, the torques and the simulator's parameters θ (``Simulator(params=...)``), and accept a
leading batch dimension on any input (broadcast; batched rollouts run in parallel with rayon).
:func:`soft_rollout` and :func:`world_rollout` do the same for a :class:`stiction.SoftBody` and a
:class:`stiction.World` (θ: their ``param_names``).

>>> import torch, stiction, stiction.torch as st
>>> sim = stiction.Simulator(stiction.samples.pendulum_chain(2), dt=0.01, params=["mass:link1"])
>>> q0 = torch.tensor([0.3, -0.2], dtype=torch.float64, requires_grad=True)
>>> Q, V = st.rollout(sim, q0, torch.zeros(2, dtype=torch.float64), torch.zeros(50, 2, dtype=torch.float64))
>>> Q[-1].sum().backward()
>>> q0.grad.shape
torch.Size([2])

Conventions:

* float64 only: other floating dtypes raise ``TypeError`` (convert with ``.double()``).
* Shapes: ``q`` ``(..., nq)``, ``v`` ``(..., nv)``, torques ``(..., T, nv)`` for :func:`rollout`
  (``(..., nv)`` for :func:`step`), ``theta`` ``(..., np)``; outputs ``Q`` ``(..., T, nq)`` and
  ``V`` ``(..., T, nv)``, the states *after* each step.
* Configurations are coordinates (quaternions ``[w, x, y, z]`` for ball and free joints). Start
  quaternions are normalised before stepping, so gradients with respect to ``q`` are exact for the
  function ``q ↦ rollout(normalize(q))`` and have no component along a quaternion.
* ``theta=None`` uses the simulator's current parameter values (not differentiated).
* Tensors may live on any device; the simulation runs on the CPU and the outputs come back on the
  device of ``q``.
* Second derivatives are not available (the backward pass is not itself differentiable).
"""

from typing import Optional, Tuple

import numpy as np

try:
    import torch
except ImportError as e:  # pragma: no cover - exercised by test_optional_imports
    raise ImportError("stiction.torch needs PyTorch: pip install torch") from e

from . import _autodiff

__all__ = ["rollout", "soft_rollout", "step", "world_rollout"]


def _numpy(x: torch.Tensor) -> np.ndarray:
    return x.detach().to("cpu").numpy()


def _as_tensor(x, name: str, like: Optional[torch.Tensor]) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        if x.is_floating_point() and x.dtype != torch.float64:
            raise TypeError(f"{name} must be a float64 tensor, got {x.dtype}; convert it with .double()")
        if x.is_complex():
            raise TypeError(f"{name} must be a real float64 tensor, got {x.dtype}")
        return x if x.dtype == torch.float64 else x.to(torch.float64)
    try:
        return torch.as_tensor(np.asarray(x, dtype=np.float64), device=None if like is None else like.device)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name} cannot be converted to a float64 tensor: {e}") from None


class _Rollout(torch.autograd.Function):
    """``(q0, v0, taus, theta) ↦ (Q, V)`` over a batch of recorded rollouts."""

    @staticmethod
    def forward(ctx, sim, q0, v0, taus, theta):  # noqa: D401 - torch's signature
        lead, _ = _autodiff.lead_shape(sim, q0.shape, v0.shape, taus.shape, theta.shape)
        nq, nv, npar = _autodiff.dims(sim)
        steps = taus.shape[-2]
        args = [
            np.broadcast_to(_numpy(q0), lead + (nq,)),
            np.broadcast_to(_numpy(v0), lead + (nv,)),
            np.broadcast_to(_numpy(taus), lead + (steps, nv)),
            np.broadcast_to(_numpy(theta), lead + (npar,)),
        ]
        record = any(ctx.needs_input_grad[1:])
        Q, V, tapes = _autodiff.forward(sim, *args, record=record)
        ctx.sim, ctx.tapes, ctx.q0, ctx.Q = sim, tapes, args[0], Q
        ctx.shapes = (q0.shape, v0.shape, taus.shape, theta.shape)
        device = q0.device
        return torch.from_numpy(Q).to(device), torch.from_numpy(V).to(device)

    @staticmethod
    def backward(ctx, gQ, gV):
        grads = _autodiff.backward(ctx.sim, ctx.q0, ctx.Q, ctx.tapes, _numpy(gQ), _numpy(gV))
        device = gQ.device
        out = [
            torch.from_numpy(np.ascontiguousarray(_autodiff.reduce_to(g, shape))).to(device)
            if needed else None
            for g, shape, needed in zip(grads, ctx.shapes, ctx.needs_input_grad[1:])
        ]
        return (None, *out)


def rollout(sim, q0, v0, taus, theta=None) -> Tuple[torch.Tensor, torch.Tensor]:
    """``T`` simulator steps from ``(q0, v0)`` under the torques ``taus``, differentiable.

    :param sim: a :class:`stiction.Simulator` (its time step, contact options and ``params``).
    :param q0: start configuration, ``(..., nq)``.
    :param v0: start velocity, ``(..., nv)``.
    :param taus: joint torques, ``(..., T, nv)``.
    :param theta: values of ``sim.params``, ``(..., np)``; ``None``: the model's own values.
    :returns: ``(Q, V)``, shapes ``(..., T, nq)`` and ``(..., T, nv)``.
    :raises InputError: shapes that do not fit the model, NaN inputs, a failed step (the message
        names the rollout and the step).
    :raises TypeError: a tensor that is not float64.
    """
    q0 = _as_tensor(q0, "q0", None)
    v0 = _as_tensor(v0, "v0", q0)
    taus = _as_tensor(taus, "taus", q0)
    theta = _as_tensor(_autodiff.default_theta(sim) if theta is None else theta, "theta", q0)
    return _Rollout.apply(sim, q0, v0, taus, theta)


def step(sim, q, v, tau, theta=None) -> Tuple[torch.Tensor, torch.Tensor]:
    """One simulator step, differentiable: ``(q⁺, v⁺)`` with the shapes of ``q`` and ``v``
    (broadcast over any leading batch dimension). Arguments as :func:`rollout`, with ``tau`` of
    shape ``(..., nv)``."""
    tau = _as_tensor(tau, "tau", _as_tensor(q, "q", None))
    Q, V = rollout(sim, q, v, tau.unsqueeze(-2), theta)
    return Q.squeeze(-2), V.squeeze(-2)


class _SoftRollout(torch.autograd.Function):
    """``(x0, v0, controls, theta) ↦ (X, V)`` over a batch of recorded soft-body rollouts."""

    @staticmethod
    def forward(ctx, body, options, x0, v0, controls, theta):  # noqa: D401 - torch's signature
        args = _autodiff.soft_broadcast(body, _numpy(x0), _numpy(v0), _numpy(controls), _numpy(theta))
        X, V, rollouts = _autodiff.soft_forward(body, *args, *options)
        ctx.rollouts, ctx.body, ctx.X = rollouts, body, X
        ctx.shapes = (x0.shape, v0.shape, controls.shape, theta.shape)
        device = x0.device
        return torch.from_numpy(X).to(device), torch.from_numpy(V).to(device)

    @staticmethod
    def backward(ctx, gX, gV):
        grads = _autodiff.soft_backward(ctx.body, ctx.X, ctx.rollouts, _numpy(gX), _numpy(gV))
        device = gX.device
        out = [
            torch.from_numpy(np.ascontiguousarray(_autodiff.reduce_to(g, shape))).to(device) if needed else None
            for g, shape, needed in zip(grads, ctx.shapes, ctx.needs_input_grad[2:])
        ]
        return (None, None, *out)


def soft_rollout(body, x0, v0, controls, theta=None, dt=1e-3, integrator="backward_euler"):
    """``T`` steps of a :class:`stiction.SoftBody` from ``(x0, v0)`` under the vertex forces
    ``controls``, differentiable with respect to ``x0``, ``v0``, ``controls`` and ``theta`` (the
    values of ``body.param_names``; ``None``: the body's own values, not differentiated). The
    pins are held where ``x0`` has them (a gradient in ``x0``'s pinned coordinates moves the
    pins too). Any input may carry leading batch dimensions (broadcast, as :func:`rollout`):
    every leading index is an independent rollout, with its own ``theta`` when ``theta`` is
    batched; the batch runs in parallel (``SoftBody.rollout_batch``, rayon).

    :param body: a :class:`stiction.SoftBody`.
    :param x0: start positions, ``(..., ndof)``; :param v0: start velocities, ``(..., ndof)``.
    :param controls: vertex forces, ``(..., T, ndof)``.
    :param theta: parameter values, ``(..., len(body.param_names))``.
    :param dt: the time step; :param integrator: ``"backward_euler"`` or ``"implicit_midpoint"``.
    :returns: ``(X, V)``, the states after each step, shapes ``(..., T, ndof)``.
    :raises InputError: wrong shapes, NaN inputs, a failed step (the message names the
        rollout and the step).
    :raises ModelError: ``theta`` outside the materials' domain.
    """
    x0 = _as_tensor(x0, "x0", None)
    v0 = _as_tensor(v0, "v0", x0)
    controls = _as_tensor(controls, "controls", x0)
    theta = _as_tensor(np.asarray(body.param_values) if theta is None else theta, "theta", x0)
    _autodiff.soft_check(body, x0.shape, v0.shape, controls.shape, theta.shape)
    return _SoftRollout.apply(body, (float(dt), integrator), x0, v0, controls, theta)


class _WorldRollout(torch.autograd.Function):
    """``(q0, v0, controls, theta) ↦ (Q, V)`` over a batch of recorded world rollouts."""

    @staticmethod
    def forward(ctx, world, theta_given, q0, v0, controls, theta):  # noqa: D401 - torch's signature
        args = _autodiff.world_broadcast(world, _numpy(q0), _numpy(v0), _numpy(controls), _numpy(theta))
        Q, V, tapes = _autodiff.world_forward(world, *args, theta_given=theta_given)
        ctx.world, ctx.tapes, ctx.q0, ctx.Q = world, tapes, args[0], Q
        ctx.shapes = (q0.shape, v0.shape, controls.shape, theta.shape)
        device = q0.device
        return torch.from_numpy(Q).to(device), torch.from_numpy(V).to(device)

    @staticmethod
    def backward(ctx, gQ, gV):
        grads = _autodiff.world_backward(ctx.world, ctx.q0, ctx.Q, ctx.tapes, _numpy(gQ), _numpy(gV))
        device = gQ.device
        out = [
            torch.from_numpy(np.ascontiguousarray(_autodiff.reduce_to(g, shape))).to(device) if needed else None
            for g, shape, needed in zip(grads, ctx.shapes, ctx.needs_input_grad[2:])
        ]
        return (None, None, *out)


def world_rollout(world, q0, v0, controls, theta=None) -> Tuple[torch.Tensor, torch.Tensor]:
    """``T`` steps of a :class:`stiction.World` from ``(q0, v0)`` under the controls
    ``controls``, differentiable with respect to ``q0``, ``v0``, ``controls`` and ``theta`` (the
    values of ``world.param_names``: a soft body's material and damping parameters; ``None``:
    the world's own values, not differentiated). Any input may carry leading batch dimensions
    (broadcast, as :func:`rollout`); the batch runs in parallel (``World.rollout_batch``).

    ``q0`` and ``Q`` are coordinates. Particles, soft bodies and scalar joints have plain
    coordinates (``nq == nv``) and the gradient of ``q0`` is the ordinary one. An articulation
    with ball or free joints has quaternions: they are normalised before stepping, a gradient
    on ``Q`` is mapped to the tangent space at each state (``World.tangent_gradient``), and the
    gradient of ``q0`` is that of ``q0 ↦ rollout(normalize(q0))`` on its coordinates
    (``World.coordinate_gradient`` of the tape's tangent gradient), with no component along a
    quaternion — as :func:`rollout` does for a simulator.

    :param world: a :class:`stiction.World`.
    :param q0: start configuration, ``(..., nq)``; :param v0: start velocity, ``(..., nv)``.
    :param controls: controls, ``(..., T, nu)`` (joint torques, particle and vertex forces).
    :param theta: values of ``world.param_names``, ``(..., np)``.
    :returns: ``(Q, V)``, the states after each step, shapes ``(..., T, nq)`` and ``(..., T, nv)``.
    :raises InputError: wrong shapes, non-finite inputs, a failed step (the message names the
        rollout and the step).
    :raises ModelError: ``theta`` outside its domain (e.g. Poisson's ratio >= 0.5).
    :raises TypeError: a tensor that is not float64.
    """
    q0 = _as_tensor(q0, "q0", None)
    v0 = _as_tensor(v0, "v0", q0)
    controls = _as_tensor(controls, "controls", q0)
    theta_given = theta is not None
    theta = _as_tensor(_autodiff.world_default_theta(world) if theta is None else theta, "theta", q0)
    _autodiff.world_check(world, q0.shape, v0.shape, controls.shape, theta.shape)
    return _WorldRollout.apply(world, theta_given, q0, v0, controls, theta)
