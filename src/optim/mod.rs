//! Trajectory optimization over the simulator's steps (see `docs/trajopt.md`):
//!
//! * [`cost`]: the [`TrajectoryCost`] trait and the tangent-space [`QuadraticCost`];
//! * [`world_cost`]: world-space costs on body points ([`PointCost`]), spherical
//!   obstacles ([`ObstacleCost`]) and sums of costs ([`SumCost`]);
//! * [`ilqr`](mod@ilqr): iterative LQR (Li & Todorov 2004; Tassa, Erez & Todorov 2012)
//!   on the step Jacobians [`crate::tape::StepRecord::jacobians`] or on
//!   finite-difference Jacobians ([`JacobianSource`]), with Levenberg–Marquardt
//!   regularization, a backtracking line search and box control bounds ("clamped
//!   iLQR");
//! * [`shooting`](mod@shooting): single shooting, L-BFGS over the control sequence with gradients
//!   from [`crate::tape::Tape::backward`] and bounds by projection;
//! * [`sysid`](mod@sysid): system identification, Levenberg–Marquardt fits of named model
//!   parameters to observed trajectories with forward sensitivities through the step
//!   Jacobians (see `docs/sysid.md`).
//!
//! Controls are joint torques `u_t = τ_t` (nv each) applied for one simulator step;
//! a trajectory of T controls gives T + 1 states from the initial state.

pub mod cost;
pub mod ilqr;
pub mod shooting;
pub mod sysid;
pub mod world_cost;

pub use cost::{QuadraticCost, RunningDerivatives, TerminalDerivatives, TrajectoryCost};
pub use ilqr::{ilqr, IlqrOptions, IlqrProgress, IlqrResult, IlqrStop};
pub use shooting::{shooting, shooting_gradient, ShootingOptions, ShootingProgress, ShootingResult, ShootingStop};
pub use sysid::{
    sysid, sysid_with, ChannelRms, Evaluation, Observation, ParamBounds, Sigma, SysIdEvaluator, SysIdOptions,
    SysIdProblem, SysIdProgress, SysIdReport, SysIdStop, Trajectory,
};
pub use world_cost::{BodyPoint, ObstacleCost, PointCost, SumCost};

use crate::error::{check_vector, Error, Result};
use crate::sim::{Control, Simulator, State};
use crate::tape::StepRecord;
use crate::Model;
use nalgebra::DVector;

/// Where iLQR takes the step Jacobians `A_t = ∂x_{t+1}/∂x_t`, `B_t = ∂x_{t+1}/∂u_t`; for
/// system identification ([`sysid`](mod@sysid)), where the residual Jacobian `∂r/∂θ` comes from:
/// forward sensitivities through the step Jacobians, or central differences of the residuals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum JacobianSource {
    /// The analytic Jacobians of the recorded steps ([`StepRecord::jacobians`]).
    #[default]
    Analytic,
    /// Central finite differences of the step, one input direction at a time
    /// (`q ⊕ ±ε eᵢ` in the tangent space, `v ± ε eᵢ`, `τ ± ε max(1, ‖τ‖∞) eᵢ`):
    /// 6·nv extra steps per time step. The comparison baseline.
    FiniteDifference,
}

/// Box bounds on the controls, `lower ≤ u_t ≤ upper` elementwise for every t
/// (infinite entries mean unbounded; `lower = upper` fixes a control, e.g. an
/// unactuated joint at zero torque).
#[derive(Clone, Debug, PartialEq)]
pub struct ControlBounds {
    /// Lower bounds (nv).
    pub lower: DVector<f64>,
    /// Upper bounds (nv).
    pub upper: DVector<f64>,
}

impl ControlBounds {
    /// Bounds from `lower` and `upper`.
    pub fn new(lower: DVector<f64>, upper: DVector<f64>) -> ControlBounds {
        ControlBounds { lower, upper }
    }
    /// `|u_i| ≤ limit_i`.
    pub fn symmetric(limit: &[f64]) -> ControlBounds {
        let upper = DVector::from_column_slice(limit);
        ControlBounds { lower: -&upper, upper }
    }
    /// Checks lengths (nv), NaN and `lower ≤ upper`.
    pub fn validate(&self, nv: usize) -> Result<()> {
        for (what, b) in [("bounds.lower", &self.lower), ("bounds.upper", &self.upper)] {
            if b.len() != nv {
                return Err(Error::Dimension { what, expected: nv, got: b.len() });
            }
            if let Some(i) = b.iter().position(|x| x.is_nan()) {
                return Err(Error::NonFinite { what, index: i, value: f64::NAN });
            }
        }
        if let Some(i) = (0..nv).find(|&i| self.lower[i] > self.upper[i]) {
            return Err(Error::InvalidInput(format!(
                "control bound {i}: lower {} is above upper {}",
                self.lower[i], self.upper[i]
            )));
        }
        Ok(())
    }
    /// Projects `u` onto the box in place.
    pub fn clamp(&self, u: &mut DVector<f64>) {
        for i in 0..u.len() {
            u[i] = u[i].clamp(self.lower[i], self.upper[i]);
        }
    }
}

/// Checks the common inputs of the optimisers: the initial state, the controls and the
/// cost against the simulator's model.
pub(crate) fn check_problem(
    model: &Model,
    x0: &State,
    controls: &[DVector<f64>],
    cost: &dyn TrajectoryCost,
    bounds: Option<&ControlBounds>,
) -> Result<()> {
    check_vector("x0.q", x0.q.as_slice(), model.nq())?;
    check_vector("x0.v", x0.v.as_slice(), model.nv())?;
    model.check_quaternions(x0.q.as_slice())?;
    if controls.is_empty() {
        return Err(Error::InvalidInput("the control sequence is empty (need at least one step)".into()));
    }
    for u in controls {
        check_vector("controls[t]", u.as_slice(), model.nv())?;
    }
    if let Some(b) = bounds {
        b.validate(model.nv())?;
    }
    cost.validate(model)
}

/// A simulated trajectory: states `x_0..=x_T`, the records of the steps when asked
/// for, and the total cost.
pub(crate) struct Rollout {
    pub states: Vec<State>,
    pub records: Vec<StepRecord>,
    pub cost: f64,
}

/// Simulates `controls` from `x0` and sums the cost (records the steps with `record`).
pub(crate) fn rollout(
    sim: &mut Simulator,
    x0: &State,
    controls: &[DVector<f64>],
    cost: &dyn TrajectoryCost,
    record: bool,
) -> Result<Rollout> {
    sim.reset_warm_start();
    let mut states = Vec::with_capacity(controls.len() + 1);
    let mut records = Vec::with_capacity(if record { controls.len() } else { 0 });
    states.push(x0.clone());
    let mut total = 0.0;
    for (t, u) in controls.iter().enumerate() {
        let x = &states[t];
        total += cost.running(sim.model(), t, x, u)?;
        let control = Control::torques(u.clone());
        let next = if record {
            let (next, rec) = sim.step_recorded(x, &control)?;
            records.push(rec);
            next
        } else {
            sim.step(x, &control)?
        };
        states.push(next);
    }
    total += cost.terminal(sim.model(), &states[controls.len()])?;
    Ok(Rollout { states, records, cost: total })
}

/// The total cost of `controls` from `x0`: `Σ_t ℓ_t(x_t, u_t) + ℓ_T(x_T)`.
pub fn trajectory_cost(
    sim: &mut Simulator,
    x0: &State,
    controls: &[DVector<f64>],
    cost: &dyn TrajectoryCost,
) -> Result<f64> {
    check_problem(sim.model(), x0, controls, cost, None)?;
    Ok(rollout(sim, x0, controls, cost, false)?.cost)
}
