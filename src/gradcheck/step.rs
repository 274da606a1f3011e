//! The gradient check of one simulator step: the analytic blocks of
//! [`StepRecord::jacobians`](crate::tape::StepRecord::jacobians) against finite
//! differences of [`Simulator::step`].
//!
//! Rows are `q⁺` (tangent: `q⁺(ε) ⊖ q⁺(0)`) and `v⁺`; columns are `q` (tangent:
//! the input is `q ⊕ ε eᵢ`), `v`, `τ` and θ (through [`ParamSpec::apply`] on a
//! rebuilt model and a fresh simulator).

use super::fd::{self, FdJacobian};
use super::manifold::perturb_configuration;
use super::report::{BlockReport, GradReport};
use super::{FdMethod, GradcheckConfig};
use crate::error::{Error, Result};
use crate::model::ParamSpec;
use crate::sim::{Control, SimOptions, Simulator, State};
use crate::tape::StepJacobians;
use crate::Model;
use nalgebra::{DMatrix, DVector};
use std::cell::RefCell;

/// Names of the eight blocks of a step, in the order of [`GradReport::blocks`]
/// (the θ blocks are left out when θ is empty).
pub const STEP_BLOCKS: [&str; 8] =
    ["dq+/dq", "dq+/dv", "dq+/dtau", "dq+/dtheta", "dv+/dq", "dv+/dv", "dv+/dtau", "dv+/dtheta"];

/// Smallest scale of a θ block's finite-difference step (see [`check_step`]).
const THETA_SCALE_MIN: f64 = 1.0;

/// Everything needed to re-run the step with perturbed inputs.
struct StepFn<'a> {
    /// The simulated model (gravity override applied).
    model: Model,
    options: SimOptions,
    params: &'a ParamSpec,
    sim: RefCell<Simulator>,
    state: &'a State,
    control: &'a Control,
    theta: DVector<f64>,
    q_next: DVector<f64>,
    v_next: DVector<f64>,
}

impl<'a> StepFn<'a> {
    fn new(
        model: &Model,
        options: &SimOptions,
        params: &'a ParamSpec,
        state: &'a State,
        control: &'a Control,
    ) -> Result<StepFn<'a>> {
        let mut sim = Simulator::new(model.clone(), options.clone())?;
        let model = sim.model().clone();
        params.check_model(&model)?;
        let next = sim.step(state, control)?;
        // The model already holds the gravity override: perturbed models must keep θ's gravity.
        let options = SimOptions { gravity: None, ..options.clone() };
        let theta = params.values(&model);
        Ok(StepFn {
            model,
            options,
            params,
            sim: RefCell::new(sim),
            state,
            control,
            theta,
            q_next: next.q,
            v_next: next.v,
        })
    }

    fn nv(&self) -> usize {
        self.model.nv()
    }

    /// `[q⁺ ⊖ q⁺₀; v⁺ − v⁺₀]` after a step from the given inputs.
    fn output(&self, next: State) -> Result<DVector<f64>> {
        let dq = self.model.difference(&self.q_next, &next.q)?;
        let dv = next.v - &self.v_next;
        Ok(DVector::from_iterator(2 * self.nv(), dq.iter().chain(dv.iter()).copied()))
    }

    /// The output with input column `j` moved by `eps`: columns are `q` (tangent), `v`, `τ`, θ.
    fn column(&self, j: usize, eps: f64) -> Result<DVector<f64>> {
        let nv = self.nv();
        let next = if j < 3 * nv {
            let mut state = self.state.clone();
            let mut control = self.control.clone();
            match j / nv {
                0 => state.q = perturb_configuration(&self.model, &state.q, j, eps)?,
                1 => state.v[j - nv] += eps,
                _ => control.tau[j - 2 * nv] += eps,
            }
            self.sim.borrow_mut().step(&state, &control)?
        } else {
            let mut theta = self.theta.clone();
            theta[j - 3 * nv] += eps;
            let model = self.params.apply(&self.model, &theta)?;
            Simulator::new(model, self.options.clone())?.step(self.state, self.control)?
        };
        self.output(next)
    }

    /// Per-column steps: `h` for q and v, `h·max(1, ‖τ‖∞)` for τ, `h·sᵢ` for θᵢ with
    /// `sᵢ = max(1, largest |θ| of θᵢ's block)`.
    fn steps(&self, h: f64) -> Vec<f64> {
        let nv = self.nv();
        let tau_scale = self.control.tau.amax().max(1.0);
        let mut steps = vec![h; 2 * nv];
        steps.extend(std::iter::repeat_n(h * tau_scale, nv));
        for e in self.params.entries() {
            let block = self.theta.rows(e.offset, e.len).amax();
            let s = block.max(THETA_SCALE_MIN);
            steps.extend(std::iter::repeat_n(h * s, e.len));
        }
        steps
    }

    fn jacobian(&self, method: FdMethod, h: f64) -> Result<FdJacobian> {
        fd::jacobian(2 * self.nv(), &|j, e| self.column(j, e), &self.steps(h), method)
    }
}

/// Splits the full `2nv × (3nv + np)` Jacobian into the blocks of [`StepJacobians`].
fn split(full: &DMatrix<f64>, nv: usize) -> StepJacobians {
    let np = full.ncols() - 3 * nv;
    let b = |r: usize, c: usize, n: usize| full.view((r, c), (nv, n)).into_owned();
    StepJacobians {
        dq_dq: b(0, 0, nv),
        dq_dv: b(0, nv, nv),
        dq_dtau: b(0, 2 * nv, nv),
        dq_dtheta: b(0, 3 * nv, np),
        dv_dq: b(nv, 0, nv),
        dv_dv: b(nv, nv, nv),
        dv_dtau: b(nv, 2 * nv, nv),
        dv_dtheta: b(nv, 3 * nv, np),
    }
}

/// The blocks of `j` in [`STEP_BLOCKS`] order.
fn blocks(j: &StepJacobians) -> [&DMatrix<f64>; 8] {
    [&j.dq_dq, &j.dq_dv, &j.dq_dtau, &j.dq_dtheta, &j.dv_dq, &j.dv_dv, &j.dv_dtau, &j.dv_dtheta]
}

/// The finite-difference Jacobians of one step of a simulator built from `model` and
/// `options`, with θ described by `params` (method `Both` means Ridders). `step` is
/// scaled per input as in [`check_step`].
pub fn fd_step_jacobians(
    model: &Model,
    options: &SimOptions,
    params: &ParamSpec,
    state: &State,
    control: &Control,
    method: FdMethod,
    step: f64,
) -> Result<StepJacobians> {
    let f = StepFn::new(model, options, params, state, control)?;
    Ok(split(&f.jacobian(method, step)?.value, f.nv()))
}

/// Names of the degrees of freedom of `model`: the joint name, with `[k]` for multi-dof joints.
fn dof_names(model: &Model) -> Vec<String> {
    let mut out = Vec::with_capacity(model.nv());
    for j in model.joints() {
        match j.nv() {
            0 => {}
            1 => out.push(j.name.clone()),
            n => out.extend((0..n).map(|k| format!("{}[{k}]", j.name))),
        }
    }
    out
}

/// Checks the analytic Jacobians of one step against finite differences.
///
/// Builds a [`Simulator`] from `model` and `options` with θ = `params`, runs
/// [`Simulator::step_recorded`] from `state` under `control`, takes the analytic blocks
/// from [`StepRecord::jacobians`](crate::tape::StepRecord::jacobians) (its error, e.g.
/// while not implemented, is returned as is) and compares each with finite differences
/// of the step (one block report per block and method; the θ blocks only when θ is
/// not empty).
///
/// Finite-difference steps per input: `config.step` for q (tangent, `q ⊕ ε eᵢ`) and v;
/// `config.step · max(1, ‖τ‖∞)` for τ; `config.step · sᵢ` for θᵢ, where
/// `sᵢ = max(1, largest |θ| in θᵢ's block)`. θ perturbations rebuild the model with
/// [`ParamSpec::apply`] (on the model with any gravity override of `options` applied)
/// and step a fresh simulator.
///
/// Central differences need the model to stay valid on both sides: a non-negative
/// parameter (mass, damping, stiffness, armature) closer to 0 than its step, or an
/// inertia at the edge of the triangle inequality, makes the check fail with the
/// model's validation error.
pub fn check_step(
    model: &Model,
    options: &SimOptions,
    params: &ParamSpec,
    state: &State,
    control: &Control,
    config: &GradcheckConfig,
) -> Result<GradReport> {
    config.validate()?;
    let f = StepFn::new(model, options, params, state, control)?;
    let mut sim = Simulator::new(model.clone(), options.clone())?;
    sim.set_params(params.clone());
    let (_, record) = sim.step_recorded(state, control)?;
    let analytic = record.jacobians()?;
    let (nv, np) = (f.nv(), params.len());
    let shapes_ok =
        blocks(&analytic).iter().enumerate().all(|(k, m)| m.shape() == (nv, if k % 4 == 3 { np } else { nv }));
    if !shapes_ok {
        return Err(Error::InvalidInput(format!(
            "analytic step Jacobians have wrong shapes (expected nv = {nv} rows, nv or np = {np} columns)"
        )));
    }
    let dofs = dof_names(&f.model);
    let rows_q: Vec<String> = dofs.iter().map(|d| format!("q+:{d}")).collect();
    let rows_v: Vec<String> = dofs.iter().map(|d| format!("v+:{d}")).collect();
    let col = |p: &str| dofs.iter().map(|d| format!("{p}:{d}")).collect::<Vec<_>>();
    let cols = [col("q"), col("v"), col("tau"), params.names(&f.model)];
    let mut report = GradReport {
        title: format!(
            "model '{}' (nq = {}, nv = {}, np = {}), dt = {}",
            f.model.name(),
            f.model.nq(),
            nv,
            np,
            options.dt
        ),
        blocks: vec![],
        rel_tol: config.rel_tol,
    };
    for &method in config.method.methods() {
        let full = f.jacobian(method, config.step)?;
        let fdj = split(&full.value, nv);
        for (k, (a, b)) in blocks(&analytic).into_iter().zip(blocks(&fdj)).enumerate() {
            if k % 4 == 3 && np == 0 {
                continue;
            }
            let c0 = [0, nv, 2 * nv, 3 * nv][k % 4];
            let errs = full.error.as_ref().map(|e| e.rows(c0, b.ncols()).into_owned());
            let rows = if k < 4 { rows_q.clone() } else { rows_v.clone() };
            report.blocks.push(
                BlockReport::compare(STEP_BLOCKS[k], method, a, b, errs.as_ref(), config)?
                    .with_labels(rows, cols[k % 4].clone()),
            );
        }
    }
    Ok(report)
}
