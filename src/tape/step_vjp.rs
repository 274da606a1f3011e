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

use super::constraint::{loss_driven_states, Stage, StageSystem, StepGeometry};
use super::linearize::{config_blocks_tr, factor, linearize, GeometryBuffers, Workspace};
use super::record::{BackwardOptions, ContactGradientStrategy, StepGradients, StepRecord, StrategyStats};
use crate::error::{Error, Result};
use crate::math::lu_solve_transpose;
use crate::solver::lcp::RowState;
use crate::step::ConstraintRecord;
use nalgebra::DVector;

impl StepRecord {
    /// Vector-Jacobian product: given `∂ℓ/∂q⁺` (tangent, nv) and `∂ℓ/∂v⁺` (nv), the
    /// gradients with respect to the step's inputs (exact gradients of the recorded
    /// contact mode; see [`StepRecord::vjp_with_options`] for the loss-driven strategy).
    pub fn vjp(&self, grad_q_next: &DVector<f64>, grad_v_next: &DVector<f64>) -> Result<StepGradients> {
        self.vjp_with(&mut Workspace::new(&self.model), grad_q_next, grad_v_next)
    }

    /// [`StepRecord::vjp`] reusing a workspace.
    pub fn vjp_with(
        &self,
        ws: &mut Workspace,
        grad_q_next: &DVector<f64>,
        grad_v_next: &DVector<f64>,
    ) -> Result<StepGradients> {
        Ok(self.vjp_with_options(ws, grad_q_next, grad_v_next, &BackwardOptions::default())?.0)
    }

    /// [`StepRecord::vjp_with`] under `options`; also says which contact strategy gave
    /// the gradients (one step's counts in [`StrategyStats`]).
    ///
    /// With [`ContactGradientStrategy::LossDriven`] and a step with constraint rows
    /// (DiffDART §4.4): the exact VJP is computed first; then `∂ℓ/∂f = J M̃⁻¹ ∂ℓ/∂v⁺`
    /// (with `∂ℓ/∂v⁺` the total adjoint of `v⁺`, including its path through
    /// `q⁺ = q ⊕ h v⁺`) classifies the unilateral rows — `∂ℓ/∂f_i < 0` separating,
    /// `> 0` clamping, friction rows following their normal — and, when that
    /// classification differs from the recorded one, the VJP is recomputed in it. The
    /// gradients kept are those with the larger `‖∂ℓ/∂v‖² + ‖∂ℓ/∂τ‖²` (this step's
    /// contributions; the exact ones on a tie). These are not the derivatives of the
    /// step when the loss-driven mode is kept: they are a search direction that lets
    /// an optimiser see past a contact's clamping (or separating) mode.
    pub fn vjp_with_options(
        &self,
        ws: &mut Workspace,
        grad_q_next: &DVector<f64>,
        grad_v_next: &DVector<f64>,
        options: &BackwardOptions,
    ) -> Result<(StepGradients, StrategyStats)> {
        let model = &*self.model;
        let nv = model.nv();
        crate::error::check_vector("grad_q_next", grad_q_next.as_slice(), nv)?;
        crate::error::check_vector("grad_v_next", grad_v_next.as_slice(), nv)?;
        if let Some(c) = &self.constraints {
            let inexact_steps = usize::from(!c.solved_exactly());
            let mut stats = StrategyStats { constrained_steps: 1, inexact_steps, ..Default::default() };
            let loss_driven = options.contact_strategy == ContactGradientStrategy::LossDriven;
            let h = linearize(self, ws)?;
            factor(ws)?;
            // ∂ℓ/∂v⁺ in total (DiffDART §4.4's adjoint): v⁺ feeds q⁺ through J_w h.
            let adjoint = if loss_driven {
                let mut g = DVector::zeros(nv);
                config_blocks_tr(model, &ws.jw, grad_q_next.as_slice(), g.as_mut_slice());
                Some(g * h + grad_v_next)
            } else {
                None
            };
            let buffers = ws.geometry.take().unwrap_or_else(|| GeometryBuffers::new(model));
            let geometry = StepGeometry::with_buffers(self, c, buffers)?;
            let grads =
                self.constrained_vjp_in(ws, h, c, &geometry, adjoint.as_ref(), grad_q_next, grad_v_next, &mut stats);
            ws.geometry = Some(geometry.into_buffers());
            return grads.map(|g| (g, stats));
        }
        let mut grads = StepGradients::zeros(nv, self.params.len());
        self.smooth_step_vjp_into(ws, grad_q_next, grad_v_next, &mut grads)?;
        Ok((grads, StrategyStats::default()))
    }

    /// The VJP of a step with constraint rows in its rebuilt `geometry` (module doc),
    /// with the loss-driven strategy when `adjoint` (the total `∂ℓ/∂v⁺`) is given;
    /// counts the strategy's tries in `stats`.
    #[allow(clippy::too_many_arguments)]
    fn constrained_vjp_in(
        &self,
        ws: &Workspace,
        h: f64,
        c: &ConstraintRecord,
        geometry: &StepGeometry,
        adjoint: Option<&DVector<f64>>,
        grad_q_next: &DVector<f64>,
        grad_v_next: &DVector<f64>,
        stats: &mut StrategyStats,
    ) -> Result<StepGradients> {
        let vel = StageSystem::new(geometry, self, c, Stage::Velocity, &c.states, adjoint)?;
        let pos = match &c.correction {
            Some(p) => Some(StageSystem::new(geometry, self, c, Stage::Position, &p.states, None)?),
            None => None,
        };
        let exact = self.constrained_vjp(ws, h, &vel, pos.as_ref(), grad_q_next, grad_v_next)?;
        let Some(dl_df) = &vel.dl_df else {
            return Ok(exact);
        };
        let states = loss_driven_states(&c.rows, &c.bounds, &c.states, dl_df);
        let recorded = c.states.iter().map(|s| if *s == RowState::Tied { RowState::Separating } else { *s });
        if states.iter().copied().eq(recorded) {
            return Ok(exact);
        }
        stats.loss_driven_tried = 1;
        let vel2 = StageSystem::new(geometry, self, c, Stage::Velocity, &states, None)?;
        let other = self.constrained_vjp(ws, h, &vel2, pos.as_ref(), grad_q_next, grad_v_next)?;
        let size = |g: &StepGradients| g.v.norm_squared() + g.tau.norm_squared();
        if size(&other) > size(&exact) {
            stats.loss_driven_used = 1;
            return Ok(other);
        }
        Ok(exact)
    }

    /// [`StepRecord::vjp_with_options`] writing the gradients into `out` (resized when its
    /// lengths do not match). On a step without constraint rows it allocates nothing once
    /// `ws` and `out` have their sizes (the tape's backward sweep relies on it).
    pub fn vjp_into(
        &self,
        ws: &mut Workspace,
        grad_q_next: &DVector<f64>,
        grad_v_next: &DVector<f64>,
        options: &BackwardOptions,
        out: &mut StepGradients,
    ) -> Result<StrategyStats> {
        if self.constraints.is_some() {
            let (g, stats) = self.vjp_with_options(ws, grad_q_next, grad_v_next, options)?;
            *out = g;
            return Ok(stats);
        }
        let nv = self.model.nv();
        crate::error::check_vector("grad_q_next", grad_q_next.as_slice(), nv)?;
        crate::error::check_vector("grad_v_next", grad_v_next.as_slice(), nv)?;
        let np = self.params.len();
        if out.q.len() != nv || out.v.len() != nv || out.tau.len() != nv || out.theta.len() != np {
            *out = StepGradients::zeros(nv, np);
        }
        self.smooth_step_vjp_into(ws, grad_q_next, grad_v_next, out)?;
        Ok(StrategyStats::default())
    }

    /// The VJP of a step without constraint rows into `out` (sized), without allocating:
    /// `ḡ_v⁺ = h J_wᵀ ḡ_q + ḡ_v` (v⁺ also moves q), `μ = h K_a⁻ᵀ ḡ_v⁺`, then
    /// `∂ℓ/∂q = J_qᵀ ḡ_q − ∂G/∂qᵀ μ`, `∂ℓ/∂v = ḡ_v⁺ − ∂G/∂vᵀ μ`, `∂ℓ/∂τ = μ`,
    /// `∂ℓ/∂θ = −∂G/∂θᵀ μ`.
    fn smooth_step_vjp_into(
        &self,
        ws: &mut Workspace,
        grad_q_next: &DVector<f64>,
        grad_v_next: &DVector<f64>,
        out: &mut StepGradients,
    ) -> Result<()> {
        let model = &*self.model;
        let h = linearize(self, ws)?;
        factor(ws)?;
        // ḡ_v⁺ into out.v, J_qᵀ ḡ_q into out.q.
        config_blocks_tr(model, &ws.jw, grad_q_next.as_slice(), out.v.as_mut_slice());
        for (g, gv) in out.v.iter_mut().zip(grad_v_next.iter()) {
            *g = *g * h + gv;
        }
        config_blocks_tr(model, &ws.jq, grad_q_next.as_slice(), out.q.as_mut_slice());
        smooth_adjoint_into(ws, h, out);
        check_finite(out)
    }

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
        let (nv, np) = (self.model.nv(), self.params.len());
        let mut out = StepGradients::zeros(nv, np);
        out.v.copy_from(g_f);
        if let Some(x) = direct {
            out.q.copy_from(&x.rows(0, nv));
        }
        smooth_adjoint_into(ws, h, &mut out);
        if let Some(x) = direct {
            out.v += x.rows(nv, nv);
            out.theta += x.rows(2 * nv, np);
        }
        out
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
        check_finite(&grads)?;
        Ok(grads)
    }
}

/// The smooth update's adjoint in place, without allocating: with `out.v = ∂ℓ/∂v_f` and
/// `out.q` the q gradient of the other paths on entry, `μ = h K_a⁻ᵀ ∂ℓ/∂v_f` goes into
/// `out.tau` (`∂ℓ/∂τ = μ`), and `out.q −= ∂G/∂qᵀ μ`, `out.v −= ∂G/∂vᵀ μ`,
/// `out.theta = −∂G/∂θᵀ μ`. Needs the factored linearization in `ws`.
fn smooth_adjoint_into(ws: &Workspace, h: f64, out: &mut StepGradients) {
    for (m, g) in out.tau.iter_mut().zip(out.v.iter()) {
        *m = g * h;
    }
    lu_solve_transpose(&ws.k, &ws.piv, out.tau.as_mut_slice());
    out.q.gemv_tr(-1.0, ws.g_q(), &out.tau, 1.0);
    out.v.gemv_tr(-1.0, ws.g_v(), &out.tau, 1.0);
    out.theta.gemv_tr(-1.0, &ws.g_theta, &out.tau, 0.0);
}

/// An error when a gradient entry is not finite.
fn check_finite(g: &StepGradients) -> Result<()> {
    if g.q.iter().chain(&g.v).chain(&g.tau).chain(&g.theta).all(|x| x.is_finite()) {
        Ok(())
    } else {
        Err(Error::Numerical { algorithm: "step VJP", detail: "non-finite gradient".into() })
    }
}
