//! The [`Simulator`]: owns a model, its options and its workspace, and steps states.

use crate::dynamics::{Data, DerivativeData};
use crate::error::{check_vector, Error, Result};
use crate::math::{Force, Vec3};
use crate::model::ParamSpec;
use crate::step::contact::{collision_stage, constraint_stage, ConstraintRecord, ConstraintWorkspace, ContactOptions};
use crate::step::{check_dt, smooth_velocity, IntegratorOptions, StepInputs, StepStats};
use crate::tape::StepRecord;
use crate::Model;
use nalgebra::DVector;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Simulation options. [`SimOptions::validate`] lists what [`Simulator::new`] accepts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimOptions {
    /// Time step in seconds: finite, positive and at most [`SimOptions::MAX_DT`].
    pub dt: f64,
    /// Gravity override; `None` keeps the model's gravity.
    pub gravity: Option<Vec3>,
    /// Velocity-update settings (where velocity products are evaluated).
    pub integrator: IntegratorOptions,
    /// Contact and joint-limit settings.
    #[serde(default)]
    pub contact: ContactOptions,
}

impl SimOptions {
    /// The largest accepted time step, 1 s. The step is semi-implicit Euler: the
    /// contact stage's speculative contacts (gaps closed within one step) and the
    /// explicitly evaluated velocity products are only meaningful for steps far below a
    /// second; beyond that a resting body sinks through the ground (at `dt = 1e9` a box on
    /// a plane ends metres below it) instead of failing, so such steps are refused.
    pub const MAX_DT: f64 = crate::step::MAX_DT;

    /// Checks the options: `dt` finite, positive and at most [`SimOptions::MAX_DT`]; the
    /// integrator tolerance positive with at least one iteration; the contact options
    /// ([`ContactOptions::validate`]). Errors are [`Error::InvalidInput`] naming the field.
    pub fn validate(&self) -> Result<()> {
        check_dt(self.dt)?;
        let it = &self.integrator;
        if !(it.tolerance.is_finite() && it.tolerance > 0.0) || it.max_iterations == 0 {
            return Err(Error::InvalidInput(format!(
                "integrator tolerance must be positive and max_iterations at least 1, got {} and {}",
                it.tolerance, it.max_iterations
            )));
        }
        if it.max_speed.is_nan() || it.max_speed <= 0.0 {
            return Err(Error::InvalidInput(format!(
                "integrator max_speed must be positive (f64::INFINITY turns the guard off), got {}",
                it.max_speed
            )));
        }
        self.contact.validate()
    }
}

/// The divergence guard of a step's result: a non-finite entry or a speed above
/// `max_speed` is [`Error::Diverged`], naming the joint of the offending coordinate
/// (the fastest one when several exceed the bound).
fn check_divergence(model: &Model, next: &State, max_speed: f64) -> Result<()> {
    let diverged = |dof: usize, value: f64| Error::Diverged { joint: model.dof_name(dof), dof, value, max_speed };
    if let Some(dof) = next.v.iter().position(|x| !x.is_finite()) {
        return Err(diverged(dof, next.v[dof]));
    }
    if let Some(k) = next.q.iter().position(|x| !x.is_finite()) {
        return Err(diverged(model.q_dof(k), next.q[k]));
    }
    if next.v.is_empty() {
        return Ok(());
    }
    let dof = next.v.iamax();
    if next.v[dof].abs() > max_speed {
        return Err(diverged(dof, next.v[dof]));
    }
    Ok(())
}

impl Default for SimOptions {
    fn default() -> Self {
        Self { dt: 1e-3, gravity: None, integrator: IntegratorOptions::default(), contact: ContactOptions::default() }
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
    /// Steps that solved a constraint LCP.
    pub lcp_solves: u64,
    /// LCP solves whose warm-start guess was accepted.
    pub warm_start_hits: u64,
    /// LCP solver fallbacks (a method failed and the next was tried).
    pub lcp_fallbacks: u64,
    /// Boxed-LCP solves whose solution is not the standardized one (App. A.1).
    pub unstandardized_solves: u64,
    /// Constraint solves by the pivoting solver of the no-slip and viscous models
    /// ([`crate::solver::ppm`]; its basic solutions are not standardized by design).
    pub ppm_solves: u64,
    /// Steps whose position stage removed a penetration ([`crate::step::PositionCorrection`]).
    #[serde(default)]
    pub position_corrections: u64,
    /// Re-solves of the limit loop: a joint limit that the impulses of other rows pushed
    /// a joint over got its row and the LCP was solved again (see [`crate::step::contact`]).
    #[serde(default)]
    pub limit_resolves: u64,
    /// Steps whose final solve left a joint limit violated beyond
    /// [`crate::step::contact::LIMIT_TOLERANCE`] (listed in
    /// [`ConstraintRecord::limit_violations`]).
    #[serde(default)]
    pub limit_violations: u64,
    /// Steps whose accepted LCP solution misses the LCP tolerance (a last-resort PGS
    /// result; its residual is in the step's [`crate::solver::lcp::LcpStats::residual`]).
    #[serde(default)]
    pub inexact_solves: u64,
    /// Steps whose constraint LCP had no exact solution with the recovery biases (an
    /// infeasible row set: e.g. two opposing contacts between the same bodies, both
    /// penetrating) and was solved again without them ([`ConstraintRecord::relaxed`]), or
    /// whose position stage had no exact solution and was dropped
    /// ([`ConstraintRecord::correction_dropped`]).
    #[serde(default)]
    pub relaxed_solves: u64,
    /// Constraint solves by the NCP solver ([`crate::step::ContactSolver::Ncp`]).
    #[serde(default)]
    pub ncp_solves: u64,
    /// Non-smooth Newton iterations of those solves, summed.
    #[serde(default)]
    pub newton_iterations: u64,
    /// Newton linear systems of those solves solved on the GPU
    /// ([`crate::solver::ncp::LinearSolve::GpuConjugateResidual`]; `docs/gpu.md`).
    #[serde(default)]
    pub gpu_linear_solves: u64,
    /// Newton linear systems that asked for the GPU and were solved on the CPU because no
    /// GPU was available.
    #[serde(default)]
    pub gpu_fallbacks: u64,
    /// Steps in which a boxed-LCP island (velocity or position stage) spent its
    /// [`crate::solver::lcp::LcpOptions::work_limit`] and settled for what the bounded
    /// search found (`docs/lcp.md`, "The work limit").
    #[serde(default)]
    pub work_limited_solves: u64,
}

impl SimStats {
    /// The fraction of constraint solves whose warm-start guess was accepted (0 when
    /// there was none).
    pub fn warm_start_hit_rate(&self) -> f64 {
        if self.lcp_solves == 0 {
            0.0
        } else {
            self.warm_start_hits as f64 / self.lcp_solves as f64
        }
    }
}

/// Steps an articulated system forward in time: semi-implicit Euler with contacts and
/// joint limits as a boxed LCP (see [`crate::step::contact`]).
#[derive(Clone, Debug)]
pub struct Simulator {
    model: Arc<Model>,
    params: Arc<ParamSpec>,
    options: SimOptions,
    data: Data,
    deriv: DerivativeData,
    constraints: ConstraintWorkspace,
    last: StepStats,
    last_constraints: Option<Arc<ConstraintRecord>>,
    stats: SimStats,
}

impl Simulator {
    /// A simulator for `model` with `options` (checked by [`SimOptions::validate`]:
    /// `dt` finite, positive and at most [`SimOptions::MAX_DT`]; gravity finite).
    pub fn new(model: Model, options: SimOptions) -> Result<Simulator> {
        options.validate()?;
        let model = match options.gravity {
            Some(g) => model.with_gravity(g)?,
            None => model,
        };
        let data = Data::new(&model);
        let deriv = DerivativeData::new(&model);
        let constraints = ConstraintWorkspace::new(&model);
        Ok(Simulator {
            model: Arc::new(model),
            params: Arc::new(ParamSpec::new()),
            options,
            data,
            deriv,
            constraints,
            last: StepStats::default(),
            last_constraints: None,
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
    /// The constraint stage of the last step (contacts, impulses, classification,
    /// solver statistics); `None` when it had no constraint rows.
    pub fn last_constraints(&self) -> Option<&ConstraintRecord> {
        self.last_constraints.as_deref()
    }
    /// Forgets the previous step's contact classification (the next LCP starts cold).
    pub fn reset_warm_start(&mut self) {
        self.constraints.reset();
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
        // The step's stages, in order: smooth dynamics (kinematics at q, the free
        // velocity v_f into next.v) → collision (contacts at q) → constraint stage (rows,
        // solve, limit loop, position stage; v⁺ into next.v) → one configuration update
        // with the velocity that moves q.
        let inputs = StepInputs {
            q: state.q.as_slice(),
            v: state.v.as_slice(),
            tau: control.tau.as_slice(),
            wrenches: control.wrenches.as_deref(),
            dt: self.options.dt,
        };
        let (model, contact) = (&*self.model, &self.options.contact);
        let stats = smooth_velocity(
            model,
            &mut self.data,
            &mut self.deriv,
            &inputs,
            &self.options.integrator,
            next.v.as_mut_slice(),
        )?;
        let contacts = collision_stage(model, &self.data, &mut self.constraints, contact)?;
        let constraints = constraint_stage(
            model,
            &mut self.data,
            &mut self.constraints,
            &inputs,
            contacts,
            contact,
            next.v.as_mut_slice(),
        )?;
        let v_position = constraints.as_ref().and_then(|c| c.correction.as_ref()).map_or(&next.v, |p| &p.v_position);
        self.model.integrate_into(inputs.q, v_position.as_slice(), inputs.dt, next.q.as_mut_slice());
        if let Some(c) = &constraints {
            self.stats.lcp_solves += 1;
            self.stats.warm_start_hits += c.stats.warm_start_hit as u64;
            self.stats.lcp_fallbacks += c.stats.fallbacks as u64;
            let correction_limited = c.correction.as_ref().is_some_and(|p| p.stats.work_limited > 0);
            self.stats.work_limited_solves += (c.stats.work_limited > 0 || correction_limited) as u64;
            if let Some(p) = &c.correction {
                self.stats.position_corrections += 1;
                self.stats.lcp_fallbacks += p.stats.fallbacks as u64;
            }
            let ppm = c.stats.path == crate::solver::lcp::SolvePath::Ppm;
            self.stats.ppm_solves += ppm as u64;
            self.stats.unstandardized_solves += (!c.stats.standardized && !ppm) as u64;
            self.stats.ncp_solves += (c.options.solver == crate::step::ContactSolver::Ncp) as u64;
            self.stats.newton_iterations += c.stats.newton_iterations as u64;
            self.stats.gpu_linear_solves += c.stats.gpu_linear_solves as u64;
            self.stats.gpu_fallbacks += c.stats.gpu_fallbacks as u64;
            self.stats.limit_resolves += c.passes.saturating_sub(1) as u64;
            self.stats.limit_violations += (!c.limit_violations.is_empty()) as u64;
            self.stats.relaxed_solves += (c.relaxed || c.correction_dropped) as u64;
            self.stats.inexact_solves += (c.stats.residual > self.options.contact.solve_tolerance()) as u64;
        }
        check_divergence(&self.model, next, self.options.integrator.max_speed)?;
        self.last_constraints = constraints.map(Arc::new);
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
            constraints: self.last_constraints.clone(),
        };
        Ok((next, record))
    }

    /// Steps `controls.len()` times from `state`; returns the states after each step.
    /// A failing step's error is wrapped in [`Error::AtStep`] naming the step
    /// (`step 500: tau[3] is not finite (NaN)`); [`Error::root`] gives the step's error.
    pub fn rollout(&mut self, state: &State, controls: &[Control]) -> Result<Vec<State>> {
        let mut out = Vec::with_capacity(controls.len());
        let mut cur = state.clone();
        for (t, c) in controls.iter().enumerate() {
            let next = self.step(&cur, c).map_err(|e| e.at_step(t))?;
            out.push(next.clone());
            cur = next;
        }
        Ok(out)
    }
}
