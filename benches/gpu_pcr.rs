//! Criterion bench of the conjugate-residual solver on the CPU and on the GPU (issue #22),
//! side by side on the same systems in one run: 50 Jacobi-PCR iterations (tolerance 0, a
//! fixed count as paper 000 runs it) from zero on
//!
//! - `pile_10k`: a pile of boxes with 10,000 contacts (30,000 rows), the Schur operator
//!   `J M⁻¹ Jᵀ + C` applied in factored form (`schur_systems::contact_pile`);
//! - `fem_60k`: an FEM body on the ground in paper 000's generalized-compliance form,
//!   60,000 unknowns (`schur_systems::fem_contact`);
//! - `pile_936`: paper 000's "Table Pile" size (936 contacts), for its Table 2.
//!
//! Each GPU figure includes uploading `b` and `x`, every kernel launch and reading `x`
//! and the residuals back. Without a GPU only the CPU rows run (the GPU rows print why
//! they are skipped). Run: `cargo bench --features cuda --bench gpu_pcr -- --noplot`, or
//! `scripts/gpu_check.sh` on a GPU machine, which also writes the figures into
//! docs/benchmarks.md ("GPU conjugate residuals").

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use std::time::Duration;
use stiction::gpu::{Gpu, GpuOperator, GpuPcr, Precision};
use stiction::schur_systems::{contact_pile, fem_contact, SchurSystem};
use stiction::solver::ncp::{pcr_solve, PcrOptions, SchurOperator};

const ITERATIONS: usize = 50;

fn bench(c: &mut Criterion) {
    let gpu = match Gpu::new() {
        Ok(g) => {
            println!(
                "device: {} (compute {:?}, NVRTC {:?})",
                g.info().name,
                g.info().compute_capability,
                g.info().nvrtc_version
            );
            Some(g)
        }
        Err(e) => {
            println!("GPU rows skipped: {e}");
            None
        }
    };
    let systems: Vec<(&str, SchurSystem)> = vec![
        ("pile_10k", contact_pile(10_000, 1).unwrap()),
        ("fem_60k", fem_contact(60_000, 1).unwrap()),
        ("pile_936", contact_pile(936, 2).unwrap()),
    ];
    let options = PcrOptions { max_iterations: ITERATIONS, tolerance: 0.0 };
    for (name, sys) in &systems {
        println!("{name}: {} rows, {} nonzeros in J", sys.rows(), sys.schur.j().nnz());
        let mut group = c.benchmark_group(format!("gpu_pcr/{name}"));
        group.warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(2)).sample_size(10);
        let op = SchurOperator { delassus: &sys.schur, compliance: &sys.compliance, shift: 0.0 };
        let diagonal = op.diagonal(&sys.schur.diagonal());
        group.bench_function("cpu_f64", |bench| {
            bench.iter(|| {
                let mut x = vec![0.0; sys.rows()];
                black_box(pcr_solve(&op, &diagonal, &sys.rhs, &mut x, &options).unwrap());
                x
            })
        });
        if let Some(gpu) = &gpu {
            for (label, precision) in [("gpu_f64", Precision::F64), ("gpu_f32", Precision::F32)] {
                let mut solver =
                    GpuPcr::new(gpu, precision, GpuOperator::Schur(&sys.schur), &sys.compliance, 0.0).unwrap();
                // Diagnostics (not criterion figures): the fixed cost of a solve (uploads,
                // the start's kernels, read-backs) and the cost of one iteration with the
                // recorded graphs and kernel by kernel.
                let mut x = vec![0.0; sys.rows()];
                let zero = PcrOptions { max_iterations: 0, tolerance: 0.0 };
                let mut average = |solver: &mut GpuPcr, options: &PcrOptions| {
                    solver.solve(&sys.rhs, &mut x, options).unwrap();
                    let clock = std::time::Instant::now();
                    for _ in 0..50 {
                        solver.solve(&sys.rhs, &mut x, options).unwrap();
                    }
                    clock.elapsed().as_secs_f64() / 50.0 * 1e6
                };
                let fixed = average(&mut solver, &zero);
                let per_iteration = |solver: &mut GpuPcr, average: &mut dyn FnMut(&mut GpuPcr, &PcrOptions) -> f64| {
                    (average(solver, &options) - fixed) / ITERATIONS as f64
                };
                solver.set_persistent(false);
                solver.set_graphs(false);
                let launched = per_iteration(&mut solver, &mut average);
                solver.set_graphs(true);
                let replayed = per_iteration(&mut solver, &mut average);
                solver.set_persistent(true);
                let persistent = per_iteration(&mut solver, &mut average);
                let persistent_status = solver.persistent();
                // The criterion figures: the default mode (graph replay).
                solver.set_persistent(false);
                println!(
                    "{name} {label}: fixed cost of a solve {fixed:.1} µs; per iteration {persistent:.1} µs in the persistent kernel ({persistent_status:?}), {replayed:.1} µs replaying CUDA graphs ({:?}), {launched:.1} µs launching kernel by kernel",
                    solver.graphs()
                );
                group.bench_function(label, |bench| {
                    bench.iter(|| {
                        let mut x = vec![0.0; sys.rows()];
                        black_box(solver.solve(&sys.rhs, &mut x, &options).unwrap());
                        x
                    })
                });
            }
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
