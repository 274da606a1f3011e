//! [`StepRecord`] (one recorded step) and [`Tape`] (a recorded rollout).

use super::constraint::{
    linearize_constraints, linearize_position_stage, loss_driven_states, ConstraintLinearization, Stage, StageSystem,
    StepGeometry,
};
use super::linearize::{add_config_blocks, config_blocks_tr, config_rows, linearize, Workspace};
use super::step_vjp::check_gradients;
use crate::error::{Error, Result};
use crate::math::{lu_factor, lu_solve_and_invert, Force};
use crate::model::ParamSpec;
use crate::solver::lcp::RowState;
use crate::step::{ConstraintRecord, IntegratorOptions};
use crate::Model;
use nalgebra::{DMatrix, DVector};
use std::sync::Arc;

/// Everything the backward pass of one step needs. Self-contained: it shares the
/// immutable model and never touches the simulator that recorded it.
#[derive(Clone, Debug)]
pub struct StepRecord {
    pub(crate) model: Arc<Model>,
    pub(crate) params: Arc<ParamSpec>,
    pub(crate) dt: f64,
    pub(crate) integrator: IntegratorOptions,
    pub(crate) q: DVector<f64>,
    pub(crate) v: DVector<f64>,
    pub(crate) tau: DVector<f64>,
    pub(crate) wrenches: Option<Vec<Force>>,
    pub(crate) q_next: DVector<f64>,
    pub(crate) v_next: DVector<f64>,
    pub(crate) fallback: bool,
    /// The constraint stage (contacts, joint limits), when the step had rows.
    pub(crate) constraints: Option<Arc<ConstraintRecord>>,
}

/// The Jacobian blocks of one step (tangent-space rows and columns for q).
#[derive(Clone, Debug, PartialEq)]
pub struct StepJacobians {
    /// ∂q⁺/∂q (nv × nv).
    pub dq_dq: DMatrix<f64>,
    /// ∂q⁺/∂v (nv × nv).
    pub dq_dv: DMatrix<f64>,
    /// ∂q⁺/∂τ (nv × nv).
    pub dq_dtau: DMatrix<f64>,
    /// ∂q⁺/∂θ (nv × np).
    pub dq_dtheta: DMatrix<f64>,
    /// ∂v⁺/∂q (nv × nv).
    pub dv_dq: DMatrix<f64>,
    /// ∂v⁺/∂v (nv × nv).
    pub dv_dv: DMatrix<f64>,
    /// ∂v⁺/∂τ (nv × nv).
    pub dv_dtau: DMatrix<f64>,
    /// ∂v⁺/∂θ (nv × np).
    pub dv_dtheta: DMatrix<f64>,
}

/// Which contact mode the backward pass of a step with constraint rows differentiates
/// (DiffDART §4.4, "Escaping saddle-points during learning").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ContactGradientStrategy {
    /// The exact derivatives of the recorded step: rows keep the classification the
    /// LCP solver gave them (tied rows differentiated as separating).
    #[default]
    Exact,
    /// The loss-driven strategy: per step, the exact VJP and the VJP in the mode that
    /// `∂ℓ/∂f = J M̃⁻¹ ∂ℓ/∂v⁺` suggests (unilateral rows with `∂ℓ/∂f_i < 0` separating,
    /// `> 0` clamping); the one with the larger `‖∂ℓ/∂v‖² + ‖∂ℓ/∂τ‖²` is kept. Not the
    /// derivative of the simulation where the second is kept (see
    /// [`StepRecord::vjp_with_options`]); opt-in.
    LossDriven,
}

/// Options of the backward passes ([`StepRecord::vjp_with_options`], [`Tape::backward_with`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct BackwardOptions {
    /// How steps with constraint rows are differentiated.
    pub contact_strategy: ContactGradientStrategy,
}

/// Which contact strategy gave a backward pass's gradients, counted over steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct StrategyStats {
    /// Steps with constraint rows.
    pub constrained_steps: usize,
    /// Steps whose loss-driven classification differed from the recorded one (a
    /// second VJP was computed).
    pub loss_driven_tried: usize,
    /// Steps whose gradients come from the loss-driven classification (it gave the
    /// larger `‖∂ℓ/∂v‖² + ‖∂ℓ/∂τ‖²`); the others used the exact gradients.
    pub loss_driven_used: usize,
    /// Steps whose recorded LCP solution missed the solver's tolerance (an inexact
    /// last-resort PGS result, [`StepRecord::solved_exactly`] false): differentiated in
    /// the classification of the approximate solution, not exactly.
    pub inexact_steps: usize,
}

impl std::ops::AddAssign for StrategyStats {
    fn add_assign(&mut self, o: StrategyStats) {
        self.constrained_steps += o.constrained_steps;
        self.loss_driven_tried += o.loss_driven_tried;
        self.loss_driven_used += o.loss_driven_used;
        self.inexact_steps += o.inexact_steps;
    }
}

/// Gradients of a scalar loss with respect to one step's inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct StepGradients {
    /// ∂ℓ/∂q (tangent, nv).
    pub q: DVector<f64>,
    /// ∂ℓ/∂v (nv).
    pub v: DVector<f64>,
    /// ∂ℓ/∂τ (nv).
    pub tau: DVector<f64>,
    /// ∂ℓ/∂θ (np).
    pub theta: DVector<f64>,
}

impl StepRecord {
    /// The model the step ran on.
    pub fn model(&self) -> &Model {
        &self.model
    }
    /// The differentiable parameters θ of this record.
    pub fn params(&self) -> &ParamSpec {
        &self.params
    }
    /// The time step.
    pub fn dt(&self) -> f64 {
        self.dt
    }
    /// Inputs `(q, v, τ)`.
    pub fn inputs(&self) -> (&DVector<f64>, &DVector<f64>, &DVector<f64>) {
        (&self.q, &self.v, &self.tau)
    }
    /// Outputs `(q⁺, v⁺)`.
    pub fn outputs(&self) -> (&DVector<f64>, &DVector<f64>) {
        (&self.q_next, &self.v_next)
    }
    /// The constraint stage of the step (contacts, impulses, classification), if any.
    pub fn constraints(&self) -> Option<&ConstraintRecord> {
        self.constraints.as_deref()
    }
    /// The velocity after the smooth update (before the constraint impulse).
    pub(crate) fn v_smooth(&self) -> &DVector<f64> {
        self.constraints.as_ref().map_or(&self.v_next, |c| &c.v_free)
    }
    /// True when the midpoint iteration of this step fell back to the explicit
    /// evaluation (the step is then differentiated as an explicit step).
    pub fn fell_back(&self) -> bool {
        self.fallback
    }
    /// True unless the step's constraint stage kept an inexact LCP solution
    /// ([`ConstraintRecord::solved_exactly`]): then its Jacobians and VJPs are those of
    /// the approximate solution's classification, not exact derivatives (counted by the
    /// backward passes in [`StrategyStats::inexact_steps`]).
    pub fn solved_exactly(&self) -> bool {
        self.constraints.as_ref().is_none_or(|c| c.solved_exactly())
    }

    /// The full Jacobian blocks of the step.
    pub fn jacobians(&self) -> Result<StepJacobians> {
        self.jacobians_with(&mut Workspace::new(&self.model))
    }

    /// [`StepRecord::jacobians`] reusing a workspace.
    pub fn jacobians_with(&self, ws: &mut Workspace) -> Result<StepJacobians> {
        let smooth = self.smooth_blocks(ws)?;
        let (lin, pos) = match &self.constraints {
            Some(c) => (Some(linearize_constraints(self, c)?), linearize_position_stage(self, c)?),
            None => (None, None),
        };
        self.assemble_jacobians(ws, &smooth, lin.as_ref(), pos.as_ref())
    }

    /// The velocity that moved the configuration, `q⁺ = q ⊕ h v`: the position stage's
    /// `v⁺ + M̃⁻¹Jᵀg` when the step had one, else `v⁺`.
    pub(crate) fn v_position(&self) -> &DVector<f64> {
        match self.constraints.as_ref().and_then(|c| c.correction.as_ref()) {
            Some(p) => &p.v_position,
            None => &self.v_next,
        }
    }

    /// The velocity blocks of the smooth update `v_f(q, v, τ, θ)` (before the
    /// constraint stage); leaves the configuration-update blocks in `ws`.
    fn smooth_blocks(&self, ws: &mut Workspace) -> Result<SmoothBlocks> {
        let model = &*self.model;
        let nv = model.nv();
        let h = linearize(self, ws)?;
        factor(ws)?;
        // dv⁺/dτ = h K_a⁻¹ ;  dv⁺/dx = −h K_a⁻¹ ∂G/∂x  (+ I for x = v), the latter by
        // one solve with the factors for the right-hand sides [∂G/∂q ∂G/∂v ∂G/∂θ]
        // (backward stable, unlike a product with the explicit inverse).
        let np = ws.g_theta.ncols();
        let mg = 2 * nv + np;
        if ws.zt.nrows() != mg + nv || ws.zt.ncols() != nv {
            ws.zt = DMatrix::zeros(mg + nv, nv);
        }
        transpose_into(&ws.deriv.dtau_dq, &mut ws.zt, 0);
        transpose_into(&ws.deriv.dtau_dv, &mut ws.zt, nv);
        transpose_into(&ws.g_theta, &mut ws.zt, 2 * nv);
        let mut dv_dtau = DMatrix::zeros(nv, nv);
        lu_solve_and_invert(&ws.k, &ws.piv, &mut ws.zt, mg, &mut dv_dtau, h);
        let dv_dq = scaled_transpose(&ws.zt, 0, nv, -h);
        let mut dv_dv = scaled_transpose(&ws.zt, nv, nv, -h);
        for k in 0..nv {
            dv_dv[(k, k)] += 1.0;
        }
        let dv_dtheta = scaled_transpose(&ws.zt, 2 * nv, np, -h);
        Ok(SmoothBlocks { h, dv_dq, dv_dv, dv_dtau, dv_dtheta })
    }

    /// The step's Jacobians from the smooth blocks and, for a step with constraints,
    /// a linearization of the constraint stage (in the recorded mode or another one) and
    /// of its position stage when it had one.
    /// Needs the configuration-update blocks that [`StepRecord::smooth_blocks`] left in `ws`.
    fn assemble_jacobians(
        &self,
        ws: &Workspace,
        smooth: &SmoothBlocks,
        lin: Option<&ConstraintLinearization>,
        pos: Option<&ConstraintLinearization>,
    ) -> Result<StepJacobians> {
        let model = &*self.model;
        let nv = model.nv();
        let h = smooth.h;
        let np = smooth.dv_dtheta.ncols();
        let (mut dv_dq, mut dv_dv, mut dv_dtau, mut dv_dtheta) =
            (smooth.dv_dq.clone(), smooth.dv_dv.clone(), smooth.dv_dtau.clone(), smooth.dv_dtheta.clone());
        if let Some(lin) = lin {
            // v⁺ = v_f + M̃⁻¹Jᵀf: dv⁺ = (I − G J_C) dv_f + Q [dq dv dθ].
            dv_dq = lin.project(&dv_dq) + lin.direct.columns(0, nv);
            dv_dv = lin.project(&dv_dv) + lin.direct.columns(nv, nv);
            dv_dtau = lin.project(&dv_dtau);
            dv_dtheta = lin.project(&dv_dtheta) + lin.direct.columns(2 * nv, np);
        }
        // The velocity that moves q: v⁺, or the position stage's v⁺ + M̃⁻¹Jᵀg, whose
        // linearization composes the same way with v⁺ as its free velocity.
        let (mut pq, pv, ptau, ptheta) = match pos {
            Some(p) => (
                p.project(&dv_dq) + p.direct.columns(0, nv),
                p.project(&dv_dv) + p.direct.columns(nv, nv),
                p.project(&dv_dtau),
                p.project(&dv_dtheta) + p.direct.columns(2 * nv, np),
            ),
            None => (dv_dq.clone(), dv_dv.clone(), dv_dtau.clone(), dv_dtheta.clone()),
        };
        // Impacts (continuous-time bounce gradients): the saltation matrix, whose
        // velocity rows act on the velocity blocks before q⁺ is formed from them.
        if let Some(lin) = lin {
            lin.saltation_velocity(&mut dv_dq, &mut pq);
        }
        // dq⁺ = J_q dq + J_w h dv_position
        let mut dq_dq = config_rows(model, &ws.jw, h, &pq);
        add_config_blocks(model, &ws.jq, &mut dq_dq);
        if let Some(lin) = lin {
            lin.saltation_position(model, &ws.jw, &mut dq_dq);
        }
        let dq_dv = config_rows(model, &ws.jw, h, &pv);
        let dq_dtau = config_rows(model, &ws.jw, h, &ptau);
        let dq_dtheta = config_rows(model, &ws.jw, h, &ptheta);
        let jac = StepJacobians { dq_dq, dq_dv, dq_dtau, dq_dtheta, dv_dq, dv_dv, dv_dtau, dv_dtheta };
        check_finite("step Jacobians", [&jac.dq_dq, &jac.dq_dv, &jac.dv_dq, &jac.dv_dv, &jac.dv_dtau, &jac.dv_dtheta])?;
        Ok(jac)
    }

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
            let geometry = StepGeometry::new(self, c)?;
            let vel = StageSystem::new(&geometry, self, c, Stage::Velocity, &c.states, adjoint.as_ref())?;
            let pos = match &c.correction {
                Some(p) => Some(StageSystem::new(&geometry, self, c, Stage::Position, &p.states, None)?),
                None => None,
            };
            let exact = self.constrained_vjp(ws, h, &vel, pos.as_ref(), grad_q_next, grad_v_next)?;
            let Some(dl_df) = &vel.dl_df else {
                return Ok((exact, stats));
            };
            let states = loss_driven_states(&c.rows, &c.bounds, &c.states, dl_df);
            let recorded = c.states.iter().map(|s| if *s == RowState::Tied { RowState::Separating } else { *s });
            if states.iter().copied().eq(recorded) {
                return Ok((exact, stats));
            }
            stats.loss_driven_tried = 1;
            let vel2 = StageSystem::new(&geometry, self, c, Stage::Velocity, &states, None)?;
            let other = self.constrained_vjp(ws, h, &vel2, pos.as_ref(), grad_q_next, grad_v_next)?;
            let size = |g: &StepGradients| g.v.norm_squared() + g.tau.norm_squared();
            if size(&other) > size(&exact) {
                stats.loss_driven_used = 1;
                return Ok((other, stats));
            }
            return Ok((exact, stats));
        }
        let h = linearize(self, ws)?;
        factor(ws)?;
        // v⁺ feeds q⁺ through J_w h.
        let mut gv_tot = DVector::zeros(nv);
        config_blocks_tr(model, &ws.jw, grad_q_next.as_slice(), gv_tot.as_mut_slice());
        for (g, gv) in gv_tot.iter_mut().zip(grad_v_next.iter()) {
            *g = *g * h + gv;
        }
        let mut grads = self.smooth_vjp(ws, h, &gv_tot, None);
        let mut jq_g = DVector::zeros(nv);
        config_blocks_tr(model, &ws.jq, grad_q_next.as_slice(), jq_g.as_mut_slice());
        grads.q += jq_g;
        check_gradients(grads).map(|g| (g, StrategyStats::default()))
    }
}

/// The velocity blocks of a step's smooth update (see [`StepRecord::smooth_blocks`]).
struct SmoothBlocks {
    h: f64,
    dv_dq: DMatrix<f64>,
    dv_dv: DMatrix<f64>,
    dv_dtau: DMatrix<f64>,
    dv_dtheta: DMatrix<f64>,
}

/// Writes `bᵀ` into the rows `first..first + b.ncols()` of `zt`.
fn transpose_into(b: &DMatrix<f64>, zt: &mut DMatrix<f64>, first: usize) {
    let (n, m) = (b.nrows(), zt.nrows());
    if n == 0 {
        return; // a model without degrees of freedom: nothing to write
    }
    let z = zt.as_mut_slice();
    for (j, col) in b.as_slice().chunks_exact(n).enumerate() {
        for (k, x) in col.iter().enumerate() {
            z[k * m + first + j] = *x;
        }
    }
}

/// `s · Z[first..first + cols, :]ᵀ` (nv × cols) from the rows of `zt`.
fn scaled_transpose(zt: &DMatrix<f64>, first: usize, cols: usize, s: f64) -> DMatrix<f64> {
    let (m, n) = (zt.nrows(), zt.ncols());
    let z = zt.as_slice();
    let mut out = DMatrix::zeros(n, cols);
    if n == 0 {
        return out;
    }
    for (c, col) in out.as_mut_slice().chunks_exact_mut(n).enumerate() {
        let zc = &z[first + c..];
        for (r, x) in col.iter_mut().enumerate() {
            *x = zc[r * m] * s;
        }
    }
    out
}

/// Factorises the workspace's `K_a` in place.
pub(super) fn factor(ws: &mut Workspace) -> Result<()> {
    if lu_factor(&mut ws.k, &mut ws.piv) {
        Ok(())
    } else {
        Err(Error::Numerical {
            algorithm: "step linearization",
            detail: "the acceleration Jacobian ∂G/∂a is singular".into(),
        })
    }
}

/// True when every entry is finite (`x · 0` is 0 for finite x, NaN otherwise; the
/// sums over independent lanes vectorise).
fn all_finite(x: &[f64]) -> bool {
    let mut acc = [0.0f64; 8];
    let mut chunks = x.chunks_exact(8);
    for c in &mut chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a += v * 0.0;
        }
    }
    chunks.remainder().iter().all(|v| v.is_finite()) && acc.iter().all(|a| *a == 0.0)
}

fn check_finite<const N: usize>(what: &'static str, ms: [&DMatrix<f64>; N]) -> Result<()> {
    if ms.iter().all(|m| all_finite(m.as_slice())) {
        Ok(())
    } else {
        Err(Error::Numerical { algorithm: what, detail: "non-finite entry".into() })
    }
}

/// Gradients of a rollout loss.
#[derive(Clone, Debug, PartialEq)]
pub struct TapeGradients {
    /// ∂L/∂q₀ (tangent, nv).
    pub q0: DVector<f64>,
    /// ∂L/∂v₀ (nv).
    pub v0: DVector<f64>,
    /// ∂L/∂τ_t for every step t (nv each).
    pub tau: Vec<DVector<f64>>,
    /// ∂L/∂θ (np).
    pub theta: DVector<f64>,
}

/// A recorded rollout: the records of consecutive steps.
#[derive(Clone, Debug, Default)]
pub struct Tape {
    records: Vec<StepRecord>,
}

impl Tape {
    /// An empty tape.
    pub fn new() -> Tape {
        Tape::default()
    }
    /// Appends the record of the next step, checking that it continues the rollout: it
    /// must come from the same model and time step as the last record, and start exactly
    /// (bit for bit) at the last record's end state — `(q, v) == (q_next, v_next)`, as a
    /// [`crate::Simulator`] hands them over (the step uses its start `q` as given, so no
    /// re-normalisation is allowed for). Otherwise the record is not appended and the error
    /// is an [`Error::InvalidInput`] naming the step, so that [`Tape::backward`] never
    /// back-propagates through a rollout that never happened.
    pub fn push(&mut self, record: StepRecord) -> Result<()> {
        if let Some(last) = self.records.last() {
            let t = self.records.len();
            if !Arc::ptr_eq(&last.model, &record.model) && *last.model != *record.model {
                return Err(Error::InvalidInput(format!(
                    "tape record {t} comes from model '{}', but the tape records model '{}'",
                    record.model.name(),
                    last.model.name()
                )));
            }
            if last.dt.to_bits() != record.dt.to_bits() {
                return Err(Error::InvalidInput(format!(
                    "tape record {t} has time step dt = {}, but the tape records dt = {}",
                    record.dt, last.dt
                )));
            }
            let differs = |a: &DVector<f64>, b: &DVector<f64>| {
                a.len() != b.len() || a.iter().zip(b.iter()).any(|(x, y)| x.to_bits() != y.to_bits())
            };
            for (what, start, end) in [("q", &record.q, &last.q_next), ("v", &record.v, &last.v_next)] {
                if differs(start, end) {
                    let at = start.iter().zip(end.iter()).position(|(x, y)| x.to_bits() != y.to_bits());
                    let detail = match at {
                        Some(i) => format!("{what}[{i}] = {} but step {} ended at {}", start[i], t - 1, end[i]),
                        None => format!("{what} has length {}, expected {}", start.len(), end.len()),
                    };
                    return Err(Error::InvalidInput(format!(
                        "tape record {t} does not start where step {} ended: {detail}",
                        t - 1
                    )));
                }
            }
        }
        self.records.push(record);
        Ok(())
    }
    /// The records, in time order.
    pub fn records(&self) -> &[StepRecord] {
        &self.records
    }
    /// Number of steps.
    pub fn len(&self) -> usize {
        self.records.len()
    }
    /// True when no step is recorded.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
    /// Backpropagates `L = Σ_t ℓ_t(x_t, τ_t) + ℓ_T(x_T)` given its partial derivatives:
    /// `grad_states[t] = (∂L/∂q_t (tangent), ∂L/∂v_t)` for t = 0..=T and
    /// `grad_controls[t] = ∂L/∂τ_t` for t = 0..T (empty slices mean zero).
    pub fn backward(
        &self,
        grad_states: &[(DVector<f64>, DVector<f64>)],
        grad_controls: &[DVector<f64>],
    ) -> Result<TapeGradients> {
        Ok(self.backward_with(grad_states, grad_controls, &BackwardOptions::default())?.0)
    }

    /// [`Tape::backward`] under `options` (e.g. the loss-driven contact strategy);
    /// also counts which strategy each step with constraint rows used.
    pub fn backward_with(
        &self,
        grad_states: &[(DVector<f64>, DVector<f64>)],
        grad_controls: &[DVector<f64>],
        options: &BackwardOptions,
    ) -> Result<(TapeGradients, StrategyStats)> {
        let Some(first) = self.records.first() else {
            return Err(Error::InvalidInput("the tape is empty".into()));
        };
        let model = first.model.clone();
        let (nv, np) = (model.nv(), first.params.len());
        let steps = self.records.len();
        if !grad_states.is_empty() && grad_states.len() != steps + 1 {
            return Err(Error::Dimension { what: "grad_states", expected: steps + 1, got: grad_states.len() });
        }
        if !grad_controls.is_empty() && grad_controls.len() != steps {
            return Err(Error::Dimension { what: "grad_controls", expected: steps, got: grad_controls.len() });
        }
        for r in &self.records {
            if !Arc::ptr_eq(&r.model, &model) && *r.model != *model {
                return Err(Error::InvalidInput("tape records come from different models".into()));
            }
            if r.params.len() != np {
                return Err(Error::InvalidInput("tape records have different parameter specs".into()));
            }
        }
        let zero = DVector::zeros(nv);
        let state_grad = |t: usize| grad_states.get(t).map_or((&zero, &zero), |(q, v)| (q, v));
        let (gq, gv) = state_grad(steps);
        let (mut lq, mut lv) = (gq.clone(), gv.clone());
        let mut ws = Workspace::new(&model);
        let mut tau = vec![DVector::zeros(nv); steps];
        let mut theta = DVector::zeros(np);
        let mut stats = StrategyStats::default();
        for t in (0..steps).rev() {
            let (g, s) = self.records[t].vjp_with_options(&mut ws, &lq, &lv, options)?;
            stats += s;
            tau[t] = match grad_controls.get(t) {
                Some(gc) => {
                    crate::error::check_vector("grad_controls", gc.as_slice(), nv)?;
                    g.tau + gc
                }
                None => g.tau,
            };
            theta += g.theta;
            let (sq, sv) = state_grad(t);
            lq = g.q + sq;
            lv = g.v + sv;
        }
        Ok((TapeGradients { q0: lq, v0: lv, tau, theta }, stats))
    }
}
