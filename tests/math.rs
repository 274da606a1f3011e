//! Spatial algebra: transforms, inertia, and the SO(3)/SE(3) exponential, logarithm
//! and Jacobians checked against finite differences (central and Ridders).

mod common;
use common::{central, rel_err, ridders};
use nalgebra::DVector;
use stiction::math::*;

fn rand_vec(rng: &mut SplitMix64, s: f64) -> Vec3 {
    Vec3::new(rng.range(-s, s), rng.range(-s, s), rng.range(-s, s))
}

fn rand_pose(rng: &mut SplitMix64) -> SE3 {
    SE3::new(so3_exp(&rand_vec(rng, 2.0)), rand_vec(rng, 1.0))
}

#[test]
fn transform_actions_match_matrix_forms() {
    let mut rng = SplitMix64::new(11);
    for _ in 0..50 {
        let x = rand_pose(&mut rng);
        let m = Motion::new(rand_vec(&mut rng, 1.0), rand_vec(&mut rng, 1.0));
        let f = Force::new(rand_vec(&mut rng, 1.0), rand_vec(&mut rng, 1.0));
        let xm = x.action_matrix();
        assert!((x.act_motion(&m).to_vector() - xm * m.to_vector()).amax() < 1e-14);
        // force transform is X⁻ᵀ
        let xf = xm.try_inverse().unwrap().transpose();
        assert!((x.act_force(&f).to_vector() - xf * f.to_vector()).amax() < 1e-13);
        assert!((x.inv_act_motion(&x.act_motion(&m)) - m).norm() < 1e-14);
        assert!((x.inv_act_force(&x.act_force(&f)) - f).norm() < 1e-14);
        // power is frame invariant
        assert!((x.act_motion(&m).dot(&x.act_force(&f)) - m.dot(&f)).abs() < 1e-13);
        let y = rand_pose(&mut rng);
        let p = rand_vec(&mut rng, 1.0);
        assert!(((x * y).act_point(&p) - x.act_point(&y.act_point(&p))).amax() < 1e-14);
        assert!((x.inverse().act_point(&x.act_point(&p)) - p).amax() < 1e-14);
    }
}

#[test]
fn cross_products_match_matrix_forms() {
    let mut rng = SplitMix64::new(12);
    let v = Motion::new(rand_vec(&mut rng, 1.0), rand_vec(&mut rng, 1.0));
    let m = Motion::new(rand_vec(&mut rng, 1.0), rand_vec(&mut rng, 1.0));
    let f = Force::new(rand_vec(&mut rng, 1.0), rand_vec(&mut rng, 1.0));
    let mut crm = Mat6::zeros();
    crm.fixed_view_mut::<3, 3>(0, 0).copy_from(&skew(&v.ang));
    crm.fixed_view_mut::<3, 3>(3, 3).copy_from(&skew(&v.ang));
    crm.fixed_view_mut::<3, 3>(3, 0).copy_from(&skew(&v.lin));
    assert!((v.cross_motion(&m).to_vector() - crm * m.to_vector()).amax() < 1e-15);
    // ×* = −(×)ᵀ
    assert!((v.cross_force(&f).to_vector() + crm.transpose() * f.to_vector()).amax() < 1e-15);
}

#[test]
fn inertia_transform_matches_congruence() {
    let mut rng = SplitMix64::new(13);
    for _ in 0..30 {
        let i = Inertia::from_com(
            rng.range(0.5, 3.0),
            rand_vec(&mut rng, 0.3),
            Mat3::from_diagonal(&Vec3::new(0.3, 0.4, 0.5)),
        );
        let x = rand_pose(&mut rng);
        let xinv = x.action_matrix().try_inverse().unwrap();
        let expected = xinv.transpose() * i.to_matrix() * xinv;
        assert!((i.transformed(&x).to_matrix() - expected).amax() < 1e-12);
        assert!((x.act_inertia_matrix(&i.to_matrix()) - expected).amax() < 1e-12);
        let v = Motion::new(rand_vec(&mut rng, 1.0), rand_vec(&mut rng, 1.0));
        assert!((i.mul_motion(&v).to_vector() - i.to_matrix() * v.to_vector()).amax() < 1e-14);
        assert!((i.inertia_about_com() - Mat3::from_diagonal(&Vec3::new(0.3, 0.4, 0.5))).amax() < 1e-14);
    }
}

#[test]
fn so3_exp_log_round_trip_including_near_zero_and_pi() {
    let mut rng = SplitMix64::new(14);
    let mut cases: Vec<Vec3> = (0..100).map(|_| rand_vec(&mut rng, 1.8)).collect();
    cases.push(Vec3::new(1e-9, -2e-9, 3e-10));
    cases.push(Vec3::zeros());
    cases.push(Vec3::new(0.0, 0.0, std::f64::consts::PI - 1e-7));
    cases.push(Vec3::new(1.0, 1.0, 0.0).normalize() * (std::f64::consts::PI - 1e-9));
    for w in cases {
        let r = so3_exp(&w);
        assert!((r.transpose() * r - Mat3::identity()).amax() < 1e-14);
        assert!((r.determinant() - 1.0).abs() < 1e-14);
        assert!((so3_log(&r) - w).amax() < 1e-8 * (1.0 + w.norm()), "{w:?}");
    }
}

/// Checks `exp(ξ + ε e_k) = exp(ξ) exp(ε J_r e_k) + O(ε²)` column by column.
#[test]
fn so3_jacobians_match_ridders() {
    let mut rng = SplitMix64::new(15);
    for trial in 0..40 {
        let w = if trial == 0 { Vec3::new(3e-6, -1e-6, 2e-6) } else { rand_vec(&mut rng, 1.5) };
        let jr = so3_right_jacobian(&w);
        let jl = so3_left_jacobian(&w);
        assert!((so3_right_jacobian_inv(&w) * jr - Mat3::identity()).amax() < 1e-12);
        assert!((so3_left_jacobian_inv(&w) * jl - Mat3::identity()).amax() < 1e-12);
        let r0 = so3_exp(&w);
        for k in 0..3 {
            let fr = |e: f64| {
                let d = so3_log(&(r0.transpose() * so3_exp(&(w + Vec3::ith(k, e)))));
                DVector::from_column_slice(d.as_slice())
            };
            let fl = |e: f64| {
                let d = so3_log(&(so3_exp(&(w + Vec3::ith(k, e))) * r0.transpose()));
                DVector::from_column_slice(d.as_slice())
            };
            let (dr, _) = ridders(&fr, 1e-2);
            let (dl, _) = ridders(&fl, 1e-2);
            let er = DVector::from_column_slice(jr.column(k).as_slice());
            let el = DVector::from_column_slice(jl.column(k).as_slice());
            assert!(rel_err(&dr, &er, 1.0) < 1e-9, "J_r col {k}: {dr} vs {er}");
            assert!(rel_err(&dl, &el, 1.0) < 1e-9, "J_l col {k}");
            assert!(rel_err(&central(&fr, 1e-6), &er, 1.0) < 1e-7);
        }
    }
}

#[test]
fn se3_exp_log_and_jacobians_match_ridders() {
    let mut rng = SplitMix64::new(16);
    for trial in 0..40 {
        let xi = if trial == 0 {
            Motion::new(Vec3::new(2e-6, 1e-6, -1e-6), rand_vec(&mut rng, 1.0))
        } else {
            Motion::new(rand_vec(&mut rng, 1.5), rand_vec(&mut rng, 1.0))
        };
        let t0 = se3_exp(&xi);
        assert!((se3_log(&t0) - xi).norm() < 1e-10);
        let jr = se3_right_jacobian(&xi);
        let jl = se3_left_jacobian(&xi);
        assert!((se3_right_jacobian_inv(&xi) * jr - Mat6::identity()).amax() < 1e-11);
        assert!((se3_left_jacobian_inv(&xi) * jl - Mat6::identity()).amax() < 1e-11);
        for k in 0..6 {
            let pert = |e: f64| {
                let mut x = xi.to_vector();
                x[k] += e;
                se3_exp(&Motion::from_vector(&x))
            };
            let fr = |e: f64| DVector::from_column_slice(se3_log(&(t0.inverse() * pert(e))).to_vector().as_slice());
            let fl = |e: f64| DVector::from_column_slice(se3_log(&(pert(e) * t0.inverse())).to_vector().as_slice());
            let (dr, _) = ridders(&fr, 1e-2);
            let (dl, _) = ridders(&fl, 1e-2);
            let er = DVector::from_column_slice(jr.column(k).as_slice());
            let el = DVector::from_column_slice(jl.column(k).as_slice());
            assert!(rel_err(&dr, &er, 1.0) < 1e-9, "SE3 J_r col {k}: {dr} vs {er}");
            assert!(rel_err(&dl, &el, 1.0) < 1e-9, "SE3 J_l col {k}");
        }
    }
}

#[test]
fn quaternion_integration_is_the_exponential_map() {
    let mut rng = SplitMix64::new(17);
    for _ in 0..30 {
        let q = rng.unit_quaternion();
        let w = rand_vec(&mut rng, 0.5);
        let q1 = quat_integrate(&q, &w);
        let n: f64 = q1.iter().map(|x| x * x).sum();
        assert!((n - 1.0).abs() < 1e-15);
        let r0 = nalgebra::UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(q[0], q[1], q[2], q[3]));
        let r1 = nalgebra::UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(q1[0], q1[1], q1[2], q1[3]));
        let expected = r0.to_rotation_matrix().matrix() * so3_exp(&w);
        assert!((r1.to_rotation_matrix().matrix() - expected).amax() < 1e-14);
    }
}

#[test]
fn rng_is_deterministic_and_uniform_quaternions_are_unit() {
    let mut a = SplitMix64::new(5);
    let mut b = SplitMix64::new(5);
    for _ in 0..10 {
        assert_eq!(a.next_u64(), b.next_u64());
    }
    let mean: f64 = (0..10000).map(|_| a.uniform()).sum::<f64>() / 10000.0;
    assert!((mean - 0.5).abs() < 0.02);
    for _ in 0..100 {
        let q = a.unit_quaternion();
        assert!((q.iter().map(|x| x * x).sum::<f64>() - 1.0).abs() < 1e-14);
    }
}

#[test]
fn dense_lu_solves_pivoting_systems() {
    let mut rng = SplitMix64::new(18);
    for n in [1usize, 2, 5, 17] {
        let a = nalgebra::DMatrix::from_fn(n, n, |r, c| if r == c { 0.0 } else { rng.range(-1.0, 1.0) });
        let x = nalgebra::DVector::from_fn(n, |_, _| rng.range(-1.0, 1.0));
        let b = &a * &x;
        let mut lu = a.clone();
        let mut piv = vec![0; n];
        if n == 1 {
            assert!(!lu_factor(&mut lu, &mut piv), "zero 1×1 matrix is singular");
            continue;
        }
        assert!(lu_factor(&mut lu, &mut piv));
        let mut sol = b.as_slice().to_vec();
        lu_solve(&lu, &piv, &mut sol);
        let err = (nalgebra::DVector::from_vec(sol) - &x).amax();
        assert!(err < 1e-12, "n = {n}: {err:e}");
    }
}

#[test]
fn dense_inverse_and_blocked_solves() {
    // Sizes around the block size (8) exercise full and partial diagonal blocks.
    let mut rng = SplitMix64::new(19);
    for n in [1usize, 2, 5, 7, 8, 9, 16, 17, 30, 41] {
        // Zero diagonal: every column needs a row interchange.
        let a = nalgebra::DMatrix::from_fn(n, n, |r, c| if r == c && n > 1 { 0.0 } else { rng.range(-1.0, 1.0) });
        let mut lu = a.clone();
        let mut piv = vec![0; n];
        assert!(lu_factor(&mut lu, &mut piv), "n = {n}");
        let eye = nalgebra::DMatrix::<f64>::identity(n, n);
        let mut inv = nalgebra::DMatrix::zeros(n, n);
        lu_inverse(&lu, &piv, &mut inv);
        let err = (&a * &inv - &eye).amax();
        assert!(err < 1e-11, "lu_inverse, n = {n}: {err:e}");
        // Solve A X = B for 2n right-hand sides with the inverse (scaled by 3) alongside.
        let b = nalgebra::DMatrix::from_fn(n, 2 * n, |_, _| rng.range(-1.0, 1.0));
        let mut z = nalgebra::DMatrix::zeros(3 * n, n);
        z.rows_mut(0, 2 * n).copy_from(&b.transpose());
        let mut inv3 = nalgebra::DMatrix::zeros(n, n);
        lu_solve_and_invert(&lu, &piv, &mut z, 2 * n, &mut inv3, 3.0);
        let x = z.rows(0, 2 * n).transpose();
        let err = (&a * &x - &b).amax();
        assert!(err < 1e-11, "lu_solve_and_invert solve, n = {n}: {err:e}");
        let err = (&a * &inv3 / 3.0 - &eye).amax();
        assert!(err < 1e-11, "lu_solve_and_invert inverse, n = {n}: {err:e}");
        // Aᵀ x = c.
        let c = nalgebra::DVector::from_fn(n, |_, _| rng.range(-1.0, 1.0));
        let mut y = c.as_slice().to_vec();
        lu_solve_transpose(&lu, &piv, &mut y);
        let err = (a.transpose() * nalgebra::DVector::from_vec(y) - &c).amax();
        assert!(err < 1e-11, "lu_solve_transpose, n = {n}: {err:e}");
    }
}

/// A `rows × cols` matrix `U diag(σ) Vᵀ` with random orthogonal `U`, `V` and the given
/// singular values (zeros give a rank-deficient matrix), and `V` (its last columns span
/// the null space).
fn with_singular_values(
    rng: &mut SplitMix64,
    rows: usize,
    cols: usize,
    sigma: &[f64],
) -> (nalgebra::DMatrix<f64>, nalgebra::DMatrix<f64>) {
    use nalgebra::DMatrix;
    let orth = |rng: &mut SplitMix64, n: usize| DMatrix::from_fn(n, n, |_, _| rng.range(-1.0, 1.0)).qr().q();
    let (u, v) = (orth(rng, rows), orth(rng, cols));
    let mut s = DMatrix::zeros(rows, cols);
    for (i, &x) in sigma.iter().enumerate() {
        s[(i, i)] = x;
    }
    (&u * s * v.transpose(), v)
}

/// The pseudo-inverse solves small systems to round-off, including the matrices on which
/// nalgebra's SVD loses accuracy: two singular values 1e-6 or 1e-9 apart (there its
/// `K·K⁺r` misses `r` by up to 0.6 relative). Symmetric and general, square and
/// rectangular, full-rank and rank-deficient: the residual of a consistent right-hand side
/// is ≤ 1e-13, the rank is exact, the solution has no component in the null space
/// (minimum norm), and `K⁺` satisfies the four Penrose conditions.
#[test]
fn pseudo_inverse_is_accurate_with_close_singular_values() {
    let mut rng = SplitMix64::new(11);
    let mut worst = [0.0f64; 3];
    for trial in 0..3000 {
        let (rows, cols) = match trial % 4 {
            0 | 1 => {
                let n = 2 + trial % 7;
                (n, n)
            }
            2 => (3 + trial % 5, 2 + trial % 3),
            _ => (2 + trial % 3, 3 + trial % 5),
        };
        let p = rows.min(cols);
        let mut sigma: Vec<f64> = (0..p).map(|_| rng.range(0.1, 2.0)).collect();
        let gap = [1e-6, 1e-9, 0.0][trial % 3];
        if p >= 2 {
            sigma[1] = sigma[0] * (1.0 + gap);
        }
        let deficient = p >= 3 && trial % 5 == 0;
        if deficient {
            sigma[p - 1] = 0.0;
        }
        let (mut k, v) = with_singular_values(&mut rng, rows, cols, &sigma);
        if trial % 4 == 1 {
            // Symmetric positive semi-definite: V Σ Vᵀ.
            let s = nalgebra::DMatrix::from_diagonal(&nalgebra::DVector::from_vec(sigma.clone()));
            let vs = v.columns(0, p);
            k = vs * s * vs.transpose();
        }
        let rank = sigma.iter().filter(|s| **s > 0.0).count();
        let x0 = DVector::from_fn(cols, |_, _| rng.range(-1.0, 1.0));
        let r = &k * &x0;
        let x = min_norm_solve(&k, &r, 1e-12).expect("solve");
        let (kp, got_rank) = pseudo_inverse(&k, 1e-12).expect("pseudo-inverse");
        assert_eq!(got_rank, rank, "trial {trial}: rank of {rows}×{cols} with σ = {sigma:?}");
        let residual = (&k * &x - &r).amax() / r.amax();
        worst[0] = worst[0].max(residual);
        assert!(residual <= 1e-13, "trial {trial}: residual {residual:e} ({rows}×{cols}, σ = {sigma:?})");
        // Minimum norm: x lies in the row space of K (orthogonal to its null space).
        let null = if trial % 4 == 1 {
            v.columns(p, cols - p).into_owned()
        } else {
            v.columns(rank, cols - rank).into_owned()
        };
        let off = if null.ncols() == 0 { 0.0 } else { (null.transpose() * &x).amax() / x.amax() };
        worst[1] = worst[1].max(off);
        assert!(off <= 1e-13, "trial {trial}: null-space component {off:e}");
        // Penrose conditions: K K⁺ K = K, K⁺ K K⁺ = K⁺, K K⁺ and K⁺ K symmetric.
        let kk = &k * &kp;
        let pk = &kp * &k;
        let scale = kp.amax().max(1.0);
        let penrose = [
            (&kk * &k - &k).amax(),
            (&pk * &kp - &kp).amax() / scale,
            (&kk - kk.transpose()).amax(),
            (&pk - pk.transpose()).amax(),
        ];
        let e = penrose.iter().fold(0.0f64, |m, x| m.max(*x));
        worst[2] = worst[2].max(e);
        assert!(e <= 1e-12, "trial {trial}: Penrose conditions {penrose:?}");
        // The same solution as the pseudo-inverse applied to r.
        assert!((&kp * &r - &x).amax() <= 1e-12 * x.amax().max(1.0));
    }
    println!("worst residual {:.1e}, null-space component {:.1e}, Penrose {:.1e}", worst[0], worst[1], worst[2]);
}

/// Degenerate inputs: empty matrices, zero matrices, non-finite entries and mismatched
/// right-hand sides give an empty/zero answer or `None`, never a panic or NaN.
#[test]
fn pseudo_inverse_degenerate_inputs() {
    use nalgebra::DMatrix;
    assert_eq!(min_norm_solve(&DMatrix::zeros(0, 0), &DVector::zeros(0), 1e-12), Some(DVector::zeros(0)));
    let (p, rank) = pseudo_inverse(&DMatrix::zeros(3, 2), 1e-12).unwrap();
    assert_eq!((p.shape(), rank), ((2, 3), 0));
    assert_eq!(p, DMatrix::zeros(2, 3));
    assert_eq!(
        min_norm_solve(&DMatrix::zeros(2, 2), &DVector::from_vec(vec![1.0, 2.0]), 1e-12),
        Some(DVector::zeros(2))
    );
    let mut nan = DMatrix::identity(2, 2);
    nan[(0, 1)] = f64::NAN;
    assert!(pseudo_inverse(&nan, 1e-12).is_none());
    assert!(min_norm_solve(&nan, &DVector::zeros(2), 1e-12).is_none());
    assert!(min_norm_solve(&DMatrix::identity(2, 2), &DVector::from_vec(vec![1.0, f64::INFINITY]), 1e-12).is_none());
    assert!(min_norm_solve(&DMatrix::identity(2, 2), &DVector::zeros(3), 1e-12).is_none());
}

/// `N = L + (random multiples of other rows of L)`, like `L + Eᵀ L_U` of friction rows at their
/// bounds: `K = L Nᵀ` is general (non-symmetric) with the column space of `L`. Row `r` adds a multiple
/// in [−0.5, 0.5) of row `(r · stride + offset) mod k`.
fn mixed_rows(
    rng: &mut SplitMix64,
    l: &nalgebra::DMatrix<f64>,
    stride: usize,
    offset: usize,
) -> nalgebra::DMatrix<f64> {
    let (k, d) = l.shape();
    let mut n = l.clone();
    for r in 0..k {
        let s = rng.range(-0.5, 0.5);
        let src = (r * stride + offset) % k;
        for c in 0..d {
            n[(r, c)] += s * l[(src, c)];
        }
    }
    n
}

/// The factored pseudo-inverse of `K = L Nᵀ` (tall `k × d` factors, the Delassus blocks of
/// many contact rows on few dofs) is the dense one: symmetric (`N = L`) and general,
/// `L` of full column rank and rank-deficient (two dependent columns), `k` from `d` to
/// `12 d`. Against `pseudo_inverse` / `min_norm_solve` of the formed `K`: the same rank,
/// `K⁺` to 1e-10 of its scale, and the same minimum-norm solution of a consistent
/// right-hand side (residual ≤ 1e-12, no null-space component).
#[test]
fn factored_pseudo_inverse_is_the_dense_one() {
    use nalgebra::DMatrix;
    use stiction::math::{min_norm_solve_factored, FactoredPseudoInverse};
    let mut rng = SplitMix64::new(29);
    for trial in 0..120 {
        let d = 2 + trial % 6;
        let k = d * (1 + trial % 12);
        let mut l = DMatrix::from_fn(k, d, |_, _| rng.range(-1.0, 1.0));
        let deficient = d >= 3 && trial % 3 == 0;
        if deficient {
            // Column d−1 a combination of columns 0 and 1: rank d − 1.
            let c = 0.7 * l.column(0) - 0.4 * l.column(1);
            l.set_column(d - 1, &c);
        }
        let n = (trial % 2 == 1).then(|| mixed_rows(&mut rng, &l, 7, 3));
        let kmat = &l * n.as_ref().unwrap_or(&l).transpose();
        let (dense, rank) = pseudo_inverse(&kmat, 1e-12).expect("dense pseudo-inverse");
        let fact = FactoredPseudoInverse::new(&l, n.as_ref(), 1e-12).expect("factored pseudo-inverse");
        assert_eq!(fact.rank(), rank, "trial {trial}: rank ({k}×{d}, deficient {deficient})");
        assert_eq!(fact.size(), k);
        let formed = fact.to_matrix();
        let err = (&formed - &dense).amax() / dense.amax();
        assert!(err <= 1e-10, "trial {trial}: K⁺ differs by {err:e} ({k}×{d}, deficient {deficient})");
        let x0 = DVector::from_fn(k, |_, _| rng.range(-1.0, 1.0));
        for transpose in [false, true] {
            let want = if transpose { dense.transpose() * &x0 } else { &dense * &x0 };
            let got = fact.apply(&x0, transpose);
            assert!((&got - &want).amax() <= 1e-10 * want.amax().max(1.0), "trial {trial}: apply({transpose})");
        }
        let r = &kmat * &x0;
        let x = min_norm_solve_factored(&l, n.as_ref(), &r, 1e-12).expect("factored solve");
        let xd = min_norm_solve(&kmat, &r, 1e-12).expect("dense solve");
        let residual = (&kmat * &x - &r).amax() / r.amax();
        assert!(residual <= 1e-12, "trial {trial}: residual {residual:e}");
        assert!((&x - &xd).amax() <= 1e-10 * xd.amax(), "trial {trial}: solutions differ by {:e}", (&x - &xd).amax());
        let pm = fact.apply_matrix(&kmat);
        assert!((&pm - &dense * &kmat).amax() <= 1e-10, "trial {trial}: K⁺K");
    }
    // Degenerate inputs: a short L, mismatched shapes, non-finite entries.
    let l = DMatrix::from_element(2, 3, 1.0);
    assert!(FactoredPseudoInverse::new(&l, None, 1e-12).is_none());
    let l = DMatrix::from_element(4, 2, 1.0);
    assert!(FactoredPseudoInverse::new(&l, Some(&DMatrix::zeros(4, 3)), 1e-12).is_none());
    assert!(min_norm_solve_factored(&l, None, &DVector::zeros(3), 1e-12).is_none());
    let mut bad = l.clone();
    bad[(1, 1)] = f64::NAN;
    assert!(FactoredPseudoInverse::new(&bad, None, 1e-12).is_none());
    assert!(min_norm_solve_factored(&l, None, &DVector::from_element(4, f64::INFINITY), 1e-12).is_none());
    assert_eq!(
        min_norm_solve_factored(&DMatrix::zeros(3, 0), None, &DVector::zeros(3), 1e-12),
        Some(DVector::zeros(3))
    );
}

/// `TallPseudoInverse` (the backward pass's `Â⁺` of a certified full-rank `Â = L Lᵀ`):
/// its products and its formed matrix equal the pseudo-inverse of the formed `K` to
/// 1e-10 relative, one workspace reused across sizes in shuffled order giving the same bits
/// as a fresh one; refused: a rank-deficient factor, `σ_min/σ_max(K) = 1e-10`, `k ≤ d`,
/// non-finite entries.
#[test]
fn tall_pseudo_inverse_is_the_pseudo_inverse_of_l_lt() {
    use nalgebra::DMatrix;
    let mut rng = SplitMix64::new(47);
    let mut reused = TallPseudoInverse::default();
    let mut certified = 0;
    for trial in 0..90 {
        let d = 1 + (trial * 7) % 9;
        let k = d + 1 + (trial * 5) % 19;
        let l = DMatrix::from_fn(k, d, |_, _| rng.range(-1.0, 1.0));
        let kmat = &l * l.transpose();
        let (want, rank) = pseudo_inverse(&kmat, 1e-12).expect("dense pseudo-inverse");
        let mut fresh = TallPseudoInverse::default();
        let ok = fresh.factor(&l);
        assert_eq!(reused.factor(&l), ok, "trial {trial}");
        if !ok {
            continue;
        }
        certified += 1;
        assert_eq!((fresh.rank(), rank), (d, d), "trial {trial}");
        let formed = fresh.to_matrix();
        let err = (&formed - &want).amax() / want.amax();
        assert!(err <= 1e-10, "trial {trial} ({k}×{d}): K⁺ differs by {err:e}");
        assert_eq!(reused.to_matrix(), formed, "trial {trial}: a reused workspace");
        let x = DVector::from_fn(k, |_, _| rng.range(-1.0, 1.0));
        let mut out = DVector::zeros(k);
        fresh.apply(x.as_slice(), out.as_mut_slice());
        let err = (&out - &want * &x).amax() / (&want * &x).amax();
        assert!(err <= 1e-10, "trial {trial}: K⁺ x differs by {err:e}");
    }
    assert!(certified >= 80, "only {certified} of 90 random well-conditioned factors were certified");
    // Rank-deficient: column 2 a combination of columns 0 and 1.
    let mut l = DMatrix::from_fn(9, 4, |_, _| rng.range(-1.0, 1.0));
    let c = 0.3 * l.column(0) + 1.1 * l.column(1);
    l.set_column(2, &c);
    assert!(!reused.factor(&l), "rank-deficient factor certified");
    // Full rank but beyond the certificate: σ_min/σ_max of K = 1e-10.
    let q = DMatrix::from_fn(9, 4, |_, _| rng.range(-1.0, 1.0)).qr().q();
    let l = q * DMatrix::from_diagonal(&DVector::from_vec(vec![1.0, 0.5, 0.2, 1e-5]));
    assert!(!reused.factor(&l), "κ(K) = 1e10 certified");
    assert!(!reused.factor(&DMatrix::from_fn(4, 4, |_, _| rng.range(-1.0, 1.0))), "k = d accepted");
    assert!(!reused.factor(&DMatrix::from_element(6, 2, f64::NAN)), "NaN accepted");
    assert!(!reused.factor(&DMatrix::zeros(6, 0)), "d = 0 accepted");
}

/// The certified full-rank solves agree with the pseudo-inverse solves they stand in for,
/// and refuse what they cannot certify. Tall products `K = L Nᵀ` (`k > d`, symmetric and
/// general, `L` of full column rank): the same minimum-norm solution as `min_norm_solve`
/// of the formed `K` to 1e-10, residual ≤ 1e-12, for any right-hand side (consistent or
/// not). Square systems: the solution of the inverse. Refused (`None`): a rank-deficient
/// factor, a condition number beyond the certificate (`σ_min/σ_max = 1e-10`), a singular
/// or indefinite square matrix, `k ≤ d`, mismatched shapes and non-finite entries.
#[test]
fn certified_full_rank_solves_are_the_pseudo_inverse_ones() {
    use nalgebra::DMatrix;
    let mut rng = SplitMix64::new(31);
    let mut certified = 0;
    for trial in 0..120 {
        let d = 1 + trial % 8;
        let k = d + 1 + trial % 17;
        let l = DMatrix::from_fn(k, d, |_, _| rng.range(-1.0, 1.0));
        let n = (trial % 2 == 1).then(|| mixed_rows(&mut rng, &l, 5, 1));
        let kmat = &l * n.as_ref().unwrap_or(&l).transpose();
        // Half consistent right-hand sides, half arbitrary ones (least squares).
        let r = if trial % 4 < 2 {
            &kmat * DVector::from_fn(k, |_, _| rng.range(-1.0, 1.0))
        } else {
            DVector::from_fn(k, |_, _| rng.range(-1.0, 1.0))
        };
        let want = min_norm_solve(&kmat, &r, 1e-12).expect("dense solve");
        let Some(x) = full_rank_solve_factored(&l, n.as_ref(), &r) else { continue };
        certified += 1;
        let err = (&x - &want).amax() / want.amax();
        assert!(err <= 1e-10, "trial {trial} ({k}×{d}): differs from the pseudo-inverse solve by {err:e}");
        if trial % 4 < 2 {
            let residual = (&kmat * &x - &r).amax() / r.amax();
            assert!(residual <= 1e-12, "trial {trial}: residual {residual:e}");
        }
    }
    assert!(certified >= 100, "only {certified} of 120 random well-conditioned factors were certified");

    // Rank-deficient factor: column 2 a combination of columns 0 and 1.
    let mut l = DMatrix::from_fn(9, 4, |_, _| rng.range(-1.0, 1.0));
    let c = 0.3 * l.column(0) + 1.1 * l.column(1);
    l.set_column(2, &c);
    let r = DVector::from_fn(9, |_, _| rng.range(-1.0, 1.0));
    assert!(full_rank_solve_factored(&l, None, &r).is_none(), "rank-deficient factor certified");
    // Full rank but beyond the certificate: σ_min/σ_max of K = 1e-10.
    let mut l = DMatrix::from_fn(9, 4, |_, _| rng.range(-1.0, 1.0));
    let qr = l.clone().qr();
    l = qr.q() * DMatrix::from_diagonal(&DVector::from_vec(vec![1.0, 0.5, 0.2, 1e-5]));
    assert!(full_rank_solve_factored(&l, None, &r).is_none(), "κ(K) = 1e10 certified");
    // Shapes and entries.
    let l = DMatrix::from_fn(4, 4, |_, _| rng.range(-1.0, 1.0));
    assert!(full_rank_solve_factored(&l, None, &DVector::zeros(4)).is_none(), "k = d accepted");
    let l = DMatrix::from_fn(6, 2, |_, _| rng.range(-1.0, 1.0));
    assert!(full_rank_solve_factored(&l, None, &DVector::zeros(5)).is_none());
    assert!(full_rank_solve_factored(&l, Some(&DMatrix::zeros(6, 3)), &DVector::zeros(6)).is_none());
    assert!(full_rank_solve_factored(&l, None, &DVector::from_element(6, f64::NAN)).is_none());

    // Square systems: symmetric positive definite and general.
    for trial in 0..40 {
        let k = 1 + trial % 9;
        let b = DMatrix::from_fn(k, k, |_, _| rng.range(-1.0, 1.0));
        let symmetric = trial % 2 == 0;
        let kmat = if symmetric { &b * b.transpose() + DMatrix::identity(k, k) * 0.1 } else { b };
        let r = DVector::from_fn(k, |_, _| rng.range(-1.0, 1.0));
        let want = min_norm_solve(&kmat, &r, 1e-12).expect("dense solve");
        let Some(x) = full_rank_solve(&kmat, &r, symmetric) else {
            assert!(!symmetric, "trial {trial}: a well-conditioned SPD matrix not certified");
            continue;
        };
        let err = (&x - &want).amax() / want.amax();
        assert!(err <= 1e-10, "trial {trial}: differs from the pseudo-inverse solve by {err:e}");
        assert!((&kmat * &x - &r).amax() <= 1e-12 * r.amax() * kmat.amax() * (k as f64), "trial {trial}: residual");
    }
    // Singular (rank 2 of 3), indefinite, ill-conditioned, non-finite, non-square.
    let u = DMatrix::from_fn(3, 2, |_, _| rng.range(-1.0, 1.0));
    let singular = &u * u.transpose();
    let r = DVector::from_vec(vec![1.0, 2.0, 3.0]);
    assert!(full_rank_solve(&singular, &r, true).is_none());
    assert!(full_rank_solve(&singular, &r, false).is_none());
    let indefinite = DMatrix::from_diagonal(&DVector::from_vec(vec![1.0, -1.0, 2.0]));
    assert!(full_rank_solve(&indefinite, &r, true).is_none());
    assert!(full_rank_solve(&indefinite, &r, false).is_some(), "an indefinite, well-conditioned LU solve");
    let ill = DMatrix::from_diagonal(&DVector::from_vec(vec![1.0, 1e-10, 2.0]));
    assert!(full_rank_solve(&ill, &r, true).is_none());
    let mut bad = DMatrix::<f64>::identity(3, 3);
    bad[(0, 1)] = f64::INFINITY;
    assert!(full_rank_solve(&bad, &r, false).is_none());
    assert!(full_rank_solve(&DMatrix::identity(3, 2), &r, false).is_none());
    assert!(full_rank_solve(&DMatrix::identity(3, 3), &DVector::zeros(2), false).is_none());
}
