//! Criterion benches of the soft body's implicit step (issue #21): one backward-Euler
//! step of a stable Neo-Hookean block clamped at its base and swaying (dt = 10 ms), its
//! VJP, and the step's growth with the number of tets (1k to 50k), with both linear
//! solvers (`step`/`vjp`: a direct factorization per Newton iteration; `step_kept`/
//! `vjp_kept`: one kept single-precision factor preconditioning conjugate gradients).
//! Before measuring, each size prints its Newton iterations and the step's time split
//! (assembly, factorization, solves, line search). `soft_world`: a soft block resting on the ground in
//! a `World`, its step and VJP. Run: `cargo bench --bench soft -- --noplot`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use nalgebra::DVector;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;
use stiction::collision::Material;
use stiction::math::Vec3;
use stiction::soft::generate::box_mesh;
use stiction::soft::{
    step, MaterialModel, SoftBody, SoftDamping, SoftLinearSolver, SoftMaterial, SoftOptions, SoftState,
};
use stiction::solver::ncp::NcpSolver;
use stiction::world::{SoftSystem, StaticGeometry, System, World, WorldOptions, WorldState};

/// A block of `c × c × c` cells (6 tets each) of side 0.2 m, clamped at z = 0, moving
/// with the shear velocity field `v = (2 z, 0, 0)`.
fn scene(c: usize) -> (Arc<SoftBody>, SoftState, DVector<f64>, DVector<f64>) {
    let mesh = box_mesh([c, c, c], Vec3::new(0.2, 0.2, 0.2), Vec3::zeros()).unwrap();
    let base: Vec<usize> = (0..mesh.num_vertices()).filter(|&v| mesh.vertices()[v].z == 0.0).collect();
    let body = SoftBody::builder(mesh, SoftMaterial::new(MaterialModel::StableNeoHookean, 1e5, 0.3, 1000.0))
        .pin_vertices(&base)
        .build()
        .unwrap();
    let mut state = SoftState::rest(&body);
    for i in 0..body.mesh().num_vertices() {
        state.v[3 * i] = 2.0 * state.x[3 * i + 2];
    }
    let targets = DVector::from_iterator(body.pinned_dofs().len(), body.pinned_dofs().iter().map(|&d| state.x[d]));
    let u = DVector::zeros(body.ndof());
    (Arc::new(body), state, u, targets)
}

fn bench(c: &mut Criterion) {
    let direct = SoftOptions { dt: 1e-2, ..Default::default() };
    let kept = SoftOptions { linear_solver: SoftLinearSolver::KEPT_SINGLE, ..direct };
    let mut group = c.benchmark_group("soft");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(4)).sample_size(10);
    // 6 c³ tets: 1,296 · 4,374 · 10,368 · 24,576 · 48,000.
    for cells in [6, 9, 12, 16, 20] {
        let (body, state, u, targets) = scene(cells);
        let tets = body.mesh().num_tets();
        for (name, options) in [("step", &direct), ("step_kept", &kept)] {
            let rec = step(&body, &state, &u, &targets, options).unwrap();
            let r = rec.report();
            eprintln!(
                "soft {name}, {tets} tets, {} dofs: {} Newton iterations, {} factorizations, CG iterations {:?}; assembly {:.2} ms, factorization {:.2} ms, solves {:.2} ms, line search {:.2} ms",
                body.ndof(),
                r.iterations,
                r.factorizations,
                r.linear_iterations,
                1e3 * r.timings.assembly,
                1e3 * r.timings.factorization,
                1e3 * r.timings.solve,
                1e3 * r.timings.line_search
            );
            group.bench_function(BenchmarkId::new(name, tets), |b| {
                b.iter(|| black_box(step(&body, &state, &u, &targets, options).unwrap()))
            });
            if cells == 12 {
                let gx = DVector::from_element(body.ndof(), 1.0);
                let gv = DVector::from_element(body.ndof(), 0.5);
                let vjp = if name == "step" { "vjp" } else { "vjp_kept" };
                group.bench_function(BenchmarkId::new(vjp, tets), |b| b.iter(|| black_box(rec.vjp(&gx, &gv).unwrap())));
            }
        }
    }
    group.finish();
}

/// A 6 × 6 × 3-cell Neo-Hookean block (648 tets, 12 × 12 × 6 cm) settled on the ground in a
/// `World` (49 bottom vertices in sticking contact): one world step and its VJP.
fn bench_world(c: &mut Criterion) {
    let mesh = box_mesh([6, 6, 3], Vec3::new(0.12, 0.12, 0.06), Vec3::new(-0.06, -0.06, 0.0)).unwrap();
    let body = Arc::new(
        SoftBody::builder(mesh, SoftMaterial::new(MaterialModel::StableNeoHookean, 1e5, 0.3, 1000.0))
            .damping(SoftDamping { mass: 0.5, stiffness: 0.005 })
            .build()
            .unwrap(),
    );
    let soft = SoftSystem::new(body.clone(), SoftOptions::default(), Material::new(0.8, 0.0), 0.0).unwrap();
    let systems: Vec<Arc<dyn System>> = vec![Arc::new(StaticGeometry::ground(Material::new(0.8, 0.0))), Arc::new(soft)];
    let world = World::new(systems, WorldOptions { dt: 1e-3, ..Default::default() }).unwrap();
    let n = body.ndof();
    let u = DVector::zeros(n);
    let mut state = WorldState { q: body.rest_positions(), v: DVector::zeros(n) };
    for _ in 0..200 {
        state = world.step(&state, &u).unwrap();
    }
    let rec = world.step_recorded(&state, &u).unwrap();
    eprintln!("soft block on the ground: {} dofs, {} contacts", n, rec.contacts().len());
    let mut group = c.benchmark_group("soft_world");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(4)).sample_size(10);
    group.bench_function("step", |b| b.iter(|| black_box(world.step_recorded(&state, &u).unwrap())));
    let (gq, gv) = (DVector::from_element(n, 1.0), DVector::from_element(n, 0.5));
    group.bench_function("vjp", |b| b.iter(|| black_box(rec.vjp(&gq, &gv).unwrap())));
    // The body's own step (the free velocity) alone, and the world step with the NCP solver.
    let soft_state = SoftState { x: state.q.clone(), v: state.v.clone() };
    group.bench_function("soft_step_alone", |b| {
        b.iter(|| black_box(step(&body, &soft_state, &u, &DVector::zeros(0), &SoftOptions::default()).unwrap()))
    });
    let ncp = World::with_solver(world.systems().to_vec(), Arc::new(NcpSolver::default()), *world.options()).unwrap();
    group.bench_function("step_ncp", |b| b.iter(|| black_box(ncp.step_recorded(&state, &u).unwrap())));
    group.finish();
}

criterion_group!(benches, bench, bench_world);
criterion_main!(benches);
