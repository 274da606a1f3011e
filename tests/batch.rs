//! Batched rollouts (`sim::rollout_batch`): the same results as sequential simulator
//! rollouts, for any thread count, with per-rollout parameters and tapes; bad input is a
//! typed error naming the rollout.

use nalgebra::{DMatrix, DVector};
use stiction::math::SplitMix64;
use stiction::model::{samples, ParamSpec};
use stiction::sim::{backward_batch, rollout_batch, BatchCotangent, BatchOptions, BatchRollout};
use stiction::step::ContactOptions;
use stiction::{Control, Error, Model, SimOptions, Simulator, State};

fn options() -> SimOptions {
    SimOptions { dt: 0.01, contact: ContactOptions { enabled: false, ..Default::default() }, ..Default::default() }
}

fn batch(model: &Model, n: usize, steps: usize, spec: Option<&ParamSpec>) -> Vec<BatchRollout> {
    let mut rng = SplitMix64::new(3);
    (0..n)
        .map(|_| {
            let q = DVector::from_fn(model.nq(), |_, _| rng.range(-1.0, 1.0));
            let v = DVector::from_fn(model.nv(), |_, _| rng.range(-1.0, 1.0));
            let controls = DMatrix::from_fn(steps, model.nv(), |_, _| rng.range(-2.0, 2.0));
            let theta = spec.map(|s| s.values(model) * rng.range(0.8, 1.2));
            BatchRollout { state: State { q, v }, controls, theta }
        })
        .collect()
}

fn sequential(model: &Model, spec: &ParamSpec, item: &BatchRollout) -> Vec<State> {
    let m = match &item.theta {
        Some(theta) => spec.apply(model, theta).unwrap(),
        None => model.clone(),
    };
    let mut sim = Simulator::new(m, options()).unwrap();
    let mut st = item.state.clone();
    (0..item.controls.nrows())
        .map(|t| {
            st = sim.step(&st, &Control::torques(item.controls.row(t).transpose())).unwrap();
            st.clone()
        })
        .collect()
}

#[test]
fn batched_rollouts_equal_sequential_ones_for_any_thread_count() {
    let model = samples::cartpole();
    let spec = ParamSpec::parse(&model, &["mass:cart", "mass:pole"]).unwrap();
    for with_theta in [false, true] {
        let items = batch(&model, 16, 50, with_theta.then_some(&spec));
        let mut outs = vec![];
        for threads in [Some(1), Some(2), None] {
            let out =
                rollout_batch(&model, &options(), &spec, &items, &BatchOptions { record: false, threads }).unwrap();
            assert_eq!(out.len(), items.len());
            outs.push(out);
        }
        for (i, item) in items.iter().enumerate() {
            let reference = sequential(&model, &spec, item);
            for out in &outs {
                assert_eq!(out[i].states, reference, "rollout {i} (theta: {with_theta})");
                assert!(out[i].tape.is_none());
            }
        }
    }
}

#[test]
fn batched_tapes_backpropagate_like_sequential_ones() {
    let model = samples::cartpole();
    let spec = ParamSpec::parse(&model, &["mass:pole"]).unwrap();
    let items = batch(&model, 4, 30, Some(&spec));
    let out =
        rollout_batch(&model, &options(), &spec, &items, &BatchOptions { record: true, threads: Some(2) }).unwrap();
    for (i, (item, res)) in items.iter().zip(&out).enumerate() {
        let tape = res.tape.as_ref().expect("recorded");
        assert_eq!(tape.len(), 30);
        // Terminal loss ½|q_T|²: its gradient through the batch tape equals the one through
        // a sequentially recorded tape.
        let mut sim = Simulator::new(spec.apply(&model, item.theta.as_ref().unwrap()).unwrap(), options()).unwrap();
        sim.set_params(spec.clone());
        let mut seq = stiction::tape::Tape::new();
        let mut st = item.state.clone();
        for t in 0..30 {
            let (next, rec) = sim.step_recorded(&st, &Control::torques(item.controls.row(t).transpose())).unwrap();
            seq.push(rec).unwrap();
            st = next;
        }
        let zero = (DVector::zeros(2), DVector::zeros(2));
        let mut gs = vec![zero.clone(); 31];
        gs[30] = (res.states[29].q.clone(), DVector::zeros(2));
        let gc = vec![DVector::zeros(2); 30];
        let a = tape.backward(&gs, &gc).unwrap();
        let b = seq.backward(&gs, &gc).unwrap();
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "rollout {i}");
    }
}

#[test]
fn bad_batches_are_typed_errors_naming_the_rollout() {
    let model = samples::cartpole();
    let spec = ParamSpec::parse(&model, &["mass:cart"]).unwrap();
    let good = batch(&model, 3, 5, None);
    let run = |items: &[BatchRollout], threads| {
        rollout_batch(&model, &options(), &spec, items, &BatchOptions { record: false, threads })
    };
    let mut bad = good.clone();
    bad[2].controls = DMatrix::zeros(5, 3);
    let e = run(&bad, None).unwrap_err();
    assert!(e.to_string().contains("batch rollout 2") && e.to_string().contains("controls"), "{e}");
    let mut bad = good.clone();
    bad[1].state.v[0] = f64::NAN;
    assert!(run(&bad, None).unwrap_err().to_string().contains("batch rollout 1"));
    let mut bad = good.clone();
    bad[0].controls[(3, 1)] = f64::INFINITY;
    assert!(run(&bad, None).unwrap_err().to_string().contains("batch rollout 0"));
    // Several failing rollouts: the first in batch order is named, for any thread count.
    let mut bad = batch(&model, 64, 5, None);
    for i in [5, 17, 40] {
        bad[i].state.v[0] = f64::NAN;
    }
    for threads in [None, Some(1), Some(2)] {
        let e = run(&bad, threads).unwrap_err().to_string();
        assert!(e.contains("batch rollout 5:"), "{e}");
    }
    let mut bad = good.clone();
    bad[1].theta = Some(DVector::from_element(1, -1.0)); // negative mass
    assert!(run(&bad, None).unwrap_err().to_string().contains("batch rollout 1"));
    let mut bad = good.clone();
    bad[0].theta = Some(DVector::zeros(2)); // wrong length
    assert!(run(&bad, None).is_err());
    assert!(matches!(run(&good, Some(0)), Err(Error::InvalidInput(_))));
    assert!(run(&[], Some(2)).unwrap().is_empty());
}

#[test]
fn batched_backward_equals_tape_backward_for_any_thread_count() {
    let model = samples::cartpole();
    let spec = ParamSpec::parse(&model, &["mass:pole"]).unwrap();
    let items = batch(&model, 6, 20, Some(&spec));
    let out = rollout_batch(&model, &options(), &spec, &items, &BatchOptions { record: true, threads: None }).unwrap();
    let mut rng = SplitMix64::new(8);
    let mut random = |n: usize| DVector::from_fn(n, |_, _| rng.range(-1.0, 1.0));
    // Two cotangents per tape, the second list entry repeating a tape (as a Jacobian's rows do).
    let mut tapes = vec![];
    let mut cotangents = vec![];
    for res in out.iter().chain(&out) {
        tapes.push(res.tape.as_ref().unwrap());
        cotangents.push(BatchCotangent {
            grad_states: (0..21).map(|_| (random(2), random(2))).collect(),
            grad_controls: (0..20).map(|_| random(2)).collect(),
        });
    }
    // Empty cotangent lists mean zero.
    cotangents[1] = BatchCotangent::default();
    for threads in [Some(1), Some(2), None] {
        let grads = backward_batch(&tapes, &cotangents, threads).unwrap();
        for (i, (tape, c)) in tapes.iter().zip(&cotangents).enumerate() {
            let reference = tape.backward(&c.grad_states, &c.grad_controls).unwrap();
            assert_eq!(format!("{:?}", grads[i]), format!("{reference:?}"), "rollout {i}");
        }
    }
    assert!(grads_are_zero(&backward_batch(&tapes[1..2], &cotangents[1..2], None).unwrap()[0]));
    // Mismatched lengths, a wrong cotangent shape (naming the rollout) and zero threads are errors.
    assert!(matches!(backward_batch(&tapes, &cotangents[1..], None), Err(Error::Dimension { .. })));
    let mut bad = cotangents.clone();
    bad[3].grad_controls.pop();
    let e = backward_batch(&tapes, &bad, None).unwrap_err().to_string();
    assert!(e.contains("batch rollout 3"), "{e}");
    assert!(matches!(backward_batch(&tapes, &cotangents, Some(0)), Err(Error::InvalidInput(_))));
}

fn grads_are_zero(g: &stiction::tape::TapeGradients) -> bool {
    g.q0.amax() == 0.0 && g.v0.amax() == 0.0 && g.theta.amax() == 0.0 && g.tau.iter().all(|t| t.amax() == 0.0)
}
