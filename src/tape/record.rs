//! [`StepRecord`]: the self-contained record of one step, and the types of its backward
//! pass (its Jacobians, gradients and options). The backward passes themselves:
//! `step_vjp.rs` (reverse mode), `jacobians.rs` (the full blocks), `rollout.rs` (a tape).

use crate::math::Force;
use crate::model::ParamSpec;
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

/// Options of the backward passes ([`StepRecord::vjp_with_options`], [`super::Tape::backward_with`]).
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

impl StepGradients {
    /// Zero gradients for nv velocity coordinates and np parameters.
    pub fn zeros(nv: usize, np: usize) -> StepGradients {
        StepGradients {
            q: DVector::zeros(nv),
            v: DVector::zeros(nv),
            tau: DVector::zeros(nv),
            theta: DVector::zeros(np),
        }
    }
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

    /// The velocity that moved the configuration, `q⁺ = q ⊕ h v`: the position stage's
    /// `v⁺ + M̃⁻¹Jᵀg` when the step had one, else `v⁺`.
    pub(crate) fn v_position(&self) -> &DVector<f64> {
        match self.constraints.as_ref().and_then(|c| c.correction.as_ref()) {
            Some(p) => &p.v_position,
            None => &self.v_next,
        }
    }
}
