//! Heap allocations of the backward sweep, counted with a counting global allocator
//! (this file holds one test, so no other test thread allocates meanwhile).
//!
//! `Tape::backward` allocates its outputs and buffers before the sweep; the sweep over
//! steps without constraint rows (`StepRecord::vjp_into`) allocates nothing. Steps with
//! constraint rows still allocate (their stage systems are rebuilt per step; issue #18).

use nalgebra::DVector;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use stiction::model::samples::arm7;
use stiction::model::ParamSpec;
use stiction::tape::Tape;
use stiction::{Control, SimOptions, Simulator, State};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn tape(steps: usize) -> Tape {
    let model = arm7();
    let mut options = SimOptions::default();
    options.contact.enabled = false;
    let mut sim = Simulator::new(model.clone(), options).unwrap();
    sim.set_params(ParamSpec::parse(&model, &["mass:link3", "damping:joint2"]).unwrap());
    let mut state = State { q: model.random_configuration(3), v: DVector::from_element(model.nv(), 0.2) };
    let control = Control::torques(DVector::from_element(model.nv(), 0.1));
    let mut tape = Tape::new();
    for _ in 0..steps {
        let (next, rec) = sim.step_recorded(&state, &control).unwrap();
        tape.push(rec).unwrap();
        state = next;
    }
    tape
}

fn backward_allocations(tape: &Tape) -> usize {
    let nv = tape.records()[0].model().nv();
    let mut grads = vec![(DVector::zeros(nv), DVector::zeros(nv)); tape.len() + 1];
    grads[tape.len()] = (DVector::from_element(nv, 1.0), DVector::from_element(nv, 1.0));
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let g = tape.backward(&grads, &[]).unwrap();
    let after = ALLOCATIONS.load(Ordering::Relaxed);
    assert!(g.theta.iter().all(|x| x.is_finite()));
    after - before
}

/// Of the allocations of `Tape::backward` on a contact-free rollout of the 7-DoF arm with
/// two parameters, only one per step grows with the rollout: the output `∂L/∂τ_t`, made
/// before the sweep.
#[test]
fn the_backward_sweep_without_constraints_allocates_only_its_outputs() {
    let (a, b) = (tape(50), tape(100));
    assert!(a.records().iter().chain(b.records()).all(|r| r.constraints().is_none()));
    let (na, nb) = (backward_allocations(&a), backward_allocations(&b));
    println!("Tape::backward: {na} allocations over 50 steps, {nb} over 100");
    assert_eq!(nb - na, 50, "{na} allocations over 50 steps, {nb} over 100: the sweep allocates per step");
}
