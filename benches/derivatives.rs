//! Criterion benches of the derivatives: RNEA and ABA derivatives, the recorded step,
//! its one-step VJP, the full step Jacobians, and (beside them) finite-difference
//! step Jacobians by central differences. Models: the 7-DoF arm, the 30-link chain and
//! the 50-DoF humanoid. Run: `cargo bench --bench derivatives`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use nalgebra::DVector;
use std::hint::black_box;
use std::time::Duration;
use stiction::dynamics::{aba_derivatives, rnea_derivatives, DerivativeData};
use stiction::gradcheck::{fd_step_jacobians, FdMethod};
use stiction::math::SplitMix64;
use stiction::model::samples::{arm7, humanoid, spatial_chain};
use stiction::model::ParamSpec;
use stiction::tape::Workspace;
use stiction::{Control, Data, Model, SimOptions, Simulator, State};

fn models() -> Vec<(&'static str, Model)> {
    vec![("arm7", arm7()), ("chain30", spatial_chain(30)), ("humanoid50", humanoid())]
}

fn case(model: &Model) -> (State, Control) {
    let mut rng = SplitMix64::new(3);
    let q = model.random_configuration(11);
    let v = DVector::from_fn(model.nv(), |_, _| rng.range(-1.0, 1.0));
    let m = stiction::dynamics::crba(model, &mut Data::new(model), q.as_slice()).unwrap().clone();
    let tau = DVector::from_fn(model.nv(), |i, _| m[(i, i)] * rng.range(-2.0, 2.0));
    (State { q, v }, Control::torques(tau))
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("derivatives");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2)).sample_size(30);
    for (name, model) in models() {
        let (st, ctrl) = case(&model);
        let mut data = Data::new(&model);
        let mut deriv = DerivativeData::new(&model);
        let a = DVector::from_element(model.nv(), 0.3);
        group.bench_function(BenchmarkId::new("rnea_derivatives", name), |b| {
            b.iter(|| {
                rnea_derivatives(
                    &model,
                    &mut data,
                    &mut deriv,
                    black_box(st.q.as_slice()),
                    st.v.as_slice(),
                    a.as_slice(),
                    None,
                )
                .unwrap()
            })
        });
        group.bench_function(BenchmarkId::new("aba_derivatives", name), |b| {
            b.iter(|| {
                aba_derivatives(
                    &model,
                    &mut data,
                    &mut deriv,
                    black_box(st.q.as_slice()),
                    st.v.as_slice(),
                    ctrl.tau.as_slice(),
                    None,
                )
                .unwrap()
            })
        });
        let options = SimOptions { dt: 1e-3, ..Default::default() };
        let mut sim = Simulator::new(model.clone(), options.clone()).unwrap();
        group.bench_function(BenchmarkId::new("step_recorded", name), |b| {
            b.iter(|| sim.step_recorded(black_box(&st), &ctrl).unwrap())
        });
        let (_, record) = sim.step_recorded(&st, &ctrl).unwrap();
        let mut ws = Workspace::new(&model);
        let (gq, gv) = (DVector::from_element(model.nv(), 1.0), DVector::from_element(model.nv(), -0.5));
        group.bench_function(BenchmarkId::new("step_vjp", name), |b| {
            b.iter(|| record.vjp_with(&mut ws, black_box(&gq), &gv).unwrap())
        });
        group.bench_function(BenchmarkId::new("step_jacobians", name), |b| {
            b.iter(|| record.jacobians_with(&mut ws).unwrap())
        });
        group.bench_function(BenchmarkId::new("fd_step_jacobians_central", name), |b| {
            b.iter(|| {
                fd_step_jacobians(&model, &options, &ParamSpec::new(), black_box(&st), &ctrl, FdMethod::Central, 1e-6)
                    .unwrap()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
