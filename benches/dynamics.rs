//! Criterion benches of the rigid-body algorithms (CRBA, RNEA, ABA) and of one
//! contact-free step, on a 7-DoF arm, a 30-link spatial chain and the 50-DoF
//! floating-base humanoid; and the sparse `LᵀDL` factor-and-solve of the joint-space
//! inertia against a dense Cholesky, on the humanoid and on 25–200 free bodies (issue
//! #19). Run: `cargo bench --bench dynamics`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use nalgebra::DVector;
use std::hint::black_box;
use std::time::Duration;
use stiction::dynamics::{aba, crba, rnea, InertiaFactor};
use stiction::math::SplitMix64;
use stiction::model::samples::{arm7, bodies_on_plane, humanoid, spatial_chain, RestingShape};
use stiction::step::{IntegratorOptions, VelocityProducts};
use stiction::{Control, Data, Model, SimOptions, Simulator, State};

fn models() -> Vec<(&'static str, Model)> {
    vec![("arm7", arm7()), ("chain30", spatial_chain(30)), ("humanoid50", humanoid())]
}

fn state(model: &Model) -> (DVector<f64>, DVector<f64>, DVector<f64>) {
    let mut rng = SplitMix64::new(1);
    let q = model.random_configuration(7);
    let v = DVector::from_fn(model.nv(), |_, _| rng.range(-1.0, 1.0));
    // Torques scaled by each joint's inertia (accelerations of order 1 rad/s²), so the
    // step is timed on a physical motion rather than on flailing light links.
    let m = crba(model, &mut Data::new(model), q.as_slice()).unwrap().clone();
    let tau = DVector::from_fn(model.nv(), |i, _| m[(i, i)] * rng.range(-1.0, 1.0));
    (q, v, tau)
}

fn bench_algorithms(c: &mut Criterion) {
    let mut group = c.benchmark_group("dynamics");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    for (name, model) in models() {
        let (q, v, tau) = state(&model);
        let mut data = Data::new(&model);
        group.bench_with_input(BenchmarkId::new("crba", name), &model, |b, m| {
            b.iter(|| {
                crba(m, &mut data, black_box(q.as_slice())).unwrap();
            })
        });
        group.bench_with_input(BenchmarkId::new("rnea", name), &model, |b, m| {
            b.iter(|| {
                rnea(m, &mut data, black_box(q.as_slice()), v.as_slice(), tau.as_slice(), None).unwrap();
            })
        });
        group.bench_with_input(BenchmarkId::new("aba", name), &model, |b, m| {
            b.iter(|| {
                aba(m, &mut data, black_box(q.as_slice()), v.as_slice(), tau.as_slice(), None).unwrap();
            })
        });
    }
    group.finish();
}

fn bench_step(c: &mut Criterion) {
    let mut group = c.benchmark_group("step");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    for (name, model) in models() {
        let (q, v, tau) = state(&model);
        for (label, vp) in [("explicit", VelocityProducts::Explicit), ("midpoint", VelocityProducts::Midpoint)] {
            let integrator = IntegratorOptions { velocity_products: vp, ..Default::default() };
            let mut sim =
                Simulator::new(model.clone(), SimOptions { dt: 1e-3, gravity: None, integrator, ..Default::default() })
                    .unwrap();
            let st = State { q: q.clone(), v: v.clone() };
            let ctrl = Control::torques(tau.clone());
            let mut next = st.clone();
            group.bench_function(BenchmarkId::new(label, name), |b| {
                b.iter(|| sim.step_into(black_box(&st), &ctrl, &mut next).unwrap())
            });
        }
    }
    group.finish();
}

/// Factor `M̃` and solve it against 12 right-hand sides (the columns of a contact pair's
/// rows, as the constraint stage does per contact): sparse `LᵀDL` against nalgebra's
/// dense Cholesky, as the number of free bodies grows.
fn bench_inertia_factor(c: &mut Criterion) {
    let mut group = c.benchmark_group("inertia_factor");
    group.warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(2)).sample_size(20);
    let mut cases: Vec<(String, Model)> = vec![("humanoid50".into(), humanoid())];
    for n in [25, 50, 100, 200] {
        cases.push((format!("bodies{n}"), bodies_on_plane(n, RestingShape::Box)));
    }
    for (name, model) in &cases {
        let nv = model.nv();
        let q = model.neutral();
        let mut m = crba(model, &mut Data::new(model), q.as_slice()).unwrap().clone();
        for k in 0..nv {
            m[(k, k)] += 1e-3;
        }
        let rhs = nalgebra::DMatrix::from_fn(nv, 12, |i, j| ((i * 7 + j * 3) % 11) as f64 - 5.0);
        let mut f = InertiaFactor::new(model);
        group.bench_function(BenchmarkId::new("ltdl", name), |b| {
            b.iter(|| {
                f.factor(black_box(&m)).unwrap();
                let mut x = rhs.clone();
                f.solve_columns(&mut x);
                black_box(x)
            })
        });
        group.bench_function(BenchmarkId::new("dense_cholesky", name), |b| {
            b.iter(|| {
                let chol = nalgebra::Cholesky::new(black_box(m.clone())).unwrap();
                black_box(chol.solve(&rhs))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_algorithms, bench_step, bench_inertia_factor);
criterion_main!(benches);
