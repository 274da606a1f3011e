//! The sparse `LᵀDL` factorization of the joint-space inertia (`dynamics::InertiaFactor`,
//! Featherstone 2008 §6.5) and the inverse it gives against a dense Cholesky, on trees of every joint type,
//! fixed and floating bases, a humanoid and many free bodies; and its errors.

use nalgebra::{DMatrix, DVector};
use stiction::dynamics::{crba, Data, InertiaFactor};
use stiction::math::SplitMix64;
use stiction::model::samples::{all_joint_types, bodies_on_plane, humanoid, random_tree, RestingShape};
use stiction::{Error, Model};

/// Factors `M + diag(d)` at a random configuration and solves three random right-hand
/// sides (one column at a time and as a block); returns the worst relative error against
/// nalgebra's dense Cholesky.
fn worst_error(model: &Model, seed: u64) -> f64 {
    let mut rng = SplitMix64::new(seed);
    let q = model.random_configuration(seed);
    let mut data = Data::new(model);
    let mut m = crba(model, &mut data, q.as_slice()).unwrap().clone();
    let nv = model.nv();
    for k in 0..nv {
        m[(k, k)] += 1e-3 * rng.uniform();
    }
    let mut f = InertiaFactor::new(model);
    f.factor(&m).unwrap();
    let chol = nalgebra::Cholesky::new(m.clone()).unwrap();
    let b = DMatrix::from_fn(nv, 3, |_, _| rng.range(-1.0, 1.0));
    let want = chol.solve(&b);
    let mut got = b.clone();
    f.solve_columns(&mut got);
    let mut worst = (&got - &want).amax() / want.amax();
    for c in 0..3 {
        let mut x: Vec<f64> = b.column(c).iter().copied().collect();
        f.solve_in_place(&mut x);
        let x = DVector::from_vec(x);
        worst = worst.max((&x - want.column(c)).amax() / want.amax());
        // The residual of the original system.
        worst = worst.max((&m * &x - b.column(c)).amax() / b.column(c).amax().max(1.0));
    }
    // The inverse, from the factors, into a buffer of the wrong size and into one of
    // the right size holding garbage.
    let want_inv = chol.inverse();
    for mut inv in [DMatrix::zeros(1, 2), DMatrix::from_element(nv, nv, 7.0)] {
        f.inverse_into(&mut inv);
        worst = worst.max((&inv - &want_inv).amax() / want_inv.amax());
        worst = worst.max((&m * &inv - DMatrix::identity(nv, nv)).amax());
    }
    worst
}

#[test]
fn solves_like_a_dense_cholesky_on_trees_of_every_kind() {
    let mut cases: Vec<(String, Model)> = vec![
        ("all_joint_types".into(), all_joint_types()),
        ("humanoid".into(), humanoid()),
        ("bodies_on_plane(7)".into(), bodies_on_plane(7, RestingShape::Box)),
    ];
    for (n, seed) in [(3, 1), (12, 2), (30, 3)] {
        for floating in [false, true] {
            cases.push((format!("random_tree({n}, {seed}, {floating})"), random_tree(n, seed, floating)));
        }
    }
    for (name, model) in &cases {
        for seed in 0..3 {
            let e = worst_error(model, seed);
            assert!(e < 1e-11, "{name}, seed {seed}: relative error {e:e}");
        }
    }
}

#[test]
fn rejects_matrices_it_cannot_factor() {
    let model = random_tree(4, 5, true);
    let nv = model.nv();
    let mut f = InertiaFactor::new(&model);
    assert!(matches!(f.factor(&DMatrix::identity(nv + 1, nv + 1)), Err(Error::Dimension { .. })));
    let mut m = DMatrix::identity(nv, nv);
    m[(2, 2)] = -1.0;
    assert!(matches!(f.factor(&m), Err(Error::Numerical { .. })));
    m[(2, 2)] = f64::NAN;
    assert!(matches!(f.factor(&m), Err(Error::NonFinite { .. })));
    // The identity factors to itself.
    f.factor(&DMatrix::identity(nv, nv)).unwrap();
    let mut x = vec![1.5; nv];
    f.solve_in_place(&mut x);
    assert!(x.iter().all(|v| *v == 1.5));
}
