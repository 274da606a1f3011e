//! Criterion bench of the per-step cost of contact scenes (issue #19): the `box_on_ground`,
//! `four_boxes` and `pile50` scenes of `python/benchmarks/contact_scenes_vs_mujoco.py`
//! built alike in Rust (boxes of 1 kg and half extent 5 cm, μ = 0.5, dt = 1 ms, default
//! options: boxed-LCP Coulomb contact with warm start), one `Simulator::step` from a settled
//! state. Run: `cargo bench --bench small_contact -- --noplot`; the figures are in
//! docs/benchmarks.md ("Per-step overhead of small contact scenes").
//!
//! The group `pile_jacobians` times the full Jacobians of one recorded step of the
//! `pile50` and `pile100` scenes (`StepRecord::jacobians_with`, the workspace reused), the
//! "step + J" of the Python table less its step (docs/benchmarks.md, "Step Jacobians of
//! the piles"): `cargo bench --bench small_contact -- --noplot pile_jacobians`. The group
//! `small_jacobians` times those of `box_on_ground` and `four_boxes` as Python's
//! `StepRecord.jacobians()` computes them, with a fresh workspace per call
//! (`StepRecord::jacobians`).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use nalgebra::DVector;
use std::hint::black_box;
use std::time::Duration;
use stiction::math::{Inertia, Vec3, SE3};
use stiction::model::{Body, CollisionShape, Geometry, Material, WORLD};
use stiction::tape::{StepRecord, Workspace};
use stiction::{Control, Joint, Model, ModelBuilder, SimOptions, Simulator, State};

const H: f64 = 0.05;
const MU: f64 = 0.5;

/// Unit boxes with their centres at `centres` on the ground plane, at rest.
fn scene(name: &str, centres: &[Vec3]) -> (Model, State) {
    let mut b = ModelBuilder::new(name);
    let m = Material::new(MU, 0.0);
    b.add_link(
        Body::massless(WORLD).with_collision(CollisionShape::new(Geometry::Plane, SE3::identity()).with_material(m)),
    );
    let h = Vec3::new(H, H, H);
    for k in 0..centres.len() {
        b.add_body(
            WORLD,
            Joint::free(format!("box{k}_free")),
            Body::new(format!("box{k}"), Inertia::solid_box(1.0, h * 2.0)).with_collision(
                CollisionShape::new(Geometry::Box { half_extents: h }, SE3::identity()).with_material(m),
            ),
        );
    }
    let model = b.build().unwrap();
    let mut q = model.neutral();
    for (k, c) in centres.iter().enumerate() {
        q.rows_mut(7 * k, 7).copy_from_slice(&[c.x, c.y, c.z, 1.0, 0.0, 0.0, 0.0]);
    }
    let v = DVector::zeros(model.nv());
    (model, State { q, v })
}

/// The `pile50` scene: 5 × 5 columns of `layers` boxes stacked face on face, 1 mm apart.
fn pile(layers: usize) -> Vec<Vec3> {
    let off = |i: usize| (i as f64 - 2.0) * (2.0 * H + 1e-3);
    (0..layers).flat_map(|l| (0..25).map(move |k| Vec3::new(off(k / 5), off(k % 5), (2 * l + 1) as f64 * H))).collect()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("small_contact");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3)).sample_size(30);
    let scenes = [
        ("box_on_ground", vec![Vec3::new(0.0, 0.0, H)]),
        ("four_boxes", (0..4).map(|i| Vec3::new(0.35 * i as f64, 0.0, H)).collect()),
        ("pile50", pile(2)),
    ];
    for (name, centres) in scenes {
        let (model, mut state) = scene(name, &centres);
        let mut sim = Simulator::new(model.clone(), SimOptions { dt: 1e-3, ..Default::default() }).unwrap();
        let u = Control::torques(DVector::zeros(model.nv()));
        // Settle for 0.2 s: the contacts close and the warm start engages.
        for _ in 0..200 {
            state = sim.step(&state, &u).unwrap();
        }
        // Four contacts under each box (on the ground or on the box below); in the pile
        // also the side faces of neighbours, 1 mm apart, within the contact margin.
        let contacts = sim.last_constraints().map_or(0, |c| c.contacts.len());
        assert!(contacts >= 4 * centres.len(), "{name}: {contacts} contacts");
        group.bench_function(BenchmarkId::new("step", name), |b| {
            b.iter(|| black_box(sim.step(black_box(&state), &u).unwrap()))
        });
    }
    group.finish();
}

/// The scene of boxes at `centres` and one step recorded after 0.2 s of settling (the
/// contacts closed).
fn settled_record(name: &str, centres: &[Vec3]) -> (Model, StepRecord) {
    let (model, mut state) = scene(name, centres);
    let mut sim = Simulator::new(model.clone(), SimOptions { dt: 1e-3, ..Default::default() }).unwrap();
    let u = Control::torques(DVector::zeros(model.nv()));
    for _ in 0..200 {
        state = sim.step(&state, &u).unwrap();
    }
    let (_, rec) = sim.step_recorded(&state, &u).unwrap();
    assert!(rec.constraints().is_some(), "{name}: the step must have contacts");
    (model, rec)
}

/// Step Jacobians of the small scenes as Python's `StepRecord.jacobians()` computes them:
/// a fresh workspace per call.
fn bench_small_jacobians(c: &mut Criterion) {
    let mut group = c.benchmark_group("small_jacobians");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3)).sample_size(30);
    let scenes = [
        ("box_on_ground", vec![Vec3::new(0.0, 0.0, H)]),
        ("four_boxes", (0..4).map(|i| Vec3::new(0.35 * i as f64, 0.0, H)).collect::<Vec<_>>()),
    ];
    for (name, centres) in scenes {
        let (_, rec) = settled_record(name, &centres);
        group.bench_function(BenchmarkId::new("jacobians", name), |b| b.iter(|| black_box(rec.jacobians().unwrap())));
    }
    group.finish();
}

fn bench_jacobians(c: &mut Criterion) {
    let mut group = c.benchmark_group("pile_jacobians");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(5)).sample_size(10);
    for (name, layers) in [("pile50", 2), ("pile100", 4)] {
        let (model, rec) = settled_record(name, &pile(layers));
        let mut ws = Workspace::new(&model);
        group.bench_function(BenchmarkId::new("jacobians", name), |b| {
            b.iter(|| black_box(rec.jacobians_with(&mut ws).unwrap()))
        });
    }
    group.finish();
}

criterion_group!(benches, bench, bench_small_jacobians, bench_jacobians);
criterion_main!(benches);
