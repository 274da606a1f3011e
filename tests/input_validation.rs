//! Input validation (issue 17): an absurd time step, a non-finite control deep in a
//! rollout, a tape of records that do not chain and an oversized sample tree are typed
//! errors with clear messages, never panics or aborts.

use nalgebra::{DMatrix, DVector};
use stiction::dynamics::{Data, DerivativeData};
use stiction::model::samples;
use stiction::model::ParamSpec;
use stiction::sim::{rollout_batch, BatchOptions, BatchRollout};
use stiction::step::{semi_implicit_euler, ContactOptions, IntegratorOptions, StepInputs};
use stiction::tape::Tape;
use stiction::{Control, Error, SimOptions, Simulator, State};

fn no_contact(dt: f64) -> SimOptions {
    SimOptions { dt, contact: ContactOptions { enabled: false, ..Default::default() }, ..Default::default() }
}

#[test]
fn time_step_must_be_finite_positive_and_at_most_one_second() {
    let model = samples::pendulum_chain(2, 1.0, 1.0);
    for dt in [1e9, 1.5, f64::INFINITY, f64::NAN, 0.0, -1e-3] {
        let e = Simulator::new(model.clone(), SimOptions { dt, ..Default::default() }).unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "dt = {dt}: {e}");
        let msg = e.to_string();
        assert!(msg.contains("dt") && msg.contains(&format!("{dt}")), "dt = {dt}: {msg}");
    }
    let e = Simulator::new(model.clone(), SimOptions { dt: 1e9, ..Default::default() }).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid input: time step dt must be finite, positive and at most 1 s, got dt = 1000000000"
    );
    assert_eq!(SimOptions::MAX_DT, 1.0);
    assert!(SimOptions { dt: 1e9, ..Default::default() }.validate().is_err());
    assert!(SimOptions::default().validate().is_ok());
    // The bound itself is accepted.
    assert!(Simulator::new(model.clone(), SimOptions { dt: SimOptions::MAX_DT, ..Default::default() }).is_ok());
    assert!(Simulator::new(model.clone(), SimOptions { dt: 1e-3, ..Default::default() }).is_ok());
    // The bare integrator applies the same bound.
    let (mut data, mut deriv) = (Data::new(&model), DerivativeData::new(&model));
    let (q, v) = (model.neutral(), DVector::zeros(2));
    let (mut q_out, mut v_out) = (vec![0.0; 2], vec![0.0; 2]);
    let mut step = |dt: f64| {
        let inputs = StepInputs { q: q.as_slice(), v: v.as_slice(), tau: &[0.0, 0.0], wrenches: None, dt };
        semi_implicit_euler(
            &model,
            &mut data,
            &mut deriv,
            &inputs,
            &IntegratorOptions::default(),
            &mut q_out,
            &mut v_out,
        )
    };
    assert!(matches!(step(1e9), Err(Error::InvalidInput(_))));
    assert!(step(1e-3).is_ok());
}

#[test]
fn rollout_errors_name_the_step() {
    let model = samples::pendulum_chain(4, 1.0, 1.0);
    let mut sim = Simulator::new(model.clone(), no_contact(1e-3)).unwrap();
    let mut controls = vec![Control::torques(DVector::zeros(4)); 600];
    controls[500].tau[3] = f64::NAN;
    let e = sim.rollout(&State::neutral(&model), &controls).unwrap_err();
    assert_eq!(e.to_string(), "step 500: tau[3] is not finite (NaN)");
    assert!(matches!(e, Error::AtStep { step: 500, .. }), "{e:?}");
    assert!(matches!(e.root(), Error::NonFinite { what: "tau", index: 3, .. }), "{e:?}");
    // A wrong-length control is named by its step too.
    let mut controls = vec![Control::torques(DVector::zeros(4)); 10];
    controls[7].tau = DVector::zeros(3);
    let e = sim.rollout(&State::neutral(&model), &controls).unwrap_err();
    assert!(e.to_string().starts_with("step 7: tau has length 3"), "{e}");
    assert!(matches!(e.root(), Error::Dimension { what: "tau", .. }));
    // A single step is unchanged.
    let mut bad = Control::torques(DVector::zeros(4));
    bad.tau[3] = f64::NAN;
    let e = sim.step(&State::neutral(&model), &bad).unwrap_err();
    assert!(matches!(e, Error::NonFinite { what: "tau", index: 3, .. }), "{e:?}");
}

#[test]
fn batch_rollout_errors_name_the_rollout_and_the_step() {
    let model = samples::pendulum_chain(4, 1.0, 1.0);
    let item = BatchRollout { state: State::neutral(&model), controls: DMatrix::zeros(600, 4), theta: None };
    let mut batch = vec![item; 3];
    batch[2].controls[(500, 3)] = f64::NAN;
    let e = rollout_batch(&model, &no_contact(1e-3), &ParamSpec::new(), &batch, &BatchOptions::default()).unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e:?}");
    assert_eq!(e.to_string(), "invalid input: batch rollout 2: step 500: controls[3] is not finite (NaN)");
}

/// `steps` recorded steps of `sim` from `state`.
fn record(sim: &mut Simulator, state: &State, steps: usize) -> Vec<stiction::tape::StepRecord> {
    let mut x = state.clone();
    let nv = sim.model().nv();
    (0..steps)
        .map(|t| {
            let (next, rec) = sim.step_recorded(&x, &Control::torques(DVector::from_element(nv, t as f64))).unwrap();
            x = next;
            rec
        })
        .collect()
}

#[test]
fn tape_accepts_only_records_that_chain() {
    let model = samples::pendulum_chain(3, 1.0, 1.0);
    let mut sim = Simulator::new(model.clone(), no_contact(1e-2)).unwrap();
    let mut start = State::neutral(&model);
    start.v[0] = 0.5;
    let recs = record(&mut sim, &start, 3);
    let mut tape = Tape::new();
    tape.push(recs[0].clone()).unwrap();
    tape.push(recs[1].clone()).unwrap();
    // Step 0 again: it starts at x_0, not where step 1 ended.
    let e = tape.push(recs[0].clone()).unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e:?}");
    assert!(e.to_string().contains("tape record 2 does not start where step 1 ended"), "{e}");
    // Skipping a step is refused as well.
    let mut gap = Tape::new();
    gap.push(recs[0].clone()).unwrap();
    assert!(gap.push(recs[2].clone()).is_err());
    assert_eq!(gap.len(), 1);
    // A velocity that differs in the last bit does not chain.
    let mut other = Simulator::new(model.clone(), no_contact(1e-2)).unwrap();
    let mut x = State { q: recs[1].outputs().0.clone(), v: recs[1].outputs().1.clone() };
    x.v[2] = f64::from_bits(x.v[2].to_bits() ^ 1);
    let (_, nudged) = other.step_recorded(&x, &Control::torques(DVector::zeros(3))).unwrap();
    let e = tape.push(nudged).unwrap_err();
    assert!(e.to_string().contains("v[2]"), "{e}");
    // Another model.
    let other_model = samples::pendulum_chain(2, 1.0, 1.0);
    let mut other = Simulator::new(other_model.clone(), no_contact(1e-2)).unwrap();
    let foreign = record(&mut other, &State::neutral(&other_model), 1).pop().unwrap();
    let e = tape.push(foreign).unwrap_err();
    assert!(e.to_string().contains("comes from model"), "{e}");
    // Same model and state, another time step.
    let mut coarse = Simulator::new(model.clone(), no_contact(2e-2)).unwrap();
    let x = State { q: recs[1].outputs().0.clone(), v: recs[1].outputs().1.clone() };
    let (_, rec) = coarse.step_recorded(&x, &Control::torques(DVector::zeros(3))).unwrap();
    let e = tape.push(rec).unwrap_err();
    assert!(e.to_string().contains("time step dt = 0.02"), "{e}");
    // Nothing rejected was appended; the true continuation is accepted and the tape
    // differentiates.
    assert_eq!(tape.len(), 2);
    tape.push(recs[2].clone()).unwrap();
    assert_eq!(tape.len(), 3);
    let g = tape.backward(&[], &[]).unwrap();
    assert_eq!(g.tau.len(), 3);
    // A record from an equal (not the same) model, chaining exactly, is accepted.
    let mut twin = Simulator::new(model.clone(), no_contact(1e-2)).unwrap();
    let x = State { q: recs[2].outputs().0.clone(), v: recs[2].outputs().1.clone() };
    let (_, rec) = twin.step_recorded(&x, &Control::torques(DVector::zeros(3))).unwrap();
    tape.push(rec).unwrap();
}

#[test]
fn binary_tree_depth_is_bounded() {
    assert_eq!(samples::binary_tree(3).unwrap().nbodies(), 7);
    for depth in [0, samples::MAX_BINARY_TREE_DEPTH + 1, 40, usize::MAX] {
        let e = samples::binary_tree(depth).unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{e:?}");
        let msg = e.to_string();
        assert!(msg.contains("binary_tree depth must be in 1..=16") && msg.contains(&format!("got {depth}")), "{msg}");
    }
}

/// `Tape::backward` checks every cotangent before its sweep: a state cotangent of the
/// wrong length or with a NaN, at any step, is an error naming it (it was a panic in the
/// middle of the sweep), and a tape with a bad cotangent returns no partial gradients.
#[test]
fn tape_backward_checks_every_cotangent() {
    let model = samples::pendulum_chain(3, 1.0, 1.0);
    let mut sim = Simulator::new(model.clone(), no_contact(1e-2)).unwrap();
    let mut tape = Tape::new();
    for rec in record(&mut sim, &State::neutral(&model), 4) {
        tape.push(rec).unwrap();
    }
    let ok = vec![(DVector::zeros(3), DVector::zeros(3)); 5];
    assert!(tape.backward(&ok, &[]).is_ok());
    let mut short = ok.clone();
    short[2].0 = DVector::zeros(2);
    let e = tape.backward(&short, &[]).unwrap_err();
    assert!(matches!(e, Error::Dimension { .. }), "{e:?}");
    assert!(e.to_string().contains("grad_states (q)"), "{e}");
    let mut nan = ok.clone();
    nan[1].1[0] = f64::NAN;
    let e = tape.backward(&nan, &[]).unwrap_err();
    assert!(matches!(e, Error::NonFinite { .. }), "{e:?}");
    let mut controls = vec![DVector::zeros(3); 4];
    controls[3] = DVector::zeros(5);
    assert!(matches!(tape.backward(&ok, &controls), Err(Error::Dimension { .. })));
}
