//! System identification: fits named model parameters θ ([`ParamSpec`]) to observed
//! trajectories with Levenberg–Marquardt (see `docs/sysid.md`).
//!
//! * Residuals: for every observation of a state `x_t`, the weighted tangent-space
//!   position error `(q_t(θ) ⊖ q_t^obs)/σ_q` and, when velocities are observed,
//!   `(v_t(θ) − v_t^obs)/σ_v`, one row per observed channel.
//! * Jacobian `∂r/∂θ`: forward sensitivities through the step Jacobians,
//!   `S_{t+1} = A_t S_t + Θ_t` with `S_t = ∂x_t/∂θ`, `S_0 = 0`, `A_t` the state blocks and
//!   `Θ_t` the θ blocks of [`crate::tape::StepRecord::jacobians`] (the simulator records
//!   θ columns after [`Simulator::set_params`]); or central finite differences of the whole
//!   residual vector through [`ParamSpec::apply`] ([`JacobianSource::FiniteDifference`]).
//! * Levenberg–Marquardt (Marquardt 1963, scaling by `diag(JᵀJ)`; Nielsen's gain-ratio
//!   update of the damping λ), box bounds on θ by projection with an active set.
//! * A [`SysIdReport`]: fitted values by name, costs, residual RMS per channel, counters,
//!   and the Gauss–Newton covariance `σ̂² (JᵀJ)⁻¹` with rank-deficient directions reported.

use super::JacobianSource;
use crate::error::{check_vector, Error, Result};
use crate::model::{ParamKind, ParamSpec};
use crate::sim::{Control, SimOptions, Simulator, State};
use crate::tape::{StepRecord, Workspace};
use crate::Model;
use nalgebra::{DMatrix, DVector};
use std::fmt;
use std::time::{Duration, Instant};

/// Standard deviations σ of the observed channels of one observation (residual rows are
/// divided by σ). An infinite σ leaves the channel out (it is not observed).
#[derive(Clone, Debug, PartialEq)]
pub enum Sigma {
    /// The same σ for every channel.
    Scalar(f64),
    /// One σ per channel (nv: tangent coordinates of q, or entries of v).
    PerChannel(DVector<f64>),
}

impl Default for Sigma {
    fn default() -> Self {
        Sigma::Scalar(1.0)
    }
}

impl Sigma {
    fn get(&self, k: usize) -> f64 {
        match self {
            Sigma::Scalar(s) => *s,
            Sigma::PerChannel(s) => s[k],
        }
    }
    fn validate(&self, what: &'static str, nv: usize) -> Result<()> {
        let ok = |s: f64| s > 0.0 && !s.is_nan();
        match self {
            Sigma::Scalar(s) if !ok(*s) => {
                Err(Error::InvalidInput(format!("{what}: σ must be positive (infinite: unobserved), got {s}")))
            }
            Sigma::PerChannel(s) if s.len() != nv => Err(Error::Dimension { what, expected: nv, got: s.len() }),
            Sigma::PerChannel(s) => match s.iter().position(|&x| !ok(x)) {
                Some(k) => Err(Error::InvalidInput(format!(
                    "{what}[{k}]: σ must be positive (infinite: unobserved), got {}",
                    s[k]
                ))),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }
}

/// An observation of the state `x_t` of a trajectory: its configuration (compared in the
/// tangent space, `Model::difference`) and optionally its velocity.
#[derive(Clone, Debug, PartialEq)]
pub struct Observation {
    /// The time index t of the observed state (0 ≤ t ≤ T; `x_0` is the initial state).
    pub step: usize,
    /// The observed configuration (nq), or `None` when only the velocity is observed.
    pub q: Option<DVector<f64>>,
    /// σ of the position channels (the nv tangent coordinates of `q ⊖ q_obs`).
    pub sigma_q: Sigma,
    /// The observed velocity (nv), if any.
    pub v: Option<DVector<f64>>,
    /// σ of the velocity channels.
    pub sigma_v: Sigma,
}

impl Observation {
    /// An observed configuration at step `step` with the same σ on every channel.
    pub fn position(step: usize, q: DVector<f64>, sigma: f64) -> Observation {
        Observation { step, q: Some(q), sigma_q: Sigma::Scalar(sigma), v: None, sigma_v: Sigma::default() }
    }
    /// An observed configuration and velocity at step `step`.
    pub fn state(step: usize, q: DVector<f64>, v: DVector<f64>, sigma_q: f64, sigma_v: f64) -> Observation {
        Observation { step, q: Some(q), sigma_q: Sigma::Scalar(sigma_q), v: Some(v), sigma_v: Sigma::Scalar(sigma_v) }
    }
}

/// One recorded experiment: the initial state, the applied joint torques (one per
/// simulator step, nv each) and the observations.
#[derive(Clone, Debug, PartialEq)]
pub struct Trajectory {
    /// Initial configuration (nq), known.
    pub q0: DVector<f64>,
    /// Initial velocity (nv), known.
    pub v0: DVector<f64>,
    /// Joint torques `τ_0..τ_{T−1}`.
    pub controls: Vec<DVector<f64>>,
    /// Observations of states `x_t`, in any order.
    pub observed: Vec<Observation>,
}

impl Trajectory {
    /// A trajectory observing every `every`-th state `x_t` (t = every, 2·every, …, ≤ T) of
    /// `states` (`states[t]` = `x_t`, T + 1 of them as a rollout from `x_0` gives), positions
    /// with σ `sigma_q` and, when `sigma_v` is given, velocities.
    pub fn from_states(
        x0: &State,
        controls: Vec<DVector<f64>>,
        states: &[State],
        every: usize,
        sigma_q: f64,
        sigma_v: Option<f64>,
    ) -> Trajectory {
        let every = every.max(1);
        let observed = (1..states.len())
            .filter(|t| t % every == 0)
            .map(|t| match sigma_v {
                Some(sv) => Observation::state(t, states[t].q.clone(), states[t].v.clone(), sigma_q, sv),
                None => Observation::position(t, states[t].q.clone(), sigma_q),
            })
            .collect();
        Trajectory { q0: x0.q.clone(), v0: x0.v.clone(), controls, observed }
    }
    /// The initial state.
    pub fn x0(&self) -> State {
        State { q: self.q0.clone(), v: self.v0.clone() }
    }
}

/// Box bounds `lower ≤ θ ≤ upper` (infinite entries: unbounded).
#[derive(Clone, Debug, PartialEq)]
pub struct ParamBounds {
    /// Lower bounds (one per scalar of θ).
    pub lower: DVector<f64>,
    /// Upper bounds.
    pub upper: DVector<f64>,
}

impl ParamBounds {
    /// Bounds from `lower` and `upper`.
    pub fn new(lower: DVector<f64>, upper: DVector<f64>) -> ParamBounds {
        ParamBounds { lower, upper }
    }
    /// No bounds on `n` scalars.
    pub fn unbounded(n: usize) -> ParamBounds {
        ParamBounds {
            lower: DVector::from_element(n, f64::NEG_INFINITY),
            upper: DVector::from_element(n, f64::INFINITY),
        }
    }
    /// The physical domain of each kind: mass ≥ 1e-6; damping, stiffness, armature, friction
    /// and viscous friction ≥ 0; restitution in [0, 1]; the rest unbounded (inertia validity
    /// is not a box: an invalid trial θ is a rejected step).
    pub fn physical(spec: &ParamSpec) -> ParamBounds {
        let mut b = ParamBounds::unbounded(spec.len());
        for e in spec.entries() {
            let (lo, hi) = match e.kind {
                ParamKind::Mass => (1e-6, f64::INFINITY),
                ParamKind::Damping
                | ParamKind::Stiffness
                | ParamKind::Armature
                | ParamKind::Friction
                | ParamKind::ViscousFriction => (0.0, f64::INFINITY),
                ParamKind::Restitution => (0.0, 1.0),
                _ => continue,
            };
            for s in 0..e.len {
                b.lower[e.offset + s] = lo;
                b.upper[e.offset + s] = hi;
            }
        }
        b
    }
    /// Checks lengths, NaN and `lower ≤ upper`.
    pub fn validate(&self, n: usize) -> Result<()> {
        for (what, b) in [("bounds.lower", &self.lower), ("bounds.upper", &self.upper)] {
            if b.len() != n {
                return Err(Error::Dimension { what, expected: n, got: b.len() });
            }
            if let Some(i) = b.iter().position(|x| x.is_nan()) {
                return Err(Error::NonFinite { what, index: i, value: f64::NAN });
            }
        }
        if let Some(i) = (0..n).find(|&i| self.lower[i] > self.upper[i]) {
            return Err(Error::InvalidInput(format!(
                "parameter bound {i}: lower {} is above upper {}",
                self.lower[i], self.upper[i]
            )));
        }
        Ok(())
    }
    /// Projects θ onto the box in place.
    pub fn clamp(&self, theta: &mut DVector<f64>) {
        for i in 0..theta.len() {
            theta[i] = theta[i].clamp(self.lower[i], self.upper[i]);
        }
    }
}

/// Options of [`sysid`] / [`SysIdProblem::fit`].
#[derive(Clone, Debug, PartialEq)]
pub struct SysIdOptions {
    /// Maximum iterations (trial steps, accepted or rejected), at least 1.
    pub max_iterations: usize,
    /// Stop when an accepted step lowers the cost by less than `cost_tolerance · cost`.
    pub cost_tolerance: f64,
    /// Stop when the step is small: `‖δ‖ ≤ step_tolerance · (‖θ‖ + step_tolerance)`.
    pub step_tolerance: f64,
    /// Stop when every free gradient entry is small against its column and the residual:
    /// `max_j |gⱼ| / (‖r‖ ‖J_j‖) ≤ gradient_tolerance` (the cosine test of MINPACK).
    pub gradient_tolerance: f64,
    /// Initial damping λ (relative to `diag(JᵀJ)`, > 0).
    pub damping_init: f64,
    /// Stop (not converged) when λ exceeds this.
    pub damping_max: f64,
    /// Box bounds on θ; `None`: [`ParamBounds::physical`].
    pub bounds: Option<ParamBounds>,
    /// Analytic sensitivities or finite differences of the residuals.
    pub jacobians: JacobianSource,
    /// Relative central-difference step for [`JacobianSource::FiniteDifference`]:
    /// `hⱼ = fd_step · max(|θⱼ|, 1)`.
    pub fd_step: f64,
    /// Eigenvalues of the column-scaled `JᵀJ` below `rank_tolerance` times the largest count
    /// as zero (unidentifiable directions) in the covariance.
    pub rank_tolerance: f64,
}

impl Default for SysIdOptions {
    fn default() -> Self {
        Self {
            max_iterations: 100,
            cost_tolerance: 1e-12,
            step_tolerance: 1e-10,
            gradient_tolerance: 1e-10,
            damping_init: 1e-3,
            damping_max: 1e16,
            bounds: None,
            jacobians: JacobianSource::Analytic,
            fd_step: 1e-6,
            rank_tolerance: 1e-10,
        }
    }
}

impl SysIdOptions {
    /// Checks the options (not the bounds' length, which needs the spec).
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &str, x: f64| Err(Error::InvalidInput(format!("sysid option {what} is invalid: {x}")));
        let nonneg = |x: f64| x.is_finite() && x >= 0.0;
        let pos = |x: f64| x.is_finite() && x > 0.0;
        if self.max_iterations == 0 {
            return bad("max_iterations (≥ 1)", 0.0);
        }
        if !nonneg(self.cost_tolerance) {
            return bad("cost_tolerance (finite, ≥ 0)", self.cost_tolerance);
        }
        if !nonneg(self.step_tolerance) {
            return bad("step_tolerance (finite, ≥ 0)", self.step_tolerance);
        }
        if !nonneg(self.gradient_tolerance) {
            return bad("gradient_tolerance (finite, ≥ 0)", self.gradient_tolerance);
        }
        if !pos(self.damping_init) {
            return bad("damping_init (> 0)", self.damping_init);
        }
        if !(pos(self.damping_max) && self.damping_max > self.damping_init) {
            return bad("damping_max (> damping_init)", self.damping_max);
        }
        if !pos(self.fd_step) {
            return bad("fd_step (> 0)", self.fd_step);
        }
        if !(nonneg(self.rank_tolerance) && self.rank_tolerance < 1.0) {
            return bad("rank_tolerance (in [0, 1))", self.rank_tolerance);
        }
        Ok(())
    }
}

/// What one Levenberg–Marquardt iteration did, passed to the progress callback.
#[derive(Clone, Debug, PartialEq)]
pub struct SysIdProgress {
    /// Iteration number (1-based).
    pub iteration: usize,
    /// Cost `½‖r‖²` at the current θ (after the iteration).
    pub cost: f64,
    /// True when the trial step was accepted.
    pub accepted: bool,
    /// Gain ratio of the trial step (actual / predicted reduction; −∞ when the trial failed).
    pub gain_ratio: f64,
    /// Damping λ after the iteration.
    pub damping: f64,
    /// Norm of the (projected) trial step.
    pub step_norm: f64,
    /// Time since the fit started.
    pub elapsed: Duration,
}

/// Why the fit stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SysIdStop {
    /// The scaled gradient fell below the gradient tolerance (or the residual is zero).
    GradientTolerance,
    /// The step fell below the step tolerance.
    StepTolerance,
    /// An accepted step reduced the cost by less than the cost tolerance.
    CostTolerance,
    /// The iteration limit was reached.
    MaxIterations,
    /// The damping exceeded its maximum (no descent step found).
    DampingLimit,
}

/// The root-mean-square residual of one observed channel, in its own units (unweighted).
#[derive(Clone, Debug, PartialEq)]
pub struct ChannelRms {
    /// `q:JOINT` (tangent coordinate of the position error) or `v:JOINT`; `[k]` for
    /// multi-dof joints.
    pub name: String,
    /// Number of residuals of this channel.
    pub count: usize,
    /// Their RMS at the fitted θ.
    pub rms: f64,
}

/// The outcome of a fit, with the Gauss–Newton uncertainty of the estimate. Its `Display`
/// prints a table.
#[derive(Clone, Debug)]
pub struct SysIdReport {
    /// One name per scalar of θ ([`ParamSpec::names`]).
    pub names: Vec<String>,
    /// The initial θ (after projection onto the bounds).
    pub theta_initial: DVector<f64>,
    /// The fitted θ̂.
    pub theta: DVector<f64>,
    /// The model with θ̂ applied.
    pub model: Model,
    /// Cost `½ Σ rᵢ²` at the initial θ.
    pub initial_cost: f64,
    /// Cost at θ̂.
    pub cost: f64,
    /// Cost at the start, then after every accepted step (decreasing).
    pub cost_history: Vec<f64>,
    /// Number of residual rows N.
    pub residual_count: usize,
    /// Residual RMS per observed channel at θ̂ (unweighted, in the channel's units).
    pub channels: Vec<ChannelRms>,
    /// Iterations run (accepted and rejected trial steps).
    pub iterations: usize,
    /// True when a tolerance was met.
    pub converged: bool,
    /// Why the fit stopped.
    pub stop: SysIdStop,
    /// The Jacobian source used.
    pub jacobians: JacobianSource,
    /// Wall time of the whole fit (including the covariance).
    pub wall_time: Duration,
    /// Time spent computing residual Jacobians.
    pub jacobian_time: Duration,
    /// Residual Jacobians evaluated (one at the start and one per accepted step).
    pub jacobian_evaluations: usize,
    /// Simulator steps taken (rollouts and finite differences).
    pub simulator_steps: usize,
    /// True for each scalar of θ̂ that sits at one of its bounds.
    pub at_bound: Vec<bool>,
    /// Residual variance σ̂² = 2·cost / (N − p) (1 when N ≤ p: the weights are then taken as exact σ).
    pub residual_variance: f64,
    /// Covariance `σ̂² (JᵀJ)⁺` of θ̂ (pseudo-inverse on the identifiable subspace).
    pub covariance: DMatrix<f64>,
    /// Standard deviations of θ̂ (∞ for scalars that take part in an unidentifiable direction).
    pub std_dev: DVector<f64>,
    /// Correlation matrix of θ̂ (0 where a standard deviation is 0 or ∞; 1 on the diagonal).
    pub correlation: DMatrix<f64>,
    /// Numerical rank of `JᵀJ` (p when every parameter is identifiable).
    pub rank: usize,
    /// Unit directions in θ along which the residuals do not change (to first order).
    pub unidentifiable: Vec<DVector<f64>>,
}

impl SysIdReport {
    /// The fitted value of the scalar named `name` (as in [`ParamSpec::names`]).
    pub fn value(&self, name: &str) -> Option<f64> {
        self.names.iter().position(|n| n == name).map(|i| self.theta[i])
    }
    /// The standard deviation of the scalar named `name`.
    pub fn std_dev_of(&self, name: &str) -> Option<f64> {
        self.names.iter().position(|n| n == name).map(|i| self.std_dev[i])
    }
}

impl fmt::Display for SysIdReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.theta.len();
        writeln!(
            f,
            "system identification: {p} parameters, {} residuals, {:?} Jacobians",
            self.residual_count, self.jacobians
        )?;
        writeln!(
            f,
            "  {} iterations ({:?}{}), cost {:.4e} -> {:.4e}, wall time {:.3} s (Jacobians {:.3} s, {} evaluations, {} simulator steps)",
            self.iterations,
            self.stop,
            if self.converged { "" } else { ", not converged" },
            self.initial_cost,
            self.cost,
            self.wall_time.as_secs_f64(),
            self.jacobian_time.as_secs_f64(),
            self.jacobian_evaluations,
            self.simulator_steps
        )?;
        let w = self.names.iter().map(|n| n.len()).max().unwrap_or(4).max(9);
        writeln!(f, "  {:<w$}  {:>13}  {:>13}  {:>10}", "parameter", "initial", "fitted", "std dev")?;
        for i in 0..p {
            writeln!(
                f,
                "  {:<w$}  {:>13.6e}  {:>13.6e}  {:>10.2e}{}",
                self.names[i],
                self.theta_initial[i],
                self.theta[i],
                self.std_dev[i],
                if self.at_bound[i] { "  (at bound)" } else { "" }
            )?;
        }
        writeln!(f, "  residual variance {:.3e}, rank {} of {p}", self.residual_variance, self.rank)?;
        if p > 1 {
            writeln!(f, "  correlation:")?;
            for i in 0..p {
                let row: Vec<String> = (0..p).map(|j| format!("{:+.4}", self.correlation[(i, j)])).collect();
                writeln!(f, "    {}", row.join(" "))?;
            }
        }
        for d in &self.unidentifiable {
            let terms: Vec<String> =
                (0..p).filter(|&i| d[i].abs() > 1e-3).map(|i| format!("{:+.3}·{}", d[i], self.names[i])).collect();
            writeln!(f, "  unidentifiable direction: {}", terms.join(" "))?;
        }
        writeln!(f, "  residual RMS per channel:")?;
        for c in &self.channels {
            writeln!(f, "    {:<24} {:>10.3e}  ({} residuals)", c.name, c.rms, c.count)?;
        }
        Ok(())
    }
}

/// Where a residual row comes from: its channel (0..nv: tangent position, nv..2nv: velocity)
/// and its weight 1/σ.
#[derive(Clone, Copy, Debug)]
struct Row {
    channel: usize,
    weight: f64,
}

/// A system identification problem: a base model (everything θ does not name), the
/// simulator options, the parameters and the data. Evaluates residuals and their Jacobian
/// at any θ and fits θ with Levenberg–Marquardt.
#[derive(Clone, Debug)]
pub struct SysIdProblem {
    model: Model,
    options: SimOptions,
    spec: ParamSpec,
    data: Vec<Trajectory>,
    /// Per trajectory, per step t = 0..=T, the indices of the observations of `x_t`.
    by_step: Vec<Vec<Vec<usize>>>,
    rows: Vec<Row>,
}

/// Counters of one fit.
#[derive(Default)]
struct Counters {
    jacobian_time: Duration,
    jacobian_evaluations: usize,
    simulator_steps: usize,
}

impl SysIdProblem {
    /// A problem fitting `spec` (parsed for `model`) to `data`, simulated with `options`.
    ///
    /// Errors: a spec that does not fit the model; gravity in θ while `options.gravity`
    /// overrides it; no data; wrong sizes (q0, v0, controls, observations, σ), non-finite
    /// values, non-unit quaternions, observation steps beyond T, non-positive σ, no
    /// observed channel; invalid simulator options.
    pub fn new(model: Model, options: SimOptions, spec: ParamSpec, data: Vec<Trajectory>) -> Result<SysIdProblem> {
        spec.check_model(&model)?;
        if spec.is_empty() {
            return Err(Error::InvalidInput("no parameters to identify (the spec is empty)".into()));
        }
        if options.gravity.is_some() && spec.entries().iter().any(|e| e.kind == ParamKind::Gravity) {
            return Err(Error::InvalidInput(
                "gravity is a fitted parameter but the simulator options override it (set options.gravity = None)"
                    .into(),
            ));
        }
        Simulator::new(model.clone(), options.clone())?;
        if data.is_empty() {
            return Err(Error::InvalidInput("no trajectories to fit".into()));
        }
        let (nq, nv) = (model.nq(), model.nv());
        let mut by_step = Vec::with_capacity(data.len());
        for (k, tr) in data.iter().enumerate() {
            check_vector("trajectory.q0", tr.q0.as_slice(), nq)?;
            check_vector("trajectory.v0", tr.v0.as_slice(), nv)?;
            model.check_quaternions(tr.q0.as_slice())?;
            if tr.controls.is_empty() {
                return Err(Error::InvalidInput(format!("trajectory {k} has no controls (need at least one step)")));
            }
            for u in &tr.controls {
                check_vector("trajectory.controls[t]", u.as_slice(), nv)?;
            }
            let steps = tr.controls.len();
            let mut at = vec![vec![]; steps + 1];
            for (i, o) in tr.observed.iter().enumerate() {
                if o.step > steps {
                    return Err(Error::InvalidInput(format!(
                        "trajectory {k}, observation {i}: step {} is beyond the last state x_{steps}",
                        o.step
                    )));
                }
                if o.q.is_none() && o.v.is_none() {
                    return Err(Error::InvalidInput(format!(
                        "trajectory {k}, observation {i} observes neither q nor v"
                    )));
                }
                if let Some(q) = &o.q {
                    check_vector("observation.q", q.as_slice(), nq)?;
                    model.check_quaternions(q.as_slice())?;
                    o.sigma_q.validate("observation.sigma_q", nv)?;
                }
                if let Some(v) = &o.v {
                    check_vector("observation.v", v.as_slice(), nv)?;
                    o.sigma_v.validate("observation.sigma_v", nv)?;
                }
                at[o.step].push(i);
            }
            by_step.push(at);
        }
        // The residual rows, in the order the evaluation produces them.
        let mut rows = vec![];
        for (tr, at) in data.iter().zip(&by_step) {
            for obs in at {
                for &i in obs {
                    let o = &tr.observed[i];
                    for (present, sigma, base) in [(o.q.is_some(), &o.sigma_q, 0), (o.v.is_some(), &o.sigma_v, nv)] {
                        if present {
                            for c in 0..nv {
                                let s = sigma.get(c);
                                if s.is_finite() {
                                    rows.push(Row { channel: base + c, weight: 1.0 / s });
                                }
                            }
                        }
                    }
                }
            }
        }
        if rows.is_empty() {
            return Err(Error::InvalidInput("the observations have no channel with a finite σ".into()));
        }
        Ok(SysIdProblem { model, options, spec, data, by_step, rows })
    }

    /// [`SysIdProblem::new`] with the parameters given by name ([`ParamSpec::parse`]).
    pub fn from_names<S: AsRef<str>>(
        model: Model,
        options: SimOptions,
        names: &[S],
        data: Vec<Trajectory>,
    ) -> Result<SysIdProblem> {
        let spec = ParamSpec::parse(&model, names)?;
        SysIdProblem::new(model, options, spec, data)
    }

    /// The base model.
    pub fn model(&self) -> &Model {
        &self.model
    }
    /// The parameters.
    pub fn spec(&self) -> &ParamSpec {
        &self.spec
    }
    /// One name per scalar of θ.
    pub fn names(&self) -> Vec<String> {
        self.spec.names(&self.model)
    }
    /// The data.
    pub fn data(&self) -> &[Trajectory] {
        &self.data
    }
    /// θ of the base model.
    pub fn initial_values(&self) -> DVector<f64> {
        self.spec.values(&self.model)
    }
    /// Number of residual rows N.
    pub fn residual_count(&self) -> usize {
        self.rows.len()
    }
    /// Names of the 2nv channels (`q:JOINT`, `v:JOINT`, `[k]` for multi-dof joints).
    pub fn channel_names(&self) -> Vec<String> {
        let mut dof = Vec::with_capacity(self.model.nv());
        for j in self.model.joints() {
            match j.nv() {
                0 => {}
                1 => dof.push(j.name.clone()),
                n => dof.extend((0..n).map(|k| format!("{}[{k}]", j.name))),
            }
        }
        dof.iter().map(|d| format!("q:{d}")).chain(dof.iter().map(|d| format!("v:{d}"))).collect()
    }

    fn check_theta(&self, theta: &DVector<f64>) -> Result<()> {
        check_vector("theta", theta.as_slice(), self.spec.len())
    }

    fn simulator(&self, theta: &DVector<f64>) -> Result<Simulator> {
        let model = self.spec.apply(&self.model, theta)?;
        let mut sim = Simulator::new(model, self.options.clone())?;
        sim.set_params(self.spec.clone());
        Ok(sim)
    }

    /// Rolls out every trajectory at θ; returns the residuals and, with `record`, the
    /// step records per trajectory.
    fn simulate(
        &self,
        theta: &DVector<f64>,
        record: bool,
        counters: &mut Counters,
    ) -> Result<(DVector<f64>, Vec<Vec<StepRecord>>)> {
        let mut sim = self.simulator(theta)?;
        let nv = self.model.nv();
        let mut r = DVector::zeros(self.rows.len());
        let mut row = 0;
        let mut records = Vec::with_capacity(if record { self.data.len() } else { 0 });
        for (tr, at) in self.data.iter().zip(&self.by_step) {
            sim.reset_warm_start();
            let mut x = tr.x0();
            let mut recs = Vec::with_capacity(if record { tr.controls.len() } else { 0 });
            for t in 0..=tr.controls.len() {
                for &i in &at[t] {
                    let o = &tr.observed[i];
                    if let Some(q) = &o.q {
                        let d = self.model.difference(q, &x.q)?;
                        for c in 0..nv {
                            let s = o.sigma_q.get(c);
                            if s.is_finite() {
                                r[row] = d[c] / s;
                                row += 1;
                            }
                        }
                    }
                    if let Some(v) = &o.v {
                        for c in 0..nv {
                            let s = o.sigma_v.get(c);
                            if s.is_finite() {
                                r[row] = (x.v[c] - v[c]) / s;
                                row += 1;
                            }
                        }
                    }
                }
                if t == tr.controls.len() {
                    break;
                }
                let control = Control::torques(tr.controls[t].clone());
                x = if record {
                    let (next, rec) = sim.step_recorded(&x, &control)?;
                    recs.push(rec);
                    next
                } else {
                    sim.step(&x, &control)?
                };
                counters.simulator_steps += 1;
            }
            if record {
                records.push(recs);
            }
        }
        debug_assert_eq!(row, self.rows.len());
        if let Some(i) = r.iter().position(|x| !x.is_finite()) {
            return Err(Error::Numerical {
                algorithm: "sysid residuals",
                detail: format!("residual {i} is not finite"),
            });
        }
        Ok((r, records))
    }

    /// The Jacobian ∂r/∂θ from the recorded steps by forward sensitivity.
    fn sensitivities(&self, records: &[Vec<StepRecord>]) -> Result<DMatrix<f64>> {
        let (nv, p) = (self.model.nv(), self.spec.len());
        let mut jac = DMatrix::zeros(self.rows.len(), p);
        let mut ws = Workspace::new(&self.model);
        let mut row = 0;
        for ((tr, at), recs) in self.data.iter().zip(&self.by_step).zip(records) {
            let mut sq = DMatrix::<f64>::zeros(nv, p);
            let mut sv = DMatrix::<f64>::zeros(nv, p);
            for t in 0..=tr.controls.len() {
                for &i in &at[t] {
                    let o = &tr.observed[i];
                    if let Some(q) = &o.q {
                        // x_t's configuration: the recorded input of step t, or the output of the last step.
                        let qt = if t < recs.len() { recs[t].inputs().0 } else { recs[t - 1].outputs().0 };
                        let g = self.difference_jacobian(q, qt)?;
                        let gs = &g * &sq;
                        for c in 0..nv {
                            let s = o.sigma_q.get(c);
                            if s.is_finite() {
                                jac.row_mut(row).copy_from(&(gs.row(c) / s));
                                row += 1;
                            }
                        }
                    }
                    if o.v.is_some() {
                        for c in 0..nv {
                            let s = o.sigma_v.get(c);
                            if s.is_finite() {
                                jac.row_mut(row).copy_from(&(sv.row(c) / s));
                                row += 1;
                            }
                        }
                    }
                }
                if t == tr.controls.len() {
                    break;
                }
                let j = recs[t].jacobians_with(&mut ws)?;
                let nq_s = &j.dq_dq * &sq + &j.dq_dv * &sv + &j.dq_dtheta;
                let nv_s = &j.dv_dq * &sq + &j.dv_dv * &sv + &j.dv_dtheta;
                sq = nq_s;
                sv = nv_s;
            }
        }
        Ok(jac)
    }

    /// `G = ∂(q ⊖ q_obs)/∂q` (tangent): identity except on spherical and free joints.
    fn difference_jacobian(&self, q_obs: &DVector<f64>, q: &DVector<f64>) -> Result<DMatrix<f64>> {
        let nv = self.model.nv();
        let mut g = DMatrix::identity(nv, nv);
        if self.model.joints().iter().any(|j| j.kind.has_quaternion()) {
            let d = self.model.difference(q_obs, q)?;
            for (i, j) in self.model.joints().iter().enumerate() {
                if j.kind.has_quaternion() {
                    let (b, n) = (self.model.v_index(i), j.nv());
                    let jd = j.kind.difference_jacobian(&d.as_slice()[b..b + n]);
                    g.view_mut((b, b), (n, n)).copy_from(&jd.view((0, 0), (n, n)));
                }
            }
        }
        Ok(g)
    }

    /// The residual vector r(θ) (N rows: trajectories in order, states by increasing t,
    /// the observations of one state in the given order, q channels then v channels).
    pub fn residuals(&self, theta: &DVector<f64>) -> Result<DVector<f64>> {
        self.check_theta(theta)?;
        Ok(self.simulate(theta, false, &mut Counters::default())?.0)
    }

    /// The residuals and their Jacobian ∂r/∂θ (N × p) at θ, from `source`
    /// (`fd_step` as in [`SysIdOptions::fd_step`], central differences; θ is not bounded here).
    pub fn residuals_and_jacobian(
        &self,
        theta: &DVector<f64>,
        source: JacobianSource,
        fd_step: f64,
    ) -> Result<(DVector<f64>, DMatrix<f64>)> {
        self.check_theta(theta)?;
        if !(fd_step.is_finite() && fd_step > 0.0) {
            return Err(Error::InvalidInput(format!("fd_step must be positive, got {fd_step}")));
        }
        let bounds = ParamBounds::unbounded(self.spec.len());
        self.jacobian_at(theta, source, fd_step, &bounds, &mut Counters::default())
    }

    /// The residuals at θ and, with `jacobian`, their Jacobian from `source` (finite
    /// differences one-sided next to `bounds`, as in a fit): exactly the numbers [`sysid`]
    /// computes for these trajectories, so that the rows of problems over consecutive
    /// slices of the data, stacked, equal those of the whole problem (each trajectory is
    /// simulated from a cold warm start). What a [`SysIdEvaluator`] running elsewhere calls.
    pub fn evaluate(
        &self,
        theta: &DVector<f64>,
        jacobian: bool,
        source: JacobianSource,
        fd_step: f64,
        bounds: &ParamBounds,
    ) -> Result<Evaluation> {
        self.check_theta(theta)?;
        bounds.validate(self.spec.len())?;
        if !(fd_step.is_finite() && fd_step > 0.0) {
            return Err(Error::InvalidInput(format!("fd_step must be positive, got {fd_step}")));
        }
        let mut counters = Counters::default();
        let (residuals, jacobian) = match (jacobian, source) {
            (false, _) => (self.simulate(theta, false, &mut counters)?.0, None),
            (true, JacobianSource::Analytic) => {
                let (r, records) = self.simulate(theta, true, &mut counters)?;
                (r, Some(self.sensitivities(&records)?))
            }
            (true, JacobianSource::FiniteDifference) => {
                let (r, j) = self.jacobian_at(theta, source, fd_step, bounds, &mut counters)?;
                (r, Some(j))
            }
        };
        Ok(Evaluation { residuals, jacobian, simulator_steps: counters.simulator_steps })
    }

    fn jacobian_at(
        &self,
        theta: &DVector<f64>,
        source: JacobianSource,
        fd_step: f64,
        bounds: &ParamBounds,
        counters: &mut Counters,
    ) -> Result<(DVector<f64>, DMatrix<f64>)> {
        let start = Instant::now();
        let out = match source {
            JacobianSource::Analytic => {
                let (r, records) = self.simulate(theta, true, counters)?;
                let jac = self.sensitivities(&records)?;
                (r, jac)
            }
            JacobianSource::FiniteDifference => {
                let (r, _) = self.simulate(theta, false, counters)?;
                let mut jac = DMatrix::zeros(r.len(), theta.len());
                for j in 0..theta.len() {
                    let h = fd_step * theta[j].abs().max(1.0);
                    // Central differences; one-sided next to a bound.
                    let (up, down) = (theta[j] + h <= bounds.upper[j], theta[j] - h >= bounds.lower[j]);
                    let eval = |x: f64, c: &mut Counters| -> Result<DVector<f64>> {
                        let mut th = theta.clone();
                        th[j] = x;
                        Ok(self.simulate(&th, false, c)?.0)
                    };
                    let col = match (up, down) {
                        (true, true) => (eval(theta[j] + h, counters)? - eval(theta[j] - h, counters)?) / (2.0 * h),
                        (true, false) => (eval(theta[j] + h, counters)? - &r) / h,
                        (false, true) => (&r - eval(theta[j] - h, counters)?) / h,
                        (false, false) => DVector::zeros(r.len()),
                    };
                    jac.set_column(j, &col);
                }
                (r, jac)
            }
        };
        counters.jacobian_time += start.elapsed();
        counters.jacobian_evaluations += 1;
        Ok(out)
    }

    /// Fits θ from `theta0` (projected onto the bounds) with Levenberg–Marquardt; see
    /// [`sysid`].
    pub fn fit(
        &self,
        theta0: &DVector<f64>,
        options: &SysIdOptions,
        progress: Option<&mut dyn FnMut(&SysIdProgress)>,
    ) -> Result<SysIdReport> {
        sysid(self, theta0, options, progress)
    }
}

/// Residuals (and their Jacobian) at one θ, computed by [`SysIdProblem::evaluate`] or by a
/// [`SysIdEvaluator`].
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// r(θ), N rows in the order of [`SysIdProblem::residuals`].
    pub residuals: DVector<f64>,
    /// ∂r/∂θ (N × p) when it was asked for.
    pub jacobian: Option<DMatrix<f64>>,
    /// Simulator steps taken.
    pub simulator_steps: usize,
}

/// Residuals and Jacobians computed outside the problem, for instance over slices of the
/// trajectories on other machines ([`sysid_with`]). Each call must return what
/// [`SysIdProblem::evaluate`] of the whole problem would (with the fit's Jacobian source,
/// finite-difference step and bounds) for the fit to equal [`sysid`]'s.
pub trait SysIdEvaluator {
    /// r(θ) and, with `jacobian`, ∂r/∂θ. `trial`: θ is a trial step, and `Ok(None)` says the
    /// simulation failed there (the step is rejected); otherwise, and for every error, the
    /// fit ends with the error.
    fn evaluate(&mut self, theta: &DVector<f64>, jacobian: bool, trial: bool) -> Result<Option<Evaluation>>;
}

/// [`sysid`] with the residuals and Jacobians of `evaluator` instead of the problem's own
/// (the problem still supplies the parameters, the default bounds and the residual rows'
/// channels for the report); the iterates are those of [`sysid`] when the evaluator
/// returns the same numbers.
pub fn sysid_with(
    problem: &SysIdProblem,
    theta0: &DVector<f64>,
    options: &SysIdOptions,
    progress: Option<&mut dyn FnMut(&SysIdProgress)>,
    evaluator: &mut dyn SysIdEvaluator,
) -> Result<SysIdReport> {
    levenberg_marquardt(problem, theta0, options, progress, Some(evaluator))
}

/// An evaluator's answer at a point that is not a trial step (a missing one is an error).
fn external(
    evaluator: &mut dyn SysIdEvaluator,
    theta: &DVector<f64>,
    rows: usize,
    p: usize,
    counters: &mut Counters,
) -> Result<(DVector<f64>, DMatrix<f64>)> {
    let start = Instant::now();
    let e = evaluator.evaluate(theta, true, false)?.ok_or_else(|| Error::Numerical {
        algorithm: "sysid residuals",
        detail: "the evaluator returned no residuals".to_string(),
    })?;
    let jac = checked_evaluation(&e, rows, p)?.ok_or_else(|| Error::Numerical {
        algorithm: "sysid residuals",
        detail: "the evaluator returned no Jacobian".to_string(),
    })?;
    counters.simulator_steps += e.simulator_steps;
    counters.jacobian_time += start.elapsed();
    counters.jacobian_evaluations += 1;
    Ok((e.residuals, jac))
}

/// The evaluation's Jacobian, after checking the shapes of its parts.
fn checked_evaluation(e: &Evaluation, rows: usize, p: usize) -> Result<Option<DMatrix<f64>>> {
    let bad = |what: String| Error::InvalidInput(format!("the evaluator returned {what}"));
    if e.residuals.len() != rows {
        return Err(bad(format!("{} residuals, the problem has {rows}", e.residuals.len())));
    }
    if let Some(i) = e.residuals.iter().position(|x| !x.is_finite()) {
        return Err(Error::Numerical { algorithm: "sysid residuals", detail: format!("residual {i} is not finite") });
    }
    match &e.jacobian {
        Some(j) if j.shape() != (rows, p) => {
            Err(bad(format!("a Jacobian of shape {:?}, expected ({rows}, {p})", j.shape())))
        }
        j => Ok(j.clone()),
    }
}

/// A trial step's rollout: the problem's own (residuals and step records) or an evaluator's.
enum TrialRun {
    Local(DVector<f64>, Vec<Vec<StepRecord>>),
    External(DVector<f64>, Option<DMatrix<f64>>),
}

/// Fits the parameters of `problem` from `theta0` with Levenberg–Marquardt:
///
/// 1. at θ, the residuals r and Jacobian J (analytic sensitivities or finite differences),
///    gradient `g = Jᵀr`, and Marquardt's scaling `D² = diag(JᵀJ)` (each entry the largest
///    seen so far, as in MINPACK);
/// 2. parameters at a bound whose gradient points outward are held; the free ones solve
///    `(JᵀJ + λD²) δ = −g`; the trial `θ + δ` is projected onto the bounds;
/// 3. gain ratio ρ = actual / predicted reduction of `½‖r‖²` (predicted from the projected
///    step); ρ > 0 accepts the step and scales λ by `max(1/3, 1 − (2ρ − 1)³)` (Nielsen 1999),
///    otherwise λ grows by ν (ν doubles on consecutive rejections). A trial θ the model
///    rejects or whose rollout fails numerically is a rejected step.
///
/// Errors: invalid options, bounds (length, NaN, crossing) or θ₀ (length, non-finite); a
/// simulation failure at θ₀.
pub fn sysid(
    problem: &SysIdProblem,
    theta0: &DVector<f64>,
    options: &SysIdOptions,
    progress: Option<&mut dyn FnMut(&SysIdProgress)>,
) -> Result<SysIdReport> {
    levenberg_marquardt(problem, theta0, options, progress, None)
}

/// The iteration of [`sysid`], with the problem's own evaluations or `evaluator`'s.
fn levenberg_marquardt(
    problem: &SysIdProblem,
    theta0: &DVector<f64>,
    options: &SysIdOptions,
    mut progress: Option<&mut dyn FnMut(&SysIdProgress)>,
    mut evaluator: Option<&mut dyn SysIdEvaluator>,
) -> Result<SysIdReport> {
    let start = Instant::now();
    options.validate()?;
    problem.check_theta(theta0)?;
    let p = problem.spec.len();
    let bounds = options.bounds.clone().unwrap_or_else(|| ParamBounds::physical(&problem.spec));
    bounds.validate(p)?;
    let mut theta = theta0.clone();
    bounds.clamp(&mut theta);
    let theta_initial = theta.clone();
    let mut counters = Counters::default();
    let fd = options.fd_step;
    let rows = problem.residual_count();
    let (mut r, mut jac) = match evaluator.as_deref_mut() {
        None => problem.jacobian_at(&theta, options.jacobians, fd, &bounds, &mut counters)?,
        Some(e) => external(e, &theta, rows, p, &mut counters)?,
    };
    let mut cost = 0.5 * r.norm_squared();
    let initial_cost = cost;
    let mut cost_history = vec![cost];
    let mut scale = DVector::<f64>::zeros(p);
    let mut lambda = options.damping_init;
    let mut nu = 2.0;
    let mut iterations = 0;
    let mut stop = SysIdStop::MaxIterations;
    while iterations < options.max_iterations {
        let jtj = jac.transpose() * &jac;
        let g = jac.transpose() * &r;
        for j in 0..p {
            scale[j] = scale[j].max(jtj[(j, j)]);
        }
        // Free parameters: not at a bound with the gradient pushing out of the box.
        let free: Vec<usize> = (0..p)
            .filter(|&j| !((theta[j] <= bounds.lower[j] && g[j] > 0.0) || (theta[j] >= bounds.upper[j] && g[j] < 0.0)))
            .collect();
        let rnorm = r.norm();
        let gmax = free
            .iter()
            .map(|&j| {
                let cn = jac.column(j).norm();
                if cn > 0.0 {
                    g[j].abs() / (rnorm * cn)
                } else {
                    0.0
                }
            })
            .fold(0.0, f64::max);
        if rnorm == 0.0 || free.is_empty() || gmax <= options.gradient_tolerance {
            stop = SysIdStop::GradientTolerance;
            break;
        }
        iterations += 1;
        let nf = free.len();
        let mut a = DMatrix::zeros(nf, nf);
        let mut b = DVector::zeros(nf);
        for (fi, &i) in free.iter().enumerate() {
            b[fi] = -g[i];
            for (fj, &j) in free.iter().enumerate() {
                a[(fi, fj)] = jtj[(i, j)];
            }
            let d = if scale[i] > 0.0 { scale[i] } else { 1.0 };
            a[(fi, fi)] += lambda * d;
        }
        let mut accepted = false;
        let mut rho = f64::NEG_INFINITY;
        let mut step_norm = 0.0;
        match a.cholesky() {
            None => {
                lambda *= nu;
                nu *= 2.0;
            }
            Some(ch) => {
                let df = ch.solve(&b);
                let mut trial = theta.clone();
                for (fi, &i) in free.iter().enumerate() {
                    trial[i] += df[fi];
                }
                bounds.clamp(&mut trial);
                let delta = &trial - &theta;
                step_norm = delta.norm();
                if step_norm <= options.step_tolerance * (theta.norm() + options.step_tolerance) {
                    stop = SysIdStop::StepTolerance;
                    report_progress(&mut progress, iterations, cost, false, rho, lambda, step_norm, start);
                    break;
                }
                let predicted = -g.dot(&delta) - 0.5 * delta.dot(&(&jtj * &delta));
                // With analytic Jacobians the trial rollout is recorded, so that an accepted
                // step needs only the sensitivities, not another rollout.
                let analytic = options.jacobians == JacobianSource::Analytic;
                let (trial_cost, trial_run) = match evaluator.as_deref_mut() {
                    None => match problem.simulate(&trial, analytic, &mut counters) {
                        Ok((rt, recs)) => (0.5 * rt.norm_squared(), Some(TrialRun::Local(rt, recs))),
                        Err(_) => (f64::INFINITY, None),
                    },
                    Some(e) => match e.evaluate(&trial, analytic, true)? {
                        // Non-finite residuals reject the step, as the problem's own rollout does.
                        Some(ev) if ev.residuals.iter().any(|x| !x.is_finite()) => (f64::INFINITY, None),
                        Some(ev) => {
                            let jt = checked_evaluation(&ev, rows, p)?;
                            counters.simulator_steps += ev.simulator_steps;
                            (0.5 * ev.residuals.norm_squared(), Some(TrialRun::External(ev.residuals, jt)))
                        }
                        None => (f64::INFINITY, None),
                    },
                };
                if predicted > 0.0 && trial_cost.is_finite() {
                    rho = (cost - trial_cost) / predicted;
                }
                if rho > 0.0 {
                    // Accept: relinearize at the trial point (a failure there is an error).
                    let (rn, jn) = match (analytic, trial_run) {
                        (true, Some(TrialRun::Local(rt, recs))) => {
                            let t0 = Instant::now();
                            let jn = problem.sensitivities(&recs)?;
                            counters.jacobian_time += t0.elapsed();
                            counters.jacobian_evaluations += 1;
                            (rt, jn)
                        }
                        (true, Some(TrialRun::External(rt, Some(jn)))) => {
                            counters.jacobian_evaluations += 1;
                            (rt, jn)
                        }
                        _ => match evaluator.as_deref_mut() {
                            None => problem.jacobian_at(&trial, options.jacobians, fd, &bounds, &mut counters)?,
                            Some(e) => external(e, &trial, rows, p, &mut counters)?,
                        },
                    };
                    let reduction = cost - trial_cost;
                    let previous = cost;
                    theta = trial;
                    r = rn;
                    jac = jn;
                    cost = 0.5 * r.norm_squared();
                    cost_history.push(cost);
                    lambda *= (1.0 - (2.0 * rho - 1.0).powi(3)).max(1.0 / 3.0);
                    nu = 2.0;
                    accepted = true;
                    if reduction <= options.cost_tolerance * previous {
                        stop = SysIdStop::CostTolerance;
                        report_progress(&mut progress, iterations, cost, true, rho, lambda, step_norm, start);
                        break;
                    }
                } else {
                    lambda *= nu;
                    nu *= 2.0;
                }
            }
        }
        report_progress(&mut progress, iterations, cost, accepted, rho, lambda, step_norm, start);
        if lambda > options.damping_max {
            stop = SysIdStop::DampingLimit;
            break;
        }
    }
    let converged = matches!(stop, SysIdStop::GradientTolerance | SysIdStop::StepTolerance | SysIdStop::CostTolerance);
    let model = problem.spec.apply(&problem.model, &theta)?;
    let (covariance, std_dev, correlation, rank, unidentifiable, residual_variance) =
        uncertainty(&jac, cost, options.rank_tolerance);
    let at_bound = (0..p).map(|j| theta[j] <= bounds.lower[j] || theta[j] >= bounds.upper[j]).collect();
    let channels = channel_rms(problem, &r);
    Ok(SysIdReport {
        names: problem.names(),
        theta_initial,
        theta,
        model,
        initial_cost,
        cost,
        cost_history,
        residual_count: r.len(),
        channels,
        iterations,
        converged,
        stop,
        jacobians: options.jacobians,
        wall_time: start.elapsed(),
        jacobian_time: counters.jacobian_time,
        jacobian_evaluations: counters.jacobian_evaluations,
        simulator_steps: counters.simulator_steps,
        at_bound,
        residual_variance,
        covariance,
        std_dev,
        correlation,
        rank,
        unidentifiable,
    })
}

#[allow(clippy::too_many_arguments)]
fn report_progress(
    progress: &mut Option<&mut dyn FnMut(&SysIdProgress)>,
    iteration: usize,
    cost: f64,
    accepted: bool,
    gain_ratio: f64,
    damping: f64,
    step_norm: f64,
    start: Instant,
) {
    if let Some(cb) = progress.as_mut() {
        cb(&SysIdProgress { iteration, cost, accepted, gain_ratio, damping, step_norm, elapsed: start.elapsed() });
    }
}

/// RMS of the unweighted residuals per observed channel.
fn channel_rms(problem: &SysIdProblem, r: &DVector<f64>) -> Vec<ChannelRms> {
    let names = problem.channel_names();
    let mut sum = vec![0.0; names.len()];
    let mut count = vec![0usize; names.len()];
    for (row, x) in problem.rows.iter().zip(r.iter()) {
        let e = x / row.weight;
        sum[row.channel] += e * e;
        count[row.channel] += 1;
    }
    (0..names.len())
        .filter(|&c| count[c] > 0)
        .map(|c| ChannelRms { name: names[c].clone(), count: count[c], rms: (sum[c] / count[c] as f64).sqrt() })
        .collect()
}

type Uncertainty = (DMatrix<f64>, DVector<f64>, DMatrix<f64>, usize, Vec<DVector<f64>>, f64);

/// The Gauss–Newton covariance `σ̂² (JᵀJ)⁺` on the column-scaled normal matrix, its rank,
/// standard deviations (∞ along unidentifiable directions), correlations and null directions.
fn uncertainty(jac: &DMatrix<f64>, cost: f64, rank_tolerance: f64) -> Uncertainty {
    let (n, p) = (jac.nrows(), jac.ncols());
    let residual_variance = if n > p { 2.0 * cost / (n - p) as f64 } else { 1.0 };
    let jtj = jac.transpose() * jac;
    let s: DVector<f64> = DVector::from_fn(p, |j, _| jtj[(j, j)].sqrt());
    let live: Vec<usize> = (0..p).filter(|&j| s[j] > 0.0 && s[j].is_finite()).collect();
    let mut unidentifiable: Vec<DVector<f64>> = (0..p)
        .filter(|j| !live.contains(j))
        .map(|j| {
            let mut e = DVector::zeros(p);
            e[j] = 1.0;
            e
        })
        .collect();
    let mut covariance = DMatrix::zeros(p, p);
    let mut infinite = vec![false; p];
    for d in &unidentifiable {
        for j in 0..p {
            infinite[j] |= d[j] != 0.0;
        }
    }
    let mut rank = 0;
    if !live.is_empty() {
        let m = live.len();
        let c = DMatrix::from_fn(m, m, |a, b| jtj[(live[a], live[b])] / (s[live[a]] * s[live[b]]));
        let eig = c.symmetric_eigen();
        let top = eig.eigenvalues.iter().copied().fold(0.0, f64::max);
        let mut pinv = DMatrix::zeros(m, m);
        for k in 0..m {
            let l = eig.eigenvalues[k];
            let v = eig.eigenvectors.column(k);
            if l > rank_tolerance * top && l > 0.0 {
                rank += 1;
                pinv += v * v.transpose() / l;
            } else {
                let mut d = DVector::zeros(p);
                for (a, &j) in live.iter().enumerate() {
                    d[j] = v[a] / s[j];
                    if v[a].abs() > 1e-6 {
                        infinite[j] = true;
                    }
                }
                let norm = d.norm();
                if norm > 0.0 {
                    d /= norm;
                }
                unidentifiable.push(d);
            }
        }
        for a in 0..m {
            for b in 0..m {
                covariance[(live[a], live[b])] = residual_variance * pinv[(a, b)] / (s[live[a]] * s[live[b]]);
            }
        }
    }
    let std_dev =
        DVector::from_fn(p, |j, _| if infinite[j] { f64::INFINITY } else { covariance[(j, j)].max(0.0).sqrt() });
    let correlation = DMatrix::from_fn(p, p, |i, j| {
        if i == j {
            1.0
        } else if std_dev[i].is_finite() && std_dev[j].is_finite() && std_dev[i] > 0.0 && std_dev[j] > 0.0 {
            covariance[(i, j)] / (std_dev[i] * std_dev[j])
        } else {
            0.0
        }
    });
    (covariance, std_dev, correlation, rank, unidentifiable, residual_variance)
}
