//! Contact solver benches: a free box (6 DoF, `M̃ = diag(I, m)`, velocity `[ω; v]` about the centre of mass)
//! resting on a finely tessellated ground, with `n` contact points on a grid under its bottom face
//! (`n = 4, 16, 64, 256, 1024`), pushed sideways (free velocity with a tangential component, a small spin
//! and one step of gravity). Each contact has a normal row and two tangent rows. Timed, each from `J`,
//! `M̃`, `b`:
//!
//! * `ppm_no_slip`: the no-slip problem (tangent rows are equality rows) by `ppm::solve` (FIND-INDICES,
//!   elimination, modified PPM, all products);
//! * `ppm_viscous`: the viscous problem (tangent rows `J_t v⁺ + r f_t = 0`, `r = 20`), by `ppm::solve`;
//! * `dantzig_no_slip`: the same problem assembled densely (`FactoredLcp::to_boxed`: `J M̃⁻¹ Jᵀ`, included)
//!   and solved by `lcp::solve` (Dantzig + standardization);
//! * `dantzig_coulomb`: the boxed Coulomb problem (friction rows `|f_t| ≤ 0.5 f_n`), assembled and solved
//!   by `lcp::solve`.
//!
//! The dense variants are capped (`NO_SLIP_DENSE_MAX`, `COULOMB_MAX`): their cost grows like n³ and
//! beyond (one Coulomb solve at n = 256 took 171 s on the 2-core machine). Run with
//! `cargo bench --bench ppm -- --noplot`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use nalgebra::{DMatrix, DVector, Vector3};
use std::hint::black_box;
use std::time::{Duration, Instant};
use stiction::solver::lcp::{self, BoxedLcp, LcpOptions, RowBound};
use stiction::solver::ppm::{self, FactoredLcp, PpmOptions, PsdRow};

const HALF: [f64; 3] = [0.3, 0.2, 0.1];
const MASS: f64 = 3.0;
/// `[ω; v]`: a push along x and y, a small spin about z, one step (h = 0.01) of gravity.
const V_FREE: [f64; 6] = [0.0, 0.0, 0.05, 0.04, -0.02, -0.0981];
/// The viscous tangent row, `r = 1/(h μ_v)` with `h = 0.01`, `μ_v = 5`.
const VISCOUS: PsdRow = PsdRow::Equality { regularization: 20.0 };
/// Largest `n` for the dense no-slip solve (≈ 1.2 s per solve at n = 256, beyond that O(n³)).
const NO_SLIP_DENSE_MAX: usize = 256;
/// Largest `n` for the boxed Coulomb solve (≈ 0.35 s at n = 64; one solve at n = 256 took 171 s).
const COULOMB_MAX: usize = 64;

/// `J` (`3n × 6`, rows `[normal, t_x, t_y]` per point) and `M̃` for a `g × g` grid of points.
fn box_on_grid(g: usize) -> (DMatrix<f64>, DMatrix<f64>) {
    let [hx, hy, hz] = HALF;
    let n = g * g;
    let mut j = DMatrix::zeros(3 * n, 6);
    let coord = |i: usize, h: f64| -h + 2.0 * h * i as f64 / (g - 1) as f64;
    for p in 0..n {
        let point = Vector3::new(coord(p % g, hx), coord(p / g, hy), -hz);
        for (r, d) in [Vector3::z(), Vector3::x(), Vector3::y()].iter().enumerate() {
            let ang = point.cross(d);
            for c in 0..3 {
                j[(3 * p + r, c)] = ang[c];
                j[(3 * p + r, 3 + c)] = d[c];
            }
        }
    }
    let inertia = [(hy * hy + hz * hz) / 3.0, (hx * hx + hz * hz) / 3.0, (hx * hx + hy * hy) / 3.0];
    let mut m = DMatrix::zeros(6, 6);
    for a in 0..3 {
        m[(a, a)] = MASS * inertia[a];
        m[(3 + a, 3 + a)] = MASS;
    }
    (j, m)
}

fn no_slip(j: &DMatrix<f64>, m: &DMatrix<f64>) -> FactoredLcp {
    let rows = (0..j.nrows()).map(|i| if i % 3 == 0 { PsdRow::Unilateral } else { PsdRow::NO_SLIP }).collect();
    let b = j * DVector::from_row_slice(&V_FREE);
    FactoredLcp::new(j.clone(), m.clone(), b, rows).expect("valid problem")
}

/// The boxed Coulomb problem, assembled (`A = J M̃⁻¹ Jᵀ` through a Cholesky factor).
fn coulomb(j: &DMatrix<f64>, m: &DMatrix<f64>, b: &DVector<f64>) -> BoxedLcp {
    let chol = m.clone().cholesky().expect("SPD mass");
    let x = chol.l().solve_lower_triangular(&j.transpose()).expect("triangular solve");
    let a = x.tr_mul(&x);
    let bounds = (0..j.nrows())
        .map(|i| if i % 3 == 0 { RowBound::UNILATERAL } else { RowBound::Friction { normal: i - i % 3, mu: 0.5 } })
        .collect();
    BoxedLcp { a, b: b.clone(), bounds, factor: None, positive_definite: false }
}

fn once<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = Instant::now();
    let out = f();
    (out, t.elapsed())
}

fn bench_ppm(c: &mut Criterion) {
    let mut group = c.benchmark_group("contact");
    group.warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(2)).sample_size(10);
    let ppm_options = PpmOptions::default();
    let lcp_options = LcpOptions::default();
    for g in [2usize, 4, 8, 16, 32] {
        let n = g * g;
        let (j, m) = box_on_grid(g);
        let problem = no_slip(&j, &m);
        let (sol, t) = once(|| ppm::solve(&problem, &ppm_options).expect("PPM"));
        eprintln!("n = {n}: PPM one solve {t:?}, {:?}, {:?}", sol.lcp.stats, sol.stats);
        group.bench_with_input(BenchmarkId::new("ppm_no_slip", n), &(&j, &m, &problem.b), |bench, (j, m, b)| {
            bench.iter(|| {
                let rows = (0..j.nrows()).map(|i| if i % 3 == 0 { PsdRow::Unilateral } else { PsdRow::NO_SLIP });
                let p = FactoredLcp { j: (*j).clone(), mass: (*m).clone(), b: (*b).clone(), rows: rows.collect() };
                black_box(ppm::solve(black_box(&p), &ppm_options).unwrap())
            })
        });
        group.bench_with_input(BenchmarkId::new("ppm_viscous", n), &(&j, &m, &problem.b), |bench, (j, m, b)| {
            bench.iter(|| {
                let rows = (0..j.nrows()).map(|i| if i % 3 == 0 { PsdRow::Unilateral } else { VISCOUS });
                let p = FactoredLcp { j: (*j).clone(), mass: (*m).clone(), b: (*b).clone(), rows: rows.collect() };
                black_box(ppm::solve(black_box(&p), &ppm_options).unwrap())
            })
        });
        if n <= NO_SLIP_DENSE_MAX {
            let (dense, t) = once(|| lcp::solve(&problem.to_boxed().unwrap(), &lcp_options, None).expect("Dantzig"));
            let dv = (m.clone().try_inverse().unwrap() * j.transpose() * &dense.f - &sol.dv).amax();
            eprintln!("n = {n}: dense no-slip one solve {t:?}, |Δv(PPM) − Δv(Dantzig)| = {dv:e}, {:?}", dense.stats);
            group.bench_with_input(BenchmarkId::new("dantzig_no_slip", n), &problem, |bench, p| {
                bench.iter(|| black_box(lcp::solve(&black_box(p).to_boxed().unwrap(), &lcp_options, None).unwrap()))
            });
        }
        if n <= COULOMB_MAX {
            let (boxed, t) = once(|| lcp::solve(&coulomb(&j, &m, &problem.b), &lcp_options, None).expect("Coulomb"));
            eprintln!("n = {n}: dense Coulomb one solve {t:?}, {:?}", boxed.stats);
            group.bench_with_input(BenchmarkId::new("dantzig_coulomb", n), &problem, |bench, p| {
                bench.iter(|| black_box(lcp::solve(&coulomb(&j, &m, &black_box(p).b), &lcp_options, None).unwrap()))
            });
        }
    }
    group.finish();
}

/// The paper's grasping scene (`samples::two_finger_grasp(2, 3, ..)`: two fingers squeezing two
/// cubes with 20 N, 36 contacts): one full simulator step (collision detection, rows, solve,
/// integration) from the squeezed start, cold (no warm start), with no slip through the PPM and
/// through the boxed LCP, and with Coulomb friction (μ = 1, which also holds) through the boxed LCP.
fn bench_grasp_step(c: &mut Criterion) {
    use stiction::model::{samples, Material};
    use stiction::step::{ContactModel, ContactOptions, ContactSolver};
    use stiction::{Control, SimOptions, Simulator, State};
    let model = samples::two_finger_grasp(2, 3, Material::new(1.0, 0.0));
    let q = samples::two_finger_grasp_configuration(&model, 2, 0.0);
    let state = State { q, v: DVector::zeros(model.nv()) };
    let mut tau = DVector::zeros(model.nv());
    tau[0] = 20.0;
    tau[1] = -20.0;
    let control = Control::torques(tau);
    let mut g = c.benchmark_group("grasp_step");
    g.sample_size(20).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    for (name, model_kind, solver) in [
        ("no_slip_ppm", ContactModel::NoSlip, ContactSolver::Auto),
        ("no_slip_boxed_lcp", ContactModel::NoSlip, ContactSolver::BoxedLcp),
        ("coulomb_boxed_lcp", ContactModel::Coulomb, ContactSolver::BoxedLcp),
    ] {
        let contact = ContactOptions { model: model_kind, solver, warm_start: false, ..Default::default() };
        let mut sim = Simulator::new(model.clone(), SimOptions { dt: 0.01, contact, ..Default::default() }).unwrap();
        g.bench_function(name, |b| b.iter(|| black_box(sim.step(&state, &control).unwrap())));
    }
    g.finish();
}

criterion_group!(benches, bench_ppm, bench_grasp_step);
criterion_main!(benches);
