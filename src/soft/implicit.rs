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
//!
//! Three linear solvers ([`SoftLinearSolver`]):
//! * `Direct` (default): a fresh numeric Cholesky factorization of the exact Hessian at
//!   every iteration.
//! * `KeptFactor`: inexact Newton. The Hessian at the first iterate is factored once (in
//!   single precision by default) and kept; every Newton system `H(y_k) Δy = −∇Φ` with
//!   the exact Hessian is solved by conjugate gradients preconditioned with that factor
//!   (`pcg.rs`), to the relative residual `η_k = min(10⁻², ‖∇Φ_k‖∞ / ‖∇Φ_0‖∞)` (a
//!   forcing term that keeps the convergence quadratic). Each iteration first tries the
//!   kept factor's own step `−P⁻¹ ∇Φ` (one gradient and one back-solve): when it is within
//!   the tolerance it is taken and the step ends without assembling another Hessian. A
//!   conjugate-gradient solve that needs more than [`REFACTOR_AFTER`] iterations refactors
//!   at the current iterate (counted in [`NewtonReport::factorizations`]). The record keeps
//!   the factor for the adjoint, which solves with the exact Hessian at the solution by
//!   the same preconditioned iteration (`adjoint.rs`).
//! * `PcrGpu`: the exact Hessian of every iteration (assembled as for `Direct`) solved by
//!   Jacobi-preconditioned conjugate residuals on the GPU (`docs/gpu.md`), to the relative
//!   residual [`PCR_GPU_TOLERANCE`] in at most `max(200, 2 n_free)` iterations
//!   ([`pcr_gpu_max_iterations`]). Its solution, converged or not, is used when it
//!   is a descent direction; otherwise the element tangents are projected onto the PSD
//!   cone and the projected system is solved on the GPU. Without a GPU each
//!   iteration is a `Direct` one, counted in [`NewtonReport::gpu_fallbacks`]. The adjoint
//!   treats it as `Direct` (a fresh factorization at the solution).

use super::body::SoftBody;
use super::pcg::{self, PcgStatus};
use super::potential::{Evaluation, StepPotential};
use super::sparse::KeptFactor;
use crate::error::{check_vector, Error, Result};
use crate::solver::gpu_linear::{gpu_pcr_solve, gpu_ready, DeviceLayout};
use crate::solver::ncp::PcrOptions;
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
    /// How each Newton system is solved (default a direct factorization per iteration).
    #[serde(default)]
    pub linear_solver: SoftLinearSolver,
}

/// How the Newton systems of a soft-body step are solved (`implicit.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SoftLinearSolver {
    /// A numeric sparse Cholesky factorization of the exact Hessian at every Newton
    /// iteration (the PSD-projected one when it is indefinite). Exact Newton steps; the
    /// adjoint factors the Hessian at the solution again.
    #[default]
    Direct,
    /// Inexact Newton with one kept factor: the Hessian at the first iterate is factored
    /// once per step and preconditions conjugate gradients on the exact Hessian of every
    /// later iteration; the step's record keeps the factor and the adjoint solves with it
    /// in the same way. About one factorization per step instead of one per iteration: for
    /// meshes whose factorization dominates the step (thousands of tets and more). The
    /// record holds the factor (4 bytes per entry of `L` in single precision).
    KeptFactor {
        /// Factor in single precision (about 0.6× the time of the double factor and half
        /// its memory); the conjugate gradients run in double precision either way.
        single_precision: bool,
    },
    /// The exact Hessian of every Newton iteration solved by conjugate residuals on the
    /// GPU (`docs/gpu.md`; the module's notes): for large meshes on a machine with a GPU.
    /// Without one each iteration is a `Direct` one, counted in
    /// [`NewtonReport::gpu_fallbacks`]. The adjoint is that of `Direct`.
    PcrGpu,
}

impl SoftLinearSolver {
    /// The inexact-Newton solver with a single-precision kept factor.
    pub const KEPT_SINGLE: SoftLinearSolver = SoftLinearSolver::KeptFactor { single_precision: true };
}

/// The relative residual (`‖r‖_{P⁻¹} ≤ tol · ‖b‖_{P⁻¹}`, Jacobi `P`) to which
/// [`SoftLinearSolver::PcrGpu`] solves each Newton system.
pub const PCR_GPU_TOLERANCE: f64 = 1e-10;

/// The iteration budget of one Newton system with [`SoftLinearSolver::PcrGpu`]:
/// `max(200, 2 n_free)` for `n_free` free degrees of freedom.
pub fn pcr_gpu_max_iterations(n_free: usize) -> usize {
    (2 * n_free).max(200)
}

/// Conjugate-gradient iterations of one Newton system after which the kept factor is
/// renewed at the current iterate.
pub const REFACTOR_AFTER: usize = 25;

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
            linear_solver: SoftLinearSolver::Direct,
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
    /// Newton iterations: Hessians assembled and solved with. With a kept factor, the
    /// final convergence check (one gradient and one back-solve with the kept factor,
    /// whose step is taken) is not counted; its step is the last of `step_norms` and
    /// [`NewtonReport::final_check`] says it happened.
    pub iterations: usize,
    /// Numeric factorizations (PSD-projected refactorizations included).
    #[serde(default)]
    pub factorizations: usize,
    /// With a kept factor: the conjugate-gradient iterations of each Newton iteration;
    /// with [`SoftLinearSolver::PcrGpu`]: the conjugate-residual iterations of each Newton
    /// system solved on the GPU (a projected re-solve adds its iterations to the same
    /// entry).
    #[serde(default)]
    pub linear_iterations: Vec<usize>,
    /// With [`SoftLinearSolver::PcrGpu`]: Newton iterations solved by the `Direct` path
    /// because no GPU was available.
    #[serde(default)]
    pub gpu_fallbacks: usize,
    /// With a kept factor: the step ended on the kept factor's convergence check.
    #[serde(default)]
    pub final_check: bool,
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
    /// Triangular solves, and with a kept factor the conjugate-gradient iterations
    /// (products with the Hessian and back-solves).
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
    /// The kept factor of [`SoftLinearSolver::KeptFactor`] (the adjoint's preconditioner).
    pub(crate) kept: Option<Arc<KeptFactor>>,
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
    let (report, kept) = minimize(&potential, &mut y, options)?;
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
        kept: kept.map(Arc::new),
    })
}

/// Minimises `potential` over the free degrees of freedom from `y` (pinned entries
/// already at their targets), in place, with the linear solver of `options`; returns the
/// report and, with [`SoftLinearSolver::KeptFactor`], the kept factor.
fn minimize(
    potential: &StepPotential,
    y: &mut [f64],
    options: &SoftOptions,
) -> Result<(NewtonReport, Option<KeptFactor>)> {
    let mut report = NewtonReport::default();
    let kept = if potential.body.pattern().n_free() == 0 {
        None
    } else {
        match options.linear_solver {
            SoftLinearSolver::Direct => {
                newton_loop(potential, y, options, &mut report, direct_direction)?;
                None
            }
            SoftLinearSolver::KeptFactor { single_precision } => {
                Some(minimize_kept(potential, y, options, single_precision, &mut report)?)
            }
            SoftLinearSolver::PcrGpu => {
                newton_loop(potential, y, options, &mut report, pcr_gpu_direction)?;
                None
            }
        }
    };
    report.inverted_elements = (0..potential.body.mesh().num_tets())
        .filter(|&e| super::potential::deformation_gradient(potential.body, e, y).determinant() <= 0.0)
        .count();
    Ok((report, kept))
}

/// The Newton loop of the solvers that assemble the exact Hessian at every iteration
/// (`Direct`: the direction by a Cholesky factorization, [`direct_direction`]; `PcrGpu`:
/// by conjugate residuals on the GPU, [`pcr_gpu_direction`]), with an Armijo backtracking
/// line search:
/// each iteration evaluates Φ with its Hessian at `y`, asks `direction` for the step (and
/// the evaluation it belongs to: the projected one when the exact Hessian failed), and
/// takes it with the line search, until the step is below the tolerance.
fn newton_loop(
    potential: &StepPotential,
    y: &mut [f64],
    options: &SoftOptions,
    report: &mut NewtonReport,
    direction: impl Fn(&StepPotential, &[f64], Evaluation, &mut NewtonReport) -> Result<(Evaluation, Vec<f64>)>,
) -> Result<()> {
    let tolerance = options.tolerance * mesh_size(potential.body);
    loop {
        check_iterations(report, options, tolerance)?;
        report.iterations += 1;
        let clock = Instant::now();
        let ev = potential.evaluate(y, true, false);
        report.timings.assembly += clock.elapsed().as_secs_f64();
        let (ev, d) = direction(potential, y, ev, report)?;
        if take_step(potential, y, &ev, &d, options, tolerance, report)? {
            return Ok(());
        }
    }
}

/// The Newton direction of `Direct` at `y`, where `ev` (with the exact Hessian) was
/// evaluated: the Cholesky solve with the exact Hessian, or with the PSD-projected one
/// when it is not positive definite. Returns the evaluation the direction was solved with.
fn direct_direction(
    potential: &StepPotential,
    y: &[f64],
    mut ev: Evaluation,
    report: &mut NewtonReport,
) -> Result<(Evaluation, Vec<f64>)> {
    let pattern = potential.body.pattern();
    let clock = Instant::now();
    let factor = pattern.cholesky(&ev.hessian);
    report.timings.factorization += clock.elapsed().as_secs_f64();
    report.factorizations += 1;
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
            report.factorizations += 1;
            factor.ok_or_else(not_positive_definite)?
        }
    };
    let mut d = negative_free_gradient(potential, &ev);
    report.gradient_norms.push(max_abs(&d));
    let clock = Instant::now();
    factor.solve_in_place(&mut d, 1);
    report.timings.solve += clock.elapsed().as_secs_f64();
    Ok((ev, d))
}

/// The step of a [`SoftLinearSolver::PcrGpu`] iteration (the module's notes): a descent
/// direction from GPU conjugate residuals on the exact Hessian, else on the projected one;
/// the direct solver's step, counted, when no GPU is available.
fn pcr_gpu_direction(
    potential: &StepPotential,
    y: &[f64],
    ev: Evaluation,
    report: &mut NewtonReport,
) -> Result<(Evaluation, Vec<f64>)> {
    Ok(match gpu_direction(potential, &ev, report, true)? {
        None => {
            report.gpu_fallbacks += 1;
            direct_direction(potential, y, ev, report)?
        }
        Some(GpuDirection::Descent(d)) => (ev, d),
        Some(GpuDirection::NotDescent) => {
            // Not a descent direction: the exact Hessian is indefinite here (or the
            // solve stopped far from the solution); solve with the projected one.
            report.projected_iterations += 1;
            let clock = Instant::now();
            let projected = potential.evaluate(y, true, true);
            report.timings.assembly += clock.elapsed().as_secs_f64();
            match gpu_direction(potential, &projected, report, false)? {
                Some(GpuDirection::Descent(d)) => (projected, d),
                Some(GpuDirection::NotDescent) => {
                    return Err(Error::Numerical {
                        algorithm: "soft body Newton (GPU conjugate residuals)",
                        detail: "conjugate residuals on the PSD-projected Hessian gave no descent direction; \
                                 use SoftLinearSolver::Direct"
                            .into(),
                    })
                }
                None => {
                    report.gpu_fallbacks += 1;
                    direct_direction(potential, y, projected, report)?
                }
            }
        }
    })
}

/// A GPU conjugate-residual solution of a Newton system.
enum GpuDirection {
    /// A downhill direction (`∇Φ·d < 0`), converged or not: taken.
    Descent(Vec<f64>),
    /// Not downhill (an indefinite Hessian, or a solve that stopped far from the
    /// solution).
    NotDescent,
}

/// Solves `H d = −∇Φ` with the Hessian of `ev` by conjugate residuals on the GPU
/// ([`PCR_GPU_TOLERANCE`], [`pcr_gpu_max_iterations`]); `None` when no GPU is available.
/// Records the iterations, and with `first` (the iteration's first solve, not the
/// projected re-solve) the gradient norm.
fn gpu_direction(
    potential: &StepPotential,
    ev: &Evaluation,
    report: &mut NewtonReport,
    first: bool,
) -> Result<Option<GpuDirection>> {
    if !gpu_ready() {
        return Ok(None);
    }
    let pattern = potential.body.pattern();
    let b = negative_free_gradient(potential, ev);
    let n = b.len();
    let clock = Instant::now();
    let matrix = pattern.full_csr(&ev.hessian)?;
    let layout = if n % 3 == 0 { DeviceLayout::Blocks3 } else { DeviceLayout::Rows };
    let pcr = PcrOptions { max_iterations: pcr_gpu_max_iterations(n), tolerance: PCR_GPU_TOLERANCE };
    let solved = gpu_pcr_solve(&matrix, layout, &vec![0.0; n], 0.0, &b, &pcr)?;
    report.timings.solve += clock.elapsed().as_secs_f64();
    let Some((d, outcome)) = solved else { return Ok(None) };
    // A re-solve with the projected Hessian belongs to the same Newton iteration.
    match report.linear_iterations.last_mut() {
        Some(last) if !first => *last += outcome.iterations,
        _ => report.linear_iterations.push(outcome.iterations),
    }
    if first {
        report.gradient_norms.push(max_abs(&b));
    }
    // `−∇Φ · d > 0`: downhill. An unconverged solve is used when it is; a converged one
    // that is not (the exact Newton step of an indefinite Hessian) is not taken either.
    let slope: f64 = b.iter().zip(&d).map(|(b, d)| b * d).sum();
    // A zero step (a zero gradient) is taken too: it ends the iteration.
    let zero = d.iter().all(|&s| s == 0.0);
    Ok(Some(if (slope > 0.0 || zero) && d.iter().all(|s| s.is_finite()) {
        GpuDirection::Descent(d)
    } else {
        GpuDirection::NotDescent
    }))
}

/// Inexact Newton with one kept factor (the module's doc): returns the factor.
fn minimize_kept(
    potential: &StepPotential,
    y: &mut [f64],
    options: &SoftOptions,
    single: bool,
    report: &mut NewtonReport,
) -> Result<KeptFactor> {
    let pattern = potential.body.pattern();
    let nf = pattern.n_free();
    let tolerance = options.tolerance * mesh_size(potential.body);
    let mut factor: Option<KeptFactor> = None;
    let mut scratch = Vec::with_capacity(nf);
    let mut first_gradient = f64::NAN;
    loop {
        // The first iteration assembles the Hessian with the gradient; later ones assemble
        // it only when the convergence check fails.
        let clock = Instant::now();
        let mut ev = potential.evaluate(y, factor.is_none(), false);
        report.timings.assembly += clock.elapsed().as_secs_f64();
        let b = negative_free_gradient(potential, &ev);
        let gradient_norm = max_abs(&b);
        let mut first = None;
        if let Some(f) = &factor {
            // The convergence check: the kept factor's own step.
            let clock = Instant::now();
            let mut d = vec![0.0; nf];
            f.apply(&b, &mut d, &mut scratch);
            report.timings.solve += clock.elapsed().as_secs_f64();
            if max_abs(&d) <= tolerance {
                report.gradient_norms.push(gradient_norm);
                report.step_norms.push(max_abs(&d));
                report.step_lengths.push(1.0);
                report.final_check = true;
                for (&k, s) in pattern.free_dofs.iter().zip(&d) {
                    y[k] += s;
                }
                return Ok(factor.take().unwrap_or_else(|| unreachable!("checked above")));
            }
            first = Some(d);
        }
        check_iterations(report, options, tolerance)?;
        report.iterations += 1;
        report.gradient_norms.push(gradient_norm);
        if first_gradient.is_nan() {
            first_gradient = gradient_norm;
        }
        let mut hessian = if ev.hessian.is_empty() {
            let clock = Instant::now();
            let hessian = potential.evaluate(y, true, false).hessian;
            report.timings.assembly += clock.elapsed().as_secs_f64();
            hessian
        } else {
            std::mem::take(&mut ev.hessian)
        };
        let mut projected = false;
        if factor.is_none() {
            factor = Some(match kept_factor(potential, &hessian, single, report) {
                Some(f) => f,
                None => {
                    projected = true;
                    report.projected_iterations += 1;
                    let clock = Instant::now();
                    hessian = potential.evaluate(y, true, true).hessian;
                    report.timings.assembly += clock.elapsed().as_secs_f64();
                    kept_factor(potential, &hessian, single, report).ok_or_else(not_positive_definite)?
                }
            });
        }
        // The forcing term: quadratic convergence while the gradient falls.
        let rtol = (gradient_norm / first_gradient).clamp(1e-14, 1e-2);
        let mut d = vec![0.0; nf];
        let mut refactored = false;
        let mut linear_iterations = 0;
        loop {
            let f = factor.as_ref().unwrap_or_else(|| unreachable!("factored above"));
            let clock = Instant::now();
            let outcome = pcg::solve((pattern, &hessian), f, &b, first.as_deref(), &mut d, (rtol, REFACTOR_AFTER));
            report.timings.solve += clock.elapsed().as_secs_f64();
            linear_iterations += outcome.iterations;
            first = None;
            match outcome.status {
                PcgStatus::Converged => break,
                PcgStatus::NegativeCurvature if !projected => {
                    // The exact Hessian is indefinite here: project its element tangents.
                    projected = true;
                    report.projected_iterations += 1;
                    let clock = Instant::now();
                    hessian = potential.evaluate(y, true, true).hessian;
                    report.timings.assembly += clock.elapsed().as_secs_f64();
                }
                _ if !refactored => {
                    // The kept factor no longer preconditions well: renew it here.
                    refactored = true;
                    let renewed = kept_factor(potential, &hessian, single, report).ok_or_else(not_positive_definite)?;
                    factor = Some(renewed);
                }
                _ => {
                    return Err(Error::Numerical {
                        algorithm: "soft body Newton (kept factor)",
                        detail: format!(
                            "conjugate gradients did not converge with a fresh factor (relative residual {:.3e} after {} iterations); use SoftLinearSolver::Direct",
                            outcome.relative_residual, outcome.iterations
                        ),
                    })
                }
            }
        }
        report.linear_iterations.push(linear_iterations);
        if take_step(potential, y, &ev, &d, options, tolerance, report)? {
            return Ok(factor.unwrap_or_else(|| unreachable!("factored above")));
        }
    }
}

/// The kept factor of `hessian` (single precision first when asked, double when that
/// fails), counted and timed in `report`; `None` when the matrix is not positive definite.
fn kept_factor(
    potential: &StepPotential,
    hessian: &[f64],
    single: bool,
    report: &mut NewtonReport,
) -> Option<KeptFactor> {
    let pattern = potential.body.pattern();
    let clock = Instant::now();
    let mut factor = pattern.kept_cholesky(hessian, single);
    report.factorizations += 1;
    if factor.is_none() && single {
        factor = pattern.kept_cholesky(hessian, false);
        report.factorizations += 1;
    }
    report.timings.factorization += clock.elapsed().as_secs_f64();
    factor
}

/// Errors when `report` has used up the iterations of `options`.
fn check_iterations(report: &NewtonReport, options: &SoftOptions, tolerance: f64) -> Result<()> {
    if report.iterations < options.max_iterations {
        return Ok(());
    }
    let last = report.step_norms.last().copied().unwrap_or(f64::NAN);
    Err(Error::Numerical {
        algorithm: "soft body Newton",
        detail: format!(
            "no convergence in {} iterations (last step {last:.3e} m, tolerance {tolerance:.3e} m); reduce dt or raise max_iterations",
            options.max_iterations
        ),
    })
}

fn not_positive_definite() -> Error {
    Error::Numerical {
        algorithm: "soft body Newton",
        detail: "the PSD-projected Hessian is not positive definite: in a step, a vertex mass or dt too small; in \
                 static equilibrium, a body not held by enough pins"
            .into(),
    }
}

/// `−∇Φ` over the free degrees of freedom.
fn negative_free_gradient(potential: &StepPotential, ev: &Evaluation) -> Vec<f64> {
    potential.body.pattern().free_dofs.iter().map(|&k| -ev.gradient[k]).collect()
}

fn max_abs(a: &[f64]) -> f64 {
    a.iter().fold(0.0, |m: f64, s| m.max(s.abs()))
}

/// Takes the Newton step `d` (free indices) from `y`, where `ev` was evaluated: full when
/// it is within `tolerance` (converged: returns `true`), else along an Armijo backtracking
/// line search on Φ when `options` asks for one.
fn take_step(
    potential: &StepPotential,
    y: &mut [f64],
    ev: &Evaluation,
    d: &[f64],
    options: &SoftOptions,
    tolerance: f64,
    report: &mut NewtonReport,
) -> Result<bool> {
    if !d.iter().all(|s| s.is_finite()) {
        return Err(Error::Numerical { algorithm: "soft body Newton", detail: "a non-finite Newton step".into() });
    }
    let free = &potential.body.pattern().free_dofs;
    let step_norm = max_abs(d);
    report.step_norms.push(step_norm);
    let converged = step_norm <= tolerance;
    let mut t = 1.0;
    let clock = Instant::now();
    if options.line_search && !converged {
        // Armijo on Φ along d; `slope_d = ∇Φ·d < 0` (H positive definite).
        let slope_d: f64 = free.iter().zip(d).map(|(&k, s)| ev.gradient[k] * s).sum();
        let slack = 1e-12 * ev.energy.abs();
        let mut trial = y.to_vec();
        loop {
            trial.copy_from_slice(y);
            for (&k, s) in free.iter().zip(d) {
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
    for (&k, s) in free.iter().zip(d) {
        y[k] += t * s;
    }
    Ok(converged)
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
    let (report, _) = minimize(&potential, &mut y, options)?;
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
