//! [`Tape`]: a recorded rollout, and its backward pass (the steps' VJPs chained from the
//! last step to the first).

use super::linearize::Workspace;
use super::record::{BackwardOptions, StepGradients, StepRecord, StrategyStats};
use crate::error::{Error, Result};
use nalgebra::DVector;
use std::sync::Arc;

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
        // Every cotangent is checked (length, finiteness) before the sweep.
        for (q, v) in grad_states {
            crate::error::check_vector("grad_states (q)", q.as_slice(), nv)?;
            crate::error::check_vector("grad_states (v)", v.as_slice(), nv)?;
        }
        for gc in grad_controls {
            crate::error::check_vector("grad_controls", gc.as_slice(), nv)?;
        }
        // The outputs and the sweep's buffers are allocated here; the sweep itself
        // allocates nothing on steps without constraint rows (`StepRecord::vjp_into`).
        let zero = DVector::zeros(nv);
        let state_grad = |t: usize| grad_states.get(t).map_or((&zero, &zero), |(q, v)| (q, v));
        let (gq, gv) = state_grad(steps);
        let (mut lq, mut lv) = (gq.clone(), gv.clone());
        let mut ws = Workspace::new(&model);
        let mut tau = vec![DVector::zeros(nv); steps];
        let mut theta = DVector::zeros(np);
        let mut g = StepGradients::zeros(nv, np);
        let mut stats = StrategyStats::default();
        for t in (0..steps).rev() {
            stats += self.records[t].vjp_into(&mut ws, &lq, &lv, options, &mut g)?;
            tau[t].copy_from(&g.tau);
            if let Some(gc) = grad_controls.get(t) {
                tau[t] += gc;
            }
            theta += &g.theta;
            let (sq, sv) = state_grad(t);
            lq.copy_from(&g.q);
            lq += sq;
            lv.copy_from(&g.v);
            lv += sv;
        }
        Ok((TapeGradients { q0: lq, v0: lv, tau, theta }, stats))
    }
}
