"""System identification: fit named model parameters to observed trajectories with
Levenberg–Marquardt on exact residual Jacobians (forward sensitivities through the step
Jacobians), in Rust. See ``docs/sysid.md``.

A trajectory is a dict:

- ``q0`` (nq), ``v0`` (nv): the known initial state;
- ``controls`` (T, nv): the applied joint torques, one row per simulator step;
- ``q`` (K, nq): observed configurations (compared in the tangent space, ``Model.difference``);
- ``v`` (K, nv), optional: observed velocities;
- ``steps`` (K,), optional: the time index t of each observed state x_t (default 1..K);
- ``sigma_q``, ``sigma_v``: standard deviations (scalars or nv-vectors; default 1; ``inf``
  leaves a channel out). Residuals are divided by them.

>>> import numpy as np, stiction
>>> from stiction import sysid
>>> base = stiction.samples.pendulum_chain(2, mass=1.0)
>>> names = ["mass:link0", "mass:link1"]
>>> true = stiction.ParamSpec(base, names).apply(base, [1.3, 1.3])    # hidden link masses
>>> sim = stiction.Simulator(true, dt=0.01, contact=False)
>>> taus = np.column_stack([np.sin(np.arange(100) * 0.1), np.cos(np.arange(100) * 0.07)])
>>> q, v = sim.rollout([0.3, -0.2], [0.0, 0.0], taus)
>>> guess = stiction.Simulator(base, dt=0.01, contact=False)
>>> fit = sysid.fit(guess, names,
...                 [dict(q0=[0.3, -0.2], v0=[0.0, 0.0], controls=taus, q=q, sigma_q=1e-3)])
>>> bool(np.allclose(fit["theta"], [1.3, 1.3], rtol=1e-6))
True
"""

from typing import Any, Callable, Dict, List, Optional, Sequence

from ._stiction import _sysid_fit

__all__ = ["fit"]


def fit(
    sim,
    params: Sequence[str],
    trajectories: List[Dict[str, Any]],
    theta0=None,
    lower=None,
    upper=None,
    jacobians: str = "analytic",
    max_iterations: int = 100,
    callback: Optional[Callable[[Dict[str, Any]], Any]] = None,
) -> Dict[str, Any]:
    """Fits the parameters ``params`` (``ParamSpec`` names such as ``"mass:LINK"``,
    ``"friction:LINK"``, ``"com:LINK"``, ``"damping:JOINT"``, ``"placement:JOINT"``) of the
    simulator's model, simulated with the simulator's options (dt, contact), to
    ``trajectories`` (see the module documentation).

    :param theta0: the starting values (default: the model's own).
    :param lower: lower bounds (default: physical ones — masses ≥ 1e-6, friction, damping,
        stiffness, armature ≥ 0, restitution in [0, 1]); ``upper``: upper bounds.
    :param jacobians: ``"analytic"`` (forward sensitivities through the step Jacobians) or
        ``"finite_difference"`` (central differences of all residuals; the baseline).
    :param callback: called after every iteration with a dict ``iteration``, ``cost``,
        ``accepted``, ``gain_ratio``, ``damping``, ``step_norm``, ``elapsed``; an exception it
        raises is re-raised when the fit returns.
    :returns: a dict: ``names``, ``theta`` (fitted), ``theta_initial``, ``std_dev``,
        ``covariance``, ``correlation`` (from ``σ̂² (JᵀJ)⁺``, ``σ̂² = SSR/(N − p)``), ``rank``,
        ``unidentifiable`` (directions), ``at_bound``, ``initial_cost``, ``cost``,
        ``cost_history``, ``residual_count``, ``residual_variance``, ``residual_rms`` (per
        channel), ``iterations``, ``converged``, ``stop``, ``wall_time``, ``jacobian_time``,
        ``jacobian_evaluations``, ``simulator_steps``, ``report`` (a printable summary) and
        ``model`` (the fitted model).
    :raises InputError: unknown parameter names, wrong shapes, NaN, σ ≤ 0, bad bounds, steps
        beyond the controls.
    """
    return _sysid_fit(sim, list(params), trajectories, theta0, lower, upper, jacobians, max_iterations, callback)
