//! Batched rollouts (`sim::rollout_batch`): 1,024 cartpoles (no contact) × 100 steps of
//! dt = 0.01 with random start states and torques, on 1 and 2 worker threads; criterion's
//! throughput is in steps per second.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use nalgebra::{DMatrix, DVector};
use std::hint::black_box;
use std::time::Duration;
use stiction::math::SplitMix64;
use stiction::model::{samples, ParamSpec};
use stiction::sim::{rollout_batch, BatchOptions, BatchRollout};
use stiction::step::ContactOptions;
use stiction::{SimOptions, State};

fn bench_batch(c: &mut Criterion) {
    let model = samples::cartpole();
    let options =
        SimOptions { dt: 0.01, contact: ContactOptions { enabled: false, ..Default::default() }, ..Default::default() };
    let (n, steps) = (1024, 100);
    let mut rng = SplitMix64::new(1);
    let batch: Vec<BatchRollout> = (0..n)
        .map(|_| BatchRollout {
            state: State {
                q: DVector::from_fn(2, |_, _| rng.range(-1.0, 1.0)),
                v: DVector::from_fn(2, |_, _| rng.range(-1.0, 1.0)),
            },
            controls: DMatrix::from_fn(steps, 2, |_, _| rng.range(-2.0, 2.0)),
            theta: None,
        })
        .collect();
    let spec = ParamSpec::new();
    let mut g = c.benchmark_group("rollout_batch/cartpole1024x100");
    g.throughput(Throughput::Elements((n * steps) as u64));
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    for threads in [1usize, 2] {
        for record in [false, true] {
            let id = format!("{threads}_threads{}", if record { "_recorded" } else { "" });
            let opts = BatchOptions { record, threads: Some(threads) };
            g.bench_function(BenchmarkId::from_parameter(id), |b| {
                b.iter(|| black_box(rollout_batch(&model, &options, &spec, &batch, &opts).unwrap()))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench_batch);
criterion_main!(benches);
