//! Shared test helpers: finite differences (central and Ridders extrapolation) and
//! relative-error measures.
#![allow(dead_code)]

pub mod contact;
pub mod world;

use nalgebra::DVector;

/// Central difference of `f` at 0 with step `h`.
pub fn central(f: &dyn Fn(f64) -> DVector<f64>, h: f64) -> DVector<f64> {
    (f(h) - f(-h)) / (2.0 * h)
}

/// Ridders' polynomial extrapolation of central differences (Numerical Recipes §5.7):
/// derivative of `f` at 0 starting from step `h0`; returns (derivative, error estimate).
pub fn ridders(f: &dyn Fn(f64) -> DVector<f64>, h0: f64) -> (DVector<f64>, f64) {
    const CON: f64 = 1.4;
    const CON2: f64 = CON * CON;
    const NTAB: usize = 10;
    const SAFE: f64 = 2.0;
    let mut a: Vec<Vec<DVector<f64>>> = vec![vec![]; NTAB];
    let mut h = h0;
    a[0].push(central(f, h));
    let mut best = a[0][0].clone();
    let mut err = f64::INFINITY;
    for i in 1..NTAB {
        h /= CON;
        a[i].push(central(f, h));
        let mut fac = CON2;
        for j in 1..=i {
            let next = (&a[i][j - 1] * fac - &a[i - 1][j - 1]) / (fac - 1.0);
            fac *= CON2;
            let e = (&next - &a[i][j - 1]).amax().max((&next - &a[i - 1][j - 1]).amax());
            if e <= err {
                err = e;
                best = next.clone();
            }
            a[i].push(next);
        }
        if (&a[i][i] - &a[i - 1][i - 1]).amax() >= SAFE * err {
            break;
        }
    }
    (best, err)
}

/// `‖a − b‖∞ / max(‖b‖∞, floor)`.
pub fn rel_err(a: &DVector<f64>, b: &DVector<f64>, floor: f64) -> f64 {
    (a - b).amax() / b.amax().max(floor)
}

/// Matrix version of [`rel_err`].
pub fn rel_err_mat(a: &nalgebra::DMatrix<f64>, b: &nalgebra::DMatrix<f64>, floor: f64) -> f64 {
    (a - b).amax() / b.amax().max(floor)
}

/// Models the dynamics tests run on: 1–60 DoF chains, trees, the humanoid, every joint type.
pub fn test_models() -> Vec<stiction::Model> {
    use stiction::model::samples::*;
    let mut models = vec![
        pendulum_chain(1, 1.0, 1.0),
        pendulum_chain(2, 1.0, 1.0),
        pendulum_chain(5, 0.5, 0.7),
        spatial_chain(30),
        arm7(),
        binary_tree(4).unwrap(),
        binary_tree(5).unwrap(),
        humanoid(),
        all_joint_types(),
    ];
    for (n, seed, floating) in
        [(1, 1, false), (3, 2, true), (8, 3, false), (15, 4, true), (25, 5, false), (40, 6, true), (55, 7, false)]
    {
        models.push(random_tree(n, seed, floating));
    }
    models
}

/// A random vector with entries in [−scale, scale].
pub fn random_vector(rng: &mut stiction::math::SplitMix64, n: usize, scale: f64) -> DVector<f64> {
    DVector::from_fn(n, |_, _| rng.range(-scale, scale))
}
