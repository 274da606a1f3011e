//! Rollouts of a [`World`] and their backward pass: a [`WorldTape`] of step records,
//! swept in reverse with each record's VJP.

use super::step::{WorldState, WorldStepRecord};
use super::World;
use crate::error::{check_vector, Error, Result};
use nalgebra::DVector;

/// The records of a world rollout, in step order.
#[derive(Clone, Debug, Default)]
pub struct WorldTape {
    records: Vec<WorldStepRecord>,
}

/// Gradients of a loss over a world rollout.
#[derive(Clone, Debug, PartialEq)]
pub struct WorldTapeGradients {
    /// ∂ℓ/∂q₀ (tangent, [`World::nv`]).
    pub q0: DVector<f64>,
    /// ∂ℓ/∂v₀.
    pub v0: DVector<f64>,
    /// ∂ℓ/∂u_k for every step k ([`World::nu`] each).
    pub u: Vec<DVector<f64>>,
    /// ∂ℓ/∂θ, summed over the steps ([`World::param_names`]).
    pub theta: DVector<f64>,
}

impl World {
    /// Steps once per control from `state`; returns the states after each step and the
    /// tape. A failing step's error names it ([`Error::AtStep`]).
    pub fn rollout_recorded(
        &self,
        state: &WorldState,
        controls: &[DVector<f64>],
    ) -> Result<(Vec<WorldState>, WorldTape)> {
        let mut states = Vec::with_capacity(controls.len());
        let mut records = Vec::with_capacity(controls.len());
        let mut current = state.clone();
        for (k, u) in controls.iter().enumerate() {
            let rec = self.step_recorded(&current, u).map_err(|e| e.at_step(k))?;
            current = rec.next_state();
            states.push(current.clone());
            records.push(rec);
        }
        Ok((states, WorldTape { records }))
    }
}

/// One rollout of a world batch ([`World::rollout_batch`]).
#[derive(Clone, Debug, PartialEq)]
pub struct WorldBatchRollout {
    /// The start state.
    pub state: WorldState,
    /// The controls of every step ([`World::nu`] each).
    pub controls: Vec<DVector<f64>>,
    /// Values of the world's parameters θ ([`World::param_names`]) for this rollout; `None`:
    /// the world's own.
    pub theta: Option<DVector<f64>>,
}

impl World {
    /// Runs every rollout of `batch` with recording, in parallel (`threads`: `None` uses
    /// rayon's global pool, `Some(n)` a pool of `n` threads), rollout `i` on
    /// `self.with_param_values(θ_i)` when it has a θ; returns the states after each step and
    /// the tape of each rollout, in batch order. A world step keeps no state between calls,
    /// so every result equals the sequential [`World::rollout_recorded`] bit for bit,
    /// whatever the thread count. Errors: those of [`World::rollout_recorded`] and
    /// [`World::with_param_values`] for the first failing rollout in batch order, naming it
    /// and the step; a zero thread count.
    pub fn rollout_batch(
        &self,
        batch: &[WorldBatchRollout],
        threads: Option<usize>,
    ) -> Result<Vec<(Vec<WorldState>, WorldTape)>> {
        crate::sim::map_rollouts(batch.len(), threads, |i| {
            let item = &batch[i];
            match &item.theta {
                Some(theta) => self.with_param_values(theta)?.rollout_recorded(&item.state, &item.controls),
                None => self.rollout_recorded(&item.state, &item.controls),
            }
        })
    }
}

impl WorldTape {
    /// The world the tape's steps were taken in (that of its first record; `None` for an
    /// empty tape).
    pub fn world(&self) -> Option<&World> {
        self.records.first().map(|r| &r.world)
    }

    /// The step records.
    pub fn records(&self) -> &[WorldStepRecord] {
        &self.records
    }

    /// The number of steps.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether the tape has no steps.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Reverse-mode sweep: `grad_q[k]`, `grad_v[k]` are `∂ℓ/∂q_{k+1}` (tangent) and
    /// `∂ℓ/∂v_{k+1}` of the state after step k (one per step; zeros where the loss does not
    /// see a state). Errors: counts, sizes and finiteness of the cotangents (all checked
    /// before the sweep), a step's VJP failure (naming the step).
    pub fn backward(&self, grad_q: &[DVector<f64>], grad_v: &[DVector<f64>]) -> Result<WorldTapeGradients> {
        let n = self.records.len();
        for (what, len) in [("grad_q (one per step)", grad_q.len()), ("grad_v (one per step)", grad_v.len())] {
            if len != n {
                return Err(Error::Dimension { what, expected: n, got: len });
            }
        }
        let Some(first) = self.records.first() else {
            return Err(Error::InvalidInput("the world tape is empty".into()));
        };
        let nv = first.world.nv();
        for k in 0..n {
            check_vector("grad_q", grad_q[k].as_slice(), nv).map_err(|e| e.at_step(k))?;
            check_vector("grad_v", grad_v[k].as_slice(), nv).map_err(|e| e.at_step(k))?;
        }
        let mut u = vec![DVector::zeros(0); n];
        let mut theta = DVector::zeros(first.world.num_params());
        let (mut gq, mut gv) = (grad_q[n - 1].clone(), grad_v[n - 1].clone());
        for k in (0..n).rev() {
            let g = self.records[k].vjp(&gq, &gv).map_err(|e| e.at_step(k))?;
            u[k] = g.u;
            theta += &g.theta;
            if k > 0 {
                gq = g.q + &grad_q[k - 1];
                gv = g.v + &grad_v[k - 1];
            } else {
                gq = g.q;
                gv = g.v;
            }
        }
        Ok(WorldTapeGradients { q0: gq, v0: gv, u, theta })
    }
}
