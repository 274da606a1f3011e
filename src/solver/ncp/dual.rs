//! The non-smooth Newton solver as a [`ConstraintSolver`]: the NCP of a
//! [`ConstraintProblem`] `w = A f + b` in its dual (impulse) form, with the problem's
//! friction rows grouped by their normal into isotropic cones (Macklin et al. 2019 §5–§6;
//! the module notes of [`super::newton`] for the primal form).
//!
//! Rows, by their [`RowBound`]:
//!
//! ```text
//! unilateral [0, ∞):      ϕ(w_i, r_i f_i) = 0                      (the chosen NCP function)
//! equality (−∞, ∞):       w_i = 0
//! other boxes [lo, hi]:   f_i − mid(lo, f_i − r_i w_i, hi) = 0     (the box's min-map)
//! friction rows of one normal n (μ):  w_t + W f_t = 0, W the lagged compliance of the
//!                         cone |f_t| ≤ μ f_n (isotropic over the group, no facets);
//!                         f_t = 0 while μ f_n ≤ 0
//! ```
//!
//! with `r_i = A_ii` (the complementarity preconditioner in impulse units). Each Newton
//! iteration divides a row by `∂ϕ/∂w` and solves `[A + C] Δf = −e` over the rows whose
//! step is not fixed by their own force (dense Cholesky, or conjugate residuals through
//! the problem's operator), then updates `f += t Δf`.
//!
//! With `fallback_sweeps > 0` (the default) and `max_iterations` of at least
//! [`STALL_WINDOW`], a Newton iteration that stalls (its best residual does not fall over
//! that many iterations) or ends above the tolerance hands its iterate to blocked
//! projected Gauss–Seidel over the cones (`gauss_seidel`), whose result's contact mode is then solved exactly where it can
//! be (`docs/ncp.md`).
//!
//! The backward pass is the implicit-function theorem at the solution in its contact
//! mode (the active-set Clarke Jacobian): each row's condition `F_i(f, w) = 0` —
//! `w_i = 0` for an active normal, a sticking friction row or an equality or a box row
//! inside its box; `f_i = 0` (or its bound) for a separating normal, a box row at a bound
//! or an inactive cone; `f_t + μ f_n ŵ = 0` for a sliding cone, `ŵ = w_t/|w_t|` — gives
//! `(Q + P A) df = −P (dA f + db)` with `Q = ∂F/∂f`, `P = ∂F/∂w`. For `ḡ = ∂ℓ/∂f`,
//! `y = (Q + P A)⁻ᵀ ḡ`:
//!
//! ```text
//! ∂ℓ/∂b = −Pᵀ y,        ∂ℓ/∂A = (∂ℓ/∂b) fᵀ
//! ```
//!
//! A singular `Q + P A` (redundant contacts, whose forces the problem does not determine)
//! is inverted in the minimum-norm sense; the derivative is then that of the solution's
//! determined part only. Mode boundaries (a contact about to separate, a cone at the
//! stick/slide switch) are not differentiable: the derivative is the recorded side's.

use super::functions::{delassus_scales, friction_compliance, FrictionCompliance, NcpFunction};
use super::gauss_seidel::cone_gauss_seidel;
use super::mode::{cones, Cone, Mode, SlidingCone};
use super::newton::{newton_step, DelassusMatrix, LinearSolve};
use crate::error::{Error, Result};
use crate::math::min_norm_solve;
use crate::solver::constraint_solver::{ConstraintProblem, ConstraintSolution, ProblemCotangent, SolveReport};
use crate::solver::gpu_linear::GpuLinearCounts;
use crate::solver::lcp::{RowBound, RowState};
use crate::solver::ConstraintSolver;
use nalgebra::{DMatrix, DVector};

/// The non-smooth Newton NCP solver of the constraint stage (module notes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NcpSolver {
    /// The NCP function of the unilateral rows and of the cones.
    pub function: NcpFunction,
    /// At most this many Newton iterations.
    pub max_iterations: usize,
    /// Stop once every row's residual is at most this (velocity units).
    pub tolerance: f64,
    /// Damping `t` of the updates (the paper: 0.75).
    pub damping: f64,
    /// The linear solver.
    pub linear: LinearSolve,
    /// Identity shift of the Schur matrix.
    pub shift: f64,
    /// Scale each row by the complementarity preconditioner `r = A_ii` (eq. 66);
    /// `false`: `r = 1` (the paper's comparison: it fails on large mass ratios).
    pub preconditioner: bool,
    /// Where the Newton iteration ends above the tolerance (it can cycle: the lagged
    /// friction compliance is not the cones' exact Jacobian), at most this many sweeps of blocked projected Gauss–Seidel
    /// over the cones (the module `gauss_seidel`) before the contact mode of their result is
    /// solved exactly; where the Newton iterate's velocities already agree with the result's,
    /// the iterate is kept. With the fallback on, a Newton iteration whose best residual has
    /// not fallen over the last [`STALL_WINDOW`] iterations (it cycles) stops there and hands over. A
    /// run capped below [`STALL_WINDOW`] iterations (a fixed budget, as the paper's
    /// 4 × 20 table pile) never falls back. 0: no fallback, the Newton iterate is returned
    /// (`docs/ncp.md`, "Fallback where Newton's method cycles"). Each run is counted as a
    /// solver fallback ([`crate::sim::SimStats::lcp_fallbacks`]).
    pub fallback_sweeps: usize,
}

impl Default for NcpSolver {
    fn default() -> Self {
        Self {
            function: NcpFunction::FischerBurmeister,
            max_iterations: 200,
            tolerance: 1e-12,
            damping: 0.75,
            linear: LinearSolve::Direct,
            shift: 1e-14,
            preconditioner: true,
            fallback_sweeps: 200,
        }
    }
}

/// Undamped Newton steps taken after convergence while they lower the residual
/// ([`NcpSolver`]'s `newton`).
const POLISH_STEPS: usize = 4;

/// Newton iterations over which the best residual must fall; with the Gauss–Seidel
/// fallback on ([`NcpSolver::fallback_sweeps`]), an iteration that does not stops there.
/// A solver whose `max_iterations` is below it (a fixed budget) never falls back.
pub const STALL_WINDOW: usize = 20;

/// The Gauss–Seidel fallback keeps the Newton iterate where their velocities `w` agree to
/// this many times the tolerance.
const SAME_MOTION: f64 = 10.0;

/// The residual (velocity units) to which the simulator's NCP solve first iterates
/// before it tries the iterate's contact mode.
pub const COARSE_TOLERANCE: f64 = 1e-8;

/// The Newton step's system at one iterate (`NcpSolver::linearize`).
struct Linearization {
    c: Vec<f64>,
    e: DVector<f64>,
    known: Vec<Option<f64>>,
}

impl Linearization {
    fn new(m: usize) -> Linearization {
        Linearization { c: vec![0.0; m], e: DVector::zeros(m), known: vec![None; m] }
    }
}

/// One dense problem `w = A f + b` as the solver works on it.
struct Dense<'a> {
    a: &'a DMatrix<f64>,
    /// `A` for its products (also in compressed rows where it is sparse).
    delassus: DelassusMatrix<'a>,
    b: &'a DVector<f64>,
    bounds: &'a [RowBound],
    /// A tall factor `L` with `A = L Lᵀ`, when the caller has one (the minimum-norm solves).
    factor: Option<&'a DMatrix<f64>>,
    /// The friction rows grouped into cones.
    cones: Vec<Cone>,
    /// `A_ii` per row: the scales of the mode's tolerances.
    r: Vec<f64>,
    /// The NCP rows' scales: `r` with the complementarity preconditioner, 1 without.
    scaled: Vec<f64>,
}

impl<'a> Dense<'a> {
    /// Errors: friction rows that do not follow unilateral normal rows ([`cones`]).
    fn new(solver: &NcpSolver, a: &'a DMatrix<f64>, b: &'a DVector<f64>, bounds: &'a [RowBound]) -> Result<Self> {
        let r = delassus_scales(a);
        let scaled = if solver.preconditioner { r.clone() } else { vec![1.0; b.len()] };
        let delassus = DelassusMatrix::new(a)?;
        Ok(Dense { a, delassus, b, bounds, factor: None, cones: cones(bounds)?, r, scaled })
    }

    /// `w = A f + b`.
    fn w(&self, f: &DVector<f64>) -> DVector<f64> {
        self.delassus.mul(f) + self.b
    }

    /// The mode of `(f, w)` ([`Mode::classify`]).
    fn mode(&self, f: &DVector<f64>, w: &DVector<f64>, tol: f64, tied_active: bool) -> Mode {
        Mode::classify(self.bounds, &self.cones, f, w, &self.r, tol, tied_active)
    }
}

impl NcpSolver {
    /// The Newton iteration from `start` (zero when `None`) to `tolerance`; returns
    /// `(f, iterations, residual)`. With `polish`, once the damped iteration meets it, up to
    /// [`POLISH_STEPS`] undamped steps are taken while they lower the residual: inside the
    /// solution's contact mode Newton's method converges quadratically, so the returned
    /// forces are exact to round-off rather than to the tolerance (a solution that moves
    /// smoothly with the problem, as its finite differences need). GPU linear solves and
    /// fallbacks are added to `gpu`.
    fn newton(
        &self,
        p: &Dense,
        start: Option<&DVector<f64>>,
        tolerance: f64,
        polish: bool,
        gpu: &mut GpuLinearCounts,
    ) -> Result<(DVector<f64>, usize, f64)> {
        let m = p.b.len();
        let mut f = match start {
            Some(s) if s.len() == m && s.iter().all(|x| x.is_finite()) => s.clone(),
            _ => DVector::zeros(m),
        };
        let mut lin = Linearization::new(m);
        let mut iterations = 0;
        let mut residual = self.linearize(p, &f, &mut lin);
        // The best residual so far and the iteration that found it (the stall test, with the
        // fallback on).
        let watch = self.fallback_sweeps > 0;
        let (mut best_residual, mut best_at) = (residual, 0);
        while residual > tolerance && iterations < self.max_iterations {
            let df = newton_step(&p.delassus, &lin.c, &-&lin.e, &lin.known, self.linear, self.shift, gpu)?;
            f += df * self.damping;
            iterations += 1;
            residual = self.linearize(p, &f, &mut lin);
            if residual < best_residual {
                (best_residual, best_at) = (residual, iterations);
            }
            if watch && iterations - best_at >= STALL_WINDOW && residual > tolerance {
                // Stalled: the last iterate goes to the fallback (where only the forces are
                // stuck, e.g. friction a hair outside cones at their limit, its velocities
                // are already the converged ones, and the fallback keeps it).
                return Ok((f, iterations, residual));
            }
        }
        if polish && residual <= tolerance {
            let mut trial_lin = Linearization::new(m);
            for _ in 0..POLISH_STEPS {
                if residual == 0.0 {
                    break;
                }
                let trial = &f + newton_step(&p.delassus, &lin.c, &-&lin.e, &lin.known, self.linear, self.shift, gpu)?;
                let trial_residual = self.linearize(p, &trial, &mut trial_lin);
                if trial_residual.is_nan() || trial_residual >= residual {
                    break;
                }
                (f, residual) = (trial, trial_residual);
                std::mem::swap(&mut lin, &mut trial_lin);
                iterations += 1;
            }
        }
        Ok((f, iterations, residual))
    }

    /// The residual of the NCP at `f` (velocity units, the largest over the rows), and
    /// the Newton step's system there in `lin` (per row: the compliance `c`, the scaled
    /// residual `e`, or the step fixed by the row's own force in `known`).
    fn linearize(&self, p: &Dense, f: &DVector<f64>, lin: &mut Linearization) -> f64 {
        let (bounds, r) = (p.bounds, &p.scaled);
        let w = p.w(f);
        let Linearization { c, e, known } = lin;
        let mut residual: f64 = 0.0;
        for i in 0..f.len() {
            known[i] = None;
            match bounds[i] {
                RowBound::Friction { .. } => {}
                RowBound::Box { lo, hi } if lo == 0.0 && hi == f64::INFINITY => {
                    let v = self.function.eval(w[i], f[i], r[i]);
                    residual = residual.max(v.value.abs());
                    if v.da > 1e-12 {
                        c[i] = v.db / v.da;
                        e[i] = v.value / v.da;
                    } else {
                        known[i] = Some(-v.value / v.db);
                    }
                }
                RowBound::Box { lo, hi } if lo == f64::NEG_INFINITY && hi == f64::INFINITY => {
                    residual = residual.max(w[i].abs());
                    c[i] = 0.0;
                    e[i] = w[i];
                }
                RowBound::Box { lo, hi } => {
                    let trial = f[i] - r[i] * w[i];
                    if trial > lo && trial < hi {
                        residual = residual.max(w[i].abs());
                        c[i] = 0.0;
                        e[i] = w[i];
                    } else {
                        let bound = if trial <= lo { lo } else { hi };
                        residual = residual.max((f[i] - bound).abs() / r[i]);
                        known[i] = Some(bound - f[i]);
                    }
                }
            }
        }
        for Cone { normal: n, rows: ts, mu } in &p.cones {
            let slip = ts.iter().map(|&t| w[t] * w[t]).sum::<f64>().sqrt();
            let force = ts.iter().map(|&t| f[t] * f[t]).sum::<f64>().sqrt();
            let rt = ts.iter().map(|&t| r[t]).fold(0.0, f64::max);
            match friction_compliance(self.function, slip, force, mu * f[*n].max(0.0), rt) {
                // A compliance beyond 1e12 times the rows' scale (a cone whose force
                // vanishes) holds the force at zero instead: its Newton row would overflow.
                FrictionCompliance::Active(wc) if wc.is_finite() && wc <= 1e12 * rt => {
                    for &t in ts {
                        c[t] = wc;
                        e[t] = w[t] + wc * f[t];
                        residual = residual.max(e[t].abs());
                    }
                }
                _ => {
                    for &t in ts {
                        known[t] = Some(-f[t]);
                        residual = residual.max(f[t].abs() / r[t]);
                    }
                }
            }
        }
        residual
    }

    /// The residual of the NCP at `f` ([`Self::linearize`] without its system).
    fn residual(&self, p: &Dense, f: &DVector<f64>) -> f64 {
        self.linearize(p, f, &mut Linearization::new(f.len()))
    }

    /// Solves `w = A f + b` (dense; `factor`: an optional tall `L` with `A = L Lᵀ`) from
    /// `start` (the previous step's forces, or zero) and returns the minimum-norm forces of the solution's contact mode
    /// ([`Mode::min_norm_forces`]) when they solve the NCP to the tolerance.
    ///
    /// The Newton iteration first runs to [`COARSE_TOLERANCE`] (or the tolerance, if
    /// looser); the mode of that iterate is tried, with tied unilateral rows (zero force,
    /// zero velocity: a redundant contact) active and then separating. If neither mode's
    /// minimum-norm forces solve the NCP, the iteration goes on to the tolerance and the
    /// modes of its result are tried. Failing those, the Newton iterate itself is
    /// returned (`standardized: false`); or, with `fallback_sweeps > 0`, a budget of at
    /// least [`STALL_WINDOW`] iterations and a Newton iterate above the tolerance (it
    /// stalled or spent them), the Gauss–Seidel fallback decides (module notes).
    ///
    /// Errors: a problem whose friction rows do not follow unilateral normal rows, a
    /// Newton step that cannot be solved, non-finite forces.
    pub(crate) fn solve_dense(
        &self,
        a: &DMatrix<f64>,
        b: &DVector<f64>,
        bounds: &[RowBound],
        start: Option<&DVector<f64>>,
        factor: Option<&DMatrix<f64>>,
    ) -> Result<DenseNcpSolution> {
        let p = Dense { factor, ..Dense::new(self, a, b, bounds)? };
        let coarse = self.tolerance.max(COARSE_TOLERANCE);
        let mut gpu = GpuLinearCounts::default();
        let (mut f, mut iterations, mut residual) = self.newton(&p, start, coarse, false, &mut gpu)?;
        let mut tol = coarse;
        loop {
            if residual <= tol {
                if let Some(out) = self.standardized(&p, &f, tol) {
                    return Ok(DenseNcpSolution { iterations, gpu, ..out });
                }
            }
            // A first iteration that stopped early above its tolerance stalled: on to the fallback.
            let stalled = residual > tol && iterations < self.max_iterations;
            if tol <= self.tolerance || stalled {
                break;
            }
            tol = self.tolerance;
            let (f1, more, res1) = self.newton(&p, Some(&f), tol, true, &mut gpu)?;
            (f, residual) = (f1, res1);
            iterations += more;
        }
        // Not converged with a budget of at least STALL_WINDOW iterations: the iteration
        // stalled or spent them all.
        if residual > self.tolerance && self.fallback_sweeps > 0 && self.max_iterations >= STALL_WINDOW {
            return self.fallback(&p, f, residual, iterations, gpu);
        }
        let w = p.w(&f);
        self.unstandardized(&p, (f, w), iterations, residual, 0, gpu)
    }

    /// The Gauss–Seidel fallback from the Newton iterate `f` (residual `residual`), run from
    /// the better of `f` and zero forces; then the contact mode of its result, or, where the
    /// sweeps stalled above the tolerance, Newton's polish from it. The best iterate is kept.
    fn fallback(
        &self,
        p: &Dense,
        f: DVector<f64>,
        residual: f64,
        mut iterations: usize,
        mut gpu: GpuLinearCounts,
    ) -> Result<DenseNcpSolution> {
        let mut scratch = Linearization::new(f.len());
        let finite = f.iter().all(|x| x.is_finite());
        let zero = DVector::zeros(f.len());
        let mut g = if finite && residual <= self.linearize(p, &zero, &mut scratch) { f.clone() } else { zero };
        let sweeps = cone_gauss_seidel(p.a, p.b, p.bounds, &p.cones, &mut g, self.fallback_sweeps, |g| {
            self.linearize(p, g, &mut scratch) <= self.tolerance
        });
        let mut res_g = self.linearize(p, &g, &mut scratch);
        // Where the Newton iterate already moves as the converged result does (its
        // velocities agree to the tolerance; only its forces miss, e.g. friction a hair
        // outside cones at their limit), it is kept: it moves smoothly with the problem,
        // which the projections of Gauss–Seidel do not.
        let w = p.w(&f);
        if res_g <= self.tolerance && finite && (&w - p.w(&g)).amax() <= SAME_MOTION * self.tolerance {
            return self.unstandardized(p, (f, w), iterations, residual, sweeps, gpu);
        }
        let found = |out: DenseNcpSolution, iterations: usize, gpu: GpuLinearCounts| -> Result<DenseNcpSolution> {
            Ok(DenseNcpSolution { iterations, fallback_sweeps: sweeps, gpu, ..out })
        };
        if let Some(out) = self.standardized(p, &g, COARSE_TOLERANCE.max(self.tolerance).max(res_g)) {
            return found(out, iterations, gpu);
        }
        if res_g > self.tolerance {
            // Gauss–Seidel stalled above the tolerance: Newton's polish from its result.
            let (g1, more, res1) = self.newton(p, Some(&g), self.tolerance, true, &mut gpu)?;
            iterations += more;
            if res1 <= self.tolerance {
                if let Some(out) = self.standardized(p, &g1, self.tolerance) {
                    return found(out, iterations, gpu);
                }
            }
            if res1 < res_g {
                (g, res_g) = (g1, res1);
            }
        }
        if res_g < residual || !finite {
            let w = p.w(&g);
            self.unstandardized(p, (g, w), iterations, res_g, sweeps, gpu)
        } else {
            self.unstandardized(p, (f, w), iterations, residual, sweeps, gpu)
        }
    }

    /// The iterate `(f, w = A f + b)` as the result, classified in its own mode
    /// (`standardized: false`). Errors: non-finite forces.
    fn unstandardized(
        &self,
        p: &Dense,
        (f, w): (DVector<f64>, DVector<f64>),
        iterations: usize,
        residual: f64,
        fallback_sweeps: usize,
        gpu: GpuLinearCounts,
    ) -> Result<DenseNcpSolution> {
        if let Some((index, &value)) = f.iter().enumerate().find(|(_, x)| !x.is_finite()) {
            return Err(Error::NonFinite { what: "NCP solver forces", index, value });
        }
        let mode = p.mode(&f, &w, self.tolerance, false);
        Ok(DenseNcpSolution {
            states: mode.states(p.bounds, &p.cones, &f),
            sliding: mode.sliding(&p.cones, &f, &w),
            f,
            w,
            iterations,
            residual,
            converged: residual <= self.tolerance,
            standardized: false,
            fallback_sweeps,
            gpu,
        })
    }

    /// The minimum-norm forces of the contact mode of the iterate `f` (tolerance `tol`),
    /// when they solve the NCP to the solver's tolerance: the mode with tied rows active,
    /// then with them separating. The forces found are classified again (tied rows now
    /// separating: a redundant contact that took a share of the load is no longer tied)
    /// and that mode's minimum-norm forces are the result when they solve the NCP. The
    /// states returned are those of the mode the forces were computed in (the mode the
    /// backward pass differentiates).
    fn standardized(&self, p: &Dense, f: &DVector<f64>, tol: f64) -> Option<DenseNcpSolution> {
        let cones = &p.cones;
        let w = p.w(f);
        for tied_active in [true, false] {
            let mode = p.mode(f, &w, tol, tied_active);
            let Some(f1) = mode.min_norm_forces(p.a, p.b, cones, f, &w, p.factor) else { continue };
            if self.residual(p, &f1) > self.tolerance {
                continue;
            }
            let w1 = p.w(&f1);
            let mode2 = p.mode(&f1, &w1, self.tolerance, false);
            let (mode, f, w) = match mode2.min_norm_forces(p.a, p.b, cones, &f1, &w1, p.factor) {
                Some(f2) if self.residual(p, &f2) <= self.tolerance => {
                    let w2 = p.w(&f2);
                    (mode2, f2, w2)
                }
                _ => (mode, f1, w1),
            };
            let sliding = mode.sliding(cones, &f, &w);
            if sliding.iter().any(|c| !(c.compliance.is_finite() && c.compliance > 0.0)) {
                continue;
            }
            return Some(DenseNcpSolution {
                states: mode.states(p.bounds, cones, &f),
                sliding,
                residual: self.residual(p, &f),
                f,
                w,
                iterations: 0,
                converged: true,
                standardized: true,
                fallback_sweeps: 0,
                gpu: GpuLinearCounts::default(),
            });
        }
        None
    }
}

/// A solution of [`NcpSolver::solve_dense`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DenseNcpSolution {
    /// The forces (impulses).
    pub f: DVector<f64>,
    /// `w = A f + b`.
    pub w: DVector<f64>,
    /// The rows' states ([`Mode::states`]).
    pub states: Vec<RowState>,
    /// The sliding two-row cones.
    pub sliding: Vec<SlidingCone>,
    /// Newton iterations, polishing steps included.
    pub iterations: usize,
    /// The residual of the returned forces (velocity units).
    pub residual: f64,
    /// The residual meets the tolerance.
    pub converged: bool,
    /// The forces are the minimum-norm ones of their contact mode.
    pub standardized: bool,
    /// Sweeps of the Gauss–Seidel fallback ([`super::gauss_seidel`]; 0: Newton's method
    /// converged on its own).
    pub fallback_sweeps: usize,
    /// Newton linear systems solved on the GPU, and those that fell back to the CPU.
    pub gpu: GpuLinearCounts,
}

impl ConstraintSolver for NcpSolver {
    fn name(&self) -> &'static str {
        "NCP (non-smooth Newton)"
    }

    fn solve(&self, problem: &ConstraintProblem, _warm_start: Option<&[RowState]>) -> Result<ConstraintSolution> {
        problem.check()?;
        let a = problem.delassus.dense();
        let out = self.solve_dense(&a, problem.b, problem.bounds, None, None)?;
        Ok(ConstraintSolution {
            f: out.f,
            w: out.w,
            states: out.states,
            report: SolveReport {
                solver: self.name(),
                fallbacks: usize::from(out.fallback_sweeps > 0),
                residual: out.residual,
                converged: out.converged,
                lcp: None,
            },
        })
    }

    fn vjp(
        &self,
        problem: &ConstraintProblem,
        solution: &ConstraintSolution,
        grad_f: &DVector<f64>,
    ) -> Result<ProblemCotangent> {
        problem.check()?;
        let m = problem.rows();
        if grad_f.len() != m {
            return Err(Error::Dimension { what: "∂ℓ/∂f", expected: m, got: grad_f.len() });
        }
        let a = problem.delassus.dense();
        let dense = Dense::new(self, &a, problem.b, problem.bounds)?;
        let mode = dense.mode(&solution.f, &solution.w, self.tolerance, false);
        let (q, p) = mode.jacobians(&dense.cones, &solution.f, &solution.w);
        let k = &q + &p * &a;
        let y: DVector<f64> = match k.transpose().lu().solve(grad_f) {
            Some(y)
                if y.iter().all(|v| v.is_finite())
                    && (k.transpose() * &y - grad_f).amax() <= 1e-9 * grad_f.amax().max(1.0) =>
            {
                y
            }
            _ => min_norm_solve(&k.transpose(), grad_f, 1e-12).ok_or_else(|| Error::Numerical {
                algorithm: "NCP solver backward pass",
                detail: "the mode's Jacobian could not be inverted".into(),
            })?,
        };
        let gb: DVector<f64> = -(p.transpose() * y);
        Ok(ProblemCotangent { a: vec![(gb.clone(), solution.f.clone())], b: gb })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One problem of the fixture `tests/fixtures/ncp/box_push_cycling.json`.
    #[derive(serde::Deserialize)]
    struct Captured {
        a: Vec<Vec<f64>>,
        b: Vec<f64>,
        /// Per row: its normal row and μ for a friction row, `None` for a unilateral one.
        bounds: Vec<CapturedBound>,
    }

    #[derive(serde::Deserialize)]
    struct CapturedBound {
        normal: Option<usize>,
        #[serde(default)]
        mu: f64,
    }

    /// The first problem of the fixture (the box push's cycling steps; the integration
    /// tests `tests/ncp_solver.rs` check its solution).
    fn cycling_problem() -> (DMatrix<f64>, DVector<f64>, Vec<RowBound>) {
        #[derive(serde::Deserialize)]
        struct Fixture {
            problems: Vec<Captured>,
        }
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ncp/box_push_cycling.json");
        let mut fixture: Fixture = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let Captured { a, b, bounds } = fixture.problems.swap_remove(0);
        let bounds = bounds
            .iter()
            .map(|r| r.normal.map_or(RowBound::UNILATERAL, |normal| RowBound::Friction { normal, mu: r.mu }));
        (DMatrix::from_fn(a.len(), a.len(), |i, j| a[i][j]), DVector::from_vec(b), bounds.collect())
    }

    #[test]
    fn a_cycling_newton_iteration_hands_over_at_the_stall_window() {
        let (a, b, bounds) = cycling_problem();
        let plain = NcpSolver { fallback_sweeps: 0, ..Default::default() };
        let out = plain.solve_dense(&a, &b, &bounds, None, None).unwrap();
        // Without the fallback both runs (to the coarse tolerance, then to the tolerance) spend
        // their whole budget.
        assert!(!out.converged && out.iterations == 2 * plain.max_iterations, "{out:?}");
        let out = NcpSolver::default().solve_dense(&a, &b, &bounds, None, None).unwrap();
        assert!(out.converged && out.fallback_sweeps > 0, "{out:?}");
        // The first run stops once its best residual has not fallen for STALL_WINDOW
        // iterations; Newton's polish from the sweeps' result adds at most a few more.
        assert!(out.iterations < 4 * STALL_WINDOW, "{} Newton iterations", out.iterations);
    }
}
