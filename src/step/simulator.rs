//! The [`Simulator`]: owns a model, its options and its workspace, and steps states.

use super::semi_implicit_euler::{semi_implicit_euler, IntegratorOptions, StepStats};
use crate::dynamics::{Data, DerivativeData};
use crate::error::{check_vector, Error, Result};
use crate::math::{Force, Vec3};
use crate::model::ParamSpec;
use crate::tape::StepRecord;
use crate::Model;
use nalgebra::DVector;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Simulation options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimOptions {
    /// Time step in seconds.
    pub dt: f64,
    /// Gravity override; `None` keeps the model's gravity.
    pub gravity: Option<Vec3>,
    /// Velocity-update settings (where velocity products are evaluated).
    pub integrator: IntegratorOptions,
}

impl Default for SimOptions {
    fn default() -> Self {
        Self { dt: 1e-3, gravity: None, integrator: IntegratorOptions::default() }
    }
}

/// A state: configuration `q` (nq) and generalized velocity `v` (nv).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// Configuration.
    pub q: DVector<f64>,
    /// Generalized velocity.
    pub v: DVector<f64>,
}

impl State {
    /// The neutral configuration at rest.
    pub fn neutral(model: &Model) -> State {
        State { q: model.neutral(), v: DVector::zeros(model.nv()) }
    }
    /// Serializes to JSON.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string(self).map_err(|e| Error::Serde(e.to_string()))
    }
    /// Reads from JSON.
    pub fn from_json(s: &str) -> Result<State> {
        serde_json::from_str(s).map_err(|e| Error::Serde(e.to_string()))
    }
}

/// Controls applied during one step.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Control {
    /// Joint torques/forces (nv).
    pub tau: DVector<f64>,
    /// Optional external wrenches, one per body, in world coordinates about the world
    /// origin (use [`Force::from_point_force`] for a force at a point).
    pub wrenches: Option<Vec<Force>>,
}

impl Control {
    /// Joint torques only.
    pub fn torques(tau: DVector<f64>) -> Control {
        Control { tau, wrenches: None }
    }
}

/// Counters accumulated over a simulator's life.
#[derive(Clone, Copy, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct SimStats {
    /// Steps taken.
    pub steps: u64,
    /// Midpoint iterations over all steps.
    pub midpoint_iterations: u64,
    /// Steps whose midpoint iteration did not converge and fell back to the explicit evaluation.
    pub midpoint_fallbacks: u64,
}

/// Steps an articulated system forward in time (contact-free semi-implicit Euler).
#[derive(Clone, Debug)]
pub struct Simulator {
    model: Arc<Model>,
    params: Arc<ParamSpec>,
    options: SimOptions,
    data: Data,
    deriv: DerivativeData,
    last: StepStats,
    stats: SimStats,
}

impl Simulator {
    /// A simulator for `model` with `options` (checked: `dt` positive, gravity finite).
    pub fn new(model: Model, options: SimOptions) -> Result<Simulator> {
        if !(options.dt.is_finite() && options.dt > 0.0) {
            return Err(Error::InvalidInput(format!("time step must be positive and finite, got {}", options.dt)));
        }
        let it = &options.integrator;
        if !(it.tolerance.is_finite() && it.tolerance > 0.0) || it.max_iterations == 0 {
            return Err(Error::InvalidInput(format!(
                "integrator tolerance must be positive and max_iterations at least 1, got {} and {}",
                it.tolerance, it.max_iterations
            )));
        }
        let model = match options.gravity {
            Some(g) => model.with_gravity(g)?,
            None => model,
        };
        let data = Data::new(&model);
        let deriv = DerivativeData::new(&model);
        Ok(Simulator {
            model: Arc::new(model),
            params: Arc::new(ParamSpec::new()),
            options,
            data,
            deriv,
            last: StepStats::default(),
            stats: SimStats::default(),
        })
    }
    /// The simulated model (with the gravity override applied).
    pub fn model(&self) -> &Model {
        &self.model
    }
    /// The options.
    pub fn options(&self) -> &SimOptions {
        &self.options
    }
    /// The time step.
    pub fn dt(&self) -> f64 {
        self.options.dt
    }
    /// The workspace of the last step (poses, velocities, accelerations).
    pub fn data(&self) -> &Data {
        &self.data
    }

    /// Statistics of the last step.
    pub fn last_step_stats(&self) -> &StepStats {
        &self.last
    }
    /// Counters accumulated since construction.
    pub fn stats(&self) -> &SimStats {
        &self.stats
    }

    /// One step from `state` under `control`.
    pub fn step(&mut self, state: &State, control: &Control) -> Result<State> {
        let mut next = State { q: DVector::zeros(self.model.nq()), v: DVector::zeros(self.model.nv()) };
        self.step_into(state, control, &mut next)?;
        Ok(next)
    }

    /// One step from `state` under `control`, written into `next` (no allocation).
    pub fn step_into(&mut self, state: &State, control: &Control, next: &mut State) -> Result<()> {
        check_vector("tau", control.tau.as_slice(), self.model.nv())?;
        if next.q.len() != self.model.nq() {
            next.q = DVector::zeros(self.model.nq());
        }
        if next.v.len() != self.model.nv() {
            next.v = DVector::zeros(self.model.nv());
        }
        let stats = semi_implicit_euler(
            &self.model,
            &mut self.data,
            &mut self.deriv,
            state.q.as_slice(),
            state.v.as_slice(),
            control.tau.as_slice(),
            control.wrenches.as_deref(),
            self.options.dt,
            &self.options.integrator,
            next.q.as_mut_slice(),
            next.v.as_mut_slice(),
        )?;
        self.last = stats;
        self.stats.steps += 1;
        self.stats.midpoint_iterations += stats.iterations as u64;
        self.stats.midpoint_fallbacks += stats.fallback as u64;
        Ok(())
    }

    /// Sets the differentiable parameters θ that recorded steps differentiate against.
    pub fn set_params(&mut self, params: ParamSpec) {
        self.params = Arc::new(params);
    }
    /// The differentiable parameters θ.
    pub fn params(&self) -> &ParamSpec {
        &self.params
    }

    /// One step from `state` under `control`, with its [`StepRecord`] for the backward pass.
    pub fn step_recorded(&mut self, state: &State, control: &Control) -> Result<(State, StepRecord)> {
        let next = self.step(state, control)?;
        let record = StepRecord {
            model: self.model.clone(),
            params: self.params.clone(),
            dt: self.options.dt,
            integrator: self.options.integrator,
            q: state.q.clone(),
            v: state.v.clone(),
            tau: control.tau.clone(),
            wrenches: control.wrenches.clone(),
            q_next: next.q.clone(),
            v_next: next.v.clone(),
            fallback: self.last.fallback,
        };
        Ok((next, record))
    }

    /// Steps `controls.len()` times from `state`; returns the states after each step.
    pub fn rollout(&mut self, state: &State, controls: &[Control]) -> Result<Vec<State>> {
        let mut out = Vec::with_capacity(controls.len());
        let mut cur = state.clone();
        for c in controls {
            let next = self.step(&cur, c)?;
            out.push(next.clone());
            cur = next;
        }
        Ok(out)
    }
}
