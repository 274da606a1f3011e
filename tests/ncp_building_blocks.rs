//! The NCP solver's building blocks (issue #20; Macklin et al. 2019) against the paper's
//! closed-form claims (digest-000 §10): NCP functions and their derivatives, the
//! preconditioned min-map's one-step solve (Fig. 9), the 1-D slider's friction force
//! (Fig. 6) through the frictional compliance for both NCP functions, and the
//! conjugate-residual solver's monotone residual, including on a near-singular ring of
//! contacts under a cylinder.

use nalgebra::{DMatrix, DVector};
use stiction::math::SplitMix64;
use stiction::solver::ncp::{
    complementarity_scale, friction_compliance, pcr_solve, FrictionCompliance, NcpFunction, PcrOptions, SchurOperator,
};
use stiction::solver::DenseDelassus;

const FUNCTIONS: [NcpFunction; 2] = [NcpFunction::MinMap, NcpFunction::FischerBurmeister];

#[test]
fn ncp_functions_vanish_exactly_on_complementarity_and_have_their_derivatives() {
    for f in FUNCTIONS {
        for r in [1.0, 0.25, 3e-4] {
            // Zeros: 0 ≤ a ⊥ b ≥ 0.
            for (a, b) in [(0.0, 0.0), (0.0, 2.0), (3.0, 0.0), (1e-9, 0.0)] {
                assert_eq!(f.eval(a, b, r).value, 0.0, "{f:?} at ({a}, {b}), r {r}");
            }
            // Non-zeros: both positive, or one negative.
            for (a, b) in [(1.0, 1.0), (-1.0, 2.0), (2.0, -1.0), (-1.0, -1.0)] {
                assert!(f.eval(a, b, r).value != 0.0, "{f:?} at ({a}, {b})");
            }
        }
    }
    // Derivatives against central differences, away from the kinks.
    let mut rng = SplitMix64::new(3);
    for _ in 0..200 {
        let (a, b, r) = (rng.range(-2.0, 2.0), rng.range(-2.0, 2.0), rng.range(0.1, 3.0));
        for f in FUNCTIONS {
            if f == NcpFunction::MinMap && (a - r * b).abs() < 1e-3 {
                continue;
            }
            let v = f.eval(a, b, r);
            let h = 1e-6;
            let da = (f.eval(a + h, b, r).value - f.eval(a - h, b, r).value) / (2.0 * h);
            let db = (f.eval(a, b + h, r).value - f.eval(a, b - h, r).value) / (2.0 * h);
            assert!((v.da - da).abs() < 1e-8 && (v.db - db).abs() < 1e-8, "{f:?} at ({a}, {b}, {r})");
        }
    }
    // The origin: α = 0, β = 1 (∂ϕ/∂b = r), as the paper chooses.
    let o = NcpFunction::FischerBurmeister.eval(0.0, 0.0, 0.5);
    assert_eq!((o.value, o.da, o.db), (0.0, 0.0, 0.5));
    // Full relative accuracy far from the origin (no cancellation): ϕ = 2ab/(a+b+√(a²+b²)).
    let big = NcpFunction::FischerBurmeister.eval(1e8, 1e-8, 1.0).value;
    assert!((big - 1e-8).abs() < 1e-22, "{big:e}");
}

/// Newton's method on the scalar NCP `0 ≤ c(λ) ⊥ λ ≥ 0`, `c = λ/4 − 1/8`, with
/// `ϕ(c, r λ)`: the iterations to |ϕ| ≤ 1e-14 from `lambda0`, and the solution.
fn scalar_newton(f: NcpFunction, r: f64, lambda0: f64) -> (usize, f64) {
    let mut lambda = lambda0;
    for it in 0..50 {
        let c = lambda / 4.0 - 1.0 / 8.0;
        let v = f.eval(c, lambda, r);
        if v.value.abs() <= 1e-14 {
            return (it, lambda);
        }
        lambda -= v.value / (v.da / 4.0 + v.db);
    }
    (50, lambda)
}

#[test]
fn the_preconditioned_min_map_solves_one_constraint_in_one_newton_step() {
    // Fig. 9: with r = ∂c/∂λ = 1/4 (the row's Delassus diagonal) one step from any start.
    for lambda0 in [-10.0, -1.0, -0.1, 0.0, 0.3, 0.5, 7.0, 1e4] {
        let (its, lambda) = scalar_newton(NcpFunction::MinMap, 0.25, lambda0);
        assert!(its <= 1 && (lambda - 0.5).abs() < 1e-14, "from {lambda0}: {its} steps to {lambda}");
    }
    // Unpreconditioned (r = 1), a start on the other branch takes two.
    assert_eq!(scalar_newton(NcpFunction::MinMap, 1.0, -1.0).0, 2);
    // Fischer–Burmeister converges too (superlinearly, not in one step).
    let (its, lambda) = scalar_newton(NcpFunction::FischerBurmeister, 0.25, -1.0);
    assert!((lambda - 0.5).abs() < 1e-12 && its < 20, "{its} steps to {lambda}");
}

#[test]
fn a_sliding_particle_feels_mu_times_the_normal_force_against_its_motion() {
    // Fig. 6: u₀ = 0.5 m/s, λ_n = 10 N, μ = 0.5 → |λ_f| = 5 N against the motion. One
    // backward-Euler step of a 1 kg particle (h = 0.01 s: it keeps sliding), with the
    // friction row `u⁺ + W λ_f = 0` and W lagged, as the Newton iteration has it.
    let (m, h, u0, bound): (f64, f64, f64, f64) = (1.0, 0.01, 0.5, 0.5 * 10.0);
    let r = complementarity_scale(1.0 / m, h, false);
    for f in FUNCTIONS {
        let (mut u, mut lambda) = (u0, 0.0_f64);
        for _ in 0..200 {
            let w = match friction_compliance(f, u.abs(), lambda.abs(), bound, r) {
                FrictionCompliance::Active(w) => w,
                FrictionCompliance::Inactive => panic!("friction is active"),
            };
            // m (u − u₀)/h = λ and u + W λ = 0.
            lambda = -m * u0 / h / (1.0 + m * w / h);
            u = u0 + h * lambda / m;
        }
        assert!((lambda + 5.0).abs() < 1e-9, "{f:?}: λ_f = {lambda}");
        assert!((u - (u0 - h * 5.0 / m)).abs() < 1e-11, "{f:?}: u = {u}");
    }
    // A particle too slow to keep sliding sticks: u⁺ = 0 with |λ_f| < μ λ_n.
    let (u0, m): (f64, f64) = (0.01, 1.0);
    for f in FUNCTIONS {
        let (mut u, mut lambda) = (u0, 0.0_f64);
        for _ in 0..500 {
            let FrictionCompliance::Active(w) = friction_compliance(f, u.abs(), lambda.abs(), bound, r) else {
                panic!()
            };
            lambda = -m * u0 / h / (1.0 + m * w / h);
            u = u0 + h * lambda / m;
        }
        assert!(u.abs() < 1e-9 && (lambda + 1.0).abs() < 1e-6, "{f:?}: u = {u}, λ_f = {lambda}");
    }
    assert_eq!(friction_compliance(NcpFunction::MinMap, 1.0, 0.0, 0.0, r), FrictionCompliance::Inactive);
}

/// `J M⁻¹ Jᵀ` of `rows × dofs` rows on a body with a random SPD `M`.
fn delassus(j: &DMatrix<f64>, rng: &mut SplitMix64) -> DMatrix<f64> {
    let n = j.ncols();
    let b = DMatrix::from_fn(n, n, |_, _| rng.range(-1.0, 1.0));
    let m = &b * b.transpose() + DMatrix::identity(n, n) * 0.5;
    j * m.try_inverse().unwrap() * j.transpose()
}

fn monotone(residuals: &[f64]) -> bool {
    residuals.windows(2).all(|w| w[1] <= w[0] * (1.0 + 1e-12))
}

#[test]
fn conjugate_residuals_solve_schur_systems_with_a_monotone_residual() {
    let mut rng = SplitMix64::new(9);
    for (rows, dofs) in [(6, 12), (20, 12), (40, 30)] {
        let j = DMatrix::from_fn(rows, dofs, |_, _| rng.range(-1.0, 1.0));
        let a = delassus(&j, &mut rng);
        let compliance: Vec<f64> = (0..rows).map(|_| rng.range(0.0, 0.1)).collect();
        let op = DenseDelassus(a.clone());
        let schur = SchurOperator { delassus: &op, compliance: &compliance, shift: 1e-6 };
        let full = &a + DMatrix::from_diagonal(&DVector::from_iterator(rows, compliance.iter().map(|c| c + 1e-6)));
        let b: Vec<f64> = (0..rows).map(|_| rng.range(-1.0, 1.0)).collect();
        let want = full.clone().cholesky().unwrap().solve(&DVector::from_column_slice(&b));
        let diag: Vec<f64> = (0..rows).map(|i| a[(i, i)]).collect();
        let mut x = vec![0.0; rows];
        let report = pcr_solve(
            &schur,
            &schur.diagonal(&diag),
            &b,
            &mut x,
            &PcrOptions { max_iterations: 2000, tolerance: 1e-12 },
        )
        .unwrap();
        assert!(report.converged, "{rows}×{dofs}: {:?}", report.residuals.last());
        assert!(monotone(&report.residuals), "{rows}×{dofs}: residual grew");
        let err = (DVector::from_vec(x) - &want).amax() / want.amax();
        assert!(err < 1e-6, "{rows}×{dofs}: error {err:e} after {} iterations", report.iterations);
    }
}

#[test]
fn conjugate_residuals_converge_on_a_ring_of_contacts_under_a_cylinder() {
    // 32 contacts round the rim of a cylinder's base (radius 0.2 m, mass 2 kg): 32 normal
    // rows on its 6 dofs, rank 3 — a near-singular Schur matrix (shift 1e-6, no
    // compliance) for a right-hand side in the range of A (a consistent Newton step).
    let n = 32;
    let (mass, radius) = (2.0, 0.2);
    let inertia = [0.03, 0.03, 0.04];
    let j = DMatrix::from_fn(n, 6, |i, c| {
        let t = std::f64::consts::TAU * i as f64 / n as f64;
        let p = [radius * t.cos(), radius * t.sin(), -0.1];
        // Normal z at point p: [p × z; z] with the velocity [ω; v].
        match c {
            0 => p[1],
            1 => -p[0],
            5 => 1.0,
            _ => 0.0,
        }
    });
    let minv = DMatrix::from_diagonal(&DVector::from_vec(vec![
        1.0 / inertia[0],
        1.0 / inertia[1],
        1.0 / inertia[2],
        1.0 / mass,
        1.0 / mass,
        1.0 / mass,
    ]));
    let a = &j * minv * j.transpose();
    let op = DenseDelassus(a.clone());
    let compliance = vec![0.0; n];
    let schur = SchurOperator { delassus: &op, compliance: &compliance, shift: 1e-6 };
    let mut rng = SplitMix64::new(4);
    let x_true = DVector::from_fn(n, |_, _| rng.range(0.0, 1.0));
    let b: Vec<f64> = (&a * &x_true).iter().copied().collect();
    let diag: Vec<f64> = (0..n).map(|i| a[(i, i)]).collect();
    let mut x = vec![0.0; n];
    let report =
        pcr_solve(&schur, &schur.diagonal(&diag), &b, &mut x, &PcrOptions { max_iterations: 200, tolerance: 1e-8 })
            .unwrap();
    assert!(report.converged, "ring: {:?}", report.residuals.last());
    assert!(monotone(&report.residuals), "ring: residual grew");
    // The forces it finds balance the same wrench as the true ones (A x = b to tolerance).
    let ax = &a * DVector::from_column_slice(&x);
    let bb = DVector::from_column_slice(&b);
    assert!((ax - &bb).amax() < 1e-6 * bb.amax(), "ring: residual {:e}", report.residuals.last().unwrap());
    assert!(report.iterations < 50, "ring: {} iterations", report.iterations);
}

#[test]
fn conjugate_residuals_refuse_bad_input() {
    let op = DenseDelassus(DMatrix::identity(3, 3));
    let c = vec![0.0; 3];
    let schur = SchurOperator { delassus: &op, compliance: &c, shift: 0.0 };
    let mut x = vec![0.0; 3];
    assert!(pcr_solve(&schur, &[1.0; 2], &[1.0; 3], &mut x, &PcrOptions::default()).is_err());
    assert!(pcr_solve(&schur, &[1.0; 3], &[1.0, f64::NAN, 0.0], &mut x, &PcrOptions::default()).is_err());
    // The identity: one iteration.
    let r = pcr_solve(&schur, &[1.0; 3], &[1.0, 2.0, 3.0], &mut x, &PcrOptions::default()).unwrap();
    assert_eq!(r.iterations, 1);
    assert_eq!(x, [1.0, 2.0, 3.0]);
}
