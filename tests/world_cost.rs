//! World-space costs (`optim::world_cost`): gradients against Ridders differences along
//! `q ⊕ ε eᵢ` on a fixed-base arm and on a model with free and spherical joints,
//! Gauss–Newton Hessians against differenced point Jacobians, sums of costs, errors.

mod common;

use common::ridders;
use nalgebra::{DMatrix, DVector};
use stiction::math::Vec3;
use stiction::model::samples::{all_joint_types, arm7};
use stiction::optim::{BodyPoint, ObstacleCost, PointCost, QuadraticCost, SumCost, TrajectoryCost};
use stiction::{Model, State};

fn perturbed(model: &Model, x: &State, i: usize, e: f64) -> State {
    let nv = model.nv();
    let mut xs = x.clone();
    if i < nv {
        let mut dir = DVector::zeros(nv);
        dir[i] = 1.0;
        xs.q = model.integrate(&x.q, &dir, e).unwrap();
    } else {
        xs.v[i - nv] += e;
    }
    xs
}

/// World position of a body point, by the cost's own helper.
fn position(model: &Model, p: BodyPoint, q: &DVector<f64>) -> Vec3 {
    PointCost::terminal(p, Vec3::zeros(), 1.0).unwrap().position(model, q).unwrap()
}

/// Checks `running_derivatives` and `terminal_derivatives` of `cost` at `x` against
/// Ridders differences of `running` / `terminal`; returns the largest relative error.
fn check_gradients(model: &Model, cost: &dyn TrajectoryCost, x: &State, u: &DVector<f64>) -> f64 {
    let nv = model.nv();
    let d = cost.running_derivatives(model, 3, x, u).unwrap();
    let dt = cost.terminal_derivatives(model, x).unwrap();
    assert!((d.value - cost.running(model, 3, x, u).unwrap()).abs() < 1e-12 * d.value.abs().max(1.0));
    assert!((dt.value - cost.terminal(model, x).unwrap()).abs() < 1e-12 * dt.value.abs().max(1.0));
    let mut worst: f64 = 0.0;
    for i in 0..2 * nv {
        let (fd, _) = ridders(
            &|e| DVector::from_element(1, cost.running(model, 3, &perturbed(model, x, i, e), u).unwrap()),
            1e-3,
        );
        let err = (d.lx[i] - fd[0]).abs() / fd[0].abs().max(1.0);
        assert!(err < 1e-7, "{}: dl/dx[{i}]: {} vs {}", model.name(), d.lx[i], fd[0]);
        worst = worst.max(err);
        let (fd, _) =
            ridders(&|e| DVector::from_element(1, cost.terminal(model, &perturbed(model, x, i, e)).unwrap()), 1e-3);
        let err = (dt.lx[i] - fd[0]).abs() / fd[0].abs().max(1.0);
        assert!(err < 1e-7, "{}: dlT/dx[{i}]: {} vs {}", model.name(), dt.lx[i], fd[0]);
        worst = worst.max(err);
    }
    for i in 0..nv {
        let (fd, _) = ridders(
            &|e| {
                let mut us = u.clone();
                us[i] += e;
                DVector::from_element(1, cost.running(model, 3, x, &us).unwrap())
            },
            1e-2,
        );
        assert!((d.lu[i] - fd[0]).abs() < 1e-7 * fd[0].abs().max(1.0), "dl/du[{i}]: {} vs {}", d.lu[i], fd[0]);
    }
    worst
}

/// The point Jacobian in the tangent space by Ridders differences of the position (3 × nv).
fn fd_point_jacobian(model: &Model, p: BodyPoint, x: &State) -> DMatrix<f64> {
    let nv = model.nv();
    let mut j = DMatrix::zeros(3, nv);
    for i in 0..nv {
        let (fd, _) = ridders(
            &|e| {
                let pos = position(model, p, &perturbed(model, x, i, e).q);
                DVector::from_column_slice(pos.as_slice())
            },
            1e-3,
        );
        j.column_mut(i).copy_from(&fd);
    }
    j
}

fn models() -> Vec<(Model, &'static str)> {
    vec![(arm7(), "link7"), (all_joint_types(), "")]
}

/// The last body of the model, or the named one.
fn body(model: &Model, name: &str) -> usize {
    if name.is_empty() {
        model.nbodies() - 1
    } else {
        model.body_index(name).unwrap()
    }
}

fn state(model: &Model, seed: u64) -> State {
    let nv = model.nv();
    State { q: model.random_configuration(seed), v: DVector::from_fn(nv, |i, _| (i as f64).sin()) }
}

#[test]
fn point_cost_gradients_and_gauss_newton_hessians() {
    for (model, name) in models() {
        let nv = model.nv();
        let x = state(&model, 11);
        let u = DVector::from_fn(nv, |i, _| (0.3 * i as f64).cos());
        let p = BodyPoint::new(body(&model, name), Vec3::new(0.05, -0.02, 0.1));
        let target = Vec3::new(0.3, -0.2, 0.5);
        let cost = PointCost::terminal(p, target, 3.0)
            .unwrap()
            .with_running(0.7)
            .unwrap()
            .with_axis_weights(Vec3::new(1.0, 2.0, 0.5))
            .unwrap();
        let worst = check_gradients(&model, &cost, &x, &u);
        println!("{}: point cost gradient rel. error {worst:.1e}", model.name());
        // Gauss–Newton Hessian: Jᵀ W J with the differenced Jacobian, q block only.
        let j = fd_point_jacobian(&model, p, &x);
        let w = DMatrix::from_diagonal(&DVector::from_column_slice(&[1.0, 2.0, 0.5]));
        let gn = j.transpose() * &w * &j * 3.0;
        let dt = cost.terminal_derivatives(&model, &x).unwrap();
        let err = (dt.lxx.view((0, 0), (nv, nv)) - &gn).amax() / gn.amax();
        assert!(err < 1e-7, "{}: GN Hessian rel. error {err:e}", model.name());
        assert_eq!(dt.lxx.view((0, nv), (nv, nv)).amax(), 0.0);
        assert_eq!(dt.lxx.view((nv, 0), (nv, 2 * nv)).amax(), 0.0);
        // The value is ½ (p − p*)ᵀ W (p − p*).
        let e = position(&model, p, &x.q) - target;
        let value = 0.5 * 3.0 * (e.x * e.x + 2.0 * e.y * e.y + 0.5 * e.z * e.z);
        assert!((dt.value - value).abs() < 1e-12 * value.max(1.0));
    }
}

#[test]
fn obstacle_cost_gradients_inside_and_zero_outside() {
    for (model, name) in models() {
        let nv = model.nv();
        let x = state(&model, 5);
        let u = DVector::zeros(nv);
        let b = body(&model, name);
        let inside = BodyPoint::new(b, Vec3::new(0.02, 0.01, 0.05));
        let far = BodyPoint::new(0, Vec3::zeros());
        let p = position(&model, inside, &x.q);
        let center = p + Vec3::new(0.03, -0.04, 0.02);
        // The inside point is 0.054 m from the centre: penetration 0.1 + 0.02 − 0.054.
        let far_pos = position(&model, far, &x.q);
        let radius = 0.1;
        assert!((far_pos - center).norm() > radius + 0.02 + 1e-3 || b == 0, "{}: test setup", model.name());
        let cost = ObstacleCost::new(vec![inside, far], center, radius, 0.02, 5.0, 50.0).unwrap();
        let worst = check_gradients(&model, &cost, &x, &u);
        println!("{}: obstacle gradient rel. error {worst:.1e}", model.name());
        let s = radius + 0.02 - (p - center).norm();
        let dt = cost.terminal_derivatives(&model, &x).unwrap();
        assert!((dt.value - 50.0 * s * s).abs() < 1e-12);
        assert!(dt.lx.amax() > 0.1);
        // Gauss–Newton Hessian 2 w Jᵀ n nᵀ J.
        let j = fd_point_jacobian(&model, inside, &x);
        let n = (p - center).normalize();
        let nt = DMatrix::from_row_slice(1, 3, n.as_slice());
        let gn = (nt * &j).transpose() * (DMatrix::from_row_slice(1, 3, n.as_slice()) * &j) * (2.0 * 50.0);
        let err = (dt.lxx.view((0, 0), (nv, nv)) - &gn).amax() / gn.amax();
        assert!(err < 1e-7, "{}: obstacle GN Hessian rel. error {err:e}", model.name());
        assert!((cost.clearance(&model, &x.q).unwrap() - ((p - center).norm() - radius)).abs() < 1e-12);
        // Moved away, the penalty and its derivatives vanish.
        let away = ObstacleCost::new(vec![inside], center + Vec3::new(5.0, 0.0, 0.0), radius, 0.02, 1.0, 1.0).unwrap();
        let d = away.running_derivatives(&model, 0, &x, &u).unwrap();
        assert_eq!(d.value, 0.0);
        assert_eq!(d.lx.amax(), 0.0);
        assert_eq!(d.lxx.amax(), 0.0);
    }
}

#[test]
fn sum_cost_adds_its_terms() {
    for (model, name) in models() {
        let nv = model.nv();
        let x = state(&model, 8);
        let u = DVector::from_fn(nv, |i, _| 0.2 * i as f64 - 0.5);
        let b = body(&model, name);
        let p = BodyPoint::new(b, Vec3::new(0.0, 0.0, 0.1));
        let pos = position(&model, p, &x.q);
        let quad = || {
            QuadraticCost::diagonal(
                &model,
                State::neutral(&model),
                &vec![0.5; 2 * nv],
                &vec![0.1; nv],
                &vec![2.0; 2 * nv],
            )
            .unwrap()
        };
        let point = || PointCost::terminal(p, Vec3::new(0.1, 0.2, 0.3), 10.0).unwrap().with_running(1.0).unwrap();
        let obstacle = || ObstacleCost::new(vec![p], pos + Vec3::new(0.0, 0.05, 0.0), 0.1, 0.0, 2.0, 3.0).unwrap();
        let sum = SumCost::new().with(quad()).with(point()).with(obstacle());
        assert_eq!(sum.len(), 3);
        sum.validate(&model).unwrap();
        let d = sum.running_derivatives(&model, 0, &x, &u).unwrap();
        let parts = [
            quad().running_derivatives(&model, 0, &x, &u).unwrap(),
            point().running_derivatives(&model, 0, &x, &u).unwrap(),
            obstacle().running_derivatives(&model, 0, &x, &u).unwrap(),
        ];
        let value: f64 = parts.iter().map(|p| p.value).sum();
        assert!((d.value - value).abs() < 1e-12 * value);
        let lx = parts.iter().fold(DVector::zeros(2 * nv), |a, p| a + &p.lx);
        assert!((d.lx - lx).amax() < 1e-12 * d.value.max(1.0));
        let luu = parts.iter().fold(DMatrix::zeros(nv, nv), |a, p| a + &p.luu);
        assert_eq!(d.luu, luu);
        check_gradients(&model, &sum, &x, &u);
    }
}

#[test]
fn bad_inputs_give_typed_errors() {
    let model = arm7();
    let x = State::neutral(&model);
    let u = DVector::zeros(model.nv());
    let p = BodyPoint::new(model.nbodies(), Vec3::zeros());
    let cost = PointCost::terminal(p, Vec3::zeros(), 1.0).unwrap();
    let e = cost.validate(&model).unwrap_err().to_string();
    assert!(e.contains("out of range"), "{e}");
    assert!(cost.terminal(&model, &x).is_err());
    assert!(BodyPoint::named(&model, "no_such_link", Vec3::zeros()).is_err());
    let good = BodyPoint::named(&model, "link7", Vec3::zeros()).unwrap();
    assert!(PointCost::terminal(good, Vec3::new(f64::NAN, 0.0, 0.0), 1.0).is_err());
    assert!(PointCost::terminal(good, Vec3::zeros(), -1.0).is_err());
    assert!(PointCost::terminal(good, Vec3::zeros(), 1.0).unwrap().with_running(f64::INFINITY).is_err());
    assert!(ObstacleCost::new(vec![], Vec3::zeros(), 0.1, 0.0, 1.0, 1.0).is_err());
    assert!(ObstacleCost::new(vec![good], Vec3::zeros(), -0.1, 0.0, 1.0, 1.0).is_err());
    let cost = PointCost::terminal(good, Vec3::zeros(), 1.0).unwrap();
    assert!(cost.running(&model, 0, &x, &DVector::zeros(3)).is_err());
    let short = State { q: DVector::zeros(3), v: x.v.clone() };
    assert!(cost.terminal_derivatives(&model, &short).is_err());
    // A point exactly at the obstacle centre has no direction: a typed error.
    let pos = position(&model, good, &x.q);
    let centred = ObstacleCost::new(vec![good], pos, 0.1, 0.0, 1.0, 1.0).unwrap();
    assert!(matches!(centred.terminal_derivatives(&model, &x), Err(stiction::Error::Numerical { .. })));
    assert!(centred.running(&model, 0, &x, &u).is_err());
}
