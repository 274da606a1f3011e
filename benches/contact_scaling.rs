//! Criterion bench of the growth of a contact step's cost with the number of bodies:
//! `samples::bodies_on_plane(n)` (n free boxes resting on the plane, 4 contacts each,
//! one island per box), one `Simulator::step` (dt = 1 ms, Coulomb friction, warm
//! start) from a settled state, n = 25 … 1,000. Run:
//! `cargo bench --bench contact_scaling -- --noplot`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use nalgebra::DVector;
use std::hint::black_box;
use std::time::Duration;
use stiction::model::samples::{bodies_on_plane, RestingShape};
use stiction::{Control, SimOptions, Simulator, State};

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("contact_scaling");
    group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3)).sample_size(20);
    for n in [25, 50, 100, 200, 400, 1000] {
        let model = bodies_on_plane(n, RestingShape::Box);
        let mut sim = Simulator::new(model.clone(), SimOptions { dt: 1e-3, ..Default::default() }).unwrap();
        let u = Control::torques(DVector::zeros(model.nv()));
        // Settle: the boxes start 1 mm deep; 50 steps push them out and warm the solver.
        let mut state = State { q: model.neutral(), v: DVector::zeros(model.nv()) };
        for _ in 0..50 {
            state = sim.step(&state, &u).unwrap();
        }
        group.bench_function(BenchmarkId::new("bodies_on_plane_step", n), |b| {
            b.iter(|| black_box(sim.step(&state, &u).unwrap()))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
