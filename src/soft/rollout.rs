//! Rollouts of a soft body and their reverse sweep: `N` recorded steps, and the
//! gradients of a loss `ℓ(x₁, v₁, …, x_N, v_N)` with respect to the initial state, every
//! step's vertex forces and pin targets, and the parameters θ, by chaining the steps'
//! VJPs (`adjoint.rs`) backwards.

use super::adjoint::SoftGradients;
use super::body::SoftBody;
use super::implicit::{step, SoftOptions, SoftState, SoftStepRecord};
use crate::error::{Error, Result};
use nalgebra::DVector;
use std::sync::Arc;

/// A recorded rollout: one [`SoftStepRecord`] per step.
#[derive(Clone, Debug)]
pub struct SoftRollout {
    records: Vec<SoftStepRecord>,
}

/// Gradients of a rollout's loss.
#[derive(Clone, Debug, PartialEq)]
pub struct SoftRolloutGradients {
    /// `∂ℓ/∂x₀`.
    pub x0: DVector<f64>,
    /// `∂ℓ/∂v₀`.
    pub v0: DVector<f64>,
    /// `∂ℓ/∂u_k` for every step k.
    pub u: Vec<DVector<f64>>,
    /// `∂ℓ/∂targets_k` for every step k.
    pub targets: Vec<DVector<f64>>,
    /// `∂ℓ/∂θ` (see [`SoftBody::param_names`]).
    pub theta: DVector<f64>,
}

/// Steps `body` from `state` once per entry of `controls` (vertex forces), with the pin
/// `targets` of each step, recording every step. Errors: as [`step`], naming the step
/// ([`Error::AtStep`]), and `targets` of another length than `controls`.
pub fn rollout(
    body: &Arc<SoftBody>,
    state: &SoftState,
    controls: &[DVector<f64>],
    targets: &[DVector<f64>],
    options: &SoftOptions,
) -> Result<SoftRollout> {
    if targets.len() != controls.len() {
        return Err(Error::Dimension { what: "soft rollout targets", expected: controls.len(), got: targets.len() });
    }
    let mut records = Vec::with_capacity(controls.len());
    let mut s = state.clone();
    for (k, (u, t)) in controls.iter().zip(targets).enumerate() {
        let rec = step(body, &s, u, t, options).map_err(|e| e.at_step(k))?;
        s = rec.next_state().clone();
        records.push(rec);
    }
    Ok(SoftRollout { records })
}

impl SoftRollout {
    /// The recorded steps.
    pub fn records(&self) -> &[SoftStepRecord] {
        &self.records
    }

    /// The states after each step (`x₁, v₁ … x_N, v_N`).
    pub fn states(&self) -> Vec<SoftState> {
        self.records.iter().map(|r| r.next_state().clone()).collect()
    }

    /// The gradients of a loss whose partial derivatives with respect to the state after
    /// step k are `grad_x[k]`, `grad_v[k]` (one per step). Errors: lengths, and those of
    /// [`SoftStepRecord::vjp`], naming the step.
    pub fn backward(&self, grad_x: &[DVector<f64>], grad_v: &[DVector<f64>]) -> Result<SoftRolloutGradients> {
        let n = self.records.len();
        for (what, g) in [("soft rollout grad_x", grad_x), ("soft rollout grad_v", grad_v)] {
            if g.len() != n {
                return Err(Error::Dimension { what, expected: n, got: g.len() });
            }
        }
        let Some(first) = self.records.first() else {
            return Err(Error::InvalidInput("soft rollout: backward through an empty rollout".into()));
        };
        let body = first.body();
        let mut carry_x = DVector::zeros(body.ndof());
        let mut carry_v = DVector::zeros(body.ndof());
        let mut theta = DVector::zeros(body.param_values().len());
        let mut u = vec![DVector::zeros(0); n];
        let mut targets = vec![DVector::zeros(0); n];
        for k in (0..n).rev() {
            let g: SoftGradients =
                self.records[k].vjp(&(&grad_x[k] + &carry_x), &(&grad_v[k] + &carry_v)).map_err(|e| e.at_step(k))?;
            carry_x = g.x;
            carry_v = g.v;
            theta += g.theta;
            u[k] = g.u;
            targets[k] = g.targets;
        }
        Ok(SoftRolloutGradients { x0: carry_x, v0: carry_v, u, targets, theta })
    }
}
