//! Boxed LCP benches (`stiction::solver::lcp`): random friction contact problems with 4, 16 and 64
//! contacts (normal + 2 friction rows each) between a chain of rigid bodies resting on each other, solved
//! cold (Dantzig + App. A.1 standardization) and warm-started from the previous classification (the
//! App. A.1 "LCP stabilization as a solver").

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use nalgebra::{DMatrix, DVector};
use std::hint::black_box;
use std::time::Duration;
use stiction::math::SplitMix64;
use stiction::solver::lcp::{solve, BoxedLcp, LcpOptions, RowBound};

/// `contacts` contacts, 4 per body, between a chain of bodies (contact k joins body k/4 to body k/4 − 1,
/// the first four to the ground); `b = J v_free` with every body falling and drifting.
fn contact_problem(contacts: usize, seed: u64) -> BoxedLcp {
    let mut rng = SplitMix64::new(seed);
    let bodies = contacts.div_ceil(4);
    let n = 6 * bodies;
    let mut minv = DMatrix::zeros(n, n);
    for k in 0..bodies {
        let mass = rng.range(0.5, 3.0);
        for i in 0..3 {
            minv[(6 * k + i, 6 * k + i)] = 1.0 / (mass * rng.range(0.05, 0.2));
            minv[(6 * k + 3 + i, 6 * k + 3 + i)] = 1.0 / mass;
        }
    }
    let m = 3 * contacts;
    let mut j = DMatrix::zeros(m, n);
    let mut bounds = Vec::with_capacity(m);
    for c in 0..contacts {
        let body = c / 4;
        let (sx, sy) = [(1.0, 1.0), (-1.0, 1.0), (-1.0, -1.0), (1.0, -1.0)][c % 4];
        let p = nalgebra::Vector3::new(sx * 0.2 + 0.01 * rng.normal(), sy * 0.15 + 0.01 * rng.normal(), -0.1);
        let normal = nalgebra::Vector3::new(0.02 * rng.normal(), 0.02 * rng.normal(), 1.0).normalize();
        let t1 = normal.cross(&nalgebra::Vector3::y()).normalize();
        let t2 = normal.cross(&t1);
        let mu = rng.range(0.3, 1.0);
        for (k, d) in [normal, t1, t2].iter().enumerate() {
            let row = 3 * c + k;
            let ang = p.cross(d);
            for i in 0..3 {
                j[(row, 6 * body + i)] = ang[i];
                j[(row, 6 * body + 3 + i)] = d[i];
                if body > 0 {
                    // The body below feels the opposite impulse at the same point (its frame 0.2 lower).
                    let q = p + nalgebra::Vector3::new(0.0, 0.0, 0.2);
                    let ang_below = q.cross(d);
                    j[(row, 6 * (body - 1) + i)] = -ang_below[i];
                    j[(row, 6 * (body - 1) + 3 + i)] = -d[i];
                }
            }
            bounds.push(if k == 0 { RowBound::UNILATERAL } else { RowBound::Friction { normal: 3 * c, mu } });
        }
    }
    let mut v = DVector::zeros(n);
    for k in 0..bodies {
        v[6 * k + 3] = 0.05 * rng.normal();
        v[6 * k + 4] = 0.05 * rng.normal();
        v[6 * k + 5] = -0.0981 * (k + 1) as f64;
    }
    let a = &j * &minv * j.transpose();
    let b = &j * v;
    BoxedLcp::new(a, b, bounds).expect("valid contact problem")
}

fn bench_lcp(c: &mut Criterion) {
    let mut group = c.benchmark_group("lcp");
    group.warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(2)).sample_size(20);
    let options = LcpOptions::default();
    for contacts in [4usize, 16, 64] {
        let problem = contact_problem(contacts, 42 + contacts as u64);
        let cold = solve(&problem, &options, None).expect("cold solve");
        let mut next = problem.clone();
        next.b *= 1.0 + 1e-6;
        let warm = solve(&next, &options, Some(&cold.states)).expect("warm solve");
        eprintln!("lcp {contacts} contacts: cold {:?}; warm {:?}", cold.stats, warm.stats);
        group.bench_with_input(BenchmarkId::new("cold", contacts), &next, |bench, p| {
            bench.iter(|| black_box(solve(black_box(p), &options, None).unwrap()))
        });
        group.bench_with_input(BenchmarkId::new("warm", contacts), &next, |bench, p| {
            bench.iter(|| black_box(solve(black_box(p), &options, Some(&cold.states)).unwrap()))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_lcp);
criterion_main!(benches);
