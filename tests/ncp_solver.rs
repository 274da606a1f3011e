//! The non-smooth Newton NCP solver behind the constraint-stage interface
//! (`solver::ncp::NcpSolver`, issue #20): forces of closed-form cases (the paper's slider,
//! isotropy at 36 angles), agreement with the primal Newton solver on a box resting on
//! four corners (same velocity after the step), and its backward pass — `∂ℓ/∂b` and
//! `∂ℓ/∂A` against Ridders differences of the solution, sliding and sticking, inside one
//! contact mode.

mod common;
use common::ridders;
use nalgebra::{DMatrix, DVector, Vector3};
use stiction::math::SplitMix64;
use stiction::solver::lcp::RowBound;
use stiction::solver::ncp::{solve_ncp, LinearSolve, NcpFunction, NcpOptions, NcpProblem, NcpSolver};
use stiction::solver::{ConstraintProblem, ConstraintSolver, DenseDelassus};

const H: f64 = 0.01;
const G: f64 = 10.0;

/// Contacts as rows `[n; t1; t2]` per contact: `(A, b, bounds)` of `w = A f + b` for a body
/// of mass matrix `mass` with free velocity `v_free`, rows `j` (3 per contact).
fn dual(
    mass: &DMatrix<f64>,
    v_free: &DVector<f64>,
    j: &DMatrix<f64>,
    mu: f64,
) -> (DMatrix<f64>, DVector<f64>, Vec<RowBound>) {
    let a = j * mass.clone().try_inverse().unwrap() * j.transpose();
    let b = j * v_free;
    let k = j.nrows() / 3;
    let bounds = (0..3 * k)
        .map(|i| if i % 3 == 0 { RowBound::UNILATERAL } else { RowBound::Friction { normal: i - i % 3, mu } })
        .collect();
    (a, b, bounds)
}

fn particle(u: [f64; 2]) -> (DMatrix<f64>, DVector<f64>, DMatrix<f64>) {
    let j = DMatrix::from_row_slice(3, 3, &[0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
    (DMatrix::identity(3, 3), DVector::from_vec(vec![u[0], u[1], -G * H]), j)
}

fn solvers() -> Vec<NcpSolver> {
    let mut out = vec![];
    for function in [NcpFunction::MinMap, NcpFunction::FischerBurmeister] {
        for linear in [LinearSolve::Direct, LinearSolve::ConjugateResidual(40)] {
            out.push(NcpSolver { function, linear, ..Default::default() });
        }
    }
    out
}

#[test]
fn the_slider_and_isotropy_through_the_constraint_solver_interface() {
    for s in solvers() {
        let (m, v, j) = particle([0.5, 0.0]);
        let (a, b, bounds) = dual(&m, &v, &j, 0.5);
        let op = DenseDelassus(a);
        let sol = s.solve(&ConstraintProblem { delassus: &op, b: &b, bounds: &bounds }, None).unwrap();
        assert!(sol.report.converged, "{s:?}: residual {:e}", sol.report.residual);
        // Impulses: the weight's m g h and μ of it against the motion.
        assert!((sol.f[0] - G * H).abs() < 1e-10 && (sol.f[1] + 0.5 * G * H).abs() < 1e-10, "{s:?}: {}", sol.f);
    }
    let s = NcpSolver::default();
    let mut worst: f64 = 0.0;
    for k in 0..36 {
        let t = std::f64::consts::TAU * k as f64 / 36.0;
        let (m, v, j) = particle([0.5 * t.cos(), 0.5 * t.sin()]);
        let (a, b, bounds) = dual(&m, &v, &j, 0.5);
        let op = DenseDelassus(a);
        let sol = s.solve(&ConstraintProblem { delassus: &op, b: &b, bounds: &bounds }, None).unwrap();
        let (fx, fy) = (sol.f[1], sol.f[2]);
        worst = worst.max((fx * t.sin() - fy * t.cos()).atan2(-(fx * t.cos() + fy * t.sin())).abs());
        assert!((fx.hypot(fy) - 0.5 * G * H).abs() < 1e-10);
    }
    assert!(worst < 1e-6, "friction off the slip by {worst:e} rad");
}

/// A 2 kg box on its four bottom corners, rows `[n; t1; t2]` per corner, velocity `[ω; v]`.
fn box_rows() -> (DMatrix<f64>, DMatrix<f64>, DMatrix<f64>, DMatrix<f64>) {
    let (m, e) = (2.0, Vector3::new(0.2, 0.1, 0.05));
    let i = Vector3::new(e.y * e.y + e.z * e.z, e.x * e.x + e.z * e.z, e.x * e.x + e.y * e.y) * (m / 3.0);
    let mass = DMatrix::from_diagonal(&DVector::from_vec(vec![i.x, i.y, i.z, m, m, m]));
    let row = |p: Vector3<f64>, d: Vector3<f64>| {
        let a = p.cross(&d);
        [a.x, a.y, a.z, d.x, d.y, d.z]
    };
    let (mut all, mut normals, mut tangents) = (vec![], vec![], vec![]);
    for (sx, sy) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
        let p = Vector3::new(sx * e.x, sy * e.y, -e.z);
        for (d, list) in [(Vector3::z(), 0), (Vector3::x(), 1), (Vector3::y(), 1)] {
            all.extend(row(p, d));
            if list == 0 {
                normals.extend(row(p, d));
            } else {
                tangents.extend(row(p, d));
            }
        }
    }
    (
        mass,
        DMatrix::from_row_slice(12, 6, &all),
        DMatrix::from_row_slice(4, 6, &normals),
        DMatrix::from_row_slice(8, 6, &tangents),
    )
}

#[test]
fn the_dual_and_primal_solvers_give_the_same_step_on_a_box_on_four_corners() {
    let (mass, j, jn, jt) = box_rows();
    // Sticking, and sliding without spin: cases whose step is unique although the four
    // corners' forces are not (with spin, the friction torque depends on how the weight
    // is shared between the corners, which the rigid problem leaves open).
    for v_free in [[0.0, 0.0, 0.0, 0.01, 0.0, -G * H], [0.0, 0.0, 0.0, 2.0, -0.5, -G * H]] {
        let v_free = DVector::from_row_slice(&v_free);
        let primal = NcpProblem {
            mass: mass.clone(),
            free_velocity: v_free.clone(),
            normals: jn.clone(),
            tangents: jt.clone(),
            gaps: vec![0.0; 4],
            friction: vec![0.5; 4],
            h: H,
        };
        let p = solve_ncp(&primal, &NcpOptions { tolerance: 1e-12, max_iterations: 300, ..Default::default() }, None)
            .unwrap();
        assert!(p.converged);
        let (a, b, bounds) = dual(&mass, &v_free, &j, 0.5);
        let op = DenseDelassus(a);
        let d = NcpSolver::default().solve(&ConstraintProblem { delassus: &op, b: &b, bounds: &bounds }, None).unwrap();
        assert!(d.report.converged, "residual {:e}", d.report.residual);
        let v = &v_free + mass.clone().try_inverse().unwrap() * j.transpose() * &d.f;
        assert!((&v - &p.velocity).amax() < 1e-8, "dual {v} vs primal {}", p.velocity);
    }
}

/// `ℓ = gᵀ f(A, b)` and its gradient, against Ridders differences in b and in symmetric
/// perturbations of A.
fn check_vjp(a: &DMatrix<f64>, b: &DVector<f64>, bounds: &[RowBound], what: &str) {
    let s = NcpSolver {
        function: NcpFunction::FischerBurmeister,
        tolerance: 1e-14,
        max_iterations: 500,
        ..Default::default()
    };
    let m = b.len();
    let mut rng = SplitMix64::new(17);
    let g = DVector::from_fn(m, |_, _| rng.range(-1.0, 1.0));
    let solve = |a: &DMatrix<f64>, b: &DVector<f64>| {
        let op = DenseDelassus(a.clone());
        s.solve(&ConstraintProblem { delassus: &op, b, bounds }, None).unwrap()
    };
    let sol = solve(a, b);
    assert!(sol.report.converged, "{what}: residual {:e}", sol.report.residual);
    let op = DenseDelassus(a.clone());
    let cot = s.vjp(&ConstraintProblem { delassus: &op, b, bounds }, &sol, &g).unwrap();
    let ga = cot.a_dense();
    let loss = |a: &DMatrix<f64>, b: &DVector<f64>| DVector::from_vec(vec![g.dot(&solve(a, b).f)]);
    let scale = cot.b.amax().max(ga.amax());
    for i in 0..m {
        let fd = ridders(
            &|e: f64| {
                let mut bb = b.clone();
                bb[i] += e;
                loss(a, &bb)
            },
            1e-4,
        )
        .0[0];
        assert!((cot.b[i] - fd).abs() <= 1e-6 * scale, "{what}: ∂ℓ/∂b[{i}] {} vs {fd}", cot.b[i]);
    }
    for r in 0..m {
        for c in r..m {
            let fd = ridders(
                &|e: f64| {
                    let mut aa = a.clone();
                    aa[(r, c)] += e;
                    if r != c {
                        aa[(c, r)] += e;
                    }
                    loss(&aa, b)
                },
                1e-5,
            )
            .0[0];
            let analytic = if r == c { ga[(r, r)] } else { ga[(r, c)] + ga[(c, r)] };
            assert!((analytic - fd).abs() <= 1e-6 * scale, "{what}: ∂ℓ/∂A[{r},{c}] {analytic} vs {fd}");
        }
    }
}

#[test]
fn the_backward_pass_matches_ridders_differences_inside_a_mode() {
    // A sliding particle (a full-rank cone: f_t = −μ f_n ŵ).
    let (m, v, j) = particle([0.4, 0.3]);
    let (a, b, bounds) = dual(&m, &v, &j, 0.5);
    check_vjp(&a, &b, &bounds, "sliding particle");
    // A sticking particle (w = 0 on all three rows).
    let (m, v, j) = particle([0.01, -0.02]);
    let (a, b, bounds) = dual(&m, &v, &j, 0.5);
    check_vjp(&a, &b, &bounds, "sticking particle");
    // A rod (6 dofs) on two contacts at its ends, sliding and turning: 6 rows, full rank.
    let mass = DMatrix::from_diagonal(&DVector::from_vec(vec![0.02, 0.5, 0.5, 3.0, 3.0, 3.0]));
    let row = |p: Vector3<f64>, d: Vector3<f64>| {
        let c = p.cross(&d);
        [c.x, c.y, c.z, d.x, d.y, d.z]
    };
    let mut rows = vec![];
    for p in [Vector3::new(-0.5, 0.0, -0.05), Vector3::new(0.5, 0.02, -0.05)] {
        for d in [Vector3::z(), Vector3::x(), Vector3::y()] {
            rows.extend(row(p, d));
        }
    }
    let j = DMatrix::from_row_slice(6, 6, &rows);
    let v = DVector::from_vec(vec![0.0, 0.0, 0.8, 0.3, 0.2, -G * H]);
    let (a, b, bounds) = dual(&mass, &v, &j, 0.4);
    check_vjp(&a, &b, &bounds, "sliding rod");
    // A separating contact: no force, and no gradient through it.
    let (m, mut v, j) = particle([0.3, 0.0]);
    v[2] = 0.2;
    let (a, b, bounds) = dual(&m, &v, &j, 0.5);
    check_vjp(&a, &b, &bounds, "separating particle");
}

#[test]
fn malformed_problems_are_errors() {
    let (m, v, j) = particle([0.5, 0.0]);
    let (a, b, mut bounds) = dual(&m, &v, &j, 0.5);
    bounds[1] = RowBound::Friction { normal: 2, mu: 0.5 };
    let op = DenseDelassus(a.clone());
    assert!(NcpSolver::default().solve(&ConstraintProblem { delassus: &op, b: &b, bounds: &bounds }, None).is_err());
    let short = DVector::from_vec(vec![0.0; 2]);
    assert!(NcpSolver::default()
        .solve(&ConstraintProblem { delassus: &op, b: &short, bounds: &bounds }, None)
        .is_err());
}

/// Four particles stacked on the ground, bottom to top 32768, 2048, 128 and 8 kg (a
/// 4096:1 mass ratio), resting: rows `[n; t1; t2]` per contact (ground–0, 0–1, 1–2, 2–3).
fn heavy_stack() -> (DMatrix<f64>, DVector<f64>, Vec<RowBound>, Vec<f64>) {
    let masses = [32768.0, 2048.0, 128.0, 8.0];
    let mass = DMatrix::from_diagonal(&DVector::from_iterator(12, masses.iter().flat_map(|&m| [m; 3])));
    let mut j = DMatrix::zeros(12, 12);
    for c in 0..4 {
        for d in 0..3 {
            let axis = [2, 0, 1][d]; // normal z, then tangents x, y
            j[(3 * c + d, 3 * c + axis)] = 1.0; // the upper particle c
            if c > 0 {
                j[(3 * c + d, 3 * (c - 1) + axis)] = -1.0; // minus the one below
            }
        }
    }
    let v_free = DVector::from_iterator(12, (0..12).map(|i| if i % 3 == 2 { -G * H } else { 0.0 }));
    let (a, b, bounds) = dual(&mass, &v_free, &j, 0.5);
    // Each contact carries the weight above it: the impulses of the resting stack.
    let carried = (0..4).map(|c| masses[c..].iter().sum::<f64>() * G * H).collect();
    (a, b, bounds, carried)
}

#[test]
fn a_heavy_stack_rests_with_conjugate_residuals_and_the_complementarity_preconditioner() {
    // The paper's claim (§7, digest-000 §10.4): the 4096:1 stack is solved with PCR and
    // r = A_ii per row. (Its other half, that r = 1 fails, does not reproduce here: with
    // exact Newton steps on this stack r = 1 converges too; docs/ncp.md.)
    let (a, b, bounds, carried) = heavy_stack();
    let op = DenseDelassus(a);
    let problem = ConstraintProblem { delassus: &op, b: &b, bounds: &bounds };
    for linear in [LinearSolve::Direct, LinearSolve::ConjugateResidual(40)] {
        let s = NcpSolver {
            function: NcpFunction::MinMap,
            linear,
            max_iterations: 60,
            tolerance: 1e-9,
            ..Default::default()
        };
        let sol = s.solve(&problem, None).unwrap();
        assert!(sol.report.converged, "{linear:?}: residual {:e}", sol.report.residual);
        for c in 0..4 {
            let rel = (sol.f[3 * c] - carried[c]).abs() / carried[c];
            assert!(rel < 1e-8, "{linear:?}: contact {c} carries {} of {}", sol.f[3 * c], carried[c]);
        }
        assert!(sol.w.iter().step_by(3).all(|w| w.abs() < 1e-9), "{linear:?}: the stack moves: {}", sol.w);
    }
}

/// The problems of `tests/fixtures/ncp/box_push_cycling.json`: `(A, b, bounds)` each.
fn cycling_problems() -> Vec<(DMatrix<f64>, DVector<f64>, Vec<RowBound>)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ncp/box_push_cycling.json");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let reals =
        |v: &serde_json::Value| -> Vec<f64> { v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect() };
    doc["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let rows: Vec<Vec<f64>> = p["a"].as_array().unwrap().iter().map(reals).collect();
            let m = rows.len();
            let a = DMatrix::from_fn(m, m, |i, j| rows[i][j]);
            let bounds = p["bounds"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| match x["normal"].as_u64() {
                    Some(normal) => RowBound::Friction { normal: normal as usize, mu: x["mu"].as_f64().unwrap() },
                    None => RowBound::UNILATERAL,
                })
                .collect();
            (a, DVector::from_vec(reals(&p["b"])), bounds)
        })
        .collect()
}

/// The largest violation of Coulomb's law with maximal dissipation by `(f, w)` on rows
/// `[n; t1; t2]` per contact (velocity units for velocities, impulse for forces).
fn coulomb_violation(f: &DVector<f64>, w: &DVector<f64>, mu: f64) -> f64 {
    let mut worst: f64 = 0.0;
    for c in 0..f.len() / 3 {
        let (fn_, wn) = (f[3 * c], w[3 * c]);
        let (ft, wt) = (Vector3::new(f[3 * c + 1], f[3 * c + 2], 0.0), Vector3::new(w[3 * c + 1], w[3 * c + 2], 0.0));
        worst = worst.max(-fn_).max(-wn).max((fn_ * wn).abs());
        worst = worst.max(ft.norm() - mu * fn_);
        if wt.norm() > 1e-9 {
            // Sliding: the friction impulse is μ f_n against the slip.
            worst = worst.max((ft + wt.normalize() * mu * fn_).norm());
        }
    }
    worst
}

#[test]
fn where_newton_cycles_the_gauss_seidel_fallback_finds_the_coulomb_solution() {
    let problems = cycling_problems();
    assert_eq!(problems.len(), 4);
    for (p, (a, b, bounds)) in problems.iter().enumerate() {
        let op = DenseDelassus(a.clone());
        let problem = ConstraintProblem { delassus: &op, b, bounds };
        // The plain iteration (the paper's fixed damping and lagged friction compliance,
        // without the fallback) cycles: it ends far above its tolerance.
        let plain = NcpSolver { fallback_sweeps: 0, ..Default::default() }.solve(&problem, None).unwrap();
        assert!(!plain.report.converged && plain.report.residual > 1e-6, "problem {p}: {:e}", plain.report.residual);
        assert_eq!(plain.report.fallbacks, 0);
        // With the fallback (the default) the solution meets the tolerance and Coulomb's law,
        // and the fallback is reported.
        let sol = NcpSolver::default().solve(&problem, None).unwrap();
        assert!(sol.report.converged, "problem {p}: residual {:e}", sol.report.residual);
        assert_eq!(sol.report.fallbacks, 1, "problem {p}");
        let violation = coulomb_violation(&sol.f, &sol.w, 0.3);
        assert!(violation < 1e-10, "problem {p}: Coulomb's law violated by {violation:e}");
        // The box slides (|w_t| ≈ 0.1 m/s at its corners), so the law's sliding branch is checked.
        assert!((1..5).any(|c| sol.w.rows(3 * c + 1, 2).norm() > 1e-2), "problem {p}: {}", sol.w);
    }
}

#[test]
fn a_newton_budget_below_the_stall_window_never_falls_back() {
    for (p, (a, b, bounds)) in cycling_problems().iter().enumerate() {
        let op = DenseDelassus(a.clone());
        let problem = ConstraintProblem { delassus: &op, b, bounds };
        // A fixed budget (the paper's 4 Newton iterations of the table pile) is taken as
        // asked: the iterate is returned, inexact, with no Gauss–Seidel sweep.
        // So is any budget below the stall window, though the solver's two Newton runs (to
        // the coarse tolerance, then to the tolerance) may together exceed it.
        for max_iterations in [4, stiction::solver::ncp::dual::STALL_WINDOW - 1] {
            let capped = NcpSolver { max_iterations, ..Default::default() };
            let sol = capped.solve(&problem, None).unwrap();
            assert!(
                !sol.report.converged && sol.report.fallbacks == 0,
                "problem {p}, {max_iterations}: {:?}",
                sol.report
            );
        }
    }
}
