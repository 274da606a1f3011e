//! Analytic derivatives of RNEA and ABA against Ridders finite differences, for every
//! joint type and the test models of 0–79 DoF (chains, trees, the 50-DoF humanoid,
//! random trees), at 20 random states each, with external wrenches on half of them.
//! Tolerance: 1e-7 relative to the block's largest entry.

mod common;
use common::{random_vector, ridders, test_models};
use nalgebra::{DMatrix, DVector};
use stiction::dynamics::*;
use stiction::math::{Force, SplitMix64, Vec3};
use stiction::{Data, Model};

const STATES: usize = 20;
const TOL: f64 = 1e-7;

struct Point {
    q: DVector<f64>,
    v: DVector<f64>,
    a: DVector<f64>,
    f: Option<Vec<Force>>,
}

fn points(model: &Model, seed: u64) -> Vec<Point> {
    let mut rng = SplitMix64::new(seed);
    (0..STATES)
        .map(|k| {
            let f = (k % 2 == 1).then(|| {
                (0..model.nbodies())
                    .map(|_| {
                        let r = |rng: &mut SplitMix64| {
                            Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0))
                        };
                        Force::new(r(&mut rng), r(&mut rng))
                    })
                    .collect()
            });
            Point {
                q: model.random_configuration(seed * 100 + k as u64),
                v: random_vector(&mut rng, model.nv(), 2.0),
                a: random_vector(&mut rng, model.nv(), 2.0),
                f,
            }
        })
        .collect()
}

/// Largest entry error relative to the block's largest entry (floor 1).
fn block_err(a: &DMatrix<f64>, f: &DMatrix<f64>) -> (f64, (usize, usize)) {
    let diff = a - f;
    let scale = f.amax().max(1.0);
    let (mut worst, mut at) = (0.0, (0, 0));
    for c in 0..diff.ncols() {
        for r in 0..diff.nrows() {
            if diff[(r, c)].abs() > worst {
                worst = diff[(r, c)].abs();
                at = (r, c);
            }
        }
    }
    (worst / scale, at)
}

/// Ridders finite-difference Jacobian of `g` along tangent directions of q or plain v.
fn fd_jacobian(n: usize, g: &dyn Fn(usize, f64) -> DVector<f64>) -> DMatrix<f64> {
    let cols: Vec<DVector<f64>> = (0..n).map(|j| ridders(&|e| g(j, e), 0.05).0).collect();
    DMatrix::from_columns(&cols)
}

#[test]
fn rnea_derivatives_match_ridders() {
    for model in test_models() {
        if model.nv() == 0 {
            continue;
        }
        let mut data = Data::new(&model);
        let mut deriv = DerivativeData::new(&model);
        let mut scratch = Data::new(&model);
        let mut worst: f64 = 0.0;
        for p in points(&model, 31) {
            let f = p.f.as_deref();
            rnea_derivatives(&model, &mut data, &mut deriv, p.q.as_slice(), p.v.as_slice(), p.a.as_slice(), f).unwrap();
            let tau = |q: &DVector<f64>, v: &DVector<f64>, s: &mut Data| {
                rnea(&model, s, q.as_slice(), v.as_slice(), p.a.as_slice(), f).unwrap().clone()
            };
            let scratch = std::cell::RefCell::new(&mut scratch);
            let fd_q = fd_jacobian(model.nv(), &|j, e| {
                let mut dv = DVector::zeros(model.nv());
                dv[j] = 1.0;
                let qe = model.integrate(&p.q, &dv, e).unwrap();
                tau(&qe, &p.v, &mut scratch.borrow_mut())
            });
            let fd_v = fd_jacobian(model.nv(), &|j, e| {
                let mut ve = p.v.clone();
                ve[j] += e;
                tau(&p.q, &ve, &mut scratch.borrow_mut())
            });
            let (eq, at_q) = block_err(&deriv.dtau_dq, &fd_q);
            let (ev, at_v) = block_err(&deriv.dtau_dv, &fd_v);
            assert!(
                eq < TOL,
                "{}: ∂τ/∂q rel err {eq:e} at {at_q:?}: analytic {} vs FD {}",
                model.name(),
                deriv.dtau_dq[at_q],
                fd_q[at_q]
            );
            assert!(
                ev < TOL,
                "{}: ∂τ/∂v rel err {ev:e} at {at_v:?}: analytic {} vs FD {}",
                model.name(),
                deriv.dtau_dv[at_v],
                fd_v[at_v]
            );
            worst = worst.max(eq).max(ev);
        }
        eprintln!("{:<20} nv {:3}: worst relative error {worst:.1e}", model.name(), model.nv());
    }
}

#[test]
fn mass_matrix_from_the_derivative_pass_equals_crba() {
    // The step linearization assembles M from the derivative pass's composite inertias;
    // its Jacobian tests depend on it, and this compares it with CRBA directly through
    // ABA derivatives (∂q̈/∂τ = M⁻¹).
    for model in test_models().into_iter().filter(|m| m.nv() > 0) {
        let mut data = Data::new(&model);
        let mut deriv = DerivativeData::new(&model);
        let q = model.random_configuration(77);
        let v = DVector::from_element(model.nv(), 0.3);
        let tau = DVector::from_element(model.nv(), 0.1);
        let (_, _, minv) =
            aba_derivatives(&model, &mut data, &mut deriv, q.as_slice(), v.as_slice(), tau.as_slice(), None).unwrap();
        let m = crba(&model, &mut data, q.as_slice()).unwrap().clone();
        let err = (&minv * &m - DMatrix::<f64>::identity(model.nv(), model.nv())).amax();
        assert!(err < 1e-8, "{}: M⁻¹M − I = {err:e}", model.name());
    }
}

#[test]
fn derivative_workspace_follows_the_model_tree() {
    // A workspace made for one model and reused for another of the same size but
    // another tree gives the same derivatives as a fresh one.
    use stiction::model::samples::{binary_tree, spatial_chain};
    let (chain, tree) = (spatial_chain(15), binary_tree(4).unwrap());
    assert_eq!((chain.nbodies(), chain.nv()), (tree.nbodies(), tree.nv()));
    let mut data = Data::new(&chain);
    let mut shared = DerivativeData::new(&chain);
    for model in [&chain, &tree, &chain] {
        let q = model.random_configuration(5);
        let v = DVector::from_element(model.nv(), 0.4);
        let a = DVector::from_element(model.nv(), -0.2);
        rnea_derivatives(model, &mut data, &mut shared, q.as_slice(), v.as_slice(), a.as_slice(), None).unwrap();
        let mut fresh = DerivativeData::new(model);
        rnea_derivatives(model, &mut Data::new(model), &mut fresh, q.as_slice(), v.as_slice(), a.as_slice(), None)
            .unwrap();
        assert_eq!(shared.dtau_dq, fresh.dtau_dq, "{}", model.name());
        assert_eq!(shared.dtau_dv, fresh.dtau_dv, "{}", model.name());
    }
}
