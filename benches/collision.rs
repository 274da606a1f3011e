//! Criterion benches of contact detection (broad phase + narrow phase, kinematics
//! excluded): 100 and 1,000 free boxes or spheres resting on a plane
//! (`samples::bodies_on_plane`, each penetrating it by 1 mm). Also the broad phase
//! alone, with its sorted order kept between calls (the default) or re-sorted from
//! scratch each call. Run: `cargo bench --bench collision`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use nalgebra::DVector;
use std::hint::black_box;
use std::time::Duration;
use stiction::collision::BroadPhase;
use stiction::constraint::{detect_contacts, CollisionOptions, CollisionWorkspace};
use stiction::dynamics::forward_kinematics;
use stiction::math::{SplitMix64, SE3};
use stiction::model::samples::{bodies_on_plane, RestingShape};
use stiction::{Data, Model};

/// Poses with each body moved from `q` by a small random motion (at most 0.5 mm and
/// 2 mrad).
fn perturbed(model: &Model, q: &DVector<f64>, rng: &mut SplitMix64) -> (DVector<f64>, Data) {
    let v =
        DVector::from_fn(model.nv(), |i, _| if i % 6 < 3 { rng.range(-2e-3, 2e-3) } else { rng.range(-5e-4, 5e-4) });
    let q = model.integrate(q, &v, 1.0).unwrap();
    let mut data = Data::new(model);
    forward_kinematics(model, &mut data, q.as_slice()).unwrap();
    (q, data)
}

fn shape_poses(model: &Model, data: &Data) -> Vec<SE3> {
    model.collision_model().shapes.iter().map(|s| s.world_pose(&data.x_world)).collect()
}

fn bench_detect(c: &mut Criterion) {
    let mut group = c.benchmark_group("collision");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    let options = CollisionOptions::default();
    for (label, shape) in [("boxes", RestingShape::Box), ("spheres", RestingShape::Sphere)] {
        for n in [100, 1000] {
            let model = bodies_on_plane(n, shape);
            let mut rng = SplitMix64::new(3);
            let (q, data) = perturbed(&model, &model.neutral(), &mut rng);
            let (_, next) = perturbed(&model, &q, &mut rng);
            let mut ws = CollisionWorkspace::new(&model);
            let count = detect_contacts(&model, &data, &options, &mut ws).unwrap().len();
            assert_eq!(count, n * if shape == RestingShape::Box { 4 } else { 1 });
            group.bench_with_input(BenchmarkId::new(format!("detect/{label}"), n), &model, |b, m| {
                b.iter(|| detect_contacts(m, black_box(&data), &options, &mut ws).unwrap().len())
            });
            let cm = model.collision_model();
            let poses = [shape_poses(&model, &data), shape_poses(&model, &next)];
            for (name, keep) in [("broad_phase", true), ("broad_phase_full_sort", false)] {
                let mut bp = BroadPhase::new();
                let mut k = 0;
                group.bench_with_input(BenchmarkId::new(format!("{name}/{label}"), n), &model, |b, _| {
                    b.iter(|| {
                        k ^= 1;
                        if !keep {
                            bp.forget_order();
                        }
                        bp.find_pairs(cm, black_box(&poses[k]), 0.0).unwrap().len()
                    })
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench_detect);
criterion_main!(benches);
