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

use super::constraint::{loss_driven_states_into, Stage, StageSystem};
use super::constraint_workspace::{size_gradients, ChainBuffers, ConstraintWorkspace};
use super::derivative_terms::config_blocks_tr;
use super::linearize::{factor, linearize, Workspace};
use super::record::{BackwardOptions, ContactGradientStrategy, StepGradients, StepRecord, StrategyStats};
use crate::error::{Error, Result};
use crate::math::{lu_solve_transpose, reshape_vector};
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
        let mut out = StepGradients::zeros(nv, self.params.len());
        let stats = self.vjp_core(ws, grad_q_next, grad_v_next, options, &mut out)?;
        Ok((out, stats))
    }

    /// The VJP into `out` (sized, cotangents checked): through the constraint stages
    /// when the step has constraint rows, else the smooth step alone.
    fn vjp_core(
        &self,
        ws: &mut Workspace,
        grad_q_next: &DVector<f64>,
        grad_v_next: &DVector<f64>,
        options: &BackwardOptions,
        out: &mut StepGradients,
    ) -> Result<StrategyStats> {
        let Some(c) = &self.constraints else {
            self.smooth_step_vjp_into(ws, grad_q_next, grad_v_next, out)?;
            return Ok(StrategyStats::default());
        };
        let inexact_steps = usize::from(!c.solved_exactly());
        let mut stats = StrategyStats { constrained_steps: 1, inexact_steps, ..Default::default() };
        let loss_driven = options.contact_strategy == ContactGradientStrategy::LossDriven;
        let h = linearize(self, ws)?;
        factor(ws)?;
        let mut cw = ws.constraint.take().unwrap_or_else(|| Box::new(ConstraintWorkspace::new(&self.model)));
        let result = self.constrained_vjp_in(ws, &mut cw, h, c, loss_driven, grad_q_next, grad_v_next, &mut stats, out);
        ws.constraint.put(cw);
        result?;
        check_finite(out)?;
        Ok(stats)
    }

    /// The VJP of a step with constraint rows (module doc) into `out`, in the buffers of
    /// `cw`; with the loss-driven strategy when `loss_driven` (the exact VJP first, then
    /// the one in the classification `∂ℓ/∂f` suggests when it differs; the larger is
    /// kept). Counts the strategy's tries in `stats`.
    #[allow(clippy::too_many_arguments)]
    fn constrained_vjp_in(
        &self,
        ws: &Workspace,
        cw: &mut ConstraintWorkspace,
        h: f64,
        c: &ConstraintRecord,
        loss_driven: bool,
        grad_q_next: &DVector<f64>,
        grad_v_next: &DVector<f64>,
        stats: &mut StrategyStats,
        out: &mut StepGradients,
    ) -> Result<()> {
        let model = &*self.model;
        let (nv, np) = (model.nv(), self.params.len());
        let ConstraintWorkspace { geometry, vel, pos, alt, chain, jw_g, jq_g, g_p, adjoint, states, other } = cw;
        geometry.rebuild(self, c)?;
        // J_wᵀ ḡ_q, ∂ℓ/∂v_p = h J_wᵀ ḡ_q, and J_qᵀ ḡ_q.
        for x in [&mut *jw_g, &mut *jq_g, &mut *g_p] {
            reshape_vector(x, nv);
        }
        config_blocks_tr(model, &ws.jw, grad_q_next.as_slice(), jw_g.as_mut_slice());
        config_blocks_tr(model, &ws.jq, grad_q_next.as_slice(), jq_g.as_mut_slice());
        g_p.copy_from(jw_g);
        *g_p *= h;
        // ∂ℓ/∂v⁺ in total (DiffDART §4.4's adjoint): v⁺ feeds q⁺ through J_w h.
        if loss_driven {
            reshape_vector(adjoint, nv);
            adjoint.copy_from(g_p);
            *adjoint += grad_v_next;
        }
        let geometry = &*geometry;
        let seed = loss_driven.then_some(&*adjoint);
        let mut vel_sys = StageSystem::new(geometry, self, c, Stage::Velocity, &c.states, seed, std::mem::take(vel))?;
        let mut pos_sys = match &c.correction {
            Some(p) => {
                Some(StageSystem::new(geometry, self, c, Stage::Position, &p.states, None, std::mem::take(pos))?)
            }
            None => None,
        };
        let steps = Steps { ws, h, jw_g, jq_g, g_p, grad_v_next };
        self.constrained_vjp_into(&steps, &mut vel_sys, pos_sys.as_mut(), chain, out)?;
        if let Some(dl_df) = vel_sys.dl_df() {
            loss_driven_states_into(&c.rows, &c.bounds, &c.states, dl_df, states);
            let recorded = c.states.iter().map(|s| if *s == RowState::Tied { RowState::Separating } else { *s });
            if !states.iter().copied().eq(recorded) {
                stats.loss_driven_tried = 1;
                let mut alt_sys =
                    StageSystem::new(geometry, self, c, Stage::Velocity, states, None, std::mem::take(alt))?;
                size_gradients(other, nv, np);
                self.constrained_vjp_into(&steps, &mut alt_sys, pos_sys.as_mut(), chain, other)?;
                let size = |g: &StepGradients| g.v.norm_squared() + g.tau.norm_squared();
                if size(other) > size(out) {
                    stats.loss_driven_used = 1;
                    std::mem::swap(out, other);
                }
                *alt = alt_sys.into_buffers();
            }
        }
        *vel = vel_sys.into_buffers();
        if let Some(p) = pos_sys {
            *pos = p.into_buffers();
        }
        Ok(())
    }

    /// [`StepRecord::vjp_with_options`] writing the gradients into `out` (resized when its
    /// lengths do not match). It allocates nothing once `ws` has served a step at least
    /// this large (as many contacts, rows and impacts) and `out` has its sizes: the
    /// constraint stages' buffers live in `ws` (the tape's backward sweep relies on it;
    /// `tests/backward_allocations.rs`).
    pub fn vjp_into(
        &self,
        ws: &mut Workspace,
        grad_q_next: &DVector<f64>,
        grad_v_next: &DVector<f64>,
        options: &BackwardOptions,
        out: &mut StepGradients,
    ) -> Result<StrategyStats> {
        let nv = self.model.nv();
        crate::error::check_vector("grad_q_next", grad_q_next.as_slice(), nv)?;
        crate::error::check_vector("grad_v_next", grad_v_next.as_slice(), nv)?;
        size_gradients(out, nv, self.params.len());
        self.vjp_core(ws, grad_q_next, grad_v_next, options, out)
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
    /// configuration update's `J_qᵀ ḡ_q` is not included), into `out` (sized). Needs the
    /// factored linearization in `ws`.
    fn smooth_vjp_into(
        &self,
        ws: &Workspace,
        h: f64,
        g_f: &DVector<f64>,
        direct: &DVector<f64>,
        out: &mut StepGradients,
    ) {
        let (nv, np) = (self.model.nv(), self.params.len());
        out.v.copy_from(g_f);
        out.q.copy_from(&direct.rows(0, nv));
        smooth_adjoint_into(ws, h, out);
        out.v += direct.rows(nv, nv);
        out.theta += direct.rows(2 * nv, np);
    }

    /// The smooth step's VJP after the stages, for adjoints `seed_v` on v⁺ (as an
    /// output) and `seed_p` on v_p: `out` = the gradients of the chain
    /// `v_f → v⁺ → v_p` (position stage when there is one).
    #[allow(clippy::too_many_arguments)]
    fn chain_into(
        &self,
        steps: &Steps,
        vel: &mut StageSystem,
        pos: Option<&mut StageSystem>,
        seed_v: &DVector<f64>,
        seed_p: &DVector<f64>,
        b: &mut ChainBuffers,
        out: &mut StepGradients,
    ) -> Result<()> {
        let nv = self.model.nv();
        reshape_vector(&mut b.g_plus, nv);
        b.g_plus.copy_from(seed_v);
        let with_pos = match pos {
            Some(p) => {
                p.vjp_into(seed_p, &mut b.adj_p)?;
                b.g_plus += &b.adj_p.v_in;
                true
            }
            None => {
                b.g_plus += seed_p;
                false
            }
        };
        vel.vjp_into(&b.g_plus, &mut b.adj_v)?;
        reshape_vector(&mut b.direct, b.adj_v.direct.len());
        b.direct.copy_from(&b.adj_v.direct);
        if with_pos {
            b.direct += &b.adj_p.direct;
        }
        self.smooth_vjp_into(steps.ws, steps.h, &b.adj_v.v_in, &b.direct, out);
        Ok(())
    }

    /// The VJP of a step with constraint rows, through its velocity stage `vel` and its
    /// position stage `pos` (module doc), into `out` (sized). Needs the factored
    /// linearization in `steps.ws`.
    fn constrained_vjp_into(
        &self,
        steps: &Steps,
        vel: &mut StageSystem,
        pos: Option<&mut StageSystem>,
        b: &mut ChainBuffers,
        out: &mut StepGradients,
    ) -> Result<()> {
        let (nv, np) = (self.model.nv(), self.params.len());
        let count = vel.impacts_into();
        if count == 0 {
            self.chain_into(steps, vel, pos, steps.grad_v_next, steps.g_p, b, out)?;
        } else {
            // Saltation: ∂v⁺/∂q ← ∂v⁺/∂q·P_i + (I − R)a_f,i a_iᵀ/(a_i·v⁻) and
            // ∂v_p/∂q ← ∂v_p/∂q·P_i per impact i in turn, P_i = I − flow_i a_iᵀ/(a_i·v⁻);
            // ∂q⁺/∂q gains J_w (v⁺ − v⁻)_i a_iᵀ/(a_i·v⁻).
            reshape_vector(&mut b.zero, nv);
            let mut zero = std::mem::replace(&mut b.zero, DVector::zeros(0));
            let mut from_p = std::mem::replace(&mut b.from_p, StepGradients::zeros(0, 0));
            size_gradients(&mut from_p, nv, np);
            let mut pos = pos;
            let result = self
                .chain_into(steps, vel, pos.as_deref_mut(), steps.grad_v_next, &zero, b, out)
                .and_then(|()| self.chain_into(steps, vel, pos, &zero, steps.g_p, b, &mut from_p));
            // q_jump accumulates apart: the flow projections below read the running q adjoints.
            reshape_vector(&mut b.q_jump, nv);
            let impacts = std::mem::take(&mut vel.b.impacts);
            for imp in &impacts[..count] {
                let c = imp.flow.dot(&out.q) / imp.rate;
                out.q.axpy(-c, &imp.normal, 1.0);
                out.q.axpy(imp.accel_jump.dot(steps.grad_v_next) / imp.rate, &imp.normal, 1.0);
                let c = imp.flow.dot(&from_p.q) / imp.rate;
                from_p.q.axpy(-c, &imp.normal, 1.0);
                b.q_jump.axpy(imp.jump.dot(steps.jw_g) / imp.rate, &imp.normal, 1.0);
            }
            out.q += &from_p.q;
            out.q += &b.q_jump;
            out.v += &from_p.v;
            out.tau += &from_p.tau;
            out.theta += &from_p.theta;
            zero.fill(0.0);
            b.zero = zero;
            b.from_p = from_p;
            vel.b.impacts = impacts;
            result?;
        }
        out.q += steps.jq_g;
        Ok(())
    }
}

/// What the chain of one step's VJP reads: the factored linearization, the time step,
/// `J_wᵀ ḡ_q`, `J_qᵀ ḡ_q`, `∂ℓ/∂v_p = h J_wᵀ ḡ_q` and `∂ℓ/∂v⁺` as an output.
struct Steps<'a> {
    ws: &'a Workspace,
    h: f64,
    jw_g: &'a DVector<f64>,
    jq_g: &'a DVector<f64>,
    g_p: &'a DVector<f64>,
    grad_v_next: &'a DVector<f64>,
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
