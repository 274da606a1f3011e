//! Reverse mode of one recorded step: the vector-Jacobian product of
//! `(q⁺, v⁺) = step(q, v, τ, θ)` by adjoints, stage by stage, without forming the
//! step's Jacobian blocks ([`StepRecord::jacobians`] is the separate forward path; the
//! two agree to round-off, `tests/contact_gradients.rs`).
//!
//! The step composes the smooth update `v_f = v + h a(q, v, τ, θ)`, the velocity stage
//! `v⁺ = v_f + M̃⁻¹Jᵀf`, the position stage `v_p = v⁺ + M̃⁻¹Jᵀg` (when it ran; else
//! `v_p = v⁺`) and `q⁺ = q ⊕ h v_p`. Given `(ḡ_q, ḡ_v) = (∂ℓ/∂q⁺, ∂ℓ/∂v⁺)`:
//!
//! ```text
//! ∂ℓ/∂v_p = h J_wᵀ ḡ_q
//! ∂ℓ/∂v⁺  = ḡ_v + (position stage)ᵀ ∂ℓ/∂v_p             (super::constraint_vjp)
//! ∂ℓ/∂v_f = (velocity stage)ᵀ ∂ℓ/∂v⁺
//! μ = h K_a⁻ᵀ ∂ℓ/∂v_f:   ∂ℓ/∂τ = μ,  ∂ℓ/∂q = J_qᵀ ḡ_q − ∂G/∂qᵀ μ + …,  ∂ℓ/∂v = ∂ℓ/∂v_f − ∂G/∂vᵀ μ + …,
//! ∂ℓ/∂θ = −∂G/∂θᵀ μ + …
//! ```
//!
//! (`…`: the stages' direct terms). With continuous-time bounce gradients the saltation
//! matrix of each impact acts on the q columns of `∂v⁺/∂q` and `∂v_p/∂q` (see
//! `ConstraintLinearization::saltation_velocity`): the q adjoints of the two outputs
//! are then taken apart and each is multiplied by the transposed saltation factors.

use super::constraint::StageSystem;
use super::linearize::{config_blocks_tr, Workspace};
use super::record::{StepGradients, StepRecord};
use crate::error::{Error, Result};
use crate::math::lu_solve_transpose;
use nalgebra::DVector;

impl StepRecord {
    /// `∂ℓ/∂(q, v, τ, θ)` of the smooth update `v_f = v + h a(q, v, τ, θ)` for
    /// `g_f = ∂ℓ/∂v_f`, plus `direct = ∂ℓ/∂[q | v | θ]` along other paths (the
    /// configuration update's `J_qᵀ ḡ_q` is not included). Needs the factored
    /// linearization in `ws`.
    pub(super) fn smooth_vjp(
        &self,
        ws: &Workspace,
        h: f64,
        g_f: &DVector<f64>,
        direct: Option<&DVector<f64>>,
    ) -> StepGradients {
        let nv = self.model.nv();
        // μ = K_a⁻ᵀ (h g_f)
        let mut mu = g_f * h;
        lu_solve_transpose(&ws.k, &ws.piv, mu.as_mut_slice());
        let mut q = -ws.g_q().tr_mul(&mu);
        let mut v = g_f - ws.g_v().tr_mul(&mu);
        let mut theta = -ws.g_theta.tr_mul(&mu);
        if let Some(x) = direct {
            q += x.rows(0, nv);
            v += x.rows(nv, nv);
            theta += x.rows(2 * nv, theta.len());
        }
        StepGradients { q, v, tau: mu, theta }
    }

    /// The VJP of a step with constraint rows, through its velocity stage `vel` and its
    /// position stage `pos` (module doc). Needs the factored linearization in `ws`.
    pub(super) fn constrained_vjp(
        &self,
        ws: &Workspace,
        h: f64,
        vel: &StageSystem,
        pos: Option<&StageSystem>,
        grad_q_next: &DVector<f64>,
        grad_v_next: &DVector<f64>,
    ) -> Result<StepGradients> {
        let model = &*self.model;
        let nv = model.nv();
        // J_wᵀ ḡ_q, and ∂ℓ/∂v_p = h J_wᵀ ḡ_q.
        let mut jw_g = DVector::zeros(nv);
        config_blocks_tr(model, &ws.jw, grad_q_next.as_slice(), jw_g.as_mut_slice());
        let g_p = &jw_g * h;
        let mut jq_g = DVector::zeros(nv);
        config_blocks_tr(model, &ws.jq, grad_q_next.as_slice(), jq_g.as_mut_slice());
        // The chain for adjoints `seed_v` on v⁺ (as an output) and `seed_p` on v_p.
        let chain = |seed_v: &DVector<f64>, seed_p: &DVector<f64>| -> Result<StepGradients> {
            let (g_plus, pos_direct) = match pos {
                Some(p) => {
                    let a = p.vjp(seed_p)?;
                    (a.v_in + seed_v, Some(a.direct))
                }
                None => (seed_p + seed_v, None),
            };
            let a = vel.vjp(&g_plus)?;
            let direct = match pos_direct {
                Some(d) => a.direct + d,
                None => a.direct,
            };
            Ok(self.smooth_vjp(ws, h, &a.v_in, Some(&direct)))
        };
        let impacts = vel.impacts();
        let mut grads = if impacts.is_empty() {
            chain(grad_v_next, &g_p)?
        } else {
            // Saltation: ∂v⁺/∂q ← ∂v⁺/∂q·P_i + (I − R)a_f,i a_iᵀ/(a_i·v⁻) and
            // ∂v_p/∂q ← ∂v_p/∂q·P_i per impact i in turn, P_i = I − flow_i a_iᵀ/(a_i·v⁻);
            // ∂q⁺/∂q gains J_w (v⁺ − v⁻)_i a_iᵀ/(a_i·v⁻).
            let zero = DVector::zeros(nv);
            let mut from_v = chain(grad_v_next, &zero)?;
            let from_p = chain(&zero, &g_p)?;
            let mut qv = from_v.q.clone();
            let mut qp = from_p.q;
            let mut q_jump = DVector::zeros(nv);
            for imp in &impacts {
                let along = &imp.normal / imp.rate;
                qv -= &along * imp.flow.dot(&qv);
                qv += &along * imp.accel_jump.dot(grad_v_next);
                qp -= &along * imp.flow.dot(&qp);
                q_jump += &along * imp.jump.dot(&jw_g);
            }
            from_v.q = qv + qp + q_jump;
            from_v.v += from_p.v;
            from_v.tau += from_p.tau;
            from_v.theta += from_p.theta;
            from_v
        };
        grads.q += jq_g;
        check_gradients(grads)
    }
}

/// The gradients, or an error when one is not finite.
pub(super) fn check_gradients(grads: StepGradients) -> Result<StepGradients> {
    let finite = grads.q.iter().chain(&grads.v).chain(&grads.tau).chain(&grads.theta).all(|x| x.is_finite());
    if finite {
        Ok(grads)
    } else {
        Err(Error::Numerical { algorithm: "step VJP", detail: "non-finite gradient".into() })
    }
}
