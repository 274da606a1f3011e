//! Identification of a soft body's parameters (E, ν, ρ per region, damping) from an
//! observed trajectory: Levenberg–Marquardt on the position residuals
//! `r = x_k(θ) − x_k^obs`, with the residual Jacobian from forward sensitivities through
//! the steps' Jacobians (`adjoint.rs`):
//!
//! ```text
//! S^x_{k+1} = X_x S^x_k + X_v S^v_k + X_θ,   S^v_{k+1} = V_x S^x_k + V_v S^v_k + V_θ,
//! ```
//!
//! `S_0 = 0`, over the selected columns of θ. Marquardt's scaling by `diag(JᵀJ)` makes
//! the iteration indifferent to the parameters' units (E in Pa beside ν).

use super::body::SoftBody;
use super::implicit::{step, SoftOptions, SoftState};
use crate::error::{check_vector, Error, Result};
use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// An observed experiment: the known initial state, forces and pin targets of every
/// step, and observed positions after chosen steps.
#[derive(Clone, Debug, PartialEq)]
pub struct SoftTrajectory {
    /// The initial state.
    pub initial: SoftState,
    /// The vertex forces of every step.
    pub controls: Vec<DVector<f64>>,
    /// The pin targets of every step.
    pub targets: Vec<DVector<f64>>,
    /// `(k, x)`: the positions observed after step k (1 ≤ k ≤ steps).
    pub observed: Vec<(usize, DVector<f64>)>,
    /// The step options.
    pub options: SoftOptions,
}

/// Options of [`identify`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoftFitOptions {
    /// At most this many Levenberg–Marquardt iterations.
    pub max_iterations: usize,
    /// Stop when a step changes every parameter by less than this, relative.
    pub tolerance: f64,
}

impl Default for SoftFitOptions {
    fn default() -> Self {
        SoftFitOptions { max_iterations: 50, tolerance: 1e-12 }
    }
}

/// The result of [`identify`].
#[derive(Clone, Debug)]
pub struct SoftFit {
    /// The fitted parameters' names.
    pub names: Vec<String>,
    /// Their values.
    pub values: DVector<f64>,
    /// The body with all fitted values.
    pub body: SoftBody,
    /// `½ ‖r‖²` at the start.
    pub initial_cost: f64,
    /// `½ ‖r‖²` at the end.
    pub cost: f64,
    /// Iterations taken.
    pub iterations: usize,
}

/// The residuals and, when asked, their Jacobian in the selected columns of θ.
fn residuals(
    body: &Arc<SoftBody>,
    data: &SoftTrajectory,
    columns: &[usize],
    jacobian: bool,
) -> Result<(DVector<f64>, DMatrix<f64>)> {
    let n = body.ndof();
    let rows = n * data.observed.len();
    let mut r = DVector::zeros(rows);
    let mut jac = DMatrix::zeros(if jacobian { rows } else { 0 }, columns.len());
    let (mut sx, mut sv) = (DMatrix::zeros(n, columns.len()), DMatrix::zeros(n, columns.len()));
    let mut s = data.initial.clone();
    let last = data.observed.iter().map(|o| o.0).max().unwrap_or(0);
    for k in 0..last {
        let rec = step(body, &s, &data.controls[k], &data.targets[k], &data.options).map_err(|e| e.at_step(k))?;
        if jacobian {
            let j = rec.jacobians()?;
            let pick = |m: &DMatrix<f64>| DMatrix::from_fn(n, columns.len(), |i, c| m[(i, columns[c])]);
            let nx = &j.x_x * &sx + &j.x_v * &sv + pick(&j.x_theta);
            let nv = &j.v_x * &sx + &j.v_v * &sv + pick(&j.v_theta);
            sx = nx;
            sv = nv;
        }
        s = rec.next_state().clone();
        for (o, (step_k, x)) in data.observed.iter().enumerate() {
            if *step_k == k + 1 {
                r.rows_mut(o * n, n).copy_from(&(&s.x - x));
                if jacobian {
                    jac.rows_mut(o * n, n).copy_from(&sx);
                }
            }
        }
    }
    Ok((r, jac))
}

/// Fits the parameters named `free` (see [`SoftBody::param_names`]) of `body` to `data`,
/// starting from the body's values. Errors: unknown names, inconsistent data, a step
/// that fails, a fit that leaves the parameters' domain.
pub fn identify(body: &SoftBody, data: &SoftTrajectory, free: &[&str], options: &SoftFitOptions) -> Result<SoftFit> {
    let names = body.param_names();
    let columns = free
        .iter()
        .map(|f| {
            names
                .iter()
                .position(|n| n == f)
                .ok_or_else(|| Error::InvalidInput(format!("soft fit: no parameter '{f}' (parameters: {names:?})")))
        })
        .collect::<Result<Vec<_>>>()?;
    let steps = data.controls.len();
    if data.targets.len() != steps {
        return Err(Error::Dimension { what: "soft fit targets", expected: steps, got: data.targets.len() });
    }
    for (k, x) in &data.observed {
        if *k == 0 || *k > steps {
            return Err(Error::InvalidInput(format!(
                "soft fit: an observation after step {k}, but the data has {steps} steps"
            )));
        }
        check_vector("soft fit observed positions", x.as_slice(), body.ndof())?;
    }
    let mut theta = body.param_values();
    let mut current = Arc::new(body.clone());
    let (mut r, mut jac) = residuals(&current, data, &columns, true)?;
    let initial_cost = 0.5 * r.norm_squared();
    let mut cost = initial_cost;
    let mut damping = 1e-3;
    let mut iterations = 0;
    let mut converged = false;
    while !converged && iterations < options.max_iterations && cost > 0.0 {
        iterations += 1;
        let jtj = jac.transpose() * &jac;
        let g = jac.transpose() * &r;
        let mut accepted = false;
        for _ in 0..30 {
            let mut a = jtj.clone();
            for c in 0..columns.len() {
                a[(c, c)] += damping * jtj[(c, c)].max(f64::MIN_POSITIVE);
            }
            let Some(delta) = a.cholesky().map(|ch| ch.solve(&(-&g))) else {
                damping *= 10.0;
                continue;
            };
            let mut trial = theta.clone();
            for (c, &col) in columns.iter().enumerate() {
                trial[col] += delta[c];
            }
            let Ok(candidate) = body.with_param_values(trial.as_slice()) else {
                damping *= 10.0;
                continue;
            };
            let candidate = Arc::new(candidate);
            let (r_new, _) = residuals(&candidate, data, &columns, false)?;
            let new_cost = 0.5 * r_new.norm_squared();
            if new_cost < cost {
                let small = columns
                    .iter()
                    .enumerate()
                    .all(|(c, &col)| delta[c].abs() <= options.tolerance * theta[col].abs().max(1e-300));
                theta = trial;
                current = candidate;
                (r, jac) = residuals(&current, data, &columns, true)?;
                cost = 0.5 * r.norm_squared();
                damping = (damping / 10.0).max(1e-12);
                accepted = true;
                converged = small;
                break;
            }
            damping *= 10.0;
        }
        if !accepted {
            break;
        }
    }
    let values = DVector::from_iterator(columns.len(), columns.iter().map(|&c| theta[c]));
    Ok(SoftFit {
        names: free.iter().map(|s| s.to_string()).collect(),
        values,
        body: (*current).clone(),
        initial_cost,
        cost,
        iterations,
    })
}
