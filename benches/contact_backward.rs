//! Criterion benches of the backward pass through contact, beside the forward pass it
//! differentiates: one recorded step (`step_recorded`) against its VJP (`step_vjp`), and a
//! 1,000-step recorded rollout against its whole-tape VJP (`Tape::backward`). Scenes: a box
//! sliding on the ground, four boxes (two stacks of two) on the ground, and a planar 5-link
//! arm pushing a box. Run: `cargo bench --bench contact_backward -- --noplot`; the figures
//! are in docs/benchmarks.md ("Backward pass through contact").

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use nalgebra::DVector;
use std::hint::black_box;
use std::time::Duration;
use stiction::tape::{Tape, Workspace};
use stiction::{Control, Simulator};

const ROLLOUT: usize = 1000;

#[path = "common/contact_scenes.rs"]
mod contact_scenes;
use contact_scenes::simulator;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("contact_backward");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3)).sample_size(20);
    for s in contact_scenes::all() {
        let control = Control::torques(s.tau.clone());
        let mut sim = simulator(&s);
        let (_, rec) = sim.step_recorded(&s.state, &control).unwrap();
        assert!(rec.constraints().is_some(), "{}: the step must have contacts", s.name);
        let nv = s.model.nv();
        let (gq, gv) = (DVector::from_element(nv, 1.0), DVector::from_element(nv, 0.5));
        group.bench_function(BenchmarkId::new("step_recorded", s.name), |b| {
            b.iter(|| black_box(sim.step_recorded(black_box(&s.state), &control).unwrap()))
        });
        let mut ws = Workspace::new(&s.model);
        group.bench_function(BenchmarkId::new("step_vjp", s.name), |b| {
            b.iter(|| black_box(rec.vjp_with(&mut ws, black_box(&gq), &gv).unwrap()))
        });

        let rollout = |sim: &mut Simulator| {
            let mut tape = Tape::new();
            let mut state = s.state.clone();
            for _ in 0..ROLLOUT {
                let (next, rec) = sim.step_recorded(&state, &control).unwrap();
                tape.push(rec).unwrap();
                state = next;
            }
            tape
        };
        let tape = rollout(&mut sim);
        let contact_steps = tape.records().iter().filter(|r| r.constraints().is_some()).count();
        assert!(contact_steps > ROLLOUT / 2, "{}: only {contact_steps} steps with contact", s.name);
        group.sample_size(10);
        group.bench_function(BenchmarkId::new("rollout1000_recorded", s.name), |b| {
            b.iter(|| {
                sim.reset_warm_start();
                black_box(rollout(&mut sim))
            })
        });
        let mut grads = vec![(DVector::zeros(nv), DVector::zeros(nv)); ROLLOUT + 1];
        grads[ROLLOUT] = (gq.clone(), gv.clone());
        group.bench_function(BenchmarkId::new("rollout1000_vjp", s.name), |b| {
            b.iter(|| black_box(tape.backward(black_box(&grads), &[]).unwrap()))
        });
        group.sample_size(20);
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
