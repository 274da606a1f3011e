//! Batched rollouts: many independent rollouts of one model — each with its own start
//! state, controls and (optionally) parameter values θ — stepped in parallel with rayon,
//! optionally recording a [`Tape`] per rollout.
//!
//! Each rollout runs on its own [`Simulator`] (models are immutable and shared; a
//! simulator's workspace is per thread), so the results are bit-identical to sequential
//! [`Simulator`] rollouts and independent of the thread count.

use std::sync::Arc;

use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;

use super::{Control, SimOptions, Simulator, State};
use crate::error::{check_vector, Error, Result};
use crate::model::ParamSpec;
use crate::tape::{Tape, TapeGradients};
use crate::Model;

/// One rollout of a batch.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchRollout {
    /// The start state.
    pub state: State,
    /// The controls, one row per step (`T × nv`).
    pub controls: DMatrix<f64>,
    /// Values of the batch's parameters θ for this rollout (`None`: the model's own).
    pub theta: Option<DVector<f64>>,
}

/// The outcome of one rollout of a batch.
#[derive(Clone, Debug)]
pub struct BatchResult {
    /// The states after each step (`T` of them; the start state is not repeated).
    pub states: Vec<State>,
    /// The recorded steps, when recording was asked for.
    pub tape: Option<Tape>,
}

/// Options of [`rollout_batch`].
#[derive(Clone, Debug, Default)]
pub struct BatchOptions {
    /// Record a tape per rollout (its steps differentiate with respect to the batch's
    /// parameters).
    pub record: bool,
    /// Worker threads: `None` uses rayon's global pool (all cores), `Some(n)` a pool of
    /// `n` threads for this call.
    pub threads: Option<usize>,
}

/// Runs every rollout of `batch` on `model` with `options`; `params` names the
/// parameters that [`BatchRollout::theta`] sets (and that recorded steps differentiate
/// against). The results are in the order of `batch`.
///
/// Errors: a rollout whose sizes do not match the model (state, controls, θ), non-finite
/// inputs, an invalid θ for the model (through [`ParamSpec::apply`]), or a simulator
/// failure; the error names the first failing rollout in batch order, and the step for
/// non-finite controls and simulator failures (`batch rollout 2: step 500: controls[3] is
/// not finite (NaN)`). A zero thread count is an
/// [`Error::InvalidInput`].
pub fn rollout_batch(
    model: &Model,
    options: &SimOptions,
    params: &ParamSpec,
    batch: &[BatchRollout],
    batch_options: &BatchOptions,
) -> Result<Vec<BatchResult>> {
    // Fail early on options the simulator rejects.
    Simulator::new(model.clone(), options.clone())?;
    let model = Arc::new(model.clone());
    // Every rollout runs; the error reported is that of the first failing rollout in batch
    // order (deterministic whatever the scheduling).
    let run = || -> Result<Vec<BatchResult>> {
        let results: Vec<Result<BatchResult>> =
            batch.par_iter().map(|item| run_one(&model, options, params, item, batch_options.record)).collect();
        results.into_iter().enumerate().map(|(i, r)| r.map_err(|e| in_rollout(i, e))).collect()
    };
    in_pool(batch_options.threads, run)
}

/// Runs `f` on rayon's global pool (`None`) or on a pool of `n` threads.
fn in_pool<T: Send>(threads: Option<usize>, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    match threads {
        None => f(),
        Some(0) => Err(Error::InvalidInput("batch rollouts need at least one thread".into())),
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|e| Error::InvalidInput(format!("cannot start {n} worker threads: {e}")))?
            .install(f),
    }
}

/// The upstream gradients of one rollout for [`backward_batch`]: the arguments of
/// [`Tape::backward`] (`∂L/∂x_t` for t = 0..T, tangent for q, and `∂L/∂τ_t`; empty means zero).
#[derive(Clone, Debug, Default)]
pub struct BatchCotangent {
    /// `(∂L/∂q_t, ∂L/∂v_t)` for t = 0..T, or empty.
    pub grad_states: Vec<(DVector<f64>, DVector<f64>)>,
    /// `∂L/∂τ_t` for t = 0..T−1, or empty.
    pub grad_controls: Vec<DVector<f64>>,
}

/// [`Tape::backward`] of many rollouts in parallel: `tapes[i]` swept with `cotangents[i]`
/// (the same tape may appear several times, e.g. for the rows of a Jacobian). Results in
/// batch order; the error reported is that of the first failing rollout, naming it.
pub fn backward_batch(
    tapes: &[&Tape],
    cotangents: &[BatchCotangent],
    threads: Option<usize>,
) -> Result<Vec<TapeGradients>> {
    if tapes.len() != cotangents.len() {
        return Err(Error::Dimension {
            what: "cotangents (one per tape)",
            expected: tapes.len(),
            got: cotangents.len(),
        });
    }
    map_rollouts(tapes.len(), threads, |i| tapes[i].backward(&cotangents[i].grad_states, &cotangents[i].grad_controls))
}

/// Runs `f(i)` for every rollout `i < n` in parallel (rayon's global pool for `None`, else a
/// pool of `threads`), for per-rollout work around a batch (e.g. building each rollout's
/// cotangents and sweeping its tape in one task). Results in index order; the error reported
/// is that of the first failing rollout, naming it.
pub fn map_rollouts<T: Send>(
    n: usize,
    threads: Option<usize>,
    f: impl Fn(usize) -> Result<T> + Sync + Send,
) -> Result<Vec<T>> {
    in_pool(threads, || {
        let results: Vec<Result<T>> = (0..n).into_par_iter().map(&f).collect();
        results.into_iter().enumerate().map(|(i, r)| r.map_err(|e| in_rollout(i, e))).collect()
    })
}

/// `e` with the index of the rollout that failed, and of the step when `e` names one
/// ([`Error::AtStep`]): `batch rollout 2: step 500: ...` (numerical failures stay numerical).
fn in_rollout(i: usize, e: Error) -> Error {
    let mut context = format!("batch rollout {i}: ");
    let mut e = e;
    while let Error::AtStep { step, error } = e {
        context.push_str(&format!("step {step}: "));
        e = *error;
    }
    match e {
        Error::Numerical { algorithm, detail } => Error::Numerical { algorithm, detail: format!("{context}{detail}") },
        other => Error::InvalidInput(format!("{context}{other}")),
    }
}

fn run_one(
    model: &Arc<Model>,
    options: &SimOptions,
    params: &ParamSpec,
    item: &BatchRollout,
    record: bool,
) -> Result<BatchResult> {
    let nv = model.nv();
    if item.controls.ncols() != nv {
        return Err(Error::Dimension { what: "controls (columns)", expected: nv, got: item.controls.ncols() });
    }
    // Row t of the controls is step t's torques: a non-finite entry names its step and dof.
    for (t, row) in item.controls.row_iter().enumerate() {
        if let Some((index, &value)) = row.iter().enumerate().find(|(_, x)| !x.is_finite()) {
            return Err(Error::NonFinite { what: "controls", index, value }.at_step(t));
        }
    }
    check_vector("state.q", item.state.q.as_slice(), model.nq())?;
    check_vector("state.v", item.state.v.as_slice(), nv)?;
    let mut sim = match &item.theta {
        Some(theta) => Simulator::new(params.apply(model, theta)?, options.clone())?,
        None => Simulator::new(Model::clone(model), options.clone())?,
    };
    if record {
        sim.set_params(params.clone());
    }
    let steps = item.controls.nrows();
    let mut states = Vec::with_capacity(steps);
    let mut tape = record.then(Tape::new);
    let mut state = item.state.clone();
    let mut control = Control::torques(DVector::zeros(nv));
    for t in 0..steps {
        control.tau.copy_from(&item.controls.row(t).transpose());
        state = match tape.as_mut() {
            Some(tape) => {
                let (next, rec) = sim.step_recorded(&state, &control).map_err(|e| e.at_step(t))?;
                tape.push(rec)?;
                next
            }
            None => sim.step(&state, &control).map_err(|e| e.at_step(t))?,
        };
        states.push(state.clone());
    }
    Ok(BatchResult { states, tape })
}
