//! Contact-free semi-implicit Euler on the configuration manifold:
//!
//! ```text
//! q̈  = (M + diag(armature + h·damping))⁻¹ (τ − c(q, v̄) − damping ⊙ v − k ⊙ (q ⊖ q_rest) + Jᵀ f_ext)
//! v⁺ = v + h q̈
//! q⁺ = q ⊕ h v⁺            (exponential map on ball and free joints)
//! ```
//!
//! * Adding `h·damping` to the inertia diagonal makes the damping implicit
//!   (`(M + A)(v⁺ − v)/h = τ − c − damping ⊙ v⁺ − …`), so the step stays stable for
//!   stiff damping; ABA absorbs the extra diagonal at no cost (it adds to `D_i`).
//! * `c(q, v̄)` holds the velocity-product forces (Coriolis, centrifugal, gyroscopic)
//!   and gravity. With [`VelocityProducts::Midpoint`] (the default) they are evaluated
//!   at `v̄ = (v + v⁺)/2`: the implicit midpoint rule for the velocity update, which
//!   conserves the kinetic energy and the angular-momentum norm of a torque-free rigid
//!   body exactly (both are quadratic invariants of Euler's equations) where the explicit
//!   choice `v̄ = v` gains energy at a rate `∝ h |ω|²`. The implicit equation is solved
//!   by fixed-point iteration; only the force half of ABA is recomputed per iteration
//!   (the articulated inertias depend on q alone). With [`VelocityProducts::Explicit`]
//!   `v̄ = v`, the classic semi-implicit Euler step.

use crate::dynamics::{
    aba_bias_pass, aba_inertia_pass, check_q, external_forces_to_bodies, kinematics_pass, velocity_pass, Data,
};
use crate::error::{check_vector, Error, Result};
use crate::math::Force;
use crate::Model;
use serde::{Deserialize, Serialize};

/// Where the velocity-product forces of a step are evaluated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum VelocityProducts {
    /// At the start-of-step velocity `v` (classic semi-implicit Euler; one ABA per step).
    Explicit,
    /// At the midpoint velocity `(v + v⁺)/2` (implicit midpoint for the velocity update).
    #[default]
    Midpoint,
}

/// Settings of the velocity update.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntegratorOptions {
    /// Where velocity-product forces are evaluated.
    pub velocity_products: VelocityProducts,
    /// Convergence threshold of the midpoint iteration on `‖Δv⁺‖∞ / max(1, ‖v⁺‖∞)`.
    pub tolerance: f64,
    /// Maximum midpoint iterations before falling back to the explicit evaluation.
    pub max_iterations: usize,
}

impl Default for IntegratorOptions {
    fn default() -> Self {
        Self { velocity_products: VelocityProducts::Midpoint, tolerance: 1e-13, max_iterations: 50 }
    }
}

/// What one step did.
#[derive(Clone, Copy, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct StepStats {
    /// Midpoint iterations performed (0 for the explicit evaluation).
    pub iterations: usize,
    /// Last relative change of `v⁺` in the midpoint iteration.
    pub residual: f64,
    /// True when the midpoint iteration did not converge and the step used the
    /// explicit evaluation instead.
    pub fallback: bool,
}

/// Advances `(q, v)` by one step of length `dt` under joint torques `tau` and
/// optional world-frame body wrenches, writing `q⁺` and `v⁺` into `q_out`, `v_out`.
#[allow(clippy::too_many_arguments)]
pub fn semi_implicit_euler(
    model: &Model,
    data: &mut Data,
    q: &[f64],
    v: &[f64],
    tau: &[f64],
    f_ext: Option<&[Force]>,
    dt: f64,
    options: &IntegratorOptions,
    q_out: &mut [f64],
    v_out: &mut [f64],
) -> Result<StepStats> {
    check_q(model, q)?;
    check_vector("v", v, model.nv())?;
    check_vector("tau", tau, model.nv())?;
    if !(dt.is_finite() && dt > 0.0) {
        return Err(Error::InvalidInput(format!("time step must be positive and finite, got {dt}")));
    }
    if q_out.len() != model.nq() || v_out.len() != model.nv() {
        return Err(Error::Dimension {
            what: "output state",
            expected: model.nq() + model.nv(),
            got: q_out.len() + v_out.len(),
        });
    }
    let nv = model.nv();
    kinematics_pass(model, data, q, Some(v));
    external_forces_to_bodies(model, data, f_ext)?;
    // Passive torques: explicit damping force (its implicit part enters through D) and springs.
    let mut tau_eff = std::mem::take(&mut data.tmp_nv);
    for k in 0..nv {
        tau_eff[k] = tau[k] - model.damping[k] * v[k];
    }
    if model.has_springs {
        let dq = &mut data.scratch[0];
        model.difference_into(model.rest.as_slice(), q, dq);
        for k in 0..nv {
            tau_eff[k] -= model.stiffness[k] * dq[k];
        }
    }
    let result = velocity_update(model, data, v, tau_eff.as_slice(), dt, options, v_out);
    data.tmp_nv = tau_eff;
    let stats = result?;
    model.integrate_into(q, v_out, dt, q_out);
    if let Some((k, x)) = q_out.iter().chain(v_out.iter()).enumerate().find(|(_, x)| !x.is_finite()) {
        return Err(Error::Numerical {
            algorithm: "semi-implicit Euler",
            detail: format!("non-finite state entry {k} = {x}"),
        });
    }
    Ok(stats)
}

/// Computes `v⁺` (kinematics at `(q, v)` already done).
#[allow(clippy::too_many_arguments)]
fn velocity_update(
    model: &Model,
    data: &mut Data,
    v: &[f64],
    tau_eff: &[f64],
    dt: f64,
    options: &IntegratorOptions,
    v_out: &mut [f64],
) -> Result<StepStats> {
    let nv = model.nv();
    aba_inertia_pass(model, data, dt)?;
    aba_bias_pass(model, data, tau_eff)?;
    for k in 0..nv {
        v_out[k] = v[k] + dt * data.ddq[k];
    }
    if options.velocity_products == VelocityProducts::Explicit || nv == 0 {
        return Ok(StepStats::default());
    }
    let [spring, mut vbar, mut explicit] = std::mem::take(&mut data.scratch);
    explicit.copy_from_slice(v_out);
    let result = midpoint_iteration(model, data, v, tau_eff, dt, options, v_out, &mut vbar, &explicit);
    data.scratch = [spring, vbar, explicit];
    result
}

/// Fixed-point iteration `v⁺ ← v + h q̈(q, (v + v⁺)/2)` from the explicit step `explicit`.
#[allow(clippy::too_many_arguments)]
fn midpoint_iteration(
    model: &Model,
    data: &mut Data,
    v: &[f64],
    tau_eff: &[f64],
    dt: f64,
    options: &IntegratorOptions,
    v_out: &mut [f64],
    vbar: &mut [f64],
    explicit: &[f64],
) -> Result<StepStats> {
    let nv = model.nv();
    let mut stats = StepStats::default();
    let mut prev = f64::INFINITY;
    loop {
        for k in 0..nv {
            vbar[k] = 0.5 * (v[k] + v_out[k]);
        }
        velocity_pass(model, data, vbar);
        aba_bias_pass(model, data, tau_eff)?;
        let (mut delta, mut scale) = (0.0f64, 1.0f64);
        for k in 0..nv {
            let next = v[k] + dt * data.ddq[k];
            delta = delta.max((next - v_out[k]).abs());
            scale = scale.max(next.abs());
            v_out[k] = next;
        }
        stats.iterations += 1;
        stats.residual = delta / scale;
        if stats.residual <= options.tolerance {
            return Ok(stats);
        }
        let diverging = stats.iterations > 2 && stats.residual > prev;
        if diverging || stats.iterations >= options.max_iterations {
            // Counted and reported through StepStats; the explicit step is always defined.
            v_out.copy_from_slice(explicit);
            stats.fallback = true;
            return Ok(stats);
        }
        prev = stats.residual;
    }
}
