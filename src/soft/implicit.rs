//! One backward-Euler step of a soft body: Newton's method on the incremental potential
//! Φ of `potential.rs` over the free degrees of freedom, with a backtracking (Armijo)
//! line search, the sparse Cholesky factorization of the exact Hessian, and the
//! element tangents projected onto the PSD cone only when the exact Hessian is not
//! positive definite. Pinned degrees of freedom take their targets. The result is a
//! self-contained [`SoftStepRecord`] (the adjoint, `adjoint.rs`, needs nothing else).
//!
//! Stopping rule: the Newton step `Δy = −H⁻¹ ∇Φ` is taken in full and the iteration stops
//! once `‖Δy‖∞ ≤ tolerance · L` (`L` the diagonal of the rest mesh's bounding box):
//! near the solution Newton converges quadratically, so the remaining error is far
//! below that step.

use super::body::SoftBody;
use super::potential::StepPotential;
use crate::error::{check_vector, Error, Result};
use nalgebra::DVector;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Instant;

/// Options of a soft-body step.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoftOptions {
    /// Time step h (s), finite and positive.
    pub dt: f64,
    /// Newton stops when its step is at most `tolerance` times the rest mesh's size.
    pub tolerance: f64,
    /// At most this many Newton iterations; more is an error.
    pub max_iterations: usize,
    /// Backtracking line search on Φ (default on); off, every Newton step is taken in full.
    pub line_search: bool,
    /// The time integrator (default backward Euler).
    pub integrator: SoftIntegrator,
}

/// The implicit time integrator of a soft-body step; both minimise an incremental
/// potential (`potential.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SoftIntegrator {
    /// Backward Euler: first order, strongly damps fast oscillations; keeps linear
    /// momentum, not angular momentum (it changes by `h Σ m v⁺ × v` per step).
    #[default]
    BackwardEuler,
    /// The implicit midpoint rule: second order, no numerical damping; keeps linear and
    /// angular momentum (`M (v⁺ − v) = h f((x + x⁺)/2)`, `x⁺ = x + h (v + v⁺)/2`).
    ImplicitMidpoint,
}

impl Default for SoftOptions {
    fn default() -> Self {
        SoftOptions {
            dt: 1e-3,
            tolerance: 1e-10,
            max_iterations: 50,
            line_search: true,
            integrator: SoftIntegrator::BackwardEuler,
        }
    }
}

impl SoftOptions {
    pub(crate) fn validate(&self) -> Result<()> {
        if !(self.dt.is_finite() && self.dt > 0.0) {
            return Err(Error::InvalidInput(format!("soft step: dt must be finite and positive, got {}", self.dt)));
        }
        if !(self.tolerance.is_finite() && self.tolerance > 0.0) {
            return Err(Error::InvalidInput(format!(
                "soft step: the tolerance must be finite and positive, got {}",
                self.tolerance
            )));
        }
        if self.max_iterations == 0 {
            return Err(Error::InvalidInput("soft step: max_iterations must be at least 1".into()));
        }
        Ok(())
    }
}

/// How Newton went in one step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NewtonReport {
    /// Newton iterations (Hessian factorizations).
    pub iterations: usize,
    /// `‖∇Φ‖∞` over the free degrees of freedom at each iterate (N).
    pub gradient_norms: Vec<f64>,
    /// `‖Δy‖∞` of each Newton step (m).
    pub step_norms: Vec<f64>,
    /// The line search's step length of each iteration (1 = full step).
    pub step_lengths: Vec<f64>,
    /// Iterations whose exact Hessian was not positive definite, so that the element
    /// tangents were projected onto the PSD cone.
    pub projected_iterations: usize,
    /// Wall-clock time spent in each part of the iteration.
    pub timings: NewtonTimings,
    /// Elements with `det F ≤ 0` at the end of the step (the stable Neo-Hookean model
    /// keeps going through inversion; the others are not meant for it).
    pub inverted_elements: usize,
}

/// Wall-clock seconds spent in each part of a Newton solve (for profiling; not
/// deterministic).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NewtonTimings {
    /// Element loops: energy, forces and the Hessian's values.
    pub assembly: f64,
    /// Numeric sparse Cholesky factorizations.
    pub factorization: f64,
    /// Triangular solves.
    pub solve: f64,
    /// Energy evaluations of the line search.
    pub line_search: f64,
}

/// A soft body's state: vertex positions and velocities (3 per vertex).
#[derive(Clone, Debug, PartialEq)]
pub struct SoftState {
    /// Positions `x` (m).
    pub x: DVector<f64>,
    /// Velocities `v` (m/s).
    pub v: DVector<f64>,
}

impl SoftState {
    /// The body at rest in its rest configuration.
    pub fn rest(body: &SoftBody) -> SoftState {
        SoftState { x: body.rest_positions(), v: DVector::zeros(body.ndof()) }
    }
}

/// One recorded step: the body, the options, the inputs, the result and the Newton
/// report. Self-contained: [`SoftStepRecord::vjp`] and [`SoftStepRecord::jacobians`]
/// (`adjoint.rs`) need nothing else.
#[derive(Clone, Debug)]
pub struct SoftStepRecord {
    pub(crate) body: Arc<SoftBody>,
    pub(crate) options: SoftOptions,
    pub(crate) x: DVector<f64>,
    pub(crate) v: DVector<f64>,
    pub(crate) u: DVector<f64>,
    pub(crate) targets: DVector<f64>,
    pub(crate) next: SoftState,
    pub(crate) report: NewtonReport,
}

impl SoftStepRecord {
    /// The state at the end of the step.
    pub fn next_state(&self) -> &SoftState {
        &self.next
    }

    /// How Newton went.
    pub fn report(&self) -> &NewtonReport {
        &self.report
    }

    /// The body that was stepped.
    pub fn body(&self) -> &Arc<SoftBody> {
        &self.body
    }

    /// The options of the step.
    pub fn options(&self) -> &SoftOptions {
        &self.options
    }

    /// The vertex forces of the step.
    pub fn controls(&self) -> &DVector<f64> {
        &self.u
    }

    /// The pin targets of the step.
    pub fn targets(&self) -> &DVector<f64> {
        &self.targets
    }

    /// The start state.
    pub fn state(&self) -> SoftState {
        SoftState { x: self.x.clone(), v: self.v.clone() }
    }
}

/// Steps `body` from `state` under vertex forces `u` (3 per vertex, N), the pinned
/// degrees of freedom moving to `targets` (one per [`SoftBody::pinned_dofs`]).
/// Errors: sizes, non-finite inputs, invalid options, a Newton iteration that does not
/// converge within `max_iterations`, a Hessian that cannot be factored.
pub fn step(
    body: &Arc<SoftBody>,
    state: &SoftState,
    u: &DVector<f64>,
    targets: &DVector<f64>,
    options: &SoftOptions,
) -> Result<SoftStepRecord> {
    options.validate()?;
    let n = body.ndof();
    check_vector("soft x", state.x.as_slice(), n)?;
    check_vector("soft v", state.v.as_slice(), n)?;
    check_vector("soft u", u.as_slice(), n)?;
    check_vector("soft pin targets", targets.as_slice(), body.pinned_dofs().len())?;
    let h = options.dt;
    let midpoint = options.integrator == SoftIntegrator::ImplicitMidpoint;
    let potential = StepPotential::new(body, h, state.x.as_slice(), state.v.as_slice(), u.as_slice(), midpoint);
    let mut y: Vec<f64> = (0..n).map(|d| state.x[d] + h * state.v[d]).collect();
    for (&d, &t) in body.pinned_dofs().iter().zip(targets.iter()) {
        y[d] = t;
    }
    let report = minimize(&potential, &mut y, options)?;
    let x_next = DVector::from_vec(y);
    // v⁺ = c (x⁺ − x)/h − (c − 1) v.
    let c = potential.inertia;
    let v_next = (&x_next - &state.x) * (c / h) - &state.v * (c - 1.0);
    Ok(SoftStepRecord {
        body: body.clone(),
        options: *options,
        x: state.x.clone(),
        v: state.v.clone(),
        u: u.clone(),
        targets: targets.clone(),
        next: SoftState { x: x_next, v: v_next },
        report,
    })
}

/// Minimises `potential` over the free degrees of freedom from `y` (pinned entries
/// already at their targets), in place: Newton with the exact Hessian (element tangents
/// projected when it is not positive definite) and an Armijo backtracking line search.
fn minimize(potential: &StepPotential, y: &mut [f64], options: &SoftOptions) -> Result<NewtonReport> {
    let body = potential.body;
    let n = y.len();
    let pattern = body.pattern();
    let size = mesh_size(body);
    let mut report = NewtonReport::default();
    let mut converged = pattern.n_free() == 0;
    let mut trial = vec![0.0; n];
    while !converged {
        if report.iterations == options.max_iterations {
            let last = report.step_norms.last().copied().unwrap_or(f64::NAN);
            return Err(Error::Numerical {
                algorithm: "soft body Newton",
                detail: format!(
                    "no convergence in {} iterations (last step {last:.3e} m, tolerance {:.3e} m); reduce dt or raise max_iterations",
                    options.max_iterations,
                    options.tolerance * size
                ),
            });
        }
        report.iterations += 1;
        let clock = Instant::now();
        let mut ev = potential.evaluate(y, true, false);
        report.timings.assembly += clock.elapsed().as_secs_f64();
        let clock = Instant::now();
        let factor = pattern.cholesky(&ev.hessian);
        report.timings.factorization += clock.elapsed().as_secs_f64();
        let factor = match factor {
            Some(f) => f,
            None => {
                report.projected_iterations += 1;
                let clock = Instant::now();
                ev = potential.evaluate(y, true, true);
                report.timings.assembly += clock.elapsed().as_secs_f64();
                let clock = Instant::now();
                let factor = pattern.cholesky(&ev.hessian);
                report.timings.factorization += clock.elapsed().as_secs_f64();
                factor.ok_or_else(|| Error::Numerical {
                    algorithm: "soft body Newton",
                    detail: "the PSD-projected Hessian is not positive definite: in a step, a vertex mass or dt too \
                             small; in static equilibrium, a body not held by enough pins"
                        .into(),
                })?
            }
        };
        let mut d: Vec<f64> = pattern.free_dofs.iter().map(|&k| -ev.gradient[k]).collect();
        report.gradient_norms.push(d.iter().fold(0.0, |m: f64, g| m.max(g.abs())));
        let clock = Instant::now();
        factor.solve_in_place(&mut d, 1);
        report.timings.solve += clock.elapsed().as_secs_f64();
        if !d.iter().all(|s| s.is_finite()) {
            return Err(Error::Numerical { algorithm: "soft body Newton", detail: "a non-finite Newton step".into() });
        }
        let step_norm = d.iter().fold(0.0, |m: f64, s| m.max(s.abs()));
        report.step_norms.push(step_norm);
        converged = step_norm <= options.tolerance * size;
        let mut t = 1.0;
        let clock = Instant::now();
        if options.line_search && !converged {
            // Armijo on Φ along d; `slope_d = ∇Φ·d < 0` (H positive definite).
            let slope_d: f64 = pattern.free_dofs.iter().zip(&d).map(|(&k, s)| ev.gradient[k] * s).sum();
            let slack = 1e-12 * ev.energy.abs();
            loop {
                trial.copy_from_slice(y);
                for (&k, s) in pattern.free_dofs.iter().zip(&d) {
                    trial[k] += t * s;
                }
                if potential.energy(&trial) <= ev.energy + 1e-4 * t * slope_d + slack || t < 1e-6 {
                    break;
                }
                t *= 0.5;
            }
        }
        report.timings.line_search += clock.elapsed().as_secs_f64();
        report.step_lengths.push(t);
        for (&k, s) in pattern.free_dofs.iter().zip(&d) {
            y[k] += t * s;
        }
    }
    report.inverted_elements = (0..body.mesh().num_tets())
        .filter(|&e| super::potential::deformation_gradient(body, e, y).determinant() <= 0.0)
        .count();
    Ok(report)
}

/// The static equilibrium of `body` under gravity and vertex forces `u`, the pinned
/// degrees of freedom at `targets`, found by Newton from `initial` (e.g. the rest
/// positions): the positions where the elastic forces balance the loads. Errors: sizes,
/// non-finite inputs, invalid options, no convergence, and a body that is not held
/// (too few pins: the Hessian is singular).
pub fn static_equilibrium(
    body: &SoftBody,
    initial: &DVector<f64>,
    u: &DVector<f64>,
    targets: &DVector<f64>,
    options: &SoftOptions,
) -> Result<(DVector<f64>, NewtonReport)> {
    options.validate()?;
    let n = body.ndof();
    check_vector("soft initial positions", initial.as_slice(), n)?;
    check_vector("soft u", u.as_slice(), n)?;
    check_vector("soft pin targets", targets.as_slice(), body.pinned_dofs().len())?;
    let potential = StepPotential::statics(body, initial.as_slice(), u.as_slice());
    let mut y = initial.as_slice().to_vec();
    for (&d, &t) in body.pinned_dofs().iter().zip(targets.iter()) {
        y[d] = t;
    }
    let report = minimize(&potential, &mut y, options)?;
    Ok((DVector::from_vec(y), report))
}

/// The diagonal of the rest mesh's bounding box.
pub(crate) fn mesh_size(body: &SoftBody) -> f64 {
    let v = body.mesh().vertices();
    let (mut lo, mut hi) = (v[0], v[0]);
    for p in v {
        lo = lo.inf(p);
        hi = hi.sup(p);
    }
    (hi - lo).norm()
}
