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
    aba_bias_pass, aba_inertia_pass, check_q, derivative_columns, external_forces_to_bodies, kinematics_pass,
    mass_matrix_from_composites, rnea_derivatives_at, rnea_pass, velocity_pass, Data, DerivativeData,
};
use crate::error::{check_vector, Error, Result};
use crate::math::Force;
use crate::math::{lu_factor, lu_solve};
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
    /// Maximum Newton iterations of the midpoint solve before falling back to the explicit evaluation.
    pub max_iterations: usize,
    /// Divergence guard: a step whose result has a generalized speed `|v⁺ₖ|` above this
    /// bound (rad/s or m/s) fails with [`Error::Diverged`] naming the joint, instead of
    /// returning a state that overflows a few steps later. Default
    /// [`IntegratorOptions::DEFAULT_MAX_SPEED`]; `f64::INFINITY` turns the guard off.
    #[serde(default = "default_max_speed")]
    pub max_speed: f64,
}

impl IntegratorOptions {
    /// The default divergence bound, 1e4 rad/s or m/s: above any motor, wheel or
    /// propeller a robot carries (a propeller at 30,000 rpm turns at 3.1e3 rad/s), and
    /// reached within a few steps once a step diverges.
    pub const DEFAULT_MAX_SPEED: f64 = 1e4;
}

fn default_max_speed() -> f64 {
    IntegratorOptions::DEFAULT_MAX_SPEED
}

impl Default for IntegratorOptions {
    fn default() -> Self {
        Self {
            velocity_products: VelocityProducts::Midpoint,
            tolerance: 1e-13,
            max_iterations: 50,
            max_speed: IntegratorOptions::DEFAULT_MAX_SPEED,
        }
    }
}

/// What one step did.
#[derive(Clone, Copy, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct StepStats {
    /// Newton iterations of the midpoint solve (0 for the explicit evaluation).
    pub iterations: usize,
    /// Factorisations of the Newton matrix (1 when the first linearisation sufficed).
    pub jacobian_updates: usize,
    /// Last relative change of `v⁺` in the midpoint solve.
    pub residual: f64,
    /// True when the midpoint solve did not converge (or its Newton matrix was singular)
    /// and the step used the explicit evaluation instead.
    pub fallback: bool,
}

/// The inputs of one step: the state `(q, v)`, the joint torques, optional world-frame
/// body wrenches (about the world origin, one per body) and the time step.
#[derive(Clone, Copy, Debug)]
pub struct StepInputs<'a> {
    /// Configuration (nq).
    pub q: &'a [f64],
    /// Generalized velocity (nv).
    pub v: &'a [f64],
    /// Joint torques (nv).
    pub tau: &'a [f64],
    /// World-frame wrenches on the bodies, or none.
    pub wrenches: Option<&'a [Force]>,
    /// Time step (s): finite, positive and at most [`MAX_DT`].
    pub dt: f64,
}

impl StepInputs<'_> {
    /// Checks the lengths and finiteness of `q` (unit quaternions included), `v`, `tau`
    /// and the time step.
    pub fn check(&self, model: &Model) -> Result<()> {
        check_q(model, self.q)?;
        check_vector("v", self.v, model.nv())?;
        check_vector("tau", self.tau, model.nv())?;
        check_dt(self.dt)
    }
}

/// The smooth stage of a step: the free velocity `v_f = v + h a` of the semi-implicit
/// Euler update (kinematics at `(q, v)`, passive torques, wrenches, the midpoint
/// solve), written into `v_out`; no constraint and no configuration update. `data`
/// keeps the kinematics at `q` for the stages after it. `data` and `deriv` are the
/// workspaces ([`Data::new`], [`DerivativeData::new`]).
pub fn smooth_velocity(
    model: &Model,
    data: &mut Data,
    deriv: &mut DerivativeData,
    inputs: &StepInputs,
    options: &IntegratorOptions,
    v_out: &mut [f64],
) -> Result<StepStats> {
    inputs.check(model)?;
    if v_out.len() != model.nv() {
        return Err(Error::Dimension { what: "output velocity", expected: model.nv(), got: v_out.len() });
    }
    smooth_velocity_unchecked(model, data, deriv, inputs, options, v_out)
}

/// [`smooth_velocity`] on checked inputs.
fn smooth_velocity_unchecked(
    model: &Model,
    data: &mut Data,
    deriv: &mut DerivativeData,
    inputs: &StepInputs,
    options: &IntegratorOptions,
    v_out: &mut [f64],
) -> Result<StepStats> {
    let StepInputs { q, v, tau, wrenches: f_ext, dt } = *inputs;
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
    let result = velocity_update(model, data, deriv, q, v, f_ext, tau_eff.as_slice(), dt, options, v_out);
    data.tmp_nv = tau_eff;
    let stats = result?;
    if let Some((k, x)) = v_out.iter().enumerate().find(|(_, x)| !x.is_finite()) {
        return Err(Error::Numerical {
            algorithm: "semi-implicit Euler",
            detail: format!("non-finite velocity entry {k} = {x}"),
        });
    }
    Ok(stats)
}

/// Advances `(q, v)` by one contact-free step: [`smooth_velocity`], then
/// `q⁺ = q ⊕ h v⁺`, written into `q_out`, `v_out` (the [`crate::sim::Simulator`] runs the
/// constraint stage between the two).
pub fn semi_implicit_euler(
    model: &Model,
    data: &mut Data,
    deriv: &mut DerivativeData,
    inputs: &StepInputs,
    options: &IntegratorOptions,
    q_out: &mut [f64],
    v_out: &mut [f64],
) -> Result<StepStats> {
    inputs.check(model)?;
    if q_out.len() != model.nq() || v_out.len() != model.nv() {
        return Err(Error::Dimension {
            what: "output state",
            expected: model.nq() + model.nv(),
            got: q_out.len() + v_out.len(),
        });
    }
    let stats = smooth_velocity_unchecked(model, data, deriv, inputs, options, v_out)?;
    model.integrate_into(inputs.q, v_out, inputs.dt, q_out);
    if let Some((k, x)) = q_out.iter().enumerate().find(|(_, x)| !x.is_finite()) {
        return Err(Error::Numerical {
            algorithm: "semi-implicit Euler",
            detail: format!("non-finite configuration entry {k} = {x}"),
        });
    }
    Ok(stats)
}

/// Computes `v⁺` (kinematics at `(q, v)` and body-frame wrenches already done).
#[allow(clippy::too_many_arguments)]
fn velocity_update(
    model: &Model,
    data: &mut Data,
    deriv: &mut DerivativeData,
    q: &[f64],
    v: &[f64],
    f_ext: Option<&[Force]>,
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
    let mut acc = std::mem::take(&mut deriv.acc);
    let mut result = midpoint_fixed_point(model, data, v, tau_eff, dt, options, v_out, &mut vbar);
    if let Ok(stats) = &result {
        if stats.fallback {
            // Slow or diverging: Newton from the explicit step (or from the fixed
            // point's last iterate when it was still contracting).
            let from_iterate = stats.residual.is_finite() && stats.residual < 1e-3;
            if from_iterate {
                acc.copy_from_slice(data.ddq.as_slice());
            } else {
                let h = dt;
                for k in 0..nv {
                    acc[k] = (explicit[k] - v[k]) / h;
                    v_out[k] = explicit[k];
                }
            }
            let done = stats.iterations;
            result = midpoint_newton(model, data, deriv, q, v, f_ext, tau_eff, dt, options, v_out, &mut vbar, &mut acc)
                .map(|mut s| {
                    s.iterations += done;
                    s
                });
        } else {
            acc.copy_from_slice(data.ddq.as_slice());
        }
    }
    if let Ok(stats) = &result {
        if stats.fallback {
            v_out.copy_from_slice(&explicit);
        } else {
            data.ddq.as_mut_slice().copy_from_slice(&acc);
        }
    }
    deriv.acc = acc;
    data.scratch = [spring, vbar, explicit];
    result
}

/// Fixed-point iteration `v⁺ ← v + h q̈(q, (v + v⁺)/2)`: each iteration reruns only the
/// velocity pass and the force half of ABA (the articulated inertias depend on q alone).
/// Converges at the rate `≈ (h/2)‖M⁻¹ ∂c/∂v‖`; returns with `fallback` set when an
/// iteration contracts by less than 4× (the caller then switches to Newton).
#[allow(clippy::too_many_arguments)]
fn midpoint_fixed_point(
    model: &Model,
    data: &mut Data,
    v: &[f64],
    tau_eff: &[f64],
    h: f64,
    options: &IntegratorOptions,
    v_out: &mut [f64],
    vbar: &mut [f64],
) -> Result<StepStats> {
    const MAX_CHEAP: usize = 8;
    let nv = model.nv();
    let mut stats = StepStats::default();
    let mut prev = f64::INFINITY;
    loop {
        for k in 0..nv {
            vbar[k] = 0.5 * (v[k] + v_out[k]);
        }
        velocity_pass(model, data, vbar);
        aba_bias_pass(model, data, tau_eff)?;
        let (mut delta, mut scale, mut finite) = (0.0f64, 1.0f64, true);
        for k in 0..nv {
            let next = v[k] + h * data.ddq[k];
            finite &= next.is_finite();
            delta = delta.max((next - v_out[k]).abs());
            scale = scale.max(next.abs());
            v_out[k] = next;
        }
        stats.iterations += 1;
        stats.residual = if finite { delta / scale } else { f64::NAN };
        if finite && stats.residual <= options.tolerance {
            return Ok(stats);
        }
        let slow = !finite || (stats.iterations >= 2 && stats.residual > 0.25 * prev);
        if slow || stats.iterations >= MAX_CHEAP.min(options.max_iterations) {
            stats.fallback = true;
            return Ok(stats);
        }
        prev = stats.residual;
    }
}

/// Newton's method on the midpoint residual
/// `G(a) = RNEA(q, v + h a/2, a) + h·damping ⊙ a − τ_eff = 0`, starting from the explicit
/// step's `a` (in `acc`), with the Jacobian `K = M + diag(h·damping) + (h/2) ∂RNEA/∂v̄`.
/// `K` is factorised at the start and refreshed only when an iteration contracts the
/// update by less than 10× (a simplified Newton method that becomes full Newton on
/// strongly coupled steps).
///
/// Each Newton step is globalised by a backtracking line search on `‖G‖₂` (Armijo
/// condition, step halved up to [`MAX_HALVINGS`] times): on steps where `h·|ω|` of a
/// light link is of order one the undamped iteration wanders without converging, and
/// the explicit fallback it then took gains energy at a rate that ends in overflow.
#[allow(clippy::too_many_arguments)]
fn midpoint_newton(
    model: &Model,
    data: &mut Data,
    deriv: &mut DerivativeData,
    q: &[f64],
    v: &[f64],
    f_ext: Option<&[Force]>,
    tau_eff: &[f64],
    h: f64,
    options: &IntegratorOptions,
    v_out: &mut [f64],
    vbar: &mut [f64],
    acc: &mut [f64],
) -> Result<StepStats> {
    let nv = model.nv();
    let mut stats = StepStats::default();
    for k in 0..nv {
        vbar[k] = v[k] + 0.5 * h * acc[k];
    }
    // RNEA at the starting point (its τ is the residual's first term).
    rnea_derivatives_at(model, data, deriv, q, vbar, acc, f_ext)?;
    let mut mass = std::mem::take(&mut data.tmp_mat);
    mass_matrix_from_composites(model, deriv, &mut mass);
    let mut kmat = std::mem::take(&mut deriv.newton);
    let mut resid = std::mem::take(&mut deriv.resid);
    let mut trial = std::mem::take(&mut deriv.trial);
    // G(a)ₖ, with RNEA's τ at the iterate in `data`.
    let g = |data: &Data, a: &[f64], k: usize| data.tau[k] + h * model.damping[k] * a[k] - tau_eff[k];
    let norm = |data: &Data, a: &[f64]| (0..nv).map(|k| g(data, a, k).powi(2)).sum::<f64>().sqrt();
    let mut merit = norm(data, acc);
    let mut prev = f64::INFINITY;
    let mut refresh = true;
    loop {
        if refresh {
            // K = M + diag(h·damping) + (h/2) ∂RNEA/∂v̄ at the current iterate.
            if stats.iterations > 0 {
                crate::dynamics::world_quantities(model, data, deriv, vbar, acc, f_ext);
            }
            derivative_columns(model, deriv, false);
            kmat.copy_from(&mass);
            kmat.zip_apply(&deriv.dtau_dv, |k, c| *k += 0.5 * h * c);
            for k in 0..nv {
                kmat[(k, k)] += h * model.damping[k];
            }
            stats.jacobian_updates += 1;
            if !lu_factor(&mut kmat, &mut deriv.pivots) {
                stats.fallback = true;
                break;
            }
        }
        // Newton direction d = K⁻¹ G(a), held in `resid`.
        for k in 0..nv {
            resid[k] = g(data, acc, k);
        }
        lu_solve(&kmat, &deriv.pivots, &mut resid);
        // Backtracking: a ← a − α d with the largest α = 2⁻ᵏ that decreases ‖G‖₂ or
        // reaches its round-off floor. A full step below the convergence tolerance is
        // taken as is: ‖G‖ is then at the round-off of RNEA's terms, where no decrease
        // can be measured.
        let size = resid.iter().fold(0.0f64, |m, x| m.max(h * x.abs()));
        let vscale = v_out.iter().fold(1.0f64, |m, x| m.max(x.abs()));
        let tiny = size / vscale <= options.tolerance;
        let magnitude = data.tau.iter().chain(tau_eff.iter()).fold(1.0f64, |m, x| m.max(x.abs()));
        let floor = ROUNDOFF * magnitude * (nv as f64).sqrt();
        let mut alpha = 1.0;
        let mut accepted = false;
        for _ in 0..=MAX_HALVINGS {
            for k in 0..nv {
                trial[k] = acc[k] - alpha * resid[k];
                vbar[k] = v[k] + 0.5 * h * trial[k];
            }
            velocity_pass(model, data, vbar);
            rnea_pass(model, data, &trial, true);
            let m = norm(data, &trial);
            if m.is_finite() && (tiny || m <= (1.0 - ARMIJO * alpha) * merit || m <= floor) {
                merit = m;
                accepted = true;
                break;
            }
            alpha *= 0.5;
        }
        if !accepted {
            // No decrease along the Newton direction: leave the iterate (and the
            // kinematics of `data`) where they were and report the failure.
            for k in 0..nv {
                vbar[k] = v[k] + 0.5 * h * acc[k];
            }
            velocity_pass(model, data, vbar);
            rnea_pass(model, data, acc, true);
            stats.iterations += 1;
            stats.fallback = true;
            break;
        }
        let (mut delta, mut scale) = (0.0f64, 1.0f64);
        for k in 0..nv {
            delta = delta.max(h * (acc[k] - trial[k]).abs());
            acc[k] = trial[k];
            v_out[k] = v[k] + h * acc[k];
            scale = scale.max(v_out[k].abs());
        }
        stats.iterations += 1;
        stats.residual = delta / scale;
        if alpha == 1.0 && stats.residual <= options.tolerance {
            break;
        }
        // Keep the Jacobian while full steps contract fast; re-linearise when
        // convergence slows or the line search had to shorten the step.
        let ratio = stats.residual / prev;
        if stats.iterations >= options.max_iterations {
            // Counted and reported through StepStats; the explicit step is always defined.
            stats.fallback = true;
            break;
        }
        refresh = alpha < 1.0 || ratio > 0.1;
        prev = stats.residual;
    }
    data.tmp_mat = mass;
    deriv.newton = kmat;
    deriv.resid = resid;
    deriv.trial = trial;
    Ok(stats)
}

/// Line-search halvings tried per Newton step before the midpoint solve gives up.
const MAX_HALVINGS: usize = 12;
/// Sufficient-decrease constant of the Armijo condition.
const ARMIJO: f64 = 1e-4;
/// Relative size of `‖G‖₂` below which it is round-off.
const ROUNDOFF: f64 = 1e-13;

/// The largest time step a step accepts, in seconds.
pub const MAX_DT: f64 = 1.0;

/// Checks a time step: finite, positive and at most [`MAX_DT`].
pub(crate) fn check_dt(dt: f64) -> Result<()> {
    if !(dt.is_finite() && dt > 0.0 && dt <= MAX_DT) {
        return Err(Error::InvalidInput(format!(
            "time step dt must be finite, positive and at most {MAX_DT} s, got dt = {dt}"
        )));
    }
    Ok(())
}
