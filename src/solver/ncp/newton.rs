//! The non-smooth Newton iteration for contact with isotropic Coulomb friction (Macklin et
//! al. 2019, §6, eqs. 53–63; digest-000 §2), on a dense problem in reduced coordinates:
//! one backward-Euler velocity step of a system with effective mass `M̃`, contact normal
//! rows at the position level and two friction rows per contact at the velocity level.
//!
//! Unknowns: the velocity `v⁺`, the normal forces `λ_n` and the friction impulses `p_f`
//! (`p_f = h λ_f`). With `J̃ = [h J_n; D]` and `y = [λ_n; p_f]` the dynamics read
//! `M̃ (v⁺ − v*) = J̃ᵀ y` (v* the free velocity), and the contact rows
//!
//! ```text
//! normal:    ϕ(φ₀ + h J_n v⁺, r_n λ_n) = 0         r_n = h² A_ii   (positions, eq. 66)
//! friction:  D v⁺ + W p_f = 0  (W lagged)          r_f = A_ii      (velocities per impulse)
//! ```
//!
//! with `A = J M̃⁻¹ Jᵀ` of the raw rows, and `W` the frictional compliance of
//! [`super::friction_compliance`] from the current slip `|D v|`, friction impulse `|p_f|`
//! and bound `μ h λ_n` (contacts with `λ_n ≤ 0` hold `p_f = 0`). Each iteration linearizes
//! the normal rows (`∂ϕ/∂a`, `∂ϕ/∂b`), divides them by `∂ϕ/∂a` — a row whose `∂ϕ/∂a`
//! vanishes only sets its own force, `Δλ = −ϕ/(∂ϕ/∂λ)` — and solves the Schur system
//!
//! ```text
//! [J̃ M̃⁻¹ J̃ᵀ + C] Δy = J̃ M̃⁻¹ g − e,     Δv = M̃⁻¹ (J̃ᵀ Δy − g),     g = M̃ (v − v*) − J̃ᵀ y      (59–60)
//! ```
//!
//! with `C = diag(∂ϕ/∂λ / ∂ϕ/∂a, …, W, W, …)` and `e = [ϕ/∂ϕ/∂a; D v + W p_f]`, by a dense
//! Cholesky factorization or by [`super::pcr_solve`]; then `y += t Δy`, `v += t Δv` with
//! the paper's fixed damping `t` (0.75; 1 is plain Newton). The iteration stops when the
//! residual `max(|M̃⁻¹ g|∞, |ϕ_n|∞ / h, |D v + W p_f|∞)` (velocity units) is below the
//! tolerance.

use super::functions::{delassus_scales, friction_compliance, FrictionCompliance, NcpFunction};
use super::pcr::{pcr_solve, PcrOptions, SchurOperator};
use crate::error::{check_vector, Error, Result};
use crate::math::min_norm_solve;
use crate::solver::gpu_linear::{gpu_pcr_solve, gpu_ready, DeviceLayout, GpuLinearCounts};
use crate::solver::{CsrMatrix, DelassusOperator, DenseDelassus};
use nalgebra::{DMatrix, DVector};

/// One contact step for the non-smooth Newton solver (module notes), dense.
#[derive(Clone, Debug)]
pub struct NcpProblem {
    /// Effective mass `M̃` (nv × nv, symmetric positive definite).
    pub mass: DMatrix<f64>,
    /// The free velocity `v*` (the step without contact forces).
    pub free_velocity: DVector<f64>,
    /// Normal rows `J_n` (k × nv): the rate of each contact's gap.
    pub normals: DMatrix<f64>,
    /// Friction rows `D` (2k × nv): rows `2i`, `2i + 1` are contact i's two tangents.
    pub tangents: DMatrix<f64>,
    /// Gaps `φ₀` at the start of the step (k; negative: penetration).
    pub gaps: Vec<f64>,
    /// Friction coefficients μ (k).
    pub friction: Vec<f64>,
    /// The time step h.
    pub h: f64,
}

/// How the Newton step's linear system is solved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LinearSolve {
    /// Dense Cholesky factorization of the Schur matrix (small problems, validation).
    Direct,
    /// Jacobi-preconditioned conjugate residuals with this many iterations at most.
    ConjugateResidual(usize),
    /// The same conjugate residuals on the GPU (`docs/gpu.md`; feature `cuda`): the
    /// island's Schur matrix is stored sparse (its nonzeros) and solved by
    /// `crate::gpu::GpuPcr` in double precision with the stopping rule of
    /// `ConjugateResidual` (this many iterations at most, tolerance 1e-15). Without a GPU
    /// each system is solved by the CPU branch `ConjugateResidual` instead, and counted
    /// as a fallback ([`GpuLinearCounts`]).
    GpuConjugateResidual(usize),
}

/// Options of [`solve_ncp`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NcpOptions {
    /// The NCP function.
    pub function: NcpFunction,
    /// At most this many Newton iterations.
    pub max_iterations: usize,
    /// Residual tolerance (m/s).
    pub tolerance: f64,
    /// Damping `t` of the updates (the paper: 0.75).
    pub damping: f64,
    /// The linear solver.
    pub linear: LinearSolve,
    /// Scale each row by the complementarity preconditioner (eq. 66); `false`: `r = 1`.
    pub preconditioner: bool,
    /// Identity shift of the Schur matrix (the paper: 1e-6).
    pub shift: f64,
}

impl Default for NcpOptions {
    fn default() -> Self {
        Self {
            function: NcpFunction::FischerBurmeister,
            max_iterations: 100,
            tolerance: 1e-10,
            damping: 0.75,
            linear: LinearSolve::Direct,
            preconditioner: true,
            shift: 1e-12,
        }
    }
}

/// The result of [`solve_ncp`].
#[derive(Clone, Debug, PartialEq)]
pub struct NcpSolution {
    /// The velocity after the step.
    pub velocity: DVector<f64>,
    /// Normal forces λ_n (k).
    pub normal_forces: DVector<f64>,
    /// Friction forces λ_f = p_f / h (2k).
    pub friction_forces: DVector<f64>,
    /// Newton iterations run.
    pub iterations: usize,
    /// The final residual (module notes).
    pub residual: f64,
    /// Whether the residual reached the tolerance.
    pub converged: bool,
    /// With [`LinearSolve::GpuConjugateResidual`]: the Newton systems solved on the GPU
    /// and those that fell back to the CPU.
    pub gpu: GpuLinearCounts,
}

impl NcpProblem {
    fn check(&self) -> Result<(usize, usize)> {
        let nv = self.mass.nrows();
        let k = self.gaps.len();
        if self.mass.shape() != (nv, nv) {
            return Err(Error::Dimension { what: "NCP mass matrix columns", expected: nv, got: self.mass.ncols() });
        }
        check_vector("NCP free velocity", self.free_velocity.as_slice(), nv)?;
        check_vector("NCP gaps", &self.gaps, k)?;
        check_vector("NCP friction coefficients", &self.friction, k)?;
        for (what, m, rows) in [("NCP normal rows", &self.normals, k), ("NCP friction rows", &self.tangents, 2 * k)] {
            if m.shape() != (rows, nv) {
                return Err(Error::Dimension { what, expected: rows * nv, got: m.nrows() * m.ncols() });
            }
            if let Some((i, &x)) = m.iter().enumerate().find(|(_, x)| !x.is_finite()) {
                return Err(Error::NonFinite { what, index: i, value: x });
            }
        }
        if !(self.h > 0.0 && self.h.is_finite()) {
            return Err(Error::InvalidInput(format!("NCP time step must be positive, got {}", self.h)));
        }
        if self.friction.iter().any(|&m| m < 0.0) {
            return Err(Error::InvalidInput("NCP friction coefficients must be non-negative".into()));
        }
        Ok((nv, k))
    }
}

/// Islands with fewer rows keep `A` dense only ([`DelassusMatrix::new`]).
const SPARSE_MIN_ROWS: usize = 32;

/// `A` is also held in compressed rows where at most this share of its entries is
/// nonzero ([`DelassusMatrix::new`]).
const SPARSE_MAX_FILL: f64 = 0.25;

/// The Delassus matrix `A` of the Newton steps: dense, and also in compressed rows where
/// it is large and sparse enough for its products to pay. In a pile of many bodies a row
/// couples only the rows of the contacts on its own two bodies (54 tables: 876 rows, 7 %
/// of the entries nonzero), and the conjugate-residual iterations and the velocities
/// `w = A f + b` are products with `A`.
pub(crate) struct DelassusMatrix<'a> {
    /// `A`.
    pub dense: &'a DMatrix<f64>,
    /// `A`'s nonzeros, where they are at most [`SPARSE_MAX_FILL`] of a matrix of at
    /// least [`SPARSE_MIN_ROWS`] rows.
    pub sparse: Option<CsrMatrix>,
}

impl<'a> DelassusMatrix<'a> {
    /// `a`, and its compressed rows where they pay. Errors: a non-finite entry of a
    /// matrix that is stored sparse too.
    pub fn new(a: &'a DMatrix<f64>) -> Result<DelassusMatrix<'a>> {
        let k = a.nrows();
        let sparse = k >= SPARSE_MIN_ROWS
            && (a.iter().filter(|&&x| x != 0.0).count() as f64) <= SPARSE_MAX_FILL * (k * k) as f64;
        Ok(DelassusMatrix { dense: a, sparse: if sparse { Some(CsrMatrix::from_dense(a)?) } else { None } })
    }

    /// `A x`.
    pub fn mul(&self, x: &DVector<f64>) -> DVector<f64> {
        match &self.sparse {
            Some(s) => {
                let mut out = DVector::zeros(x.len());
                s.multiply(x.as_slice(), out.as_mut_slice());
                out
            }
            None => self.dense * x,
        }
    }
}

/// The block of `A` over the rows of a Newton step that solve their Schur system.
enum SchurBlock {
    Dense(DMatrix<f64>),
    Sparse(CsrMatrix),
}

/// The Newton step `x` of `(A + diag(c)) x = base` in which the rows with a `known` step
/// take it and the others solve their Schur system (`base − A x_known` on the right);
/// GPU solves and fallbacks are added to `gpu`.
pub(crate) fn newton_step(
    a: &DelassusMatrix,
    c: &[f64],
    base: &DVector<f64>,
    known: &[Option<f64>],
    linear: LinearSolve,
    shift: f64,
    gpu: &mut GpuLinearCounts,
) -> Result<DVector<f64>> {
    let m = base.len();
    let mut x = DVector::from_iterator(m, known.iter().map(|k| k.unwrap_or(0.0)));
    let rhs = base - a.mul(&x);
    let free: Vec<usize> = (0..m).filter(|&i| known[i].is_none()).collect();
    if !free.is_empty() {
        let nf = free.len();
        // The iterative solvers take the sparse block where there is one; the direct
        // solve factors a dense one.
        let block = match (&a.sparse, linear) {
            (Some(s), LinearSolve::ConjugateResidual(_) | LinearSolve::GpuConjugateResidual(_)) => {
                SchurBlock::Sparse(s.principal_submatrix(&free))
            }
            _ => SchurBlock::Dense(DMatrix::from_fn(nf, nf, |r, s| a.dense[(free[r], free[s])])),
        };
        let cf: Vec<f64> = free.iter().map(|&i| c[i]).collect();
        let bf: Vec<f64> = free.iter().map(|&i| rhs[i]).collect();
        let xf = solve_schur(block, &cf, bf, linear, shift, gpu)?;
        for (r, &i) in free.iter().enumerate() {
            x[i] = xf[r];
        }
    }
    Ok(x)
}

/// Solves the Newton step's Schur system `(A + diag(c) + shift·1) x = b` by `linear`: a
/// dense Cholesky factorization (the minimum-norm solution where redundant rows without
/// compliance leave it singular), or Jacobi-preconditioned conjugate residuals on the
/// CPU or the GPU (falling back to the CPU, counted in `gpu`, when there is none).
fn solve_schur(
    a: SchurBlock,
    c: &[f64],
    b: Vec<f64>,
    linear: LinearSolve,
    shift: f64,
    gpu: &mut GpuLinearCounts,
) -> Result<Vec<f64>> {
    match (linear, a) {
        (LinearSolve::GpuConjugateResidual(its), a) => {
            if gpu_ready() {
                let options = PcrOptions { max_iterations: its, tolerance: 1e-15 };
                let sparse = match &a {
                    SchurBlock::Sparse(s) => std::borrow::Cow::Borrowed(s),
                    SchurBlock::Dense(d) => std::borrow::Cow::Owned(CsrMatrix::from_dense(d)?),
                };
                if let Some((x, _)) = gpu_pcr_solve(&sparse, DeviceLayout::Rows, c, shift, &b, &options)? {
                    gpu.solves += 1;
                    return Ok(x);
                }
            }
            gpu.fallbacks += 1;
            solve_schur(a, c, b, LinearSolve::ConjugateResidual(its), shift, gpu)
        }
        (LinearSolve::Direct, a) => {
            let mut s = match a {
                SchurBlock::Dense(d) => d,
                SchurBlock::Sparse(s) => s.to_dense(),
            };
            for (d, ci) in c.iter().enumerate() {
                s[(d, d)] += ci + shift;
            }
            let rhs = DVector::from_vec(b);
            let x = match s.clone().cholesky() {
                Some(ch) => ch.solve(&rhs),
                None => min_norm_solve(&s, &rhs, 1e-12).ok_or_else(|| Error::Numerical {
                    algorithm: "NCP solver",
                    detail: "the Newton step's Schur system could not be solved".into(),
                })?,
            };
            Ok(x.as_slice().to_vec())
        }
        (LinearSolve::ConjugateResidual(its), a) => {
            let n = b.len();
            let (op, diag): (Box<dyn DelassusOperator>, Vec<f64>) = match a {
                SchurBlock::Dense(d) => {
                    let diag = (0..n).map(|i| d[(i, i)]).collect();
                    (Box::new(DenseDelassus(d)), diag)
                }
                SchurBlock::Sparse(s) => {
                    let diag = s.diagonal();
                    (Box::new(s), diag)
                }
            };
            let schur = SchurOperator { delassus: op.as_ref(), compliance: c, shift };
            let mut x = vec![0.0; n];
            pcr_solve(
                &schur,
                &schur.diagonal(&diag),
                &b,
                &mut x,
                &PcrOptions { max_iterations: its, tolerance: 1e-15 },
            )?;
            Ok(x)
        }
    }
}

/// Solves one contact step by non-smooth Newton (module notes), from zero forces and the
/// free velocity, or from `warm` (a previous solution of a problem of the same size).
///
/// Errors: inconsistent sizes or non-finite data, a mass matrix that is not positive
/// definite, or a Schur system the direct solver cannot factor ([`Error::Numerical`]).
/// A run that does not reach the tolerance returns its last iterate with
/// `converged: false`.
pub fn solve_ncp(problem: &NcpProblem, options: &NcpOptions, warm: Option<&NcpSolution>) -> Result<NcpSolution> {
    let (nv, k) = problem.check()?;
    let h = problem.h;
    let chol = problem.mass.clone().cholesky().ok_or_else(|| Error::Numerical {
        algorithm: "NCP solver",
        detail: "the mass matrix is not positive definite".into(),
    })?;
    // J̃ = [h J_n; D] and A = J̃ M̃⁻¹ J̃ᵀ.
    let m = 3 * k;
    let mut jt = DMatrix::zeros(m, nv);
    jt.rows_mut(0, k).copy_from(&(&problem.normals * h));
    jt.rows_mut(k, 2 * k).copy_from(&problem.tangents);
    let minv_jt_t = chol.solve(&jt.transpose());
    let a = &jt * &minv_jt_t;
    let delassus = DelassusMatrix::new(&a)?;
    // The complementarity preconditioner (eq. 66): normal rows r = h² [J_n M̃⁻¹ J_nᵀ]_ii, the
    // diagonal of A on the rows h J_n; friction rows, in impulse units, r = [D M̃⁻¹ Dᵀ]_ii
    // (the force-unit h [D M̃⁻¹ Dᵀ]_ii divided by h). A contact's two tangents share the larger.
    let r = if options.preconditioner { delassus_scales(&a) } else { vec![1.0; m] };
    let r_n = &r[..k];
    let r_f: Vec<f64> = (0..k).map(|i| r[k + 2 * i].max(r[k + 2 * i + 1])).collect();

    let (mut v, mut y) = match warm {
        Some(w) if w.velocity.len() == nv && w.normal_forces.len() == k => {
            let mut y = DVector::zeros(m);
            y.rows_mut(0, k).copy_from(&w.normal_forces);
            y.rows_mut(k, 2 * k).copy_from(&(&w.friction_forces * h));
            (w.velocity.clone(), y)
        }
        _ => (problem.free_velocity.clone(), DVector::zeros(m)),
    };
    let mut c = vec![0.0; m];
    let mut e = DVector::zeros(m);
    let mut known: Vec<Option<f64>> = vec![None; m];
    let mut iterations = 0;
    let mut residual;
    let mut gpu = GpuLinearCounts::default();
    loop {
        // Residuals and the linearization at (v, y).
        let g = &problem.mass * (&v - &problem.free_velocity) - jt.transpose() * &y;
        let minv_g = chol.solve(&g);
        residual = minv_g.amax();
        let gap_next = DVector::from_column_slice(&problem.gaps) + &problem.normals * &v * h;
        let slip = &problem.tangents * &v;
        for i in 0..k {
            let phi = options.function.eval(gap_next[i], y[i], r_n[i]);
            residual = residual.max(phi.value.abs() / h);
            known[i] = None;
            if phi.da > 1e-12 {
                c[i] = phi.db / phi.da;
                e[i] = phi.value / phi.da;
            } else {
                known[i] = Some(-phi.value / phi.db);
            }
            let (s0, s1) = (slip[2 * i], slip[2 * i + 1]);
            let (f0, f1) = (y[k + 2 * i], y[k + 2 * i + 1]);
            let bound = problem.friction[i] * h * y[i].max(0.0);
            match friction_compliance(options.function, s0.hypot(s1), f0.hypot(f1), bound, r_f[i]) {
                FrictionCompliance::Active(w) => {
                    for (row, s, f) in [(k + 2 * i, s0, f0), (k + 2 * i + 1, s1, f1)] {
                        c[row] = w;
                        e[row] = s + w * f;
                        known[row] = None;
                        residual = residual.max(e[row].abs());
                    }
                }
                FrictionCompliance::Inactive => {
                    for (row, f) in [(k + 2 * i, f0), (k + 2 * i + 1, f1)] {
                        known[row] = Some(-f);
                        residual = residual.max(f.abs() / h);
                    }
                }
            }
        }
        if residual <= options.tolerance || iterations >= options.max_iterations {
            break;
        }
        // The Schur system over the rows whose step is not known.
        let dy = newton_step(&delassus, &c, &(&jt * &minv_g - &e), &known, options.linear, options.shift, &mut gpu)?;
        let dv = chol.solve(&(jt.transpose() * &dy - &g));
        let t = options.damping;
        v += dv * t;
        y += dy * t;
        iterations += 1;
    }
    Ok(NcpSolution {
        velocity: v,
        normal_forces: y.rows(0, k).into_owned(),
        friction_forces: y.rows(k, 2 * k).into_owned() / h,
        iterations,
        residual,
        converged: residual <= options.tolerance,
        gpu,
    })
}
