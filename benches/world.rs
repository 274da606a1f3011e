//! Criterion benches of the `World` step and its VJP, beside the rigid `Simulator` on the
//! same scene (a one-system world steps like the simulator with velocity penetration
//! recovery): a box sliding on the ground, and the box with eight particles resting on its
//! top (three systems). Run: `cargo bench --bench world -- --noplot`; the figures are in
//! docs/benchmarks.md ("World").

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use nalgebra::DVector;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;
use stiction::collision::Material;
use stiction::math::{Inertia, Vec3, SE3};
use stiction::model::{Body, CollisionShape, Geometry, WORLD};
use stiction::step::{ContactOptions, PenetrationRecovery};
use stiction::world::{Articulation, Particles, StaticGeometry, System, World, WorldOptions, WorldState};
use stiction::{Control, Joint, Model, ModelBuilder, SimOptions, Simulator, State};

const DT: f64 = 1e-3;

/// A 1 kg box (0.2 × 0.2 × 0.1 m) on a free joint; with `ground`, the model's own ground plane.
fn box_model(ground: bool) -> Model {
    let mut b = ModelBuilder::new("box");
    let m = Material::new(0.5, 0.0);
    if ground {
        b.add_link(
            Body::massless(WORLD)
                .with_collision(CollisionShape::new(Geometry::Plane, SE3::identity()).with_material(m)),
        );
    }
    let h = Vec3::new(0.1, 0.1, 0.05);
    b.add_body(
        WORLD,
        Joint::free("box_free"),
        Body::new("box", Inertia::solid_box(1.0, h * 2.0))
            .with_collision(CollisionShape::new(Geometry::Box { half_extents: h }, SE3::identity()).with_material(m)),
    );
    b.build().unwrap()
}

/// The box 0.1 mm into the ground, sliding at 0.3 m/s.
fn box_state(model: &Model) -> State {
    let mut q = model.neutral();
    q[2] = 0.05 - 1e-4;
    let mut v = DVector::zeros(6);
    v[3] = 0.3;
    State { q, v }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("world");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3)).sample_size(20);
    let contact = ContactOptions { penetration: PenetrationRecovery::Velocity, ..Default::default() };

    // The box alone: the simulator and a one-system world.
    let model = box_model(true);
    let state = box_state(&model);
    let control = Control::torques(DVector::zeros(6));
    let mut sim = Simulator::new(model.clone(), SimOptions { dt: DT, contact, ..Default::default() }).unwrap();
    let (_, rec) = sim.step_recorded(&state, &control).unwrap();
    let (gq, gv) = (DVector::from_element(6, 1.0), DVector::from_element(6, 0.5));
    group.bench_function(BenchmarkId::new("simulator_step_recorded", "box_on_ground"), |b| {
        b.iter(|| black_box(sim.step_recorded(black_box(&state), &control).unwrap()))
    });
    group.bench_function(BenchmarkId::new("simulator_step_vjp", "box_on_ground"), |b| {
        b.iter(|| black_box(rec.vjp(black_box(&gq), &gv).unwrap()))
    });
    let options = WorldOptions { dt: DT, ..Default::default() };
    let world = World::new(vec![Arc::new(Articulation::new(Arc::new(model)))], options).unwrap();
    let ws = WorldState { q: state.q.clone(), v: state.v.clone() };
    let u = DVector::zeros(6);
    let wrec = world.step_recorded(&ws, &u).unwrap();
    assert_eq!(wrec.contacts().len(), 4);
    group.bench_function(BenchmarkId::new("world_step_recorded", "box_on_ground"), |b| {
        b.iter(|| black_box(world.step_recorded(black_box(&ws), &u).unwrap()))
    });
    group.bench_function(BenchmarkId::new("world_step_vjp", "box_on_ground"), |b| {
        b.iter(|| black_box(wrec.vjp(black_box(&gq), &gv).unwrap()))
    });

    // Three systems: ground, the box, eight particles on its top.
    let model = box_model(false);
    let bstate = box_state(&model);
    let r = 0.01;
    let n = 8;
    let particles = Particles::new(&[0.05; 8], &[r; 8], Material::new(0.5, 0.0), Vec3::new(0.0, 0.0, -9.81)).unwrap();
    let systems: Vec<Arc<dyn System>> = vec![
        Arc::new(StaticGeometry::ground(Material::new(0.5, 0.0))),
        Arc::new(Articulation::new(Arc::new(model))),
        Arc::new(particles),
    ];
    let world = World::new(systems, options).unwrap();
    let mut q = DVector::zeros(world.nq());
    q.rows_mut(0, 7).copy_from(&bstate.q);
    let mut v = DVector::zeros(world.nv());
    v.rows_mut(0, 6).copy_from(&bstate.v);
    for k in 0..n {
        let (x, y) = (-0.06 + 0.04 * (k % 4) as f64, if k < 4 { -0.04 } else { 0.04 });
        q.rows_mut(7 + 3 * k, 3).copy_from_slice(&[x, y, 0.1 - 1e-4 + r - 1e-4]);
        v[6 + 3 * k] = 0.3;
    }
    let ws = WorldState { q, v };
    let u = DVector::zeros(world.nu());
    let wrec = world.step_recorded(&ws, &u).unwrap();
    assert_eq!(wrec.contacts().len(), 4 + n);
    let (gq, gv) = (DVector::from_element(world.nv(), 1.0), DVector::from_element(world.nv(), 0.5));
    group.bench_function(BenchmarkId::new("world_step_recorded", "box_8_particles"), |b| {
        b.iter(|| black_box(world.step_recorded(black_box(&ws), &u).unwrap()))
    });
    group.bench_function(BenchmarkId::new("world_step_vjp", "box_8_particles"), |b| {
        b.iter(|| black_box(wrec.vjp(black_box(&gq), &gv).unwrap()))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
