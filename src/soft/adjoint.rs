//! The adjoint of a soft body's implicit step (the implicit-function theorem on
//! `∇Φ(y; p) = 0`, `potential.rs`, with its inertia weight c and elastic point
//! `z = x + w (y − x)`: `c = w = 1` backward Euler, `c = 2, w = 1/2` implicit midpoint).
//!
//! With `g(y, p) = ∇_f Φ` over the free degrees of freedom at the step's solution
//! `y = x⁺`, the exact Hessian `H = ∂g/∂y` (factored once, Cholesky, or LU when it is
//! indefinite) and the inputs `p = (x, v, u, targets, θ)`, `dy_f/dp = −H⁻¹ ∂g/∂p`. A loss
//! with cotangents `(ḡ_x⁺, ḡ_v⁺)` and `v⁺ = c (x⁺ − x)/h − (c − 1) v` has
//! `a = ḡ_x⁺ + c ḡ_v⁺/h`; one back-solve `H λ = a_f` gives every input's gradient as
//! `−(∂g/∂p)ᵀ λ`, evaluated without forming `∂g/∂p`:
//!
//! * `x`: `m (c/h² + α/h) λ` per degree of freedom, `−(1 − w) V_e (C(F_z) : Λ_e) ∇N_a` through
//!   the elastic point, and through the viscous stress's start strain
//!   `−Σ_e V_e (∂⟨Λ_e, P_d⟩/∂F₀) ∇N_a`, with `Λ_e = Σ_a λ_a ⊗ ∇N_a`;
//! * `v`: `c m λ / h`; `u`: `λ` (zero on pinned degrees of freedom);
//! * targets: `a_p − (H_pf λ)_p`, the coupling of each pinned degree of freedom through
//!   its elements, `V_e (C_e : Λ_e) ∇N_a`;
//! * `μ_e, λ_e`: `−V_e ⟨Λ_e, ∂P/∂μ⟩` (`∂P/∂λ`), damping included, then `(E, ν)` of each
//!   region through `∂(μ, λ)/∂(E, ν)`; `ρ_r`: `−Σ_{e∈r} V_e/4 Σ_a λ_a · w_a` with the
//!   vertex residual per unit mass `r = c (y − x − h v)/h² + α (y − x)/h − g`;
//!   `α`: `−Σ_i m_i λ_i · (y_i − x_i)/h`; `β`: `−Σ_e V_e ⟨Λ_e, F S_d⟩/h` (the elastic terms
//!   at `F(z)`, the viscous ones at `F(y)`).
//!
//! [`SoftStepRecord::jacobians`] assembles full blocks from `H⁻¹` (one multi-column
//! solve) and the same contraction per free output row.

use super::body::SoftBody;
use super::damping;
use super::implicit::{SoftIntegrator, SoftStepRecord};
use super::material::{Lame, Mat9};
use super::pcg::{self, PcgStatus};
use super::potential::{deformation_gradient, vertex, StepPotential};
use super::sparse::{Factor, NONE};
use crate::error::{check_vector, Error, Result};
use crate::math::Mat3;
use nalgebra::{DMatrix, DVector, Vector3};

/// Gradients of a scalar loss with respect to a step's inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct SoftGradients {
    /// `∂ℓ/∂x` (3 per vertex).
    pub x: DVector<f64>,
    /// `∂ℓ/∂v`.
    pub v: DVector<f64>,
    /// `∂ℓ/∂u` (vertex forces).
    pub u: DVector<f64>,
    /// `∂ℓ/∂targets` (one per pinned degree of freedom).
    pub targets: DVector<f64>,
    /// `∂ℓ/∂θ` in the order of [`SoftBody::param_names`].
    pub theta: DVector<f64>,
}

/// The Jacobians of `(x⁺, v⁺)` with respect to a step's inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct SoftJacobians {
    /// `∂x⁺/∂x`.
    pub x_x: DMatrix<f64>,
    /// `∂x⁺/∂v`.
    pub x_v: DMatrix<f64>,
    /// `∂x⁺/∂u`.
    pub x_u: DMatrix<f64>,
    /// `∂x⁺/∂targets`.
    pub x_targets: DMatrix<f64>,
    /// `∂x⁺/∂θ`.
    pub x_theta: DMatrix<f64>,
    /// `∂v⁺/∂x`.
    pub v_x: DMatrix<f64>,
    /// `∂v⁺/∂v`.
    pub v_v: DMatrix<f64>,
    /// `∂v⁺/∂u`.
    pub v_u: DMatrix<f64>,
    /// `∂v⁺/∂targets`.
    pub v_targets: DMatrix<f64>,
    /// `∂v⁺/∂θ`.
    pub v_theta: DMatrix<f64>,
}

/// Per element, what the contraction needs at the solution.
#[derive(Debug)]
struct ElementTerms {
    /// `F(y)`, where the viscous stress is evaluated.
    f: Mat3,
    /// `F(z)`, where the elastic stress is evaluated.
    fz: Mat3,
    f0: Mat3,
    e0: Mat3,
    /// The tangent of Φ (damping included), for elements that touch a pinned degree of
    /// freedom.
    tangent: Option<Mat9>,
    /// The elastic tangent at `F(z)` (implicit midpoint only: the coupling to `x`).
    elastic: Option<Mat9>,
}

/// The factored Hessian at a step's solution and the per-element terms: what every
/// back-solve of the step's adjoint reuses (kept by a soft body's world step).
#[derive(Debug)]
pub(crate) struct Linearization {
    pub(crate) factor: Factor,
    pub(crate) terms: Contraction,
}

/// What the contraction `−(∂g/∂p)ᵀ λ` needs at a step's solution.
#[derive(Debug)]
pub(crate) struct Contraction {
    elements: Vec<ElementTerms>,
    /// The inertia weight c and the elastic point's weight w of the integrator.
    pub(crate) inertia: f64,
    weight: f64,
}

/// Relative residual of the adjoint's conjugate-gradient solve with a kept factor.
const ADJOINT_RTOL: f64 = 1e-13;
/// Its iteration limit.
const ADJOINT_MAX_ITERATIONS: usize = 200;

impl SoftGradients {
    fn zeros(body: &SoftBody) -> SoftGradients {
        let n = body.ndof();
        SoftGradients {
            x: DVector::zeros(n),
            v: DVector::zeros(n),
            u: DVector::zeros(n),
            targets: DVector::zeros(body.pinned_dofs().len()),
            theta: DVector::zeros(3 * body.regions().len() + 2),
        }
    }
}

impl SoftStepRecord {
    /// The gradients of a loss with cotangents `∂ℓ/∂x⁺` and `∂ℓ/∂v⁺`: one solve with the
    /// exact Hessian at the solution, by a fresh factorization ([`super::SoftLinearSolver::Direct`]
    /// and [`super::SoftLinearSolver::PcrGpu`])
    /// or by conjugate gradients preconditioned with the step's kept factor
    /// ([`super::SoftLinearSolver::KeptFactor`]; the LU factorization when that Hessian
    /// is indefinite). Errors: sizes, non-finite cotangents, a singular Hessian,
    /// conjugate gradients that do not converge.
    pub fn vjp(&self, grad_x_next: &DVector<f64>, grad_v_next: &DVector<f64>) -> Result<SoftGradients> {
        let n = self.body.ndof();
        check_vector("soft grad x_next", grad_x_next.as_slice(), n)?;
        check_vector("soft grad v_next", grad_v_next.as_slice(), n)?;
        let Some(kept) = &self.kept else {
            let lin = Linearization::new(self)?;
            return Ok(self.vjp_linearized(&lin, grad_x_next, grad_v_next));
        };
        let potential = self.potential();
        let hessian = potential.evaluate(self.next.x.as_slice(), true, false).hessian;
        let terms = Contraction::new(self, &potential);
        let a: DVector<f64> = grad_x_next + grad_v_next * (terms.inertia / self.options.dt);
        let pattern = self.body.pattern();
        let b: Vec<f64> = pattern.free_dofs.iter().map(|&d| a[d]).collect();
        let mut lambda = vec![0.0; b.len()];
        let outcome =
            pcg::solve((pattern, &hessian), kept, &b, None, &mut lambda, (ADJOINT_RTOL, ADJOINT_MAX_ITERATIONS));
        match outcome.status {
            PcgStatus::Converged => {}
            PcgStatus::NegativeCurvature => {
                lambda.copy_from_slice(&b);
                pattern.lu(&hessian)?.solve_in_place(&mut lambda, 1);
            }
            PcgStatus::NotConverged => {
                return Err(Error::Numerical {
                    algorithm: "soft step adjoint (kept factor)",
                    detail: format!(
                        "conjugate gradients reached a relative residual of {:.3e} in {} iterations, not {ADJOINT_RTOL:.0e}; step with SoftLinearSolver::Direct",
                        outcome.relative_residual, outcome.iterations
                    ),
                })
            }
        }
        Ok(self.vjp_with_lambda(&terms, &a, grad_v_next, &lambda))
    }

    /// The step's incremental potential (`potential.rs`).
    fn potential(&self) -> StepPotential<'_> {
        let midpoint = self.options.integrator == SoftIntegrator::ImplicitMidpoint;
        StepPotential::new(
            &self.body,
            self.options.dt,
            self.x.as_slice(),
            self.v.as_slice(),
            self.u.as_slice(),
            midpoint,
        )
    }

    /// [`SoftStepRecord::vjp`] with the step's [`Linearization`] given (sizes checked by
    /// the caller).
    pub(crate) fn vjp_linearized(
        &self,
        lin: &Linearization,
        grad_x_next: &DVector<f64>,
        grad_v_next: &DVector<f64>,
    ) -> SoftGradients {
        let a: DVector<f64> = grad_x_next + grad_v_next * (lin.terms.inertia / self.options.dt);
        let pattern = self.body.pattern();
        let mut lambda_free: Vec<f64> = pattern.free_dofs.iter().map(|&d| a[d]).collect();
        lin.factor.solve_in_place(&mut lambda_free, 1);
        self.vjp_with_lambda(&lin.terms, &a, grad_v_next, &lambda_free)
    }

    /// The gradients for `a = ḡ_x⁺ + c ḡ_v⁺/h` and the adjoint `λ = H⁻¹ a_f` (free indices).
    fn vjp_with_lambda(
        &self,
        terms: &Contraction,
        a: &DVector<f64>,
        grad_v_next: &DVector<f64>,
        lambda_free: &[f64],
    ) -> SoftGradients {
        let (h, c) = (self.options.dt, terms.inertia);
        let mut out = SoftGradients::zeros(&self.body);
        out.x -= grad_v_next * (c / h);
        out.v -= grad_v_next * (c - 1.0);
        for (p, &d) in self.body.pinned_dofs().iter().enumerate() {
            out.targets[p] += a[d];
        }
        terms.contract(self, lambda_free, &mut out);
        out
    }

    /// The full Jacobians of `(x⁺, v⁺)` with respect to `(x, v, u, targets, θ)`.
    /// Costs one solve with `n_free` right-hand sides and one contraction per free
    /// degree of freedom: for small and medium meshes (prefer [`SoftStepRecord::vjp`]).
    /// Errors: a singular Hessian.
    pub fn jacobians(&self) -> Result<SoftJacobians> {
        let lin = Linearization::new(self)?;
        let body = &self.body;
        let (n, np, nt) = (body.ndof(), body.pinned_dofs().len(), 3 * body.regions().len() + 2);
        let pattern = body.pattern();
        let nf = pattern.n_free();
        let mut inverse = vec![0.0; nf * nf];
        for r in 0..nf {
            inverse[r * nf + r] = 1.0;
        }
        lin.factor.solve_in_place(&mut inverse, nf);
        let mut j = SoftJacobians {
            x_x: DMatrix::zeros(n, n),
            x_v: DMatrix::zeros(n, n),
            x_u: DMatrix::zeros(n, n),
            x_targets: DMatrix::zeros(n, np),
            x_theta: DMatrix::zeros(n, nt),
            v_x: DMatrix::zeros(n, n),
            v_v: DMatrix::zeros(n, n),
            v_u: DMatrix::zeros(n, n),
            v_targets: DMatrix::zeros(n, np),
            v_theta: DMatrix::zeros(n, nt),
        };
        let mut row = SoftGradients::zeros(body);
        for (r, &d) in pattern.free_dofs.iter().enumerate() {
            // Row d of ∂x⁺/∂p: −(∂g/∂p)ᵀ H⁻¹ e_r (H symmetric).
            row.x.fill(0.0);
            row.v.fill(0.0);
            row.u.fill(0.0);
            row.targets.fill(0.0);
            row.theta.fill(0.0);
            lin.terms.contract(self, &inverse[r * nf..(r + 1) * nf], &mut row);
            j.x_x.row_mut(d).copy_from(&row.x.transpose());
            j.x_v.row_mut(d).copy_from(&row.v.transpose());
            j.x_u.row_mut(d).copy_from(&row.u.transpose());
            j.x_targets.row_mut(d).copy_from(&row.targets.transpose());
            j.x_theta.row_mut(d).copy_from(&row.theta.transpose());
        }
        for (p, &d) in body.pinned_dofs().iter().enumerate() {
            j.x_targets[(d, p)] = 1.0;
        }
        // v⁺ = c (x⁺ − x)/h − (c − 1) v.
        let (h, c) = (self.options.dt, lin.terms.inertia);
        j.v_x = (&j.x_x - DMatrix::identity(n, n)) * (c / h);
        j.v_v = &j.x_v * (c / h) - DMatrix::identity(n, n) * (c - 1.0);
        j.v_u = &j.x_u * (c / h);
        j.v_targets = &j.x_targets * (c / h);
        j.v_theta = &j.x_theta * (c / h);
        Ok(j)
    }
}

impl Linearization {
    /// Factors the exact Hessian at `record`'s solution (Cholesky, LU when indefinite).
    pub(crate) fn new(record: &SoftStepRecord) -> Result<Linearization> {
        let potential = record.potential();
        let ev = potential.evaluate(record.next.x.as_slice(), true, false);
        let pattern = record.body.pattern();
        let factor = match pattern.cholesky(&ev.hessian) {
            Some(f) => f,
            None => pattern.lu(&ev.hessian)?,
        };
        Ok(Linearization { factor, terms: Contraction::new(record, &potential) })
    }
}

impl Contraction {
    /// The per-element terms at `record`'s solution.
    fn new(record: &SoftStepRecord, potential: &StepPotential) -> Contraction {
        let body = &*record.body;
        let (x, y) = (record.x.as_slice(), record.next.x.as_slice());
        let midpoint = record.options.integrator == SoftIntegrator::ImplicitMidpoint;
        let pattern = body.pattern();
        let pinned = |v: usize| (0..3).any(|k| pattern.free_index[3 * v + k] == NONE);
        let elements = (0..body.mesh().num_tets())
            .map(|t| {
                let (fz, f) = potential.gradients(t, y);
                let f0 = deformation_gradient(body, t, x);
                let touches_pin = body.mesh().tets()[t].iter().any(|&v| pinned(v));
                let region = &body.regions()[body.element_regions()[t]];
                ElementTerms {
                    f,
                    fz,
                    f0,
                    e0: damping::green_strain(&f0),
                    tangent: touches_pin.then(|| potential.tangent(t, &(fz, f))),
                    elastic: midpoint.then(|| region.material.model.tangent(&fz, &region.lame)),
                }
            })
            .collect();
        Contraction { elements, inertia: potential.inertia, weight: potential.weight }
    }

    /// Adds `−(∂g/∂p)ᵀ λ` for the free-index vector `lambda_free` to `out`.
    fn contract(&self, rec: &SoftStepRecord, lambda_free: &[f64], out: &mut SoftGradients) {
        let body = &*rec.body;
        let mesh = body.mesh();
        let pattern = body.pattern();
        let h = rec.options.dt;
        let (alpha, beta, gravity) = (body.damping().mass, body.damping().stiffness, body.gravity());
        let (c, weight) = (self.inertia, self.weight);
        let n = body.ndof();
        let mut lambda = vec![0.0; n];
        for (r, &d) in pattern.free_dofs.iter().enumerate() {
            lambda[d] = lambda_free[r];
        }
        let (x, v, y) = (rec.x.as_slice(), rec.v.as_slice(), rec.next.x.as_slice());
        // Vertex terms: inertia, mass damping, forces.
        let mut w = vec![0.0; n];
        let mut alpha_bar = 0.0;
        for d in 0..n {
            let (m, k) = (body.masses()[d / 3], d % 3);
            out.x[d] += m * (c / (h * h) + alpha / h) * lambda[d];
            out.v[d] += c * m * lambda[d] / h;
            out.u[d] += lambda[d];
            w[d] = c * (y[d] - x[d] - h * v[d]) / (h * h) + alpha * (y[d] - x[d]) / h - gravity[k];
            alpha_bar -= lambda[d] * m * (y[d] - x[d]) / h;
        }
        let nr = body.regions().len();
        let mut lame_bar = vec![[0.0; 2]; nr];
        let mut beta_bar = 0.0;
        for (t, tet) in mesh.tets().iter().enumerate() {
            let grads = mesh.shape_gradients(t);
            let region = body.element_regions()[t];
            let lame: &Lame = &body.regions()[region].lame;
            let model = body.regions()[region].material.model;
            let volume = mesh.volumes()[t];
            let e = &self.elements[t];
            let mut big_lambda = Mat3::zeros();
            let mut lw = 0.0;
            for (a, &vtx) in tet.iter().enumerate() {
                big_lambda += vertex(&lambda, vtx) * grads[a].transpose();
                lw += vertex(&lambda, vtx).dot(&vertex(&w, vtx));
            }
            // Density: −V/4 Σ_a λ_a · w_a.
            out.theta[3 * region + 2] -= volume / 4.0 * lw;
            let [pm, pl] = model.stress_lame_derivatives(&e.fz);
            let [dm, dl] = damping::lame_parts(&e.f, &e.e0, beta / h);
            lame_bar[region][0] -= volume * big_lambda.dot(&(pm + dm));
            lame_bar[region][1] -= volume * big_lambda.dot(&(pl + dl));
            beta_bar -= volume * big_lambda.dot(&damping::stress(&e.f, &e.e0, lame, 1.0 / h));
            if beta > 0.0 {
                let g0 = damping::start_gradient(&e.f, &e.f0, lame, beta / h, &big_lambda) * volume;
                for (a, &vtx) in tet.iter().enumerate() {
                    add_vertex(&mut out.x, vtx, &(-(g0 * grads[a])));
                }
            }
            let lambda9 = nalgebra::SVector::<f64, 9>::from_column_slice(big_lambda.as_slice());
            if let Some(ce) = &e.elastic {
                // The elastic point z = x + w (y − x) moves with x: −(1 − w) V (C(F_z) : Λ) ∇N_a.
                let dp = Mat3::from_column_slice((ce * lambda9).as_slice()) * ((1.0 - weight) * volume);
                for (a, &vtx) in tet.iter().enumerate() {
                    add_vertex(&mut out.x, vtx, &(-(dp * grads[a])));
                }
            }
            if let Some(ct) = &e.tangent {
                let dp = ct * lambda9;
                let dp = Mat3::from_column_slice(dp.as_slice());
                for (a, &vtx) in tet.iter().enumerate() {
                    let force = dp * grads[a] * volume;
                    for k in 0..3 {
                        if pattern.free_index[3 * vtx + k] == NONE {
                            let p = body.pinned_dofs().binary_search(&(3 * vtx + k)).unwrap_or(0);
                            out.targets[p] -= force[k];
                        }
                    }
                }
            }
        }
        for (r, region) in body.regions().iter().enumerate() {
            let jac = Lame::young_poisson_jacobian(region.material.youngs_modulus, region.material.poisson);
            let [mb, lb] = lame_bar[r];
            out.theta[3 * r] += mb * jac[(0, 0)] + lb * jac[(1, 0)];
            out.theta[3 * r + 1] += mb * jac[(0, 1)] + lb * jac[(1, 1)];
        }
        out.theta[3 * nr] += alpha_bar;
        out.theta[3 * nr + 1] += beta_bar;
    }
}

fn add_vertex(out: &mut DVector<f64>, vtx: usize, value: &Vector3<f64>) {
    for k in 0..3 {
        out[3 * vtx + k] += value[k];
    }
}
