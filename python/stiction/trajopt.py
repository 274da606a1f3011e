"""Trajectory optimization over a :class:`stiction.Simulator`: iLQR, single and multiple shooting.

All three minimise the quadratic trajectory cost

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

:func:`ilqr` and :func:`shooting` add world-space terms given as ``costs``: a :class:`PointCost`
drives a point fixed on a body to a world target (end-effector reaching, pushing an object to a goal),
an :class:`ObstacleCost` keeps body points out of a sphere. Their gradients use the exact point
Jacobians; iLQR uses their Gauss–Newton Hessians::

    reach = trajopt.PointCost(model, "link7", target=[0.4, 0.2, 0.5], weight=2e3, point=[0, 0, 0.1])
    avoid = trajopt.ObstacleCost(model, [("link7", [0, 0, 0.1]), "link6"], center=[0.4, 0.0, 0.5],
                                 radius=0.08, margin=0.03, running_weight=2e3)
    result = trajopt.ilqr(sim, q0, v0, guess, target_q=q0, terminal_weight=..., costs=[reach, avoid])

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

import numpy as np

from ._stiction import ObstacleCost, PointCost, _ilqr, _shooting

__all__ = ["ilqr", "shooting", "multiple_shooting", "PointCost", "ObstacleCost"]


def ilqr(
    sim,
    q0,
    v0,
    controls,
    target_q=None,
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
    costs=None,
) -> Dict[str, Any]:
    """Iterative LQR (Li & Todorov 2004; Tassa, Erez & Todorov 2012) from the initial guess
    ``controls`` (shape ``(T, nv)``).

    :param target_q: the target configuration ``q*`` (``nq``; default: the model's neutral
        configuration); ``target_v`` (``nv``, default 0).
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
    :param costs: world-space terms added to the quadratic cost: a :class:`PointCost`, an
        :class:`ObstacleCost` or a sequence of them (bodies looked up by name in ``sim.model``).
    :returns: a dict: ``controls`` (T, nv), ``q`` (T+1, nq), ``v`` (T+1, nv), ``cost``,
        ``cost_history``, ``iterations``, ``converged``, ``stop`` (the reason), ``wall_time`` (s),
        ``feedback`` (T gains ``K_t`` of shape (nv, 2nv)), ``jacobian_time``,
        ``jacobian_evaluations``, ``simulator_steps``.
    :raises InputError: wrong shapes, NaN, bad weights (not symmetric, wrong size), crossed bounds,
        an unknown ``jacobians``, ``costs`` that are not cost objects or name bodies ``sim.model``
        lacks.
    :raises NumericalError: the initial rollout fails (a non-finite state).
    """
    return _ilqr(
        sim, q0, v0, controls, target_q, target_v, state_weight, control_weight, terminal_weight, lower, upper,
        jacobians, max_iterations, cost_tolerance, callback, costs,
    )


def shooting(
    sim,
    q0,
    v0,
    controls,
    target_q=None,
    target_v=None,
    state_weight=None,
    control_weight=None,
    terminal_weight=None,
    lower=None,
    upper=None,
    max_iterations: int = 500,
    callback: Optional[Callable[[Dict[str, float]], Any]] = None,
    costs=None,
) -> Dict[str, Any]:
    """Single shooting: L-BFGS over the whole control sequence, with the exact gradient of the cost
    from one reverse pass over the recorded rollout (``Tape.backward``) per iteration; bounds by
    projection. Arguments as :func:`ilqr` (``costs`` included); the ``callback`` dict has ``iteration``, ``cost``,
    ``gradient_norm``, ``step``, ``elapsed``.

    :returns: a dict: ``controls``, ``q``, ``v``, ``cost``, ``cost_history``, ``iterations``,
        ``converged``, ``stop``, ``wall_time``, ``gradient_norm``, ``cost_evaluations``,
        ``gradient_evaluations``.
    """
    return _shooting(
        sim, q0, v0, controls, target_q, target_v, state_weight, control_weight, terminal_weight, lower, upper,
        max_iterations, callback, costs,
    )


def _weight(w, n, default):
    """A weight matrix from ``None`` (``default·I``), a scalar, a diagonal or a full matrix."""
    w = default if w is None else w
    w = np.asarray(w, dtype=float)
    if w.ndim == 0:
        return np.eye(n) * float(w)
    if w.shape == (n,):
        return np.diag(w)
    if w.shape == (n, n):
        return w
    from . import InputError

    raise InputError(f"weight must be a scalar, a length-{n} vector or an {n}×{n} matrix, got shape {w.shape}")


def multiple_shooting(
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
    states=None,
    method: str = "SLSQP",
    max_iterations: int = 200,
    tolerance: float = 1e-8,
) -> Dict[str, Any]:
    """Multiple shooting: the controls ``u_0 … u_{T−1}`` *and* the states ``x_1 … x_T`` are the
    decision variables, tied by the defect constraints ``x_{k+1} − f(x_k, u_k) = 0``, solved by
    scipy's ``SLSQP`` or ``trust-constr`` with the exact, block-sparse constraint Jacobian from the
    step Jacobians (``∂f/∂x_k = [[dq_dq, dq_dv], [dv_dq, dv_dv]]``, ``∂f/∂u_k = [dq_dtau; dv_dtau]``,
    and ``−I`` for ``x_{k+1}``). Needs scipy. The cost and its arguments are those of :func:`ilqr`;
    ``states`` (T, nq + nv) is the initial guess of the states (default: a rollout of ``controls``).

    Models with quaternion joints (free, spherical) are not supported here (their states do not
    add); use :func:`ilqr` or :func:`shooting` for them.

    :returns: a dict: ``controls`` (T, nv), ``q`` (T+1, nq), ``v`` (T+1, nv) — the optimised states,
        feasible to ``tolerance`` —, ``cost``, ``max_defect`` (largest constraint violation),
        ``iterations``, ``success``, ``message``, ``wall_time``.
    :raises InputError: wrong shapes, a model with quaternion joints, an unknown ``method``.
    """
    import time

    from scipy import optimize, sparse

    from . import InputError

    model = sim.model
    nq, nv = model.nq, model.nv
    if nq != nv:
        raise InputError("multiple_shooting supports models without quaternion joints (nq == nv)")
    if method not in ("SLSQP", "trust-constr"):
        raise InputError(f"method must be 'SLSQP' or 'trust-constr', got {method!r}")
    u_init = np.asarray(controls, dtype=float)
    if u_init.ndim != 2 or u_init.shape[1] != nv or u_init.shape[0] < 1:
        raise InputError(f"controls must have shape (T, {nv}) with T ≥ 1, got {u_init.shape}")
    steps = u_init.shape[0]
    nx = 2 * nv
    x0 = np.concatenate([np.asarray(q0, dtype=float), np.asarray(v0, dtype=float)])
    target = np.concatenate([np.asarray(target_q, dtype=float),
                             np.zeros(nv) if target_v is None else np.asarray(target_v, dtype=float)])
    if x0.shape != (nx,) or target.shape != (nx,):
        raise InputError(f"q0, v0, target_q, target_v must have length {nv} each")
    if not (np.all(np.isfinite(x0)) and np.all(np.isfinite(target)) and np.all(np.isfinite(u_init))):
        raise InputError("q0, v0, controls and the target must be finite")
    Q = _weight(state_weight, nx, 0.0)
    R = _weight(control_weight, nv, 1e-3)
    Qf = _weight(terminal_weight, nx, 1.0)
    if states is None:
        qs, vs = sim.rollout(x0[:nv], x0[nv:], u_init)
        x_init = np.hstack([qs, vs])
    else:
        x_init = np.asarray(states, dtype=float)
        if x_init.shape != (steps, nx):
            raise InputError(f"states must have shape ({steps}, {nx}), got {x_init.shape}")
    nu = steps * nv

    def split(z):
        return z[:nu].reshape(steps, nv), z[nu:].reshape(steps, nx)

    def cost(z):
        u, x = split(z)
        e = np.vstack([x0, x]) - target
        running = 0.5 * np.einsum("ti,ij,tj->", e[:-1], Q, e[:-1]) + 0.5 * np.einsum("ti,ij,tj->", u, R, u)
        return running + 0.5 * e[-1] @ Qf @ e[-1]

    def cost_grad(z):
        u, x = split(z)
        e = np.vstack([x0, x]) - target
        gu = u @ R
        gx = e[1:] @ Q
        gx[-1] = e[-1] @ Qf
        return np.concatenate([gu.ravel(), gx.ravel()])

    def defects_and_jacobian(z):
        u, x = split(z)
        prev = np.vstack([x0, x[:-1]])
        d = np.empty((steps, nx))
        rows, cols, vals = [], [], []

        def block(r0, c0, m):
            ii, jj = np.nonzero(m)
            rows.append(ii + r0)
            cols.append(jj + c0)
            vals.append(m[ii, jj])

        for k in range(steps):
            qn, vn, rec = sim.step(prev[k, :nv], prev[k, nv:], u[k], record=True)
            d[k] = x[k] - np.concatenate([qn, vn])
            jac = rec.jacobians()
            a = np.block([[jac["dq_dq"], jac["dq_dv"]], [jac["dv_dq"], jac["dv_dv"]]])
            b = np.vstack([jac["dq_dtau"], jac["dv_dtau"]])
            block(k * nx, k * nv, -b)
            block(k * nx, nu + k * nx, np.eye(nx))
            if k > 0:
                block(k * nx, nu + (k - 1) * nx, -a)
        jac = sparse.csr_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(steps * nx, nu + steps * nx)
        )
        return d.ravel(), jac

    cache = {}

    def evaluate(z):
        key = z.tobytes()
        if key not in cache:
            cache.clear()
            cache[key] = defects_and_jacobian(z)
        return cache[key]

    lo = np.full(nv, -np.inf) if lower is None else np.broadcast_to(np.asarray(lower, dtype=float), (nv,))
    hi = np.full(nv, np.inf) if upper is None else np.broadcast_to(np.asarray(upper, dtype=float), (nv,))
    if np.any(lo > hi):
        raise InputError("lower bounds must not exceed upper bounds")
    bounds = optimize.Bounds(
        np.concatenate([np.tile(lo, steps), np.full(steps * nx, -np.inf)]),
        np.concatenate([np.tile(hi, steps), np.full(steps * nx, np.inf)]),
    )
    z0 = np.concatenate([np.clip(u_init, lo, hi).ravel(), x_init.ravel()])
    start = time.perf_counter()
    if method == "SLSQP":
        constraint = {"type": "eq", "fun": lambda z: evaluate(z)[0], "jac": lambda z: evaluate(z)[1].toarray()}
        options = {"maxiter": max_iterations, "ftol": tolerance}
    else:
        constraint = optimize.NonlinearConstraint(
            lambda z: evaluate(z)[0], 0.0, 0.0, jac=lambda z: evaluate(z)[1], hess=optimize.BFGS()
        )
        options = {"maxiter": max_iterations, "gtol": tolerance, "xtol": tolerance}
    res = optimize.minimize(
        cost, z0, jac=cost_grad, bounds=bounds, constraints=[constraint], method=method, options=options
    )
    u, x = split(res.x)
    d = evaluate(res.x)[0]
    return {
        "controls": u.copy(),
        "q": np.vstack([x0[:nv], x[:, :nv]]),
        "v": np.vstack([x0[nv:], x[:, nv:]]),
        "cost": float(res.fun),
        "max_defect": float(np.abs(d).max()),
        "iterations": int(getattr(res, "nit", 0) or getattr(res, "niter", 0)),
        "success": bool(res.success),
        "message": str(res.message),
        "wall_time": time.perf_counter() - start,
    }
