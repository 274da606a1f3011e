//! The hyperelastic materials of tetrahedral FEM (`stiction::soft::material`): stresses
//! against Ridders differences of the energy, tangents against Ridders differences of
//! the stress, Lamé derivatives, the linearization at rest, rotation invariance, the
//! Lamé parameters from (E, ν), the PSD projection, and a uniaxial Neo-Hookean state
//! against its closed form.

use nalgebra::{DVector, Matrix3, SMatrix, SymmetricEigen, UnitQuaternion};
use stiction::gradcheck::fd::ridders;
use stiction::math::SplitMix64;
use stiction::soft::material::{project_psd, Mat9};
use stiction::soft::{Lame, MaterialModel};
use stiction::{Error, Result, SoftError};

type Mat3 = Matrix3<f64>;

const MODELS: [MaterialModel; 4] = [
    MaterialModel::LinearElastic,
    MaterialModel::Corotated,
    MaterialModel::StVenantKirchhoff,
    MaterialModel::StableNeoHookean,
];

/// Rubber-like: E = 1 MPa, ν = 0.3 (μ ≈ 3.8e5, λ ≈ 5.8e5).
fn rubber() -> Lame {
    Lame { mu: 1e6 / 2.6, lambda: 3e5 / 0.52 }
}

/// Nearly incompressible, λ/μ ≈ 24.
fn stiff_bulk() -> Lame {
    Lame { mu: 1.0e3, lambda: 2.4e4 }
}

fn lames() -> [Lame; 2] {
    [rubber(), stiff_bulk()]
}

fn random_rotation(rng: &mut SplitMix64) -> Mat3 {
    let [w, x, y, z] = rng.unit_quaternion();
    UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(w, x, y, z)).to_rotation_matrix().into_inner()
}

/// `F = I + 0.3 · uniform(−1, 1)` entrywise.
fn random_near_identity(rng: &mut SplitMix64) -> Mat3 {
    Mat3::identity() + Mat3::from_fn(|_, _| 0.3 * rng.range(-1.0, 1.0))
}

/// The deformation gradients checked for a model: four random near identity, one rotated
/// and stretched, and (for the models defined there) inverted ones with `det F < 0`.
fn test_gradients(model: MaterialModel, seed: u64) -> Vec<(String, Mat3)> {
    let mut rng = SplitMix64::new(seed);
    let mut fs: Vec<(String, Mat3)> = (0..4).map(|k| (format!("random {k}"), random_near_identity(&mut rng))).collect();
    let (q, w) = (random_rotation(&mut rng), random_rotation(&mut rng));
    fs.push(("rotated-stretched".into(), q * Mat3::from_diagonal(&[1.4, 0.7, 1.1].into()) * w.transpose()));
    if model != MaterialModel::LinearElastic {
        // Singular values (1.2, 0.9, −0.5) after the sign fix: no σ_j + σ_k near zero.
        let (q, w) = (random_rotation(&mut rng), random_rotation(&mut rng));
        fs.push(("inverted".into(), q * Mat3::from_diagonal(&[1.2, -0.5, 0.9].into()) * w.transpose()));
        let mut g = random_near_identity(&mut rng);
        g.column_mut(1).neg_mut();
        assert!(g.determinant() < 0.0);
        // The corotated twist σ₁ + σ₂ (σ₂ < 0) must stay away from zero.
        let s = g.singular_values();
        assert!(s[1] - s[2] > 0.1, "reflected random F too close to the corotated singularity: {s}");
        fs.push(("reflected random".into(), g));
    }
    fs
}

fn vec9(m: &Mat3) -> DVector<f64> {
    DVector::from_column_slice(m.as_slice())
}

/// `F` with column-major entry `idx` moved by `e`.
fn moved(f: &Mat3, idx: usize, e: f64) -> Mat3 {
    let mut g = *f;
    g[idx] += e;
    g
}

/// `∂Ψ/∂F` by Ridders, entry by entry.
fn fd_stress(model: MaterialModel, f: &Mat3, lame: &Lame) -> Mat3 {
    Mat3::from_fn(|i, j| {
        let idx = i + 3 * j;
        let g =
            |e: f64| -> Result<DVector<f64>> { Ok(DVector::from_element(1, model.energy(&moved(f, idx, e), lame))) };
        ridders(&g, 1e-2).unwrap().derivative[0]
    })
}

/// `∂vec(P)/∂vec(F)` by Ridders, column by column.
fn fd_tangent(model: MaterialModel, f: &Mat3, lame: &Lame) -> Mat9 {
    let mut t = Mat9::zeros();
    for idx in 0..9 {
        let g = |e: f64| -> Result<DVector<f64>> { Ok(vec9(&model.stress(&moved(f, idx, e), lame))) };
        let d = ridders(&g, 1e-2).unwrap().derivative;
        t.column_mut(idx).copy_from_slice(d.as_slice());
    }
    t
}

fn rel<const R: usize, const C: usize>(a: &SMatrix<f64, R, C>, b: &SMatrix<f64, R, C>) -> f64 {
    (a - b).amax() / b.amax().max(f64::MIN_POSITIVE)
}

fn min_eigenvalue(t: &Mat9) -> f64 {
    SymmetricEigen::new(*t).eigenvalues.min()
}

#[test]
fn stress_is_the_energy_gradient() {
    for model in MODELS {
        let mut worst: f64 = 0.0;
        for lame in lames() {
            for (name, f) in test_gradients(model, 11) {
                let p = model.stress(&f, &lame);
                let want = fd_stress(model, &f, &lame);
                let err = rel(&p, &want);
                assert!(err <= 1e-8, "{model:?} {name}: P vs Ridders of Ψ, rel err {err:e}\nP = {p}\nfd = {want}");
                worst = worst.max(err);
            }
        }
        eprintln!("{model:?}: worst rel err of P against Ridders of Ψ {worst:.2e}");
    }
}

#[test]
fn tangent_is_the_stress_derivative() {
    for model in MODELS {
        let (mut worst, mut worst_sym): (f64, f64) = (0.0, 0.0);
        for lame in lames() {
            for (name, f) in test_gradients(model, 23) {
                let t = model.tangent(&f, &lame);
                let want = fd_tangent(model, &f, &lame);
                let scale = want.amax();
                for c in 0..9 {
                    let err = (t.column(c) - want.column(c)).amax() / scale;
                    assert!(err <= 1e-7, "{model:?} {name}: tangent column {c} rel err {err:e}");
                    worst = worst.max(err);
                }
                let asym = (t - t.transpose()).amax() / t.amax();
                assert!(asym <= 1e-12, "{model:?} {name}: tangent asymmetry {asym:e}");
                worst_sym = worst_sym.max(asym);
            }
        }
        eprintln!("{model:?}: worst rel err of the tangent {worst:.2e}, asymmetry {worst_sym:.2e}");
    }
}

/// `D²P(F)[A, B]` is the derivative along F of `vec(B)ᵀ ∂P/∂F vec(A)` (Ridders, entry by
/// entry), for random A and B; the corotated model has no closed form and says so.
#[test]
fn stress_curvature_is_the_tangent_derivative() {
    let mut rng = SplitMix64::new(41);
    for model in MODELS {
        let mut worst: f64 = 0.0;
        for lame in lames() {
            for (name, f) in test_gradients(model, 29) {
                let a = Mat3::from_fn(|_, _| rng.range(-1.0, 1.0));
                let b = Mat3::from_fn(|_, _| rng.range(-1.0, 1.0));
                let Some(k) = model.stress_curvature(&f, &lame, &a, &b) else {
                    assert_eq!(model, MaterialModel::Corotated, "{model:?} lacks the curvature");
                    continue;
                };
                let contracted = |g: &Mat3| vec9(&b).dot(&(model.tangent(g, &lame) * vec9(&a)));
                let want = Mat3::from_fn(|i, j| {
                    let idx = i + 3 * j;
                    let g = |e: f64| -> Result<DVector<f64>> {
                        Ok(DVector::from_element(1, contracted(&moved(&f, idx, e))))
                    };
                    ridders(&g, 1e-2).unwrap().derivative[0]
                });
                let scale = want.amax().max(lame.mu);
                let err = (k - want).amax() / scale;
                assert!(err <= 1e-7, "{model:?} {name}: curvature rel err {err:e}\nK = {k}\nfd = {want}");
                let swapped = model.stress_curvature(&f, &lame, &b, &a).unwrap();
                assert!((swapped - k).amax() <= 1e-12 * scale, "{model:?} {name}: not symmetric in A, B");
                worst = worst.max(err);
            }
        }
        if model != MaterialModel::Corotated {
            eprintln!("{model:?}: worst rel err of the stress curvature {worst:.2e}");
        }
    }
}

#[test]
fn lame_derivatives_of_the_stress() {
    for model in MODELS {
        let mut worst: f64 = 0.0;
        for lame in lames() {
            for (name, f) in test_gradients(model, 37) {
                let [pm, pl] = model.stress_lame_derivatives(&f);
                let p = model.stress(&f, &lame);
                let sum = pm * lame.mu + pl * lame.lambda;
                assert!(rel(&sum, &p) <= 1e-14, "{model:?} {name}: P ≠ μ P_μ + λ P_λ");
                let by_mu = |e: f64| -> Result<DVector<f64>> {
                    Ok(vec9(&model.stress(&f, &Lame { mu: lame.mu + e, lambda: lame.lambda })))
                };
                let by_lambda = |e: f64| -> Result<DVector<f64>> {
                    Ok(vec9(&model.stress(&f, &Lame { mu: lame.mu, lambda: lame.lambda + e })))
                };
                for (what, analytic, g) in
                    [("μ", pm, &by_mu as &dyn Fn(f64) -> Result<DVector<f64>>), ("λ", pl, &by_lambda)]
                {
                    let fd = ridders(g, 0.1 * lame.mu).unwrap().derivative;
                    let fd = Mat3::from_column_slice(fd.as_slice());
                    let err = (analytic - fd).amax() / fd.amax().max(1.0);
                    assert!(err <= 1e-8, "{model:?} {name}: ∂P/∂{what} rel err {err:e}");
                    worst = worst.max(err);
                }
                // Each part is the stress of the unit Lamé pair, the gradient of that energy.
                let unit = [Lame { mu: 1.0, lambda: 0.0 }, Lame { mu: 0.0, lambda: 1.0 }];
                for (part, l) in [pm, pl].iter().zip(unit) {
                    let err = (part - fd_stress(model, &f, &l)).amax() / part.amax().max(1.0);
                    assert!(err <= 1e-8, "{model:?} {name}: Lamé part vs Ridders of Ψ, rel err {err:e}");
                }
            }
        }
        eprintln!("{model:?}: worst rel err of ∂P/∂(μ, λ) {worst:.2e}");
    }
}

#[test]
fn rest_state_is_linear_elasticity() {
    for lame in lames() {
        let linear = MaterialModel::LinearElastic.tangent(&Mat3::identity(), &lame);
        // The linear tangent written out: μ (δ_ik δ_jl + δ_il δ_jk) + λ δ_ij δ_kl.
        let by_hand = Mat9::from_fn(|r, c| {
            let (i, j, k, l) = (r % 3, r / 3, c % 3, c / 3);
            let d = |a: usize, b: usize| if a == b { 1.0 } else { 0.0 };
            lame.mu * (d(i, k) * d(j, l) + d(i, l) * d(j, k)) + lame.lambda * d(i, j) * d(k, l)
        });
        assert_eq!(linear, by_hand);
        for model in MODELS {
            let p = model.stress(&Mat3::identity(), &lame);
            assert!(p.amax() <= 1e-12 * lame.mu, "{model:?}: P(I) = {p}");
            let t = model.tangent(&Mat3::identity(), &lame);
            let err = rel(&t, &linear);
            assert!(err <= 1e-12, "{model:?}: tangent at rest differs from linear by {err:e}");
            eprintln!("{model:?}: |P(I)|/μ = {:.1e}, tangent at rest vs linear {err:.1e}", p.amax() / lame.mu);
        }
    }
}

#[test]
fn rotation_invariance() {
    let mut rng = SplitMix64::new(5);
    for model in MODELS.into_iter().filter(|m| *m != MaterialModel::LinearElastic) {
        for (name, f) in test_gradients(model, 41) {
            let q = random_rotation(&mut rng);
            let lame = rubber();
            let (e0, e1) = (model.energy(&f, &lame), model.energy(&(q * f), &lame));
            assert!((e1 - e0).abs() <= 1e-12 * e0.abs().max(lame.mu), "{model:?} {name}: Ψ(QF) = {e1}, Ψ(F) = {e0}");
            let (p0, p1) = (model.stress(&f, &lame), model.stress(&(q * f), &lame));
            assert!(rel(&p1, &(q * p0)) <= 1e-12, "{model:?} {name}: P(QF) ≠ Q P(F): {:e}", rel(&p1, &(q * p0)));
        }
    }
}

#[test]
fn lame_from_young_and_poisson() {
    // μ = E / (2(1 + ν)) = 1e6 / 2.6, λ = E ν / ((1 + ν)(1 − 2ν)) = 3e5 / 0.52.
    let lame = Lame::from_young_poisson(1e6, 0.3, "rubber").unwrap();
    assert!((lame.mu - 384_615.384_615_384_6).abs() <= 1e-15 * lame.mu, "μ = {}", lame.mu);
    assert!((lame.lambda - 576_923.076_923_076_9).abs() <= 1e-15 * lame.lambda, "λ = {}", lame.lambda);
    // ν = 0: no λ; ν = −0.5: λ = E(−0.5)/(0.5 · 2) = −E/2, μ = E.
    let zero = Lame::from_young_poisson(2.0, 0.0, "r").unwrap();
    assert_eq!((zero.mu, zero.lambda), (1.0, 0.0));
    let auxetic = Lame::from_young_poisson(2.0, -0.5, "r").unwrap();
    assert!((auxetic.mu - 2.0).abs() <= 1e-15 && (auxetic.lambda + 1.0).abs() <= 1e-15, "{auxetic:?}");

    let bad = [
        (0.0, 0.3),
        (-1.0, 0.3),
        (f64::NAN, 0.3),
        (f64::INFINITY, 0.3),
        (1e6, 0.5),
        (1e6, 0.7),
        (1e6, -1.0),
        (1e6, -1.5),
        (1e6, f64::NAN),
    ];
    for (e, nu) in bad {
        let err = Lame::from_young_poisson(e, nu, "region A").unwrap_err();
        match err.root() {
            Error::Soft(SoftError::InvalidMaterial { region, .. }) => assert_eq!(region, "region A"),
            other => panic!("E = {e}, ν = {nu}: unexpected error {other:?}"),
        }
    }

    for (e0, nu0) in [(1e6, 0.3), (5e4, 0.45), (2e7, -0.4), (1.0, 0.0)] {
        let jac = Lame::young_poisson_jacobian(e0, nu0);
        let of = |e: f64, nu: f64| -> Result<DVector<f64>> {
            let l = Lame::from_young_poisson(e, nu, "fd")?;
            Ok(DVector::from_vec(vec![l.mu, l.lambda]))
        };
        let by_e = ridders(&|h| of(e0 + h, nu0), 0.01 * e0).unwrap().derivative;
        let by_nu = ridders(&|h| of(e0, nu0 + h), 0.01).unwrap().derivative;
        for row in 0..2 {
            let (de, dnu) = (by_e[row], by_nu[row]);
            assert!(
                (jac[(row, 0)] - de).abs() <= 1e-9 * de.abs().max(1e-6),
                "({e0}, {nu0}) row {row}: ∂/∂E {} vs {de}",
                jac[(row, 0)]
            );
            assert!(
                (jac[(row, 1)] - dnu).abs() <= 1e-9 * dnu.abs().max(e0 * 1e-6),
                "({e0}, {nu0}) row {row}: ∂/∂ν {} vs {dnu}",
                jac[(row, 1)]
            );
        }
    }
}

fn random_symmetric(rng: &mut SplitMix64) -> Mat9 {
    let b = Mat9::from_fn(|_, _| rng.normal());
    b + b.transpose()
}

/// Checks the Moreau decomposition `A = P + N`, `P ⪰ 0`, `N ⪯ 0`, `P N = 0`, which
/// characterizes the Frobenius projection `P` of `A` onto the PSD cone.
fn assert_is_psd_projection(a: &Mat9, p: &Mat9) {
    let scale = a.amax();
    assert_eq!(*p, p.transpose(), "projection not exactly symmetric");
    let n = a - p;
    assert!(min_eigenvalue(p) >= -1e-12 * scale, "projection has eigenvalue {:e}", min_eigenvalue(p));
    let max_n = SymmetricEigen::new(n).eigenvalues.max();
    assert!(max_n <= 1e-12 * scale, "removed part has positive eigenvalue {max_n:e}");
    assert!((p * n).amax() <= 1e-12 * scale * scale, "P N = {:e}", (p * n).amax());
}

#[test]
fn psd_projection() {
    let mut rng = SplitMix64::new(77);
    for _ in 0..20 {
        let a = random_symmetric(&mut rng);
        assert!(min_eigenvalue(&a) < -0.1, "test matrix should be indefinite");
        let mut p = a;
        assert!(project_psd(&mut p));
        assert_is_psd_projection(&a, &p);
        // Projecting again changes (almost) nothing.
        let mut again = p;
        project_psd(&mut again);
        assert!((again - p).amax() <= 1e-12 * a.amax());

        let b = Mat9::from_fn(|_, _| rng.normal());
        let pd = b * b.transpose() + Mat9::identity();
        let mut q = pd;
        assert!(!project_psd(&mut q), "a PD matrix was projected");
        assert_eq!(q, pd);
    }
    // Negative definite: projects to zero.
    let mut neg = -Mat9::identity() * 3.0;
    assert!(project_psd(&mut neg));
    assert!(neg.amax() <= 1e-15);
    // Singular PSD (the linear tangent's skew null space): at most round-off moves it.
    let lame = rubber();
    let linear = MaterialModel::LinearElastic.tangent(&Mat3::identity(), &lame);
    let mut s = linear;
    project_psd(&mut s);
    assert!((s - linear).amax() <= 1e-12 * linear.amax(), "singular PSD moved by {:e}", (s - linear).amax());
    assert!(min_eigenvalue(&s) >= -1e-12 * linear.amax());
    // Non-finite input is left alone.
    let mut nan = Mat9::identity();
    nan[(3, 4)] = f64::NAN;
    nan[(4, 3)] = f64::NAN;
    assert!(!project_psd(&mut nan));
    assert!(nan[(3, 4)].is_nan() && nan[(0, 0)] == 1.0);
}

#[test]
fn neo_hookean_compression_tangent_is_projected() {
    let mut rng = SplitMix64::new(3);
    let (q, w) = (random_rotation(&mut rng), random_rotation(&mut rng));
    let inverted = q * Mat3::from_diagonal(&[1.1, 0.8, -0.4].into()) * w.transpose();
    for lame in lames() {
        for (name, f) in [("0.5 I", Mat3::identity() * 0.5), ("inverted", inverted)] {
            let t = MaterialModel::StableNeoHookean.tangent(&f, &lame);
            let lo = min_eigenvalue(&t);
            assert!(lo < -1e-3 * t.amax(), "{name}: SNH tangent should be indefinite (min eigenvalue {lo:e})");
            let mut p = t;
            assert!(project_psd(&mut p), "{name}: not projected");
            assert_is_psd_projection(&t, &p);
        }
    }
}

#[test]
fn neo_hookean_uniaxial_closed_form() {
    // F = diag(a, b, b): J = a b², cof F = diag(b², a b, a b), and
    // P = μ F + λ' (J − α) cof F, so P₂₂ = b (μ + λ' a (a b² − α)) vanishes for
    // b² = (α − μ/(λ' a)) / a; then P₁₁ = μ a + λ' (a b² − α) b².
    for lame in lames() {
        let lp = lame.lambda + lame.mu;
        let alpha = 1.0 + lame.mu / lp;
        for a in [0.7, 0.95, 1.3, 2.0] {
            let b2 = (alpha - lame.mu / (lp * a)) / a;
            assert!(b2 > 0.0);
            let b = b2.sqrt();
            let f = Mat3::from_diagonal(&[a, b, b].into());
            let p = MaterialModel::StableNeoHookean.stress(&f, &lame);
            let p11 = lame.mu * a + lp * (a * b2 - alpha) * b2;
            let tol = 1e-12 * lame.mu;
            assert!((p[(0, 0)] - p11).abs() <= tol, "a = {a}: P₁₁ = {} vs {p11}", p[(0, 0)]);
            assert!(p[(1, 1)].abs() <= tol && p[(2, 2)].abs() <= tol, "a = {a}: lateral stress {p}");
            let off = p - Mat3::from_diagonal(&p.diagonal());
            assert_eq!(off, Mat3::zeros());
            // Stretching pulls, compressing pushes.
            assert_eq!(p11 > 0.0, a > 1.0);
        }
    }
}

#[test]
fn corotated_degenerate_twist_stays_finite() {
    // σ = (1, 1, −1) after the sign fix: σ₁ + σ₂ = 0, where R is not unique.
    let lame = rubber();
    for f in
        [Mat3::from_diagonal(&[1.0, 1.0, -1.0].into()), Mat3::zeros(), Mat3::from_diagonal(&[2.0, 0.0, 0.0].into())]
    {
        let m = MaterialModel::Corotated;
        assert!(m.energy(&f, &lame).is_finite(), "{f}");
        assert!(m.stress(&f, &lame).iter().all(|x| x.is_finite()), "{f}");
        assert!(m.tangent(&f, &lame).iter().all(|x| x.is_finite()), "{f}");
    }
}

#[test]
fn neo_hookean_energy_needs_no_finite_alpha() {
    // λ' = λ + μ = 0 (ν = −1, refused by from_young_poisson): finite energy, the
    // gradient still matches.
    let lame = Lame { mu: 2.0, lambda: -2.0 };
    let f = random_near_identity(&mut SplitMix64::new(9));
    let m = MaterialModel::StableNeoHookean;
    assert!(m.energy(&f, &lame).is_finite());
    assert!(rel(&m.stress(&f, &lame), &fd_stress(m, &f, &lame)) <= 1e-8);
}
