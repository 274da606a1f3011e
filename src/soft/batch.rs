//! Batched soft-body rollouts: many independent rollouts of one body — each with its own
//! start state, vertex forces, pin targets and (optionally) parameter values θ — stepped
//! in parallel with rayon, and the reverse sweeps of their losses, also in parallel.
//!
//! Each rollout steps its own copy of the body (the body is shared when θ is not given,
//! rebuilt with [`SoftBody::with_param_values`] when it is), and a step keeps no state
//! between calls, so the results are bit-identical to sequential [`rollout`] calls and
//! independent of the thread count. The thread pool and the error naming are those of the
//! rigid batch ([`crate::sim::map_rollouts`]).

use super::body::SoftBody;
use super::implicit::{SoftOptions, SoftState};
use super::rollout::{rollout, SoftRollout, SoftRolloutGradients};
use crate::error::{Error, Result};
use crate::sim::map_rollouts;
use nalgebra::DVector;
use std::sync::Arc;

/// One rollout of a soft batch.
#[derive(Clone, Debug, PartialEq)]
pub struct SoftBatchRollout {
    /// The start state.
    pub state: SoftState,
    /// The vertex forces of every step ([`SoftBody::ndof`] each).
    pub controls: Vec<DVector<f64>>,
    /// The pin targets of every step (one per [`SoftBody::pinned_dofs`]); `None`: the pins
    /// are held where [`SoftBatchRollout::state`] has them.
    pub targets: Option<Vec<DVector<f64>>>,
    /// Values of the body's parameters θ ([`SoftBody::param_names`]) for this rollout;
    /// `None`: the body's own.
    pub theta: Option<DVector<f64>>,
}

/// The upstream gradients of one rollout for [`backward_batch`]: the arguments of
/// [`SoftRollout::backward`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SoftBatchCotangent {
    /// `∂ℓ/∂x_{k+1}` of the state after step k, one per step.
    pub grad_x: Vec<DVector<f64>>,
    /// `∂ℓ/∂v_{k+1}` of the state after step k, one per step.
    pub grad_v: Vec<DVector<f64>>,
}

/// Runs every rollout of `batch` on `body` with `options`, recording every step, in
/// parallel (`threads`: `None` uses rayon's global pool, `Some(n)` a pool of `n` threads
/// for this call). The results are in the order of `batch`.
///
/// Errors: those of [`rollout`] (sizes, non-finite inputs, a failing step) and of
/// [`SoftBody::with_param_values`] (a θ of the wrong length or out of its domain), for the
/// first failing rollout in batch order, naming it and the step (`batch rollout 2: step 5:
/// ...`); invalid options and a zero thread count are [`Error::InvalidInput`].
pub fn rollout_batch(
    body: &Arc<SoftBody>,
    batch: &[SoftBatchRollout],
    options: &SoftOptions,
    threads: Option<usize>,
) -> Result<Vec<SoftRollout>> {
    // Fail once on options every rollout would reject.
    options.validate()?;
    map_rollouts(batch.len(), threads, |i| run_one(body, &batch[i], options))
}

/// [`SoftRollout::backward`] of many rollouts in parallel: `rollouts[i]` swept with
/// `cotangents[i]` (the same rollout may appear several times, e.g. for the rows of a
/// Jacobian). Results in batch order; the error reported is that of the first failing
/// rollout, naming it.
pub fn backward_batch(
    rollouts: &[&SoftRollout],
    cotangents: &[SoftBatchCotangent],
    threads: Option<usize>,
) -> Result<Vec<SoftRolloutGradients>> {
    if rollouts.len() != cotangents.len() {
        return Err(Error::Dimension {
            what: "soft cotangents (one per rollout)",
            expected: rollouts.len(),
            got: cotangents.len(),
        });
    }
    map_rollouts(rollouts.len(), threads, |i| rollouts[i].backward(&cotangents[i].grad_x, &cotangents[i].grad_v))
}

fn run_one(body: &Arc<SoftBody>, item: &SoftBatchRollout, options: &SoftOptions) -> Result<SoftRollout> {
    let stepped = match &item.theta {
        Some(theta) => Arc::new(body.with_param_values(theta.as_slice())?),
        None => body.clone(),
    };
    let targets = match &item.targets {
        Some(t) => t.clone(),
        None => {
            let x = &item.state.x;
            let n = stepped.ndof();
            if x.len() != n {
                return Err(Error::Dimension { what: "soft x", expected: n, got: x.len() });
            }
            let held = DVector::from_iterator(stepped.pinned_dofs().len(), stepped.pinned_dofs().iter().map(|&d| x[d]));
            vec![held; item.controls.len()]
        }
    };
    rollout(&stepped, &item.state, &item.controls, &targets, options)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::Vec3;
    use crate::soft::generate::box_mesh;
    use crate::soft::{MaterialModel, SoftMaterial};

    fn body() -> Arc<SoftBody> {
        let mesh = box_mesh([1, 1, 1], Vec3::new(0.1, 0.1, 0.1), Vec3::zeros()).unwrap();
        let material = SoftMaterial::new(MaterialModel::StableNeoHookean, 2e4, 0.3, 1000.0);
        Arc::new(SoftBody::builder(mesh, material).pin_vertices(&[0, 1]).build().unwrap())
    }

    fn item(body: &SoftBody, scale: f64, theta: Option<DVector<f64>>) -> SoftBatchRollout {
        let n = body.ndof();
        let state = SoftState { x: body.rest_positions(), v: DVector::from_fn(n, |i, _| scale * (i as f64).sin()) };
        let controls = (0..3).map(|k| DVector::from_fn(n, |i, _| scale * ((i + k) as f64).cos())).collect();
        SoftBatchRollout { state, controls, targets: None, theta }
    }

    #[test]
    fn batch_equals_sequential_rollouts_bit_for_bit() {
        let b = body();
        let mut theta = b.param_values();
        theta[0] *= 1.5;
        let batch = vec![item(&b, 0.1, None), item(&b, -0.2, Some(theta.clone())), item(&b, 0.3, None)];
        let options = SoftOptions::default();
        for threads in [None, Some(1), Some(2)] {
            let out = rollout_batch(&b, &batch, &options, threads).unwrap();
            for (it, r) in batch.iter().zip(&out) {
                let stepped = match &it.theta {
                    Some(t) => Arc::new(b.with_param_values(t.as_slice()).unwrap()),
                    None => b.clone(),
                };
                let held =
                    DVector::from_iterator(b.pinned_dofs().len(), b.pinned_dofs().iter().map(|&d| it.state.x[d]));
                let seq = rollout(&stepped, &it.state, &it.controls, &vec![held; 3], &options).unwrap();
                assert_eq!(seq.states(), r.states());
            }
            let cot: Vec<SoftBatchCotangent> = out
                .iter()
                .map(|r| SoftBatchCotangent {
                    grad_x: r.states().iter().map(|s| s.x.clone()).collect(),
                    grad_v: r.states().iter().map(|s| s.v.clone()).collect(),
                })
                .collect();
            let refs: Vec<&SoftRollout> = out.iter().collect();
            let grads = backward_batch(&refs, &cot, threads).unwrap();
            for ((r, c), g) in out.iter().zip(&cot).zip(&grads) {
                assert_eq!(&r.backward(&c.grad_x, &c.grad_v).unwrap(), g);
            }
        }
    }

    #[test]
    fn errors_name_the_rollout() {
        let b = body();
        let mut bad = item(&b, 0.1, None);
        bad.controls[1][4] = f64::NAN;
        let batch = vec![item(&b, 0.1, None), bad];
        let e = rollout_batch(&b, &batch, &SoftOptions::default(), None).unwrap_err().to_string();
        assert!(e.contains("batch rollout 1") && e.contains("step 1"), "{e}");
        let wrong_theta = item(&b, 0.1, Some(DVector::zeros(2)));
        let e = rollout_batch(&b, &[wrong_theta], &SoftOptions::default(), None).unwrap_err().to_string();
        assert!(e.contains("batch rollout 0"), "{e}");
        let e = rollout_batch(&b, &[item(&b, 0.1, None)], &SoftOptions::default(), Some(0)).unwrap_err().to_string();
        assert!(e.contains("thread"), "{e}");
        let r = rollout_batch(&b, &[item(&b, 0.1, None)], &SoftOptions::default(), None).unwrap();
        assert!(backward_batch(&[&r[0]], &[], None).is_err());
    }
}
