"""Trajectory optimization over a :class:`stiction.Simulator`: iLQR and single shooting.

Both minimise the quadratic trajectory cost

.. code-block:: text

    J = Σ_{t<T} ½ eₜᵀ Q eₜ + ½ uₜᵀ R uₜ  +  ½ e_Tᵀ Q_f e_T,    e = (q ⊖ q*, v − v*)

over the joint torques ``u_0 … u_{T−1}`` (one per simulator step, shape ``(T, nv)``), from the start
state ``(q0, v0)``, with the simulator's time step, integrator and contact options. State errors live in
the tangent space (length ``2 nv``; ``q ⊖ q*`` is ``Model.difference``), so free and spherical joints
work. The loops run in Rust (the GIL is released unless a ``callback`` is given); see
``docs/trajopt.md``.

Weights are a scalar (times the identity), a vector (the diagonal) or a full symmetric matrix:
``state_weight`` and ``terminal_weight`` are ``2 nv`` wide, ``control_weight`` ``nv``. ``lower``/``upper``
bound every control (scalars or ``nv``-vectors; ``lower = upper = 0`` for an unactuated joint).

>>> import numpy as np, stiction
>>> from stiction import trajopt
>>> model = stiction.samples.cartpole()
>>> sim = stiction.Simulator(model, dt=0.02)
>>> result = trajopt.ilqr(sim, model.neutral(), np.zeros(2), np.zeros((125, 2)),
...                       target_q=[0.0, np.pi], control_weight=[1e-2, 1.0],
...                       terminal_weight=[100.0, 1000.0, 100.0, 100.0], lower=[-20.0, 0.0], upper=[20.0, 0.0])
>>> bool(abs(result["q"][-1, 1] - np.pi) < 0.05)
True
"""

from typing import Any, Callable, Dict, Optional

from ._stiction import _ilqr, _shooting

__all__ = ["ilqr", "shooting"]


def ilqr(
    sim,
    q0,
    v0,
    controls,
    target_q,
    target_v=None,
    state_weight=None,
    control_weight=None,
    terminal_weight=None,
    lower=None,
    upper=None,
    jacobians: str = "analytic",
    max_iterations: int = 200,
    cost_tolerance: float = 1e-7,
    callback: Optional[Callable[[Dict[str, float]], Any]] = None,
) -> Dict[str, Any]:
    """Iterative LQR (Li & Todorov 2004; Tassa, Erez & Todorov 2012) from the initial guess
    ``controls`` (shape ``(T, nv)``).

    :param target_q: the target configuration ``q*`` (``nq``); ``target_v`` (``nv``, default 0).
    :param state_weight: running state weight ``Q`` (default 0).
    :param control_weight: control weight ``R`` (default ``1e-3``).
    :param terminal_weight: terminal state weight ``Q_f`` (default 1).
    :param lower: lower control bounds; ``upper``: upper bounds (clamped iLQR: controls at a bound
        get no feedforward or feedback in the outward direction).
    :param jacobians: ``"analytic"`` (the step Jacobians of recorded steps) or
        ``"finite_difference"`` (central differences, 6·nv extra steps per time step; the baseline).
    :param max_iterations: iteration limit; ``cost_tolerance``: stop when an accepted step reduces
        the cost by less than this fraction.
    :param callback: called after every iteration with a dict ``iteration``, ``cost``, ``step``
        (line-search step), ``regularization``, ``elapsed`` (s); an exception it raises is re-raised
        when the optimizer returns.
    :returns: a dict: ``controls`` (T, nv), ``q`` (T+1, nq), ``v`` (T+1, nv), ``cost``,
        ``cost_history``, ``iterations``, ``converged``, ``stop`` (the reason), ``wall_time`` (s),
        ``feedback`` (T gains ``K_t`` of shape (nv, 2nv)), ``jacobian_time``,
        ``jacobian_evaluations``, ``simulator_steps``.
    :raises InputError: wrong shapes, NaN, bad weights (not symmetric, wrong size), crossed bounds,
        an unknown ``jacobians``.
    :raises NumericalError: the initial rollout fails (a non-finite state).
    """
    return _ilqr(
        sim, q0, v0, controls, target_q, target_v, state_weight, control_weight, terminal_weight, lower, upper,
        jacobians, max_iterations, cost_tolerance, callback,
    )


def shooting(
    sim,
    q0,
    v0,
    controls,
    target_q,
    target_v=None,
    state_weight=None,
    control_weight=None,
    terminal_weight=None,
    lower=None,
    upper=None,
    max_iterations: int = 500,
    callback: Optional[Callable[[Dict[str, float]], Any]] = None,
) -> Dict[str, Any]:
    """Single shooting: L-BFGS over the whole control sequence, with the exact gradient of the cost
    from one reverse pass over the recorded rollout (``Tape.backward``) per iteration; bounds by
    projection. Arguments as :func:`ilqr`; the ``callback`` dict has ``iteration``, ``cost``,
    ``gradient_norm``, ``step``, ``elapsed``.

    :returns: a dict: ``controls``, ``q``, ``v``, ``cost``, ``cost_history``, ``iterations``,
        ``converged``, ``stop``, ``wall_time``, ``gradient_norm``, ``cost_evaluations``,
        ``gradient_evaluations``.
    """
    return _shooting(
        sim, q0, v0, controls, target_q, target_v, state_weight, control_weight, terminal_weight, lower, upper,
        max_iterations, callback,
    )
