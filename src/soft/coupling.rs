//! A soft body's step as the velocity block of a constraint stage (issue #21, coupling;
//! docs/soft.md, "Coupling with a world").
//!
//! The free step (`implicit.rs`) minimises Φ to the free solution `x_f`, with the free
//! velocity `v_f = c (x_f − x)/h − (c − 1) v`. An impulse `p = Jᵀ f` over the step adds
//! the force `p/h` to `∇Φ = 0`; linearized at `x_f` (one Newton step from the free
//! solution, the form paper 000's generalized compliance takes when the constraint rows
//! join the elastic Newton system), it moves the end configuration by `Δx = H⁻¹ p / h`
//! and the velocity by `Δv = c Δx / h`:
//!
//! ```text
//! v⁺ = v_f + M̃⁻¹ Jᵀ f,   M̃ = (h²/c) H(x_f) = (1 + α h/c) M + (h²/c) (K(x_f) + K_d(x_f)),
//! x⁺ = x_f + (h/c)(v⁺ − v_f) = x + (h/c)(v⁺ + (c − 1) v),
//! ```
//!
//! (`K` the elastic stiffness, `K_d` the viscous one's Hessian share), with `H` the exact Hessian of Φ at the free solution (already factored by the
//! adjoint, `adjoint.rs`), so that elasticity and damping answer a contact impulse
//! within the step, and pinned coordinates an infinite mass (`M̃⁻¹` is zero on them).
//!
//! Backward, `M̃` depends on the inputs through `x_f(x, v, u)` and, directly, on `x`
//! (the midpoint rule's elastic point, the viscous start strain): the gradient of
//! `zᵀ M̃ a` is the third derivative of Φ contracted with `a` and `z`
//! ([`super::material::MaterialModel::stress_curvature`],
//! `StepPotential::hessian_curvature`), and its `x_f` part goes back to `(x, v, u)`
//! through one more back-solve with the kept factor, like the free velocity's cotangent.

use super::adjoint::Linearization;
use super::implicit::{step, SoftIntegrator, SoftOptions, SoftState, SoftStepRecord};
use super::potential::StepPotential;
use super::{SoftBody, SoftGradients};
use crate::error::Result;
use nalgebra::DVector;
use std::sync::Arc;

/// A soft body's step linearized at its free solution: the free velocity, the effective
/// mass of a constraint impulse and the adjoints of both. Self-contained.
#[derive(Debug)]
pub struct LinearizedStep {
    record: SoftStepRecord,
    linearization: Linearization,
}

/// Gradients of a loss with respect to a linearized step's inputs `(x, v, u, θ)`; the pin
/// targets are the start positions of the pinned coordinates, so their share is in `x`.
#[derive(Clone, Debug, PartialEq)]
pub struct StartGradients {
    /// `∂ℓ/∂x`.
    pub x: DVector<f64>,
    /// `∂ℓ/∂v`.
    pub v: DVector<f64>,
    /// `∂ℓ/∂u`.
    pub u: DVector<f64>,
    /// `∂ℓ/∂θ` in the order of [`SoftBody::param_names`].
    pub theta: DVector<f64>,
}

impl LinearizedStep {
    /// The free step of `body` from `state` under vertex forces `u`, its pinned
    /// coordinates held at their start positions, and the factor of its Hessian at the
    /// free solution. Errors: those of [`super::step`], and a Hessian that cannot be
    /// factored.
    pub fn new(body: &Arc<SoftBody>, state: &SoftState, u: &DVector<f64>, options: &SoftOptions) -> Result<Self> {
        crate::error::check_vector("soft x", state.x.as_slice(), body.ndof())?;
        let targets = DVector::from_iterator(body.pinned_dofs().len(), body.pinned_dofs().iter().map(|&d| state.x[d]));
        let record = step(body, state, u, &targets, options)?;
        let linearization = Linearization::new(&record)?;
        Ok(LinearizedStep { record, linearization })
    }

    /// The free step's record (its report, its solution).
    pub fn record(&self) -> &SoftStepRecord {
        &self.record
    }

    /// The free velocity `v_f`.
    pub fn free_velocity(&self) -> &DVector<f64> {
        &self.record.next.v
    }

    /// The inertia weight c of the integrator (1 backward Euler, 2 implicit midpoint).
    fn inertia(&self) -> f64 {
        self.linearization.terms.inertia
    }

    /// `x ← M̃⁻¹ x = (c/h²) H⁻¹ x` on the free coordinates, zero on the pinned ones.
    pub fn solve_mass(&self, x: &mut [f64]) {
        let pattern = self.record.body.pattern();
        let h = self.record.options.dt;
        let mut r: Vec<f64> = pattern.free_dofs.iter().map(|&d| x[d]).collect();
        self.linearization.factor.solve_in_place(&mut r, 1);
        x.fill(0.0);
        let scale = self.inertia() / (h * h);
        for (&d, value) in pattern.free_dofs.iter().zip(r) {
            x[d] = scale * value;
        }
    }

    /// The end configuration for the end velocity `v_next`:
    /// `x⁺ = x + (h/c)(v⁺ + (c − 1) v)`.
    pub fn integrate(&self, v_next: &[f64], x_next: &mut [f64]) {
        let (h, c) = (self.record.options.dt, self.inertia());
        for (k, out) in x_next.iter_mut().enumerate() {
            *out = self.record.x[k] + h / c * (v_next[k] + (c - 1.0) * self.record.v[k]);
        }
    }

    /// The VJP of [`LinearizedStep::integrate`] for `g = ∂ℓ/∂x⁺`, added to
    /// `(grad_x, grad_v, grad_v_next)`.
    pub fn integrate_vjp(&self, g: &[f64], grad_x: &mut [f64], grad_v: &mut [f64], grad_v_next: &mut [f64]) {
        let (h, c) = (self.record.options.dt, self.inertia());
        for k in 0..g.len() {
            grad_x[k] += g[k];
            grad_v[k] += h / c * (c - 1.0) * g[k];
            grad_v_next[k] += h / c * g[k];
        }
    }

    /// The VJP of the free velocity for `g = ∂ℓ/∂v_f` (one back-solve).
    pub fn free_velocity_vjp(&self, g: &[f64]) -> StartGradients {
        let n = g.len();
        self.start_gradients(self.record.vjp_linearized(
            &self.linearization,
            &DVector::zeros(n),
            &DVector::from_column_slice(g),
        ))
    }

    /// `−∂/∂(x, v, u, θ) [zᵀ M̃ a]` (`a`, `z` zero on the pinned coordinates, as
    /// [`LinearizedStep::solve_mass`] leaves them): the third derivative of Φ contracted
    /// with `a` and `z`, its `x_f` part through one back-solve. Errors: a material
    /// without the closed-form third derivative (the corotated model).
    pub fn mass_vjp(&self, a: &[f64], z: &[f64]) -> Result<StartGradients> {
        let rec = &self.record;
        let n = a.len();
        let h = rec.options.dt;
        let midpoint = rec.options.integrator == SoftIntegrator::ImplicitMidpoint;
        let potential =
            StepPotential::new(&rec.body, h, rec.x.as_slice(), rec.v.as_slice(), rec.u.as_slice(), midpoint);
        let (mut gy, mut gx) = (vec![0.0; n], vec![0.0; n]);
        potential.hessian_curvature(rec.next.x.as_slice(), a, z, &mut gy, &mut gx)?;
        let scale = -h * h / self.inertia();
        let gy = DVector::from_vec(gy) * scale;
        let mut out = self.start_gradients(rec.vjp_linearized(&self.linearization, &gy, &DVector::zeros(n)));
        out.x.axpy(scale, &DVector::from_vec(gx), 1.0);
        let direct = potential.hessian_parameter_gradient(rec.next.x.as_slice(), a, z);
        out.theta.axpy(scale, &DVector::from_vec(direct), 1.0);
        Ok(out)
    }

    /// The soft step's gradients with the pin targets' share moved to `x`.
    fn start_gradients(&self, g: SoftGradients) -> StartGradients {
        let mut x = g.x;
        for (&d, t) in self.record.body.pinned_dofs().iter().zip(g.targets.iter()) {
            x[d] += t;
        }
        StartGradients { x, v: g.v, u: g.u, theta: g.theta }
    }
}
