//! Integration tests of the boxed LCP layer (`stiction::solver::lcp`): brute-force enumeration of
//! complementary bases for frictionless problems, the LCP conditions for boxed and friction rows, the
//! DiffDART App. A.1 standardized (minimum-norm) solution and its determinism, warm starts, islands, bad
//! input and a point mass on a plane with Coulomb friction.

use nalgebra::{DMatrix, DVector};
use stiction::math::SplitMix64;
use stiction::solver::lcp::{
    self, classify, dantzig, lemke, residual, solve, standardize, BoxedLcp, LcpOptions, RowBound, RowState, SolvePath,
};
use stiction::Error;

// ---------------------------------------------------------------------------------------------------
// Problem generators
// ---------------------------------------------------------------------------------------------------

fn random_matrix(rng: &mut SplitMix64, r: usize, c: usize) -> DMatrix<f64> {
    DMatrix::from_fn(r, c, |_, _| rng.normal())
}

/// A random symmetric positive definite `n × n` matrix with condition number of order 10–100.
fn random_spd(rng: &mut SplitMix64, n: usize) -> DMatrix<f64> {
    let b = random_matrix(rng, n, n);
    &b * b.transpose() + DMatrix::identity(n, n) * (0.1 * n as f64)
}

/// `A = J M⁻¹ Jᵀ` (positive semi-definite, rank ≤ min(m, n)) and `J`.
fn delassus(rng: &mut SplitMix64, m: usize, n: usize) -> (DMatrix<f64>, DMatrix<f64>, DMatrix<f64>) {
    let j = random_matrix(rng, m, n);
    let mass = random_spd(rng, n);
    let minv = mass.clone().try_inverse().unwrap();
    let a = &j * &minv * j.transpose();
    let a = (&a + a.transpose()) * 0.5;
    (a, j, mass)
}

/// Frictionless unilateral problem with `b = J v_free + slack` (slack ≥ 0), always feasible (v = 0 is).
fn random_unilateral(rng: &mut SplitMix64, m: usize, n: usize) -> BoxedLcp {
    let (a, j, _) = delassus(rng, m, n);
    let v = DVector::from_fn(n, |_, _| rng.normal());
    let mut b = &j * v;
    for i in 0..m {
        if rng.uniform() < 0.3 {
            b[i] += rng.uniform();
        }
    }
    BoxedLcp::new(a, b, vec![RowBound::UNILATERAL; m]).unwrap()
}

/// `contacts` contacts (normal + 2 friction rows each) and `boxes` constant-box rows on `n` dofs.
fn random_friction(rng: &mut SplitMix64, contacts: usize, boxes: usize, n: usize) -> BoxedLcp {
    let m = 3 * contacts + boxes;
    let (a, j, _) = delassus(rng, m, n);
    let v = DVector::from_fn(n, |_, _| rng.normal());
    let b = &j * v;
    let mut bounds = Vec::with_capacity(m);
    for c in 0..contacts {
        let mu = rng.range(0.1, 1.2);
        bounds.push(RowBound::UNILATERAL);
        bounds.push(RowBound::Friction { normal: 3 * c, mu });
        bounds.push(RowBound::Friction { normal: 3 * c, mu });
    }
    for _ in 0..boxes {
        bounds.push(RowBound::Box { lo: -rng.range(0.0, 2.0), hi: rng.range(0.0, 2.0) });
    }
    BoxedLcp::new(a, b, bounds).unwrap()
}

/// A box of mass `mass` resting on the plane z = 0 on its 4 bottom corners: 4 normals + 8 friction rows
/// on 6 dofs (rank 6 of 12), free velocity `v_free` = [ω; v].
fn box_on_plane(mass: f64, mu: f64, v_free: [f64; 6]) -> BoxedLcp {
    let (hx, hy, hz) = (0.3, 0.2, 0.1);
    let inertia =
        [mass / 3.0 * (hy * hy + hz * hz), mass / 3.0 * (hx * hx + hz * hz), mass / 3.0 * (hx * hx + hy * hy)];
    let mut minv = DMatrix::zeros(6, 6);
    for k in 0..3 {
        minv[(k, k)] = 1.0 / inertia[k];
        minv[(3 + k, 3 + k)] = 1.0 / mass;
    }
    let mut j = DMatrix::zeros(12, 6);
    let mut bounds = Vec::new();
    let mut row = 0;
    for (sx, sy) in [(1.0, 1.0), (-1.0, 1.0), (-1.0, -1.0), (1.0, -1.0)] {
        let p = nalgebra::Vector3::new(sx * hx, sy * hy, -hz);
        for (k, d) in [nalgebra::Vector3::z(), nalgebra::Vector3::x(), nalgebra::Vector3::y()].iter().enumerate() {
            let ang = p.cross(d);
            for c in 0..3 {
                j[(row, c)] = ang[c];
                j[(row, 3 + c)] = d[c];
            }
            bounds.push(if k == 0 { RowBound::UNILATERAL } else { RowBound::Friction { normal: row - k, mu } });
            row += 1;
        }
    }
    let a = &j * &minv * j.transpose();
    let b = &j * DVector::from_row_slice(&v_free);
    BoxedLcp::new(a, b, bounds).unwrap()
}

// ---------------------------------------------------------------------------------------------------
// Independent checks
// ---------------------------------------------------------------------------------------------------

fn max_diag(a: &DMatrix<f64>) -> f64 {
    (0..a.nrows()).fold(0.0f64, |m, i| m.max(a[(i, i)].abs())).max(1e-300)
}

/// Checks every LCP condition to the relative tolerance `tol` (written independently of `residual`).
fn assert_lcp_conditions(p: &BoxedLcp, f: &DVector<f64>, w: &DVector<f64>, tol: f64, what: &str) {
    let m = p.b.len();
    assert_eq!(f.len(), m, "{what}: f length");
    let d = max_diag(&p.a);
    let sw = p.b.amax().max(d * f.amax()).max(1e-300);
    let (ew, ef) = (tol * sw, tol * sw / d);
    let w_true = &p.a * f + &p.b;
    for i in 0..m {
        assert!((w[i] - w_true[i]).abs() <= ew, "{what}: row {i}: w = {} but A f + b = {}", w[i], w_true[i]);
        let (lo, hi) = match p.bounds[i] {
            RowBound::Box { lo, hi } => (lo, hi),
            RowBound::Friction { normal, mu } => (-mu * f[normal].max(0.0), mu * f[normal].max(0.0)),
        };
        assert!(f[i] >= lo - ef && f[i] <= hi + ef, "{what}: row {i}: f = {} outside [{lo}, {hi}]", f[i]);
        let at_lo = f[i] <= lo + ef;
        let at_hi = f[i] >= hi - ef;
        let wi = w_true[i];
        let ok = (at_lo && wi >= -ew) || (at_hi && wi <= ew) || wi.abs() <= ew;
        assert!(ok, "{what}: row {i}: f = {} in [{lo}, {hi}] with w = {wi} (tolerance {ew})", f[i]);
    }
}

fn pinv_solve(k: &DMatrix<f64>, r: &DVector<f64>) -> DVector<f64> {
    if k.is_empty() {
        return DVector::zeros(0);
    }
    let svd = k.clone().svd(true, true);
    let smax = svd.singular_values.max();
    let pinv = svd.pseudo_inverse(1e-12 * smax).unwrap();
    pinv * r
}

/// All complementary bases of a standard LCP, solved with a pseudo-inverse; the `w` of the first valid.
fn brute_force_w(a: &DMatrix<f64>, b: &DVector<f64>) -> Option<DVector<f64>> {
    let m = b.len();
    let scale = b.amax().max(1e-300);
    for mask in 0u32..(1 << m) {
        let c: Vec<usize> = (0..m).filter(|i| mask >> i & 1 == 1).collect();
        let k = c.len();
        let mut f = DVector::zeros(m);
        if k > 0 {
            let acc = DMatrix::from_fn(k, k, |r, s| a[(c[r], c[s])]);
            let rhs = DVector::from_fn(k, |r, _| -b[c[r]]);
            let fc = pinv_solve(&acc, &rhs);
            for (r, &i) in c.iter().enumerate() {
                f[i] = fc[r];
            }
        }
        let w = a * &f + b;
        let ok = (0..m).all(|i| {
            if mask >> i & 1 == 1 {
                f[i] >= -1e-9 * scale && w[i].abs() <= 1e-9 * scale
            } else {
                w[i] >= -1e-9 * scale
            }
        });
        if ok {
            return Some(w);
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------------

#[test]
fn frictionless_unilateral_matches_brute_force_lemke_and_dantzig() {
    let mut rng = SplitMix64::new(11);
    let mut compared = 0;
    for trial in 0..300 {
        let m = 1 + (rng.next_u64() % 8) as usize;
        let n = 1 + (rng.next_u64() % 8) as usize;
        let p = random_unilateral(&mut rng, m, n);
        let reference = brute_force_w(&p.a, &p.b).expect("feasible by construction");
        let scale = p.b.amax().max(1e-300);
        let close = |w: &DVector<f64>, what: &str| {
            let err = (w - &reference).amax();
            assert!(err <= 1e-7 * scale, "trial {trial} (m={m}, n={n}) {what}: |w - w_ref| = {err:e}");
        };
        for standardize in [true, false] {
            let options = LcpOptions { standardize, ..LcpOptions::default() };
            let sol = solve(&p, &options, None).unwrap();
            close(&sol.w, "solve");
            assert_lcp_conditions(&p, &sol.f, &sol.w, 1e-9, &format!("trial {trial} std={standardize}"));
            assert!(sol.stats.residual <= 1e-9, "trial {trial}: residual {}", sol.stats.residual);
        }
        let lk = lemke::solve_standard(&p.a, &p.b, 10_000).unwrap();
        close(&lk.w, "Lemke");
        let dz = dantzig::solve_box(&p.a, &p.b, &vec![0.0; m], &vec![f64::INFINITY; m], 1e-10, 10_000).unwrap();
        close(&dz.w, "Dantzig");
        assert!((&lk.w - &dz.w).amax() <= 1e-7 * scale, "trial {trial}: Lemke and Dantzig disagree");
        compared += 1;
    }
    assert_eq!(compared, 300);
}

#[test]
fn boxed_and_friction_rows_satisfy_all_conditions() {
    let mut rng = SplitMix64::new(23);
    let mut paths = std::collections::HashMap::new();
    let mut not_standardized = 0;
    for trial in 0..200 {
        let contacts = 1 + (rng.next_u64() % 4) as usize;
        let boxes = (rng.next_u64() % 3) as usize;
        let n = 2 + (rng.next_u64() % 10) as usize;
        let p = random_friction(&mut rng, contacts, boxes, n);
        for standardize in [true, false] {
            let options = LcpOptions { standardize, ..LcpOptions::default() };
            let sol = solve(&p, &options, None).unwrap();
            *paths.entry((standardize, sol.stats.path)).or_insert(0) += 1;
            let what = format!("trial {trial} (contacts {contacts}, boxes {boxes}, n {n}) std={standardize}");
            if std::env::var("LCP_DUMP").is_ok() && sol.stats.residual > 1e-9 {
                eprintln!("A = {:?}\nb = {:?}\nbounds = {:?}", p.a.as_slice(), p.b.as_slice(), p.bounds);
            }
            assert_lcp_conditions(&p, &sol.f, &sol.w, 1e-9, &format!("{what} {:?}", sol.stats));
            assert!(sol.stats.residual <= 1e-9, "{what}: residual {:e} stats {:?}", sol.stats.residual, sol.stats);
            assert_eq!(sol.states.len(), p.b.len());
            if sol.stats.standardized {
                assert_min_norm(&p, &sol.f, &sol.states, &what);
            } else if standardize {
                not_standardized += 1;
            }
        }
    }
    eprintln!("paths: {paths:?}, not standardized: {not_standardized}");
    // Heavily rank-deficient random problems (up to 14 rows on 2 dofs) can have no standardized solution
    // for any classification the pipeline tries; they must stay rare and are reported, never hidden.
    assert!(not_standardized <= 10, "{not_standardized} of 200 not standardized");
    // Dantzig (with its friction fix-point and the standardization) must do almost all of the work.
    let pgs: usize = paths.iter().filter(|((_, path), _)| *path == SolvePath::Pgs).map(|(_, c)| c).sum();
    assert!(pgs <= 8, "too many PGS fallbacks: {paths:?}");
}

/// The standardized `f_C` equals the pseudo-inverse solution of the reduced system built here.
fn assert_min_norm(p: &BoxedLcp, f: &DVector<f64>, states: &[RowState], what: &str) {
    let m = p.b.len();
    let c: Vec<usize> = (0..m).filter(|&i| states[i] == RowState::Clamping).collect();
    let k = c.len();
    let mut f_u0 = DVector::zeros(m);
    let mut e = DMatrix::zeros(m, k); // f_U = E f_C + f_U0 on the U rows
    for i in 0..m {
        if let RowState::AtBound { sign } = states[i] {
            match p.bounds[i] {
                RowBound::Box { lo, hi } => f_u0[i] = if sign < 0 { lo } else { hi },
                RowBound::Friction { normal, mu } => {
                    if let Some(pos) = c.iter().position(|&x| x == normal) {
                        e[(i, pos)] = f64::from(sign) * mu;
                    }
                }
            }
        }
    }
    let a_c = DMatrix::from_fn(k, m, |r, j| p.a[(c[r], j)]);
    let selector = DMatrix::from_fn(m, k, |i, r| if c[r] == i { 1.0 } else { 0.0 });
    let kmat = &a_c * (&selector + &e);
    let rhs = -(DVector::from_fn(k, |r, _| p.b[c[r]]) + &a_c * &f_u0);
    let fc = pinv_solve(&kmat, &rhs);
    let scale = f.amax().max(p.b.amax() / max_diag(&p.a));
    for (r, &i) in c.iter().enumerate() {
        assert!((f[i] - fc[r]).abs() <= 1e-8 * scale, "{what}: f_C[{i}] = {} vs pseudo-inverse {}", f[i], fc[r]);
    }
    for i in 0..m {
        if matches!(states[i], RowState::Separating | RowState::Tied) {
            assert_eq!(f[i], 0.0, "{what}: row {i} in S/T has f = {}", f[i]);
        }
    }
}

#[test]
fn paper_duplicate_contacts_split_the_force_evenly() {
    // App. A.1: a box that cannot rotate on two contacts with identical normals (A rank one).
    let g = 9.81;
    let p =
        BoxedLcp::new(DMatrix::from_element(2, 2, 1.0), DVector::from_element(2, -g), vec![RowBound::UNILATERAL; 2])
            .unwrap();
    let sol = solve(&p, &LcpOptions::default(), None).unwrap();
    assert!(sol.stats.standardized);
    assert!((sol.f[0] - g / 2.0).abs() < 1e-12 && (sol.f[1] - g / 2.0).abs() < 1e-12, "f = {}", sol.f);
    assert_eq!(sol.states, vec![RowState::Clamping; 2]);
    // The raw pivoting answer puts all the force on one contact; both are solutions.
    let raw = solve(&p, &LcpOptions { standardize: false, ..LcpOptions::default() }, None).unwrap();
    assert!(!raw.stats.standardized);
    assert!((raw.f.sum() - g).abs() < 1e-12);
    assert!(raw.f[0] != raw.f[1]);
}

#[test]
fn rank_deficient_box_is_deterministic_cold_and_warm() {
    let v_free = [0.0, 0.0, 0.0, 0.05, 0.0, -9.81 * 0.01];
    for mu in [0.0, 0.2, 1.0] {
        let p = box_on_plane(3.0, mu, v_free);
        let options = LcpOptions::default();
        let first = solve(&p, &options, None).unwrap();
        assert_lcp_conditions(&p, &first.f, &first.w, 1e-9, "box");
        assert!(first.stats.standardized, "{:?}", first.stats);
        // Contacts mirrored in y carry equal forces (the min-norm solution keeps the symmetry of the
        // problem), the normals sum to m g h, and without friction all four are equal.
        let normals: Vec<f64> = (0..4).map(|c| first.f[3 * c]).collect();
        assert!((normals.iter().sum::<f64>() - 3.0 * 9.81 * 0.01).abs() < 1e-10, "{normals:?}");
        for (c, mirror) in [(0, 3), (1, 2)] {
            assert!((first.f[3 * c] - first.f[3 * mirror]).abs() < 1e-10, "mu {mu}: {}", first.f);
            assert!((first.f[3 * c + 1] - first.f[3 * mirror + 1]).abs() < 1e-10, "mu {mu}: {}", first.f);
            assert!((first.f[3 * c + 2] + first.f[3 * mirror + 2]).abs() < 1e-10, "mu {mu}: {}", first.f);
        }
        if mu == 0.0 {
            assert!(normals.iter().all(|v| (v - normals[0]).abs() < 1e-10), "normals {normals:?}");
        }
        for _ in 0..3 {
            let again = solve(&p, &options, None).unwrap();
            assert_eq!(again.f, first.f, "repeated solve differs");
        }
        let warm = solve(&p, &options, Some(&first.states)).unwrap();
        assert!(warm.stats.warm_start_hit && warm.stats.path == SolvePath::WarmStart);
        assert_eq!(warm.f, first.f, "warm start differs from cold start");
        // Row order must not matter either: reverse the contacts.
        let perm: Vec<usize> = (0..12).map(|i| (3 - i / 3) * 3 + i % 3).collect();
        let a = DMatrix::from_fn(12, 12, |r, c| p.a[(perm[r], perm[c])]);
        let b = DVector::from_fn(12, |r, _| p.b[perm[r]]);
        let bounds = (0..12)
            .map(|r| match p.bounds[perm[r]] {
                RowBound::Friction { mu, .. } => RowBound::Friction { normal: r - r % 3, mu },
                other => other,
            })
            .collect();
        let q = BoxedLcp::new(a, b, bounds).unwrap();
        let permuted = solve(&q, &options, None).unwrap();
        for r in 0..12 {
            assert!((permuted.f[r] - first.f[perm[r]]).abs() < 1e-10, "mu {mu}: row order changes f");
        }
    }
}

#[test]
fn warm_start_hits_after_small_changes_and_misses_after_large_ones() {
    // A sliding box: contact manifold with clamping normals and friction at its bound.
    let p = box_on_plane(3.0, 0.3, [0.0, 0.0, 0.1, 0.2, 0.05, -0.0981]);
    let options = LcpOptions::default();
    let cold = solve(&p, &options, None).unwrap();
    assert!(cold.states.iter().any(|s| matches!(s, RowState::AtBound { .. })), "{:?}", cold.states);
    // Row 5 (the second corner's y friction) is degenerate: at its bound with exactly zero slip (that edge
    // sticks in y), which the solver classifies as clamping (the largest clamping set).
    assert_eq!(cold.states[5], RowState::Clamping, "{:?}", cold.states);
    // Physical perturbations (of the free velocity, so b stays in the range of J) keep the mode: the guess
    // is exact, no pivot, and the answer equals the cold solve of the perturbed problem.
    let mut rng = SplitMix64::new(7);
    for _ in 0..20 {
        let mut v = [0.0, 0.0, 0.1, 0.2, 0.05, -0.0981];
        for x in v.iter_mut() {
            *x += 1e-7 * rng.normal();
        }
        let q = box_on_plane(3.0, 0.3, v);
        let warm = solve(&q, &options, Some(&cold.states)).unwrap();
        let cold_q = solve(&q, &options, None).unwrap();
        assert!(warm.stats.warm_start_attempted && warm.stats.warm_start_hit, "{:?}", warm.stats);
        assert_eq!(warm.stats.path, SolvePath::WarmStart);
        assert_eq!(warm.stats.pivots, 0);
        assert_eq!(cold_q.states, cold.states);
        assert!((&warm.f - &cold_q.f).amax() < 1e-12, "warm {} cold {}", warm.f, cold_q.f);
    }
    // A perturbation of b alone that pushes the degenerate row's slip outward (w[5] > 0) breaks the mode:
    // the guess misses, the answer is still right.
    let mut broken = p.clone();
    broken.b[5] += 1e-7;
    let miss = solve(&broken, &options, Some(&cold.states)).unwrap();
    assert!(miss.stats.warm_start_attempted && !miss.stats.warm_start_hit, "{:?}", miss.stats);
    assert_lcp_conditions(&broken, &miss.f, &miss.w, 1e-9, "mode-breaking perturbation");

    // Random friction problems: small perturbations hit (almost always), results equal cold solves.
    let mut rng = SplitMix64::new(5);
    let (mut hits, mut total) = (0, 0);
    for _ in 0..50 {
        let p = random_friction(&mut rng, 3, 1, 6);
        let cold = solve(&p, &options, None).unwrap();
        let mut q = p.clone();
        for v in q.b.iter_mut() {
            *v *= 1.0 + 1e-7 * rng.normal();
        }
        let warm = solve(&q, &options, Some(&cold.states)).unwrap();
        let cold_q = solve(&q, &options, None).unwrap();
        assert_lcp_conditions(&q, &warm.f, &warm.w, 1e-9, &format!("warm {:?} cold {:?}", warm.stats, cold.stats));
        total += 1;
        if warm.stats.warm_start_hit {
            hits += 1;
            if cold_q.states == warm.states {
                assert!((&warm.f - &cold_q.f).amax() <= 1e-12 * (1.0 + cold_q.f.amax()));
            }
        }
        // A large change: the guess is wrong, the answer still right.
        let mut r = p.clone();
        r.b = -&p.b * 2.0 + DVector::from_fn(p.b.len(), |_, _| rng.normal());
        let sol = solve(&r, &options, Some(&cold.states)).unwrap();
        assert_lcp_conditions(&r, &sol.f, &sol.w, 1e-9, "large change");
        assert!(sol.stats.warm_start_attempted);
    }
    assert!(hits * 10 >= total * 9, "warm start hit only {hits} of {total}");

    // The large change from the box: the box lifts off, the guess must miss.
    let mut lift = p.clone();
    lift.b = -&lift.b;
    let sol = solve(&lift, &options, Some(&cold.states)).unwrap();
    assert!(!sol.stats.warm_start_hit && sol.stats.path != SolvePath::WarmStart);
    assert_eq!(sol.f, DVector::zeros(12));
}

#[test]
fn block_diagonal_problem_is_split_into_islands() {
    let mut rng = SplitMix64::new(99);
    let p1 = random_friction(&mut rng, 2, 1, 5);
    let p2 = random_friction(&mut rng, 3, 0, 4);
    let (m1, m2) = (p1.b.len(), p2.b.len());
    let m = m1 + m2;
    // Interleave: the second block's rows go first.
    let mut a = DMatrix::zeros(m, m);
    a.view_mut((m2, m2), (m1, m1)).copy_from(&p1.a);
    a.view_mut((0, 0), (m2, m2)).copy_from(&p2.a);
    let mut b = DVector::zeros(m);
    b.rows_mut(m2, m1).copy_from(&p1.b);
    b.rows_mut(0, m2).copy_from(&p2.b);
    let shift = |bd: &RowBound, s: usize| match *bd {
        RowBound::Friction { normal, mu } => RowBound::Friction { normal: normal + s, mu },
        other => other,
    };
    let bounds: Vec<RowBound> =
        p2.bounds.iter().map(|x| shift(x, 0)).chain(p1.bounds.iter().map(|x| shift(x, m2))).collect();
    let whole = BoxedLcp::new(a, b, bounds).unwrap();
    let options = LcpOptions::default();
    let sol = solve(&whole, &options, None).unwrap();
    let s1 = solve(&p1, &options, None).unwrap();
    let s2 = solve(&p2, &options, None).unwrap();
    assert!(sol.stats.islands >= 2, "{:?}", sol.stats);
    assert_eq!(sol.stats.islands, s1.stats.islands + s2.stats.islands);
    assert_eq!(sol.f.rows(m2, m1).clone_owned(), s1.f);
    assert_eq!(sol.f.rows(0, m2).clone_owned(), s2.f);
    assert_eq!(&sol.states[m2..], &s1.states[..]);
    assert_eq!(&sol.states[..m2], &s2.states[..]);
    let islands = lcp::islands::split(&whole);
    for island in &islands {
        assert!(island.iter().all(|&i| i < m2) || island.iter().all(|&i| i >= m2));
    }
}

/// The island split equals the connected components of its coupling graph computed by brute force
/// (every pair, union–find): random sparse patterns of `A` (symmetric and one-sided entries), friction
/// rows tied to their normals, one dense island and a diagonal matrix. The islands are ordered by their
/// first row and list their rows in increasing order.
#[test]
fn island_split_is_the_components_of_the_coupling_graph() {
    fn components(a: &DMatrix<f64>, bounds: &[RowBound]) -> Vec<Vec<usize>> {
        let m = bounds.len();
        let mut label: Vec<usize> = (0..m).collect();
        // Relabel until stable: the smallest row of each component.
        loop {
            let mut changed = false;
            for i in 0..m {
                for j in 0..m {
                    let friction = matches!(bounds[i], RowBound::Friction { normal, .. } if normal == j);
                    if (a[(i, j)] != 0.0 || friction) && label[i] != label[j] {
                        let l = label[i].min(label[j]);
                        label[i] = l;
                        label[j] = l;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        let mut out: Vec<Vec<usize>> = Vec::new();
        for i in 0..m {
            match out.iter_mut().find(|c| label[c[0]] == label[i]) {
                Some(c) => c.push(i),
                None => out.push(vec![i]),
            }
        }
        out
    }
    let mut rng = SplitMix64::new(123);
    for trial in 0..200 {
        let m = 1 + trial % 37;
        let density = [0.0, 0.02, 0.05, 0.1, 0.3, 1.0][trial % 6];
        let mut a = DMatrix::<f64>::zeros(m, m);
        for i in 0..m {
            a[(i, i)] = 1.0;
            for j in 0..m {
                if i != j && rng.range(0.0, 1.0) < density {
                    a[(i, j)] = rng.range(-1.0, 1.0);
                    if trial % 2 == 0 {
                        a[(j, i)] = a[(i, j)];
                    }
                }
            }
        }
        // Every third row a friction row of the unilateral row before it.
        let bounds: Vec<RowBound> = (0..m)
            .map(|i| if i % 3 == 2 { RowBound::Friction { normal: i - 1, mu: 0.5 } } else { RowBound::UNILATERAL })
            .collect();
        let problem = BoxedLcp::new(a.clone(), DVector::zeros(m), bounds.clone()).unwrap();
        assert_eq!(
            lcp::islands::split(&problem),
            components(&a, &bounds),
            "trial {trial} (m = {m}, density {density})"
        );
    }
}

#[test]
fn bad_input_is_rejected() {
    let a = DMatrix::<f64>::identity(3, 3);
    let b = DVector::from_element(3, -1.0);
    let uni = vec![RowBound::UNILATERAL; 3];
    let friction = vec![RowBound::UNILATERAL, RowBound::Friction { normal: 0, mu: 0.5 }, RowBound::UNILATERAL];
    assert!(BoxedLcp::new(a.clone(), b.clone(), friction.clone()).is_ok());

    let mut nan_a = a.clone();
    nan_a[(1, 2)] = f64::NAN;
    assert!(matches!(BoxedLcp::new(nan_a, b.clone(), uni.clone()), Err(Error::NonFinite { .. })));
    let mut inf_b = b.clone();
    inf_b[0] = f64::INFINITY;
    assert!(matches!(BoxedLcp::new(a.clone(), inf_b, uni.clone()), Err(Error::NonFinite { .. })));
    assert!(matches!(BoxedLcp::new(a.clone(), DVector::zeros(2), uni.clone()), Err(Error::Dimension { .. })));
    assert!(matches!(BoxedLcp::new(DMatrix::zeros(3, 2), b.clone(), uni.clone()), Err(Error::Dimension { .. })));
    assert!(matches!(BoxedLcp::new(a.clone(), b.clone(), uni[..2].to_vec()), Err(Error::Dimension { .. })));
    let bad =
        |bounds: Vec<RowBound>| matches!(BoxedLcp::new(a.clone(), b.clone(), bounds), Err(Error::InvalidInput(_)));
    let box_row = RowBound::Box { lo: -1.0, hi: 1.0 };
    assert!(bad(vec![box_row, RowBound::Friction { normal: 0, mu: 0.5 }, box_row]), "normal not unilateral");
    assert!(bad(vec![RowBound::UNILATERAL, RowBound::Friction { normal: 0, mu: -0.1 }, box_row]), "negative mu");
    assert!(bad(vec![RowBound::UNILATERAL, RowBound::Friction { normal: 0, mu: f64::NAN }, box_row]), "NaN mu");
    assert!(bad(vec![RowBound::UNILATERAL, RowBound::Friction { normal: 7, mu: 0.5 }, box_row]), "index");
    assert!(bad(vec![RowBound::UNILATERAL, RowBound::Friction { normal: 1, mu: 0.5 }, box_row]), "self");
    assert!(bad(vec![
        RowBound::UNILATERAL,
        RowBound::Friction { normal: 0, mu: 0.5 },
        RowBound::Friction { normal: 1, mu: 0.5 }
    ]));
    assert!(bad(vec![RowBound::Box { lo: 0.5, hi: 1.0 }, box_row, box_row]), "lo > 0");
    assert!(bad(vec![RowBound::Box { lo: -1.0, hi: -0.5 }, box_row, box_row]), "hi < 0");
    assert!(bad(vec![RowBound::Box { lo: f64::NAN, hi: 1.0 }, box_row, box_row]), "NaN bound");

    // Fields are public: solve re-validates.
    let mut p = BoxedLcp::new(a.clone(), b.clone(), friction.clone()).unwrap();
    p.b[1] = f64::NAN;
    assert!(matches!(solve(&p, &LcpOptions::default(), None), Err(Error::NonFinite { .. })));
    p.b[1] = 0.0;
    p.bounds[1] = RowBound::Friction { normal: 2, mu: -1.0 };
    assert!(matches!(solve(&p, &LcpOptions::default(), None), Err(Error::InvalidInput(_))));
    p.bounds = friction.clone();
    p.a = DMatrix::zeros(2, 2);
    assert!(matches!(solve(&p, &LcpOptions::default(), None), Err(Error::Dimension { .. })));
    assert!(standardize(&p, &[RowState::Clamping; 3], 1e-10).is_none());
    p.a = a.clone();
    // Warm start and options.
    assert!(matches!(solve(&p, &LcpOptions::default(), Some(&[RowState::Clamping; 2])), Err(Error::Dimension { .. })));
    for tolerance in [f64::NAN, 0.0, -1.0, f64::INFINITY] {
        let options = LcpOptions { tolerance, ..LcpOptions::default() };
        assert!(matches!(solve(&p, &options, None), Err(Error::InvalidInput(_))));
    }
    // The free functions do not panic on mismatched sizes.
    assert!(classify(&p, &DVector::zeros(2), &DVector::zeros(3), 1e-10).is_empty());
    assert_eq!(residual(&p, &DVector::zeros(2), &DVector::zeros(3)), f64::INFINITY);
    assert!(standardize(&p, &[RowState::Clamping; 2], 1e-10).is_none());
    assert!(standardize(&p, &[RowState::AtBound { sign: 3 }; 3], 1e-10).is_none());
    assert!(dantzig::solve_box(&a, &b, &[0.0; 2], &[1.0; 3], 1e-10, 100).is_err());
    assert!(dantzig::solve_box(&a, &b, &[0.5; 3], &[1.0; 3], 1e-10, 100).is_err());
    assert!(lemke::solve_standard(&a, &DVector::zeros(2), 100).is_err());
    // The empty problem is fine.
    let empty = BoxedLcp::new(DMatrix::zeros(0, 0), DVector::zeros(0), vec![]).unwrap();
    let sol = solve(&empty, &LcpOptions::default(), None).unwrap();
    assert_eq!(sol.stats.path, SolvePath::Empty);
    assert!(sol.f.is_empty());
    // An infeasible problem (opposing normals pushed together through a rigid link) returns finite
    // values and reports its residual instead of failing silently.
    let inf = BoxedLcp::new(
        DMatrix::from_row_slice(2, 2, &[1.0, -1.0, -1.0, 1.0]),
        DVector::from_element(2, -1.0),
        vec![RowBound::UNILATERAL; 2],
    )
    .unwrap();
    let sol = solve(&inf, &LcpOptions::default(), None).unwrap();
    assert_eq!(sol.stats.path, SolvePath::Pgs);
    assert!(sol.stats.fallbacks >= 2, "{:?}", sol.stats);
    assert!(sol.stats.residual > 1e-3 && sol.f.iter().all(|v| v.is_finite()));
}

#[test]
fn point_mass_on_plane_sticks_below_and_slides_above_the_friction_cone() {
    let (mass, h, g, mu) = (2.0, 0.01, 9.81, 0.5);
    let a = DMatrix::identity(3, 3) / mass;
    let bounds = vec![RowBound::UNILATERAL, RowBound::Friction { normal: 0, mu }, RowBound::Friction { normal: 0, mu }];
    let fn_expected = mass * g * h;
    for (push, sticks) in [(0.5, true), (0.99, true), (1.01, false), (3.0, false)] {
        let force = push * mu * mass * g; // horizontal push along x
        let b = DVector::from_row_slice(&[-g * h, force * h / mass, 0.0]);
        let p = BoxedLcp::new(a.clone(), b, bounds.clone()).unwrap();
        for standardize in [true, false] {
            let options = LcpOptions { standardize, ..LcpOptions::default() };
            let sol = solve(&p, &options, None).unwrap();
            assert_lcp_conditions(&p, &sol.f, &sol.w, 1e-12, "point mass");
            assert!((sol.f[0] - fn_expected).abs() < 1e-12, "normal impulse {}", sol.f[0]);
            assert_eq!(sol.states[0], RowState::Clamping);
            assert_eq!(sol.states[2], RowState::Clamping, "y friction holds with zero force");
            assert!(sol.f[2].abs() < 1e-15 && sol.w[2].abs() < 1e-15);
            if sticks {
                assert!((sol.f[1] + force * h).abs() < 1e-12, "stick: f_t = {}", sol.f[1]);
                assert!(sol.w[1].abs() < 1e-12, "stick: tangential velocity {}", sol.w[1]);
                assert_eq!(sol.states[1], RowState::Clamping);
            } else {
                assert!((sol.f[1] + mu * sol.f[0]).abs() < 1e-12, "slide: f_t = {} f_n = {}", sol.f[1], sol.f[0]);
                let v_t = (force - mu * mass * g) * h / mass;
                assert!((sol.w[1] - v_t).abs() < 1e-12, "slide: v_t = {} expected {v_t}", sol.w[1]);
                assert_eq!(sol.states[1], RowState::AtBound { sign: -1 });
            }
        }
    }
    // In the air (b_n > 0) nothing acts; the friction rows' bounds are both zero.
    let p = BoxedLcp::new(a, DVector::from_row_slice(&[0.1, 0.3, 0.0]), bounds).unwrap();
    let sol = solve(&p, &LcpOptions::default(), None).unwrap();
    assert_eq!(sol.f, DVector::zeros(3));
    assert_eq!(sol.states, vec![RowState::Separating, RowState::Separating, RowState::Tied]);
}

#[test]
fn classify_and_residual_on_hand_made_points() {
    let a = DMatrix::identity(4, 4);
    let bounds = vec![
        RowBound::UNILATERAL,
        RowBound::Friction { normal: 0, mu: 1.0 },
        RowBound::Box { lo: -1.0, hi: 2.0 },
        RowBound::UNILATERAL,
    ];
    let p = BoxedLcp::new(a, DVector::from_row_slice(&[-1.0, 2.0, -5.0, 0.0]), bounds).unwrap();
    // f = (1, -1, 2, 0): normal clamped, friction at -μ f_n, box at hi, last tied.
    let f = DVector::from_row_slice(&[1.0, -1.0, 2.0, 0.0]);
    let w = &p.a * &f + &p.b;
    assert_eq!(w, DVector::from_row_slice(&[0.0, 1.0, -3.0, 0.0]));
    assert_eq!(residual(&p, &f, &w), 0.0);
    assert_eq!(
        classify(&p, &f, &w, 1e-10),
        vec![RowState::Clamping, RowState::AtBound { sign: -1 }, RowState::AtBound { sign: 1 }, RowState::Tied]
    );
    let states = classify(&p, &f, &w, 1e-10);
    let (fs, ws) = standardize(&p, &states, 1e-12).unwrap();
    assert_eq!(fs, f);
    assert_eq!(ws, w);
    // A wrong classification is rejected: the friction row at its upper bound has w > 0.
    let mut wrong = states.clone();
    wrong[1] = RowState::AtBound { sign: 1 };
    assert!(standardize(&p, &wrong, 1e-8).is_none());
    // Violations are measured: a force outside its box, a w inconsistent with f.
    let mut g = f.clone();
    g[2] = 2.5;
    assert!(residual(&p, &g, &(&p.a * &g + &p.b)) > 0.05);
    let mut v = w.clone();
    v[0] = 0.5;
    assert!(residual(&p, &f, &v) > 0.05);
    let mut nan = f.clone();
    nan[0] = f64::NAN;
    assert_eq!(residual(&p, &nan, &w), f64::INFINITY);
}

#[test]
fn an_accepted_warm_start_never_reports_friction_at_its_bound_beside_a_non_clamping_normal() {
    // A sliding box lifting off (b = −b of a sliding contact: every normal separates). The guess
    // keeps the friction rows at their bounds but marks the normals separating: standardize gives
    // those friction rows f = 0 (collapsed boxes), a valid solution, so the guess is accepted —
    // and the returned states must not keep friction rows at a bound of a non-clamping normal.
    let p = box_on_plane(3.0, 0.3, [0.0, 0.0, 0.0, 0.2, 0.05, -0.0981]);
    let options = LcpOptions::default();
    let mut lift = p.clone();
    lift.b = -&lift.b;
    let sliding = solve(&p, &options, None).unwrap();
    let guess: Vec<RowState> =
        sliding.states.iter().enumerate().map(|(i, s)| if i % 3 == 0 { RowState::Separating } else { *s }).collect();
    assert!(guess.iter().any(|s| matches!(s, RowState::AtBound { .. })), "{guess:?}");
    let sol = solve(&lift, &options, Some(&guess)).unwrap();
    assert!(sol.stats.warm_start_hit, "{:?}", sol.stats);
    assert_eq!(sol.f, DVector::zeros(12));
    for (i, s) in sol.states.iter().enumerate() {
        if let (RowState::AtBound { .. }, RowBound::Friction { normal, .. }) = (s, lift.bounds[i]) {
            panic!("row {i} at its bound with normal {normal} in state {:?}", sol.states[normal]);
        }
    }
}

/// Lemke's method on the standard form of a boxed LCP with friction (`standard_form`:
/// slacks for the friction boxes and the finite boxes, split variables for the two-sided
/// rows) solves every random friction problem exactly, with no fix-point on the friction
/// bounds: the forces read back satisfy every condition of the boxed problem (checked by
/// `assert_lcp_conditions`, written independently of the solver).
#[test]
fn lemke_on_the_standard_form_solves_friction_and_box_rows_exactly() {
    use lcp::standard_form::StandardForm;
    let mut rng = SplitMix64::new(41);
    let mut sliding = 0;
    for trial in 0..300 {
        let contacts = 1 + (rng.next_u64() % 5) as usize;
        let boxes = (rng.next_u64() % 3) as usize;
        let n = 2 + (rng.next_u64() % 12) as usize;
        let mut p = random_friction(&mut rng, contacts, boxes, n);
        // A bilateral row (−∞, ∞) on some trials: f = p − n with no slack.
        if boxes > 0 && rng.uniform() < 0.3 {
            let last = p.b.len() - 1;
            p.bounds[last] = RowBound::Box { lo: f64::NEG_INFINITY, hi: f64::INFINITY };
        }
        let standard = StandardForm::new(&p);
        let out = lemke::solve_standard(&standard.m, &standard.q, 100 * standard.len() + 100)
            .unwrap_or_else(|e| panic!("trial {trial}: {e}"));
        let f = standard.forces(&out.f);
        let w = &p.a * &f + &p.b;
        assert_lcp_conditions(&p, &f, &w, 1e-9, &format!("trial {trial} (contacts {contacts}, boxes {boxes}, n {n})"));
        let states = classify(&p, &f, &w, 1e-9);
        sliding += states.iter().any(|s| matches!(s, RowState::AtBound { .. })) as usize;
    }
    // The friction boxes were exercised: many solutions slide (a row at its bound).
    assert!(sliding >= 50, "only {sliding} of 300 solutions have a row at its bound");
}

/// With the friction fix-point of Dantzig cut to one pass (the friction bounds stay at
/// zero, so every sliding problem fails there), the pipeline falls back to Lemke on the
/// standard form, which returns an exact (and standardized) solution, not PGS.
#[test]
fn when_the_friction_fix_point_fails_lemke_solves_exactly() {
    let mut rng = SplitMix64::new(43);
    let options = LcpOptions { friction_iterations: 1, ..LcpOptions::default() };
    let mut lemke_solves = 0;
    for trial in 0..100 {
        let contacts = 1 + (rng.next_u64() % 4) as usize;
        let n = 3 + (rng.next_u64() % 10) as usize;
        let p = random_friction(&mut rng, contacts, 0, n);
        let sol = solve(&p, &options, None).unwrap();
        assert_ne!(sol.stats.path, SolvePath::Pgs, "trial {trial}: {:?}", sol.stats);
        assert!(sol.stats.residual <= options.tolerance, "trial {trial}: {:?}", sol.stats);
        assert_lcp_conditions(&p, &sol.f, &sol.w, 1e-9, &format!("trial {trial}"));
        if sol.stats.path == SolvePath::Lemke {
            lemke_solves += 1;
            assert!(sol.stats.fallbacks >= 1, "trial {trial}: a Lemke solve is a counted fallback");
        }
    }
    assert!(lemke_solves >= 20, "only {lemke_solves} of 100 problems needed the fallback");
}

/// An infeasible problem (two opposing rows of one dof, both asking to separate: no
/// velocity satisfies both) has no solution: the exact methods fail, and the pipeline
/// returns the last-resort PGS result with its residual above the tolerance (reported,
/// never silent). The constraint stage relaxes such problems (tests/infeasible_rows.rs).
#[test]
fn an_infeasible_problem_is_reported_by_its_residual() {
    let a = DMatrix::from_row_slice(2, 2, &[1.0, -1.0, -1.0, 1.0]);
    let b = DVector::from_vec(vec![-0.5, -0.5]);
    let p = BoxedLcp::new(a, b, vec![RowBound::UNILATERAL; 2]).unwrap();
    let sol = solve(&p, &LcpOptions::default(), None).unwrap();
    assert_eq!(sol.stats.path, SolvePath::Pgs);
    assert!(sol.stats.residual > LcpOptions::default().tolerance, "{:?}", sol.stats);
    assert!(sol.f.iter().chain(sol.w.iter()).all(|x| x.is_finite()));
}

/// A problem carrying its factor `A = L Lᵀ` ([`BoxedLcp::with_factor`]) gives the solution of
/// the same problem without it: a body (random inertia) landing on 12–20 random points of a
/// plane (`3c` rows of rank 6), sticking (μ = 1.5) and sliding (μ = 0.1), so that the standardized solves of clamping sets of at least
/// `lcp::FACTORED_MIN_ROWS` rows go through the factor (symmetric, and with friction rows at
/// their bounds). Same classification, forces to 1e-8 of their scale, every LCP condition;
/// cold and warm-started from the solution's own states.
#[test]
fn factor_gives_the_same_solution() {
    let mut rng = SplitMix64::new(41);
    let mut factored_sizes = 0;
    for trial in 0..24 {
        // A body (6 dofs, a random inertia) on `contacts` points of the plane z = 0 under it.
        let (contacts, d) = (12 + trial % 9, 6);
        let m = 3 * contacts;
        let mu = if trial % 2 == 0 { 1.5 } else { 0.1 };
        let mut j = DMatrix::zeros(m, d);
        let mut bounds = Vec::with_capacity(m);
        for c in 0..contacts {
            let p = nalgebra::Vector3::new(rng.range(-0.3, 0.3), rng.range(-0.2, 0.2), -0.1);
            for (k, dir) in [nalgebra::Vector3::z(), nalgebra::Vector3::x(), nalgebra::Vector3::y()].iter().enumerate()
            {
                let ang = p.cross(dir);
                for e in 0..3 {
                    j[(3 * c + k, e)] = ang[e];
                    j[(3 * c + k, 3 + e)] = dir[e];
                }
                bounds.push(if k == 0 { RowBound::UNILATERAL } else { RowBound::Friction { normal: 3 * c, mu } });
            }
        }
        let mut mass = DMatrix::identity(d, d) * rng.range(0.5, 2.0);
        mass.view_mut((0, 0), (3, 3)).copy_from(&(random_spd(&mut rng, 3) * 0.02));
        let chol = mass.clone().cholesky().unwrap();
        // L = J C⁻ᵀ with M = C Cᵀ, so A = L Lᵀ = J M⁻¹ Jᵀ.
        let l = chol.l().solve_lower_triangular(&j.transpose()).unwrap().transpose();
        let a = &l * l.transpose();
        // Falling onto the plane, sliding along x.
        let v = DVector::from_row_slice(&[0.0, 0.0, 0.0, 1.0, 0.0, -2.0]);
        let b = &j * v;
        let plain = BoxedLcp::new(a.clone(), b.clone(), bounds.clone()).unwrap();
        let with = BoxedLcp::new(a, b, bounds).unwrap().with_factor(l).unwrap();
        let opts = LcpOptions::default();
        let p = solve(&plain, &opts, None).unwrap();
        assert_lcp_conditions(&plain, &p.f, &p.w, 1e-9, "plain");
        let clamping = p.states.iter().filter(|s| **s == RowState::Clamping).count();
        if clamping >= lcp::FACTORED_MIN_ROWS && clamping > d {
            factored_sizes += 1;
        }
        for warm in [None, Some(p.states.clone())] {
            let p = solve(&plain, &opts, warm.as_deref()).unwrap();
            let q = solve(&with, &opts, warm.as_deref()).unwrap();
            assert_eq!(q.states, p.states, "trial {trial}: classification");
            let scale = p.f.amax().max(1.0);
            assert!((&q.f - &p.f).amax() <= 1e-8 * scale, "trial {trial}: forces differ by {:e}", (&q.f - &p.f).amax());
            assert_lcp_conditions(&with, &q.f, &q.w, 1e-9, "factored");
        }
    }
    assert!(factored_sizes >= 12, "only {factored_sizes} problems reached the factored solves");
    // The factor is checked: rows and finiteness.
    let plain = box_on_plane(1.0, 0.5, [0.0; 6]);
    let bad = plain.clone().with_factor(DMatrix::zeros(5, 3));
    assert!(matches!(bad, Err(Error::Dimension { .. })), "{bad:?}");
    let mut nan = DMatrix::zeros(12, 3);
    nan[(4, 1)] = f64::NAN;
    assert!(matches!(plain.with_factor(nan), Err(Error::NonFinite { .. })));
}

#[test]
fn a_cold_solve_tries_every_row_clamping_first() {
    // A box resting on four corners (b = J v_free with v_free the fall of one step): the
    // guess "every row clamping" is the solution, found without pivoting, and it is the
    // minimum-norm one (the weight spread over the four redundant corners); Dantzig's
    // standardized solution (the same problem with standardization compared below) agrees.
    let (g, h) = (9.81, 0.01);
    let p = box_on_plane(2.0, 0.5, [0.0, 0.0, 0.0, 0.0, 0.0, -g * h]);
    let sol = solve(&p, &LcpOptions::default(), None).unwrap();
    assert_eq!(sol.stats.path, SolvePath::FirstGuess);
    assert_eq!((sol.stats.pivots, sol.stats.fallbacks), (0, 0));
    assert!(!sol.stats.warm_start_attempted && !sol.stats.warm_start_hit && sol.stats.standardized);
    assert_eq!(sol.states, vec![RowState::Clamping; 12]);
    assert_lcp_conditions(&p, &sol.f, &sol.w, 1e-12, "resting box");
    for corner in 0..4 {
        assert!((sol.f[3 * corner] - 2.0 * g * h / 4.0).abs() < 1e-14, "corner {corner}: {}", sol.f[3 * corner]);
    }
    assert_min_norm(&p, &sol.f, &sol.states, "resting box");
    // Sliding (a friction row at its bound) or lifting off (separating rows): the guess
    // misses, and pivoting solves; the result is the one without the guess (standardization
    // off skips it) up to the minimum-norm choice.
    for (v_free, what) in [([0.0, 0.0, 0.0, 2.0, 0.0, -g * h], "sliding"), ([0.0, 0.0, 0.0, 0.0, 0.0, 0.1], "lifting")]
    {
        let p = box_on_plane(2.0, 0.5, v_free);
        let sol = solve(&p, &LcpOptions::default(), None).unwrap();
        assert_ne!(sol.stats.path, SolvePath::FirstGuess, "{what}");
        assert!(sol.stats.path == SolvePath::Dantzig && sol.stats.standardized, "{what}: {:?}", sol.stats);
        assert_lcp_conditions(&p, &sol.f, &sol.w, 1e-12, what);
        let plain = solve(&p, &LcpOptions { standardize: false, ..LcpOptions::default() }, None).unwrap();
        assert!((&plain.w - &sol.w).amax() < 1e-12, "{what}: velocities {} against {}", plain.w, sol.w);
    }
    // The first guess needs standardization: without it the path is pivoting.
    let plain = solve(&p, &LcpOptions { standardize: false, ..LcpOptions::default() }, None).unwrap();
    assert_eq!(plain.stats.path, SolvePath::Dantzig);
}

/// `LcpOptions::work_limit` bounds an island's search after its guesses, and says so. The
/// default limit never binds on small problems: their solutions equal those of an unbounded
/// search, forces, states and statistics alike. A limit that nothing fits leaves the first
/// guess (not charged) or the last resort, PGS, with no pivots, no standardized solve, the
/// island counted in `work_limited` and the residual of the returned forces reported.
#[test]
fn the_work_limit_bounds_the_search_and_is_reported() {
    let mut rng = SplitMix64::new(47);
    let unbounded = LcpOptions { work_limit: f64::INFINITY, ..LcpOptions::default() };
    let starved = LcpOptions { work_limit: 1.0, ..LcpOptions::default() };
    let (mut pgs, mut guessed) = (0, 0);
    for trial in 0..100 {
        let contacts = 1 + (rng.next_u64() % 4) as usize;
        let n = 3 + (rng.next_u64() % 10) as usize;
        let p = random_friction(&mut rng, contacts, (trial % 2) as usize, n);
        let default = solve(&p, &LcpOptions::default(), None).unwrap();
        let free = solve(&p, &unbounded, None).unwrap();
        assert_eq!(default, free, "trial {trial}");
        assert_eq!(default.stats.work_limited, 0, "trial {trial}");
        let s = solve(&p, &starved, None).unwrap();
        assert!(s.f.iter().chain(s.w.iter()).all(|v| v.is_finite()), "trial {trial}");
        match s.stats.path {
            SolvePath::FirstGuess | SolvePath::Empty => {
                guessed += 1;
                assert_eq!(s, default, "trial {trial}: the guess is not charged");
            }
            SolvePath::Pgs => {
                pgs += 1;
                let st = &s.stats;
                assert_eq!((st.work_limited, st.fallbacks, st.pivots), (1, 2, 0), "trial {trial}: {st:?}");
                assert!(!st.standardized, "trial {trial}");
                assert_eq!(st.residual, residual(&p, &s.f, &s.w), "trial {trial}");
            }
            other => panic!("trial {trial}: path {other:?} with a limit nothing fits"),
        }
    }
    assert!(pgs >= 30, "{pgs} PGS results, {guessed} guesses");
    let p = random_friction(&mut rng, 2, 0, 6);
    for bad in [0.0, -1.0, f64::NAN] {
        let options = LcpOptions { work_limit: bad, ..LcpOptions::default() };
        assert!(matches!(solve(&p, &options, None), Err(Error::InvalidInput(_))), "work_limit {bad}");
    }
}

/// A frictionless problem whose `A` is positive definite (`J M⁻¹ Jᵀ + R`, `R > 0`, as in
/// the contact stage's position stage) has one solution: marked
/// ([`BoxedLcp::with_positive_definite`]), Dantzig's valid result is accepted as standardized
/// without solving a reduced system. The solution and its classification are those of the
/// standardized search, and the search is charged its pivots alone: a work limit that fits
/// exactly those pivots leaves the marked problem unlimited, while the same problem unmarked
/// runs out before its first standardized solve.
#[test]
fn a_positive_definite_frictionless_problem_skips_the_reduced_solves() {
    let mut rng = SplitMix64::new(53);
    let options = LcpOptions::default();
    let mut dantzig_solved = 0;
    for trial in 0..200 {
        let m = 3 + (rng.next_u64() % 12) as usize;
        let n = 2 + (rng.next_u64() % 8) as usize;
        let (mut a, j, _) = delassus(&mut rng, m, n);
        for i in 0..m {
            a[(i, i)] += rng.range(1e-3, 1e-1);
        }
        let v = DVector::from_fn(n, |_, _| rng.normal());
        let mut b = &j * v;
        let bounds: Vec<RowBound> = (0..m)
            .map(|i| {
                b[i] += if rng.uniform() < 0.3 { rng.uniform() } else { 0.0 };
                if i % 5 == 4 {
                    RowBound::Box { lo: -rng.range(0.0, 2.0), hi: rng.range(0.0, 2.0) }
                } else {
                    RowBound::UNILATERAL
                }
            })
            .collect();
        let plain = BoxedLcp::new(a, b, bounds).unwrap();
        let marked = plain.clone().with_positive_definite();
        assert!(marked.unique() && !plain.unique(), "trial {trial}");
        let s_plain = solve(&plain, &options, None).unwrap();
        let s = solve(&marked, &options, None).unwrap();
        assert!(s.stats.standardized && s.stats.residual <= options.tolerance, "trial {trial}: {:?}", s.stats);
        assert_eq!(s.states, s_plain.states, "trial {trial}");
        let scale = 1.0 + s_plain.f.amax();
        assert!((&s.f - &s_plain.f).amax() <= 1e-9 * scale, "trial {trial}: {} vs {}", s.f, s_plain.f);
        if s.stats.path != SolvePath::Dantzig {
            assert_eq!(s, s_plain, "trial {trial}: the guess does not depend on the mark");
            continue;
        }
        if s.stats.pivots == 0 {
            continue; // every row separating: nothing to charge
        }
        dantzig_solved += 1;
        let pivots = s.stats.pivots as f64;
        let m2 = (m * m) as f64;
        let exact = LcpOptions { work_limit: (pivots + 0.5) * m2, ..options };
        assert_eq!(solve(&marked, &exact, None).unwrap(), s, "trial {trial}: only the pivots are charged");
        let starved = solve(&plain, &exact, None).unwrap();
        assert_eq!(starved.stats.work_limited, 1, "trial {trial}: {:?}", starved.stats);
        assert!(!starved.stats.standardized, "trial {trial}");
    }
    assert!(dantzig_solved >= 50, "{dantzig_solved} problems reached Dantzig");
}
