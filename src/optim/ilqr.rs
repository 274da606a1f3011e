//! Iterative LQR (Li & Todorov 2004, "Iterative linear quadratic regulator design for
//! nonlinear biological movement systems"; Tassa, Erez & Todorov 2012, "Synthesis and
//! stabilization of complex behaviors through online trajectory optimization").
//!
//! Each iteration linearizes the dynamics along the nominal trajectory
//! (`δx_{t+1} = A_t δx_t + B_t δu_t`, x in the tangent space, from the step Jacobians
//! or finite differences), takes a second-order expansion of the cost, runs the
//! backward Riccati pass for feedforward terms `k_t` and feedback gains `K_t`, and
//! accepts a forward rollout `u_t = ū_t + α k_t + K_t (x_t ⊖ x̄_t)` from a backtracking
//! line search on α.
//!
//! * Regularization: Levenberg–Marquardt on `Q_uu + μ I`, with Tassa's quadratic
//!   schedule — μ grows when `Q_uu + μI` is not positive definite or the line search
//!   fails, and shrinks after an accepted step.
//! * Control bounds ("clamped iLQR"): the forward pass projects every control onto
//!   the box; in the backward pass, a control sitting at a bound whose feedforward
//!   step points out of the box (or whose bounds coincide) is clamped — its
//!   feedforward and feedback rows are zero and the free controls are re-solved from
//!   the free block of `Q_uu`. This is simpler than Tassa, Mansard & Todorov's (2014)
//!   box-QP; it converges on the problems here but gives no KKT guarantee.

use super::cost::{RunningDerivatives, TerminalDerivatives, TrajectoryCost};
use super::{check_problem, rollout, ControlBounds, JacobianSource, Rollout};
use crate::error::{Error, Result};
use crate::sim::{Control, Simulator, State};
use crate::tape::Workspace;
use crate::Model;
use nalgebra::{DMatrix, DVector};
use std::time::{Duration, Instant};

/// Options of [`ilqr`].
#[derive(Clone, Debug, PartialEq)]
pub struct IlqrOptions {
    /// Maximum iterations (backward pass + line search), at least 1.
    pub max_iterations: usize,
    /// Stop when an accepted step lowers the cost by less than
    /// `cost_tolerance · max(1, |J|)`.
    pub cost_tolerance: f64,
    /// Stop when every feedforward step is small: `max_t ‖k_t‖∞ / (1 + ‖ū_t‖∞)` below this.
    pub control_tolerance: f64,
    /// Initial regularization μ (≥ 0).
    pub regularization_init: f64,
    /// μ below this is set to 0.
    pub regularization_min: f64,
    /// Stop (not converged) when μ would exceed this.
    pub regularization_max: f64,
    /// Growth factor of the regularization schedule (> 1).
    pub regularization_factor: f64,
    /// Step sizes tried by the line search: 1, β, β², ... (0 < β < 1).
    pub line_search_factor: f64,
    /// Number of step sizes tried before the line search fails (≥ 1).
    pub line_search_steps: usize,
    /// Accept a step when actual / expected cost reduction exceeds this (Armijo-like, ≥ 0).
    pub min_reduction_ratio: f64,
    /// Box bounds on the controls.
    pub bounds: Option<ControlBounds>,
    /// Analytic or finite-difference step Jacobians.
    pub jacobians: JacobianSource,
    /// Central-difference step ε for [`JacobianSource::FiniteDifference`].
    pub fd_step: f64,
}

impl Default for IlqrOptions {
    fn default() -> Self {
        Self {
            max_iterations: 200,
            cost_tolerance: 1e-7,
            control_tolerance: 1e-6,
            regularization_init: 1e-6,
            regularization_min: 1e-8,
            regularization_max: 1e10,
            regularization_factor: 2.0,
            line_search_factor: 0.5,
            line_search_steps: 12,
            min_reduction_ratio: 1e-4,
            bounds: None,
            jacobians: JacobianSource::Analytic,
            fd_step: 1e-6,
        }
    }
}

impl IlqrOptions {
    /// Checks the options (not the bounds' length, which needs the model).
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &str, x: f64| Err(Error::InvalidInput(format!("iLQR option {what} is invalid: {x}")));
        let pos = |x: f64| x.is_finite() && x > 0.0;
        if self.max_iterations == 0 {
            return bad("max_iterations (≥ 1)", 0.0);
        }
        if !(self.cost_tolerance.is_finite() && self.cost_tolerance >= 0.0) {
            return bad("cost_tolerance (finite, ≥ 0)", self.cost_tolerance);
        }
        if !(self.control_tolerance.is_finite() && self.control_tolerance >= 0.0) {
            return bad("control_tolerance (finite, ≥ 0)", self.control_tolerance);
        }
        if !(self.regularization_init.is_finite() && self.regularization_init >= 0.0) {
            return bad("regularization_init (finite, ≥ 0)", self.regularization_init);
        }
        if !pos(self.regularization_min) {
            return bad("regularization_min (> 0)", self.regularization_min);
        }
        if !(pos(self.regularization_max) && self.regularization_max > self.regularization_min) {
            return bad("regularization_max (> regularization_min)", self.regularization_max);
        }
        if !(self.regularization_factor.is_finite() && self.regularization_factor > 1.0) {
            return bad("regularization_factor (> 1)", self.regularization_factor);
        }
        if !(self.line_search_factor > 0.0 && self.line_search_factor < 1.0) {
            return bad("line_search_factor (in (0, 1))", self.line_search_factor);
        }
        if self.line_search_steps == 0 {
            return bad("line_search_steps (≥ 1)", 0.0);
        }
        if !(self.min_reduction_ratio.is_finite() && self.min_reduction_ratio >= 0.0) {
            return bad("min_reduction_ratio (finite, ≥ 0)", self.min_reduction_ratio);
        }
        if !pos(self.fd_step) {
            return bad("fd_step (> 0)", self.fd_step);
        }
        Ok(())
    }
}

/// What one iLQR iteration did, passed to the progress callback.
#[derive(Clone, Debug, PartialEq)]
pub struct IlqrProgress {
    /// Iteration number (1-based).
    pub iteration: usize,
    /// Cost of the nominal trajectory after the iteration.
    pub cost: f64,
    /// Accepted step size α (0 when the iteration was rejected).
    pub step: f64,
    /// Regularization μ after the iteration.
    pub regularization: f64,
    /// Time since the optimisation started.
    pub elapsed: Duration,
}

/// Why [`ilqr`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IlqrStop {
    /// An accepted step reduced the cost by less than the cost tolerance.
    CostTolerance,
    /// The feedforward steps fell below the control tolerance.
    ControlTolerance,
    /// The iteration limit was reached.
    MaxIterations,
    /// The regularization exceeded its maximum (no descent step found).
    RegularizationLimit,
}

/// The outcome of [`ilqr`].
#[derive(Clone, Debug)]
pub struct IlqrResult {
    /// Optimised controls `u_0..u_{T−1}`.
    pub controls: Vec<DVector<f64>>,
    /// Their trajectory `x_0..=x_T`.
    pub states: Vec<State>,
    /// Feedback gains `K_t` (nv × 2nv, tangent-space state deviations) of the last
    /// backward pass; usable as a time-varying LQR tracking controller.
    pub feedback: Vec<DMatrix<f64>>,
    /// Cost of the initial controls, then after every accepted step (decreasing).
    pub cost_history: Vec<f64>,
    /// Final cost.
    pub cost: f64,
    /// Iterations run (accepted and rejected).
    pub iterations: usize,
    /// True when a tolerance was met.
    pub converged: bool,
    /// Why the optimisation stopped.
    pub stop: IlqrStop,
    /// Wall time of the whole optimisation.
    pub wall_time: Duration,
    /// Time spent computing step Jacobians.
    pub jacobian_time: Duration,
    /// Step Jacobians evaluated (one per time step per linearization).
    pub jacobian_evaluations: usize,
    /// Simulator steps taken (rollouts and finite differences).
    pub simulator_steps: usize,
}

/// Minimises `cost` over the controls from `x0` with iLQR on `sim` (its time step and
/// options define the dynamics), starting from `initial_controls` (T ≥ 1, nv each;
/// projected onto the bounds). `progress` is called after every iteration.
///
/// Errors: dimension mismatches, non-finite inputs, invalid options or bounds, and
/// simulator failures on the initial rollout. Failed steps inside the line search
/// (non-finite states) count as rejected step sizes.
pub fn ilqr(
    sim: &mut Simulator,
    x0: &State,
    initial_controls: &[DVector<f64>],
    cost: &dyn TrajectoryCost,
    options: &IlqrOptions,
    mut progress: Option<&mut dyn FnMut(&IlqrProgress)>,
) -> Result<IlqrResult> {
    let start = Instant::now();
    options.validate()?;
    check_problem(sim.model(), x0, initial_controls, cost, options.bounds.as_ref())?;
    let nv = sim.model().nv();
    let steps = initial_controls.len();
    let mut us: Vec<DVector<f64>> = initial_controls.to_vec();
    if let Some(b) = &options.bounds {
        us.iter_mut().for_each(|u| b.clamp(u));
    }
    let analytic = options.jacobians == JacobianSource::Analytic;
    let mut nominal = rollout(sim, x0, &us, cost, analytic)?;
    let mut sim_steps = steps;
    if !nominal.cost.is_finite() {
        return Err(Error::Numerical {
            algorithm: "iLQR",
            detail: "the initial trajectory's cost is not finite".into(),
        });
    }
    let mut history = vec![nominal.cost];
    let mut mu = options.regularization_init;
    let mut delta = 1.0;
    let mut ws = Workspace::new(sim.model());
    let (mut jac_evals, mut jac_time) = (0usize, Duration::ZERO);
    let mut lin: Option<Linearization> = None;
    let mut gains = Gains { k: vec![DVector::zeros(nv); steps], kk: vec![DMatrix::zeros(nv, 2 * nv); steps] };
    let mut stop = IlqrStop::MaxIterations;
    let mut iterations = 0;
    for iteration in 1..=options.max_iterations {
        iterations = iteration;
        if lin.is_none() {
            let t0 = Instant::now();
            let (l, extra) = linearize(sim, &nominal, &us, cost, options, &mut ws)?;
            jac_time += t0.elapsed();
            jac_evals += steps;
            sim_steps += extra;
            lin = Some(l);
        }
        let l = lin.as_ref().expect("linearized above");
        // Backward pass, raising μ until Q_uu + μI is positive definite everywhere.
        let expected = loop {
            match backward(l, &us, options.bounds.as_ref(), mu, &mut gains) {
                Some(e) => break Some(e),
                None => {
                    increase(&mut mu, &mut delta, options);
                    if mu > options.regularization_max {
                        break None;
                    }
                }
            }
        };
        let Some((dv1, dv2)) = expected else {
            stop = IlqrStop::RegularizationLimit;
            break;
        };
        let kmax = gains.k.iter().zip(&us).map(|(k, u)| k.amax() / (1.0 + u.amax())).fold(0.0, f64::max);
        if kmax < options.control_tolerance {
            stop = IlqrStop::ControlTolerance;
            report(&mut progress, iteration, nominal.cost, 0.0, mu, start);
            break;
        }
        // Line search on α.
        let mut accepted = None;
        let mut alpha = 1.0;
        for _ in 0..options.line_search_steps {
            let trial = forward(sim, x0, &nominal, &us, &gains, alpha, cost, options, analytic);
            sim_steps += steps;
            if let Some((new_us, new_roll)) = trial? {
                let actual = nominal.cost - new_roll.cost;
                let predicted = -(alpha * dv1 + alpha * alpha * dv2);
                let ratio = if predicted > 0.0 { actual / predicted } else { f64::from(actual > 0.0) };
                if actual > 0.0 && ratio > options.min_reduction_ratio {
                    accepted = Some((new_us, new_roll, alpha));
                    break;
                }
            }
            alpha *= options.line_search_factor;
        }
        match accepted {
            Some((new_us, new_roll, alpha)) => {
                let reduction = nominal.cost - new_roll.cost;
                us = new_us;
                nominal = new_roll;
                lin = None;
                history.push(nominal.cost);
                decrease(&mut mu, &mut delta, options);
                report(&mut progress, iteration, nominal.cost, alpha, mu, start);
                if reduction < options.cost_tolerance * nominal.cost.abs().max(1.0) {
                    stop = IlqrStop::CostTolerance;
                    break;
                }
            }
            None => {
                increase(&mut mu, &mut delta, options);
                report(&mut progress, iteration, nominal.cost, 0.0, mu, start);
                if mu > options.regularization_max {
                    stop = IlqrStop::RegularizationLimit;
                    break;
                }
            }
        }
    }
    Ok(IlqrResult {
        controls: us,
        states: nominal.states,
        feedback: gains.kk,
        cost: nominal.cost,
        cost_history: history,
        iterations,
        converged: matches!(stop, IlqrStop::CostTolerance | IlqrStop::ControlTolerance),
        stop,
        wall_time: start.elapsed(),
        jacobian_time: jac_time,
        jacobian_evaluations: jac_evals,
        simulator_steps: sim_steps,
    })
}

fn report(
    progress: &mut Option<&mut dyn FnMut(&IlqrProgress)>,
    iteration: usize,
    cost: f64,
    step: f64,
    regularization: f64,
    start: Instant,
) {
    if let Some(p) = progress.as_mut() {
        p(&IlqrProgress { iteration, cost, step, regularization, elapsed: start.elapsed() });
    }
}

/// Tassa et al. (2012) §II.F: `Δ ← max(Δ₀, Δ·Δ₀)`, `μ ← max(μ_min, μ·Δ)`.
fn increase(mu: &mut f64, delta: &mut f64, o: &IlqrOptions) {
    let d0 = o.regularization_factor;
    *delta = (*delta * d0).max(d0);
    *mu = (*mu * *delta).max(o.regularization_min);
}

/// `Δ ← min(1/Δ₀, Δ/Δ₀)`, `μ ← μ·Δ` (0 below μ_min).
fn decrease(mu: &mut f64, delta: &mut f64, o: &IlqrOptions) {
    let d0 = o.regularization_factor;
    *delta = (*delta / d0).min(1.0 / d0);
    *mu *= *delta;
    if *mu < o.regularization_min {
        *mu = 0.0;
    }
}

/// The dynamics and cost expansions along the nominal trajectory.
struct Linearization {
    a: Vec<DMatrix<f64>>,
    b: Vec<DMatrix<f64>>,
    running: Vec<RunningDerivatives>,
    terminal: TerminalDerivatives,
}

/// Feedforward terms and feedback gains.
struct Gains {
    k: Vec<DVector<f64>>,
    kk: Vec<DMatrix<f64>>,
}

/// Linearizes along `nominal`; returns the expansion and the simulator steps the finite
/// differences took.
fn linearize(
    sim: &mut Simulator,
    nominal: &Rollout,
    us: &[DVector<f64>],
    cost: &dyn TrajectoryCost,
    options: &IlqrOptions,
    ws: &mut Workspace,
) -> Result<(Linearization, usize)> {
    let nv = sim.model().nv();
    let steps = us.len();
    let (mut a, mut b) = (Vec::with_capacity(steps), Vec::with_capacity(steps));
    let mut extra = 0;
    for t in 0..steps {
        let (at, bt) = match options.jacobians {
            JacobianSource::Analytic => {
                let j = nominal.records[t].jacobians_with(ws)?;
                let mut at = DMatrix::zeros(2 * nv, 2 * nv);
                at.view_mut((0, 0), (nv, nv)).copy_from(&j.dq_dq);
                at.view_mut((0, nv), (nv, nv)).copy_from(&j.dq_dv);
                at.view_mut((nv, 0), (nv, nv)).copy_from(&j.dv_dq);
                at.view_mut((nv, nv), (nv, nv)).copy_from(&j.dv_dv);
                let mut bt = DMatrix::zeros(2 * nv, nv);
                bt.view_mut((0, 0), (nv, nv)).copy_from(&j.dq_dtau);
                bt.view_mut((nv, 0), (nv, nv)).copy_from(&j.dv_dtau);
                (at, bt)
            }
            JacobianSource::FiniteDifference => {
                extra += 6 * nv;
                fd_jacobians(sim, &nominal.states[t], &us[t], &nominal.states[t + 1], options.fd_step)?
            }
        };
        a.push(at);
        b.push(bt);
    }
    let model = sim.model();
    let running = (0..steps)
        .map(|t| cost.running_derivatives(model, t, &nominal.states[t], &us[t]))
        .collect::<Result<Vec<_>>>()?;
    let terminal = cost.terminal_derivatives(model, &nominal.states[steps])?;
    Ok((Linearization { a, b, running, terminal }, extra))
}

/// The tangent-space deviation `(q ⊖ q̄, v − v̄)`.
fn state_delta(model: &Model, nominal: &State, x: &State) -> Result<DVector<f64>> {
    let nv = model.nv();
    let dq = model.difference(&nominal.q, &x.q)?;
    let mut d = DVector::zeros(2 * nv);
    d.rows_mut(0, nv).copy_from(&dq);
    d.rows_mut(nv, nv).copy_from(&(&x.v - &nominal.v));
    Ok(d)
}

/// Central-difference `A = ∂x⁺/∂x`, `B = ∂x⁺/∂u` of one step at `(x, u)` whose
/// nominal successor is `next` (output deviations are taken at `next`).
fn fd_jacobians(
    sim: &mut Simulator,
    x: &State,
    u: &DVector<f64>,
    next: &State,
    eps: f64,
) -> Result<(DMatrix<f64>, DMatrix<f64>)> {
    let nv = sim.model().nv();
    let mut a = DMatrix::zeros(2 * nv, 2 * nv);
    let mut b = DMatrix::zeros(2 * nv, nv);
    let eps_u = eps * u.amax().max(1.0);
    // Column j of the full [A B]: inputs (q tangent, v, τ).
    for j in 0..3 * nv {
        let mut column = DVector::zeros(2 * nv);
        let h = if j < 2 * nv { eps } else { eps_u };
        for (sign, s) in [(1.0, 1.0), (-1.0, -1.0)] {
            let mut xs = x.clone();
            let mut us = u.clone();
            if j < nv {
                let mut e = DVector::zeros(nv);
                e[j] = 1.0;
                xs.q = sim.model().integrate(&x.q, &e, s * h)?;
            } else if j < 2 * nv {
                xs.v[j - nv] += s * h;
            } else {
                us[j - 2 * nv] += s * h;
            }
            sim.reset_warm_start();
            let out = sim.step(&xs, &Control::torques(us))?;
            column += state_delta(sim.model(), next, &out)? * (sign / (2.0 * h));
        }
        if j < 2 * nv {
            a.set_column(j, &column);
        } else {
            b.set_column(j - 2 * nv, &column);
        }
    }
    Ok((a, b))
}

/// The backward (Riccati) pass at regularization μ. Fills `gains`; returns the
/// expected-reduction terms `(Σ kᵀQ_u, Σ ½ kᵀQ_uu k)`, or `None` when a regularized
/// `Q_uu` is not positive definite.
fn backward(
    l: &Linearization,
    us: &[DVector<f64>],
    bounds: Option<&ControlBounds>,
    mu: f64,
    gains: &mut Gains,
) -> Option<(f64, f64)> {
    let mut vx = l.terminal.lx.clone();
    let mut vxx = l.terminal.lxx.clone();
    let nu = us[0].len();
    let (mut dv1, mut dv2) = (0.0, 0.0);
    for t in (0..us.len()).rev() {
        let (a, b, r) = (&l.a[t], &l.b[t], &l.running[t]);
        let vxx_a = &vxx * a;
        let vxx_b = &vxx * b;
        let qx = &r.lx + a.tr_mul(&vx);
        let qu = &r.lu + b.tr_mul(&vx);
        let qxx = &r.lxx + a.tr_mul(&vxx_a);
        let quu = &r.luu + b.tr_mul(&vxx_b);
        let qux = &r.lux + b.tr_mul(&vxx_a);
        let mut quu_reg = quu.clone();
        for i in 0..nu {
            quu_reg[(i, i)] += mu;
        }
        let chol = quu_reg.clone().cholesky()?;
        let mut k = -chol.solve(&qu);
        let mut kk = -chol.solve(&qux);
        if let Some(bnd) = bounds {
            let u = &us[t];
            let clamped: Vec<bool> = (0..nu)
                .map(|i| {
                    let (lo, hi) = (bnd.lower[i], bnd.upper[i]);
                    let tol = 1e-12 * (1.0 + u[i].abs());
                    lo == hi || (u[i] >= hi - tol && k[i] > 0.0) || (u[i] <= lo + tol && k[i] < 0.0)
                })
                .collect();
            if clamped.iter().any(|c| *c) {
                let free: Vec<usize> = (0..nu).filter(|&i| !clamped[i]).collect();
                k.fill(0.0);
                kk.fill(0.0);
                if !free.is_empty() {
                    let nf = free.len();
                    let qff = DMatrix::from_fn(nf, nf, |i, j| quu_reg[(free[i], free[j])]);
                    let cf = qff.cholesky()?;
                    let kf = -cf.solve(&DVector::from_fn(nf, |i, _| qu[free[i]]));
                    let kkf = -cf.solve(&DMatrix::from_fn(nf, qux.ncols(), |i, j| qux[(free[i], j)]));
                    for (n, &i) in free.iter().enumerate() {
                        k[i] = kf[n];
                        kk.set_row(i, &kkf.row(n));
                    }
                }
            }
        }
        dv1 += k.dot(&qu);
        dv2 += 0.5 * k.dot(&(&quu * &k));
        let kt_quu = kk.tr_mul(&quu);
        vx = qx + &kt_quu * &k + kk.tr_mul(&qu) + qux.tr_mul(&k);
        let v = qxx + &kt_quu * &kk + kk.tr_mul(&qux) + qux.tr_mul(&kk);
        vxx = (&v + v.transpose()) * 0.5;
        gains.k[t] = k;
        gains.kk[t] = kk;
    }
    Some((dv1, dv2))
}

/// The forward pass at step size α: `u_t = clamp(ū_t + α k_t + K_t (x_t ⊖ x̄_t))`.
/// `Ok(None)` when the rollout failed numerically (non-finite states or cost).
#[allow(clippy::too_many_arguments)]
fn forward(
    sim: &mut Simulator,
    x0: &State,
    nominal: &Rollout,
    us: &[DVector<f64>],
    gains: &Gains,
    alpha: f64,
    cost: &dyn TrajectoryCost,
    options: &IlqrOptions,
    record: bool,
) -> Result<Option<(Vec<DVector<f64>>, Rollout)>> {
    match forward_inner(sim, x0, nominal, us, gains, alpha, cost, options, record) {
        Err(Error::Numerical { .. }) | Err(Error::NonFinite { .. }) => Ok(None),
        other => other,
    }
}

#[allow(clippy::too_many_arguments)]
fn forward_inner(
    sim: &mut Simulator,
    x0: &State,
    nominal: &Rollout,
    us: &[DVector<f64>],
    gains: &Gains,
    alpha: f64,
    cost: &dyn TrajectoryCost,
    options: &IlqrOptions,
    record: bool,
) -> Result<Option<(Vec<DVector<f64>>, Rollout)>> {
    let model_nv = sim.model().nv();
    let mut new_us = Vec::with_capacity(us.len());
    let mut states = Vec::with_capacity(us.len() + 1);
    let mut records = Vec::with_capacity(if record { us.len() } else { 0 });
    states.push(x0.clone());
    let mut total = 0.0;
    sim.reset_warm_start();
    for t in 0..us.len() {
        let x = &states[t];
        let dx = state_delta(sim.model(), &nominal.states[t], x)?;
        let mut u = &us[t] + &gains.k[t] * alpha + &gains.kk[t] * dx;
        debug_assert_eq!(u.len(), model_nv);
        if let Some(b) = &options.bounds {
            b.clamp(&mut u);
        }
        if !u.iter().all(|x| x.is_finite()) {
            return Ok(None);
        }
        total += cost.running(sim.model(), t, x, &u)?;
        let control = Control::torques(u.clone());
        let stepped = if record {
            sim.step_recorded(x, &control).map(|(n, r)| {
                records.push(r);
                n
            })
        } else {
            sim.step(x, &control)
        };
        states.push(stepped?);
        new_us.push(u);
    }
    total += cost.terminal(sim.model(), &states[us.len()])?;
    if !total.is_finite() {
        return Ok(None);
    }
    Ok(Some((new_us, Rollout { states, records, cost: total })))
}
