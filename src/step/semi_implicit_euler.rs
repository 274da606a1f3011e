//! Contact-free semi-implicit Euler on the configuration manifold:
//!
//! ```text
//! q̈  = (M + diag(armature + h·damping))⁻¹ (τ − c(q, v) − damping ⊙ v − k ⊙ (q ⊖ q_rest) + Jᵀ f_ext)
//! v⁺ = v + h q̈
//! q⁺ = q ⊕ h v⁺            (exponential map on ball and free joints)
//! ```
//!
//! Adding `h·damping` to the inertia diagonal makes the damping implicit
//! (`(M + A)(v⁺ − v)/h = τ − c − damping ⊙ v⁺ − …`), so the step stays stable for
//! stiff damping; ABA absorbs the extra diagonal at no cost (it adds to `D_i`).

use crate::dynamics::{aba_pass, check_q, external_forces_to_bodies, kinematics_pass, Data};
use crate::error::{check_vector, Error, Result};
use crate::math::Force;
use crate::Model;

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
    q_out: &mut [f64],
    v_out: &mut [f64],
) -> Result<()> {
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
    kinematics_pass(model, data, q, Some(v));
    external_forces_to_bodies(model, data, f_ext)?;
    // Passive torques: explicit damping force (its implicit part enters through D) and springs.
    let tau_eff = &mut data.tmp_nv;
    for k in 0..model.nv() {
        tau_eff[k] = tau[k] - model.damping[k] * v[k];
    }
    if model.has_springs {
        let mut dq = vec![0.0; model.nv()];
        model.difference_into(model.rest.as_slice(), q, &mut dq);
        for k in 0..model.nv() {
            tau_eff[k] -= model.stiffness[k] * dq[k];
        }
    }
    let tau_eff = std::mem::replace(&mut data.tmp_nv, nalgebra::DVector::zeros(0));
    let res = aba_pass(model, data, tau_eff.as_slice(), dt);
    data.tmp_nv = tau_eff;
    res?;
    for k in 0..model.nv() {
        v_out[k] = v[k] + dt * data.ddq[k];
    }
    model.integrate_into(q, v_out, dt, q_out);
    if let Some((k, x)) = q_out.iter().chain(v_out.iter()).enumerate().find(|(_, x)| !x.is_finite()) {
        return Err(Error::Numerical {
            algorithm: "semi-implicit Euler",
            detail: format!("non-finite state entry {k} = {x}"),
        });
    }
    Ok(())
}
