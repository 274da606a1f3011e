//! Single shooting: the controls are the only unknowns, the states follow by
//! simulation, and `J(u_0..u_{T−1})` is minimised with L-BFGS (Nocedal & Wright,
//! *Numerical Optimization*, 2nd ed., Alg. 7.4 and 7.5 — two-loop recursion with the
//! `sᵀy / yᵀy` initial scaling) and a backtracking Armijo line search.
//!
//! The gradient `∂J/∂u_t` is one reverse pass over the recorded rollout
//! ([`Tape::backward`]) with the cost's partial derivatives as seeds. Control bounds
//! are handled by projection: trial points are projected onto the box, and
//! coordinates at a bound whose gradient points outward are held fixed for the
//! iteration (a projected-gradient variant of L-BFGS; it does not carry
//! L-BFGS-B's generalized Cauchy point).

use super::cost::TrajectoryCost;
use super::{check_problem, rollout, ControlBounds};
use crate::error::{Error, Result};
use crate::sim::{Simulator, State};
use crate::tape::Tape;
use nalgebra::DVector;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Options of [`shooting`].
#[derive(Clone, Debug, PartialEq)]
pub struct ShootingOptions {
    /// Maximum L-BFGS iterations (≥ 1).
    pub max_iterations: usize,
    /// Number of correction pairs kept (≥ 1).
    pub memory: usize,
    /// Stop when the projected gradient's largest entry is below this.
    pub gradient_tolerance: f64,
    /// Stop when an iteration lowers the cost by less than `cost_tolerance · max(1, |J|)`.
    pub cost_tolerance: f64,
    /// Sufficient-decrease constant c₁ of the Armijo condition (in (0, 1)).
    pub armijo: f64,
    /// Backtracking factor (in (0, 1)).
    pub line_search_factor: f64,
    /// Step sizes tried before the line search fails (≥ 1).
    pub line_search_steps: usize,
    /// Largest entry of the first (steepest-descent) step, before any curvature is known.
    pub initial_step: f64,
    /// Box bounds on the controls (projection).
    pub bounds: Option<ControlBounds>,
}

impl Default for ShootingOptions {
    fn default() -> Self {
        Self {
            max_iterations: 200,
            memory: 10,
            gradient_tolerance: 1e-6,
            cost_tolerance: 1e-10,
            armijo: 1e-4,
            line_search_factor: 0.5,
            line_search_steps: 30,
            initial_step: 1.0,
            bounds: None,
        }
    }
}

impl ShootingOptions {
    /// Checks the options (not the bounds' length, which needs the model).
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &str, x: f64| Err(Error::InvalidInput(format!("shooting option {what} is invalid: {x}")));
        if self.max_iterations == 0 {
            return bad("max_iterations (≥ 1)", 0.0);
        }
        if self.memory == 0 {
            return bad("memory (≥ 1)", 0.0);
        }
        if !(self.gradient_tolerance.is_finite() && self.gradient_tolerance >= 0.0) {
            return bad("gradient_tolerance (finite, ≥ 0)", self.gradient_tolerance);
        }
        if !(self.cost_tolerance.is_finite() && self.cost_tolerance >= 0.0) {
            return bad("cost_tolerance (finite, ≥ 0)", self.cost_tolerance);
        }
        if !(self.armijo > 0.0 && self.armijo < 1.0) {
            return bad("armijo (in (0, 1))", self.armijo);
        }
        if !(self.line_search_factor > 0.0 && self.line_search_factor < 1.0) {
            return bad("line_search_factor (in (0, 1))", self.line_search_factor);
        }
        if self.line_search_steps == 0 {
            return bad("line_search_steps (≥ 1)", 0.0);
        }
        if !(self.initial_step.is_finite() && self.initial_step > 0.0) {
            return bad("initial_step (> 0)", self.initial_step);
        }
        Ok(())
    }
}

/// What one shooting iteration did, passed to the progress callback.
#[derive(Clone, Debug, PartialEq)]
pub struct ShootingProgress {
    /// Iteration number (1-based).
    pub iteration: usize,
    /// Cost after the iteration.
    pub cost: f64,
    /// Largest entry of the projected gradient at the new point.
    pub gradient_norm: f64,
    /// Accepted step size.
    pub step: f64,
    /// Time since the optimisation started.
    pub elapsed: Duration,
}

/// Why [`shooting`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShootingStop {
    /// The projected gradient fell below the gradient tolerance.
    GradientTolerance,
    /// An iteration reduced the cost by less than the cost tolerance.
    CostTolerance,
    /// The iteration limit was reached.
    MaxIterations,
    /// No step size satisfied the Armijo condition, even along steepest descent.
    LineSearchFailed,
}

/// The outcome of [`shooting`].
#[derive(Clone, Debug)]
pub struct ShootingResult {
    /// Optimised controls.
    pub controls: Vec<DVector<f64>>,
    /// Their trajectory `x_0..=x_T`.
    pub states: Vec<State>,
    /// Cost of the initial controls, then after every iteration (decreasing).
    pub cost_history: Vec<f64>,
    /// Final cost.
    pub cost: f64,
    /// Largest entry of the final projected gradient.
    pub gradient_norm: f64,
    /// Iterations run.
    pub iterations: usize,
    /// True when a tolerance was met.
    pub converged: bool,
    /// Why the optimisation stopped.
    pub stop: ShootingStop,
    /// Wall time.
    pub wall_time: Duration,
    /// Rollouts whose cost was evaluated (including line-search trials).
    pub cost_evaluations: usize,
    /// Gradients evaluated (each a recorded rollout and a reverse pass).
    pub gradient_evaluations: usize,
}

/// The cost `J` of `controls` from `x0` and its gradient `∂J/∂u_t` (nv each), by a
/// recorded rollout and one [`Tape::backward`] pass.
pub fn shooting_gradient(
    sim: &mut Simulator,
    x0: &State,
    controls: &[DVector<f64>],
    cost: &dyn TrajectoryCost,
) -> Result<(f64, Vec<DVector<f64>>)> {
    check_problem(sim.model(), x0, controls, cost, None)?;
    cost_and_gradient(sim, x0, controls, cost)
}

fn cost_and_gradient(
    sim: &mut Simulator,
    x0: &State,
    controls: &[DVector<f64>],
    cost: &dyn TrajectoryCost,
) -> Result<(f64, Vec<DVector<f64>>)> {
    let roll = rollout(sim, x0, controls, cost, true)?;
    let model = sim.model();
    let nv = model.nv();
    let steps = controls.len();
    let split = |lx: &DVector<f64>| (lx.rows(0, nv).into_owned(), lx.rows(nv, nv).into_owned());
    let mut grad_states = Vec::with_capacity(steps + 1);
    let mut grad_controls = Vec::with_capacity(steps);
    for t in 0..steps {
        let d = cost.running_derivatives(model, t, &roll.states[t], &controls[t])?;
        grad_states.push(split(&d.lx));
        grad_controls.push(d.lu);
    }
    grad_states.push(split(&cost.terminal_derivatives(model, &roll.states[steps])?.lx));
    let mut tape = Tape::new();
    for r in roll.records {
        tape.push(r)?;
    }
    let g = tape.backward(&grad_states, &grad_controls)?;
    Ok((roll.cost, g.tau))
}

/// Minimises `cost` over the controls from `x0` by single shooting with L-BFGS on
/// `sim`, starting from `initial_controls` (projected onto the bounds). `progress`
/// is called after every iteration.
pub fn shooting(
    sim: &mut Simulator,
    x0: &State,
    initial_controls: &[DVector<f64>],
    cost: &dyn TrajectoryCost,
    options: &ShootingOptions,
    mut progress: Option<&mut dyn FnMut(&ShootingProgress)>,
) -> Result<ShootingResult> {
    let start = Instant::now();
    options.validate()?;
    check_problem(sim.model(), x0, initial_controls, cost, options.bounds.as_ref())?;
    let nv = sim.model().nv();
    let steps = initial_controls.len();
    let n = nv * steps;
    let (lo, hi) = match &options.bounds {
        Some(b) => (DVector::from_fn(n, |i, _| b.lower[i % nv]), DVector::from_fn(n, |i, _| b.upper[i % nv])),
        None => (DVector::from_element(n, f64::NEG_INFINITY), DVector::from_element(n, f64::INFINITY)),
    };
    let project = |z: &mut DVector<f64>| {
        for i in 0..n {
            z[i] = z[i].clamp(lo[i], hi[i]);
        }
    };
    let unflatten =
        |z: &DVector<f64>| -> Vec<DVector<f64>> { (0..steps).map(|t| z.rows(t * nv, nv).into_owned()).collect() };
    let flatten = |us: &[DVector<f64>]| -> DVector<f64> { DVector::from_fn(n, |i, _| us[i / nv][i % nv]) };

    let mut z = flatten(initial_controls);
    project(&mut z);
    let (mut f, g0) = cost_and_gradient(sim, x0, &unflatten(&z), cost)?;
    if !f.is_finite() {
        return Err(Error::Numerical {
            algorithm: "shooting",
            detail: "the initial trajectory's cost is not finite".into(),
        });
    }
    let mut g = flatten(&g0);
    let (mut cost_evals, mut grad_evals) = (1usize, 1usize);
    let mut history = vec![f];
    let mut memory: VecDeque<(DVector<f64>, DVector<f64>, f64)> = VecDeque::new();
    let active = |z: &DVector<f64>, g: &DVector<f64>, i: usize| {
        lo[i] == hi[i] || (z[i] <= lo[i] && g[i] > 0.0) || (z[i] >= hi[i] && g[i] < 0.0)
    };
    let projected =
        |z: &DVector<f64>, g: &DVector<f64>| DVector::from_fn(n, |i, _| if active(z, g, i) { 0.0 } else { g[i] });
    let mut pg = projected(&z, &g);
    let mut stop = ShootingStop::MaxIterations;
    let mut iterations = 0;
    for iteration in 1..=options.max_iterations {
        if pg.amax() < options.gradient_tolerance {
            stop = ShootingStop::GradientTolerance;
            break;
        }
        iterations = iteration;
        let mut accepted = None;
        // Two attempts: the L-BFGS direction, then (memory cleared) steepest descent.
        for attempt in 0..2 {
            let mut d = if memory.is_empty() {
                -&pg * (options.initial_step / pg.amax()).min(1.0)
            } else {
                two_loop(&pg, &memory)
            };
            for i in 0..n {
                if active(&z, &g, i) {
                    d[i] = 0.0;
                }
            }
            if d.dot(&g) >= 0.0 {
                memory.clear();
                d = -&pg * (options.initial_step / pg.amax()).min(1.0);
            }
            let mut alpha = 1.0;
            for _ in 0..options.line_search_steps {
                let mut trial = &z + &d * alpha;
                project(&mut trial);
                let decrease = g.dot(&(&trial - &z));
                cost_evals += 1;
                let ft = match rollout(sim, x0, &unflatten(&trial), cost, false) {
                    Ok(r) => r.cost,
                    Err(Error::Numerical { .. }) | Err(Error::NonFinite { .. }) => f64::INFINITY,
                    Err(e) => return Err(e),
                };
                if ft.is_finite() && ft <= f + options.armijo * decrease && decrease < 0.0 {
                    accepted = Some((trial, alpha));
                    break;
                }
                alpha *= options.line_search_factor;
            }
            if accepted.is_some() || attempt == 1 || memory.is_empty() {
                break;
            }
            memory.clear();
        }
        let Some((z_new, alpha)) = accepted else {
            stop = ShootingStop::LineSearchFailed;
            break;
        };
        let (f_new, g_new) = cost_and_gradient(sim, x0, &unflatten(&z_new), cost)?;
        grad_evals += 1;
        let g_new = flatten(&g_new);
        let s = &z_new - &z;
        let y = &g_new - &g;
        let sy = s.dot(&y);
        if sy > 1e-12 * s.norm() * y.norm() {
            if memory.len() == options.memory {
                memory.pop_front();
            }
            memory.push_back((s, y, 1.0 / sy));
        }
        let reduction = f - f_new;
        z = z_new;
        f = f_new;
        g = g_new;
        pg = projected(&z, &g);
        history.push(f);
        if let Some(p) = progress.as_mut() {
            p(&ShootingProgress {
                iteration,
                cost: f,
                gradient_norm: pg.amax(),
                step: alpha,
                elapsed: start.elapsed(),
            });
        }
        if reduction < options.cost_tolerance * f.abs().max(1.0) {
            stop = ShootingStop::CostTolerance;
            break;
        }
    }
    let controls = unflatten(&z);
    let states = rollout(sim, x0, &controls, cost, false)?.states;
    Ok(ShootingResult {
        controls,
        states,
        cost_history: history,
        cost: f,
        gradient_norm: pg.amax(),
        iterations,
        converged: matches!(stop, ShootingStop::GradientTolerance | ShootingStop::CostTolerance),
        stop,
        wall_time: start.elapsed(),
        cost_evaluations: cost_evals,
        gradient_evaluations: grad_evals,
    })
}

/// The L-BFGS direction `−H g` by the two-loop recursion over `(s, y, 1/sᵀy)` pairs.
fn two_loop(g: &DVector<f64>, memory: &VecDeque<(DVector<f64>, DVector<f64>, f64)>) -> DVector<f64> {
    let mut q = g.clone();
    let mut alphas = Vec::with_capacity(memory.len());
    for (s, y, rho) in memory.iter().rev() {
        let a = rho * s.dot(&q);
        q.axpy(-a, y, 1.0);
        alphas.push(a);
    }
    let (s, y, _) = memory.back().expect("memory is not empty");
    let gamma = s.dot(y) / y.dot(y);
    let mut r = q * gamma;
    for ((s, y, rho), a) in memory.iter().zip(alphas.iter().rev()) {
        let b = rho * y.dot(&r);
        r.axpy(a - b, s, 1.0);
    }
    -r
}
