//! [`StepRecord`] (one recorded step) and [`Tape`] (a recorded rollout).

use crate::error::{Error, Result};
use crate::math::Force;
use crate::model::ParamSpec;
use crate::step::IntegratorOptions;
use crate::Model;
use nalgebra::{DMatrix, DVector};
use std::sync::Arc;

// Fields are read by the backward pass (being implemented).
#[allow(dead_code)]
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
    /// The full Jacobian blocks of the step.
    pub fn jacobians(&self) -> Result<StepJacobians> {
        Err(Error::InvalidInput("step Jacobians are not implemented yet".into()))
    }
    /// Vector-Jacobian product: given `∂ℓ/∂q⁺` (tangent, nv) and `∂ℓ/∂v⁺` (nv), the
    /// gradients with respect to the step's inputs.
    pub fn vjp(&self, grad_q_next: &DVector<f64>, grad_v_next: &DVector<f64>) -> Result<StepGradients> {
        let _ = (grad_q_next, grad_v_next);
        Err(Error::InvalidInput("step VJP is not implemented yet".into()))
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
    /// Appends the record of the next step.
    pub fn push(&mut self, record: StepRecord) {
        self.records.push(record);
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
        let _ = (grad_states, grad_controls);
        Err(Error::InvalidInput("tape backward is not implemented yet".into()))
    }
}
