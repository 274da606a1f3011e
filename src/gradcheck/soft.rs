//! The gradient check of one soft-body step: the analytic blocks of
//! [`SoftStepRecord::jacobians`](crate::soft::SoftStepRecord::jacobians) against finite
//! differences of [`crate::soft::step`].
//!
//! Rows are `x⁺` and `v⁺` (3 per vertex); columns are `x`, `v`, the vertex forces `u`, the
//! pin targets and θ ([`SoftBody::param_names`], through [`SoftBody::with_param_values`]).
//! The finite-difference step is `step` for `x` and the targets, `step` times the largest
//! `|v|` (at least 1) for `v`, `step` times the largest vertex weight `m g` (at least 1) for
//! `u`, and `step · max(|θ_j|, 1e-2)` for parameter j (E is in pascals, ν near 0.3).
//!
//! Near the boundary of a parameter's domain, the step shrinks or turns one-sided: a
//! Poisson's ratio's step is at most a quarter of its distance to 0.5 and to −1 (λ grows
//! without bound as ν → 0.5), a modulus's or density's at most a quarter of its value, and a
//! damping coefficient below its step (0, typically) takes one-sided differences upward
//! ([`fd::ridders_one_sided`], or the second-order [`fd::one_sided`] for
//! `FdMethod::Central`): the step is smooth in it, but no body has negative damping.

use super::fd::{self, FdJacobian, Sides};
use super::report::{BlockReport, GradReport};
use super::GradcheckConfig;
use crate::error::Result;
use crate::soft::{step, SoftBody, SoftJacobians, SoftOptions, SoftState};
use nalgebra::{DMatrix, DVector};
use std::sync::Arc;

/// Names of the blocks of a soft step, in the order of [`GradReport::blocks`] (blocks with
/// no columns — no pins — are left out).
pub const SOFT_STEP_BLOCKS: [&str; 10] = [
    "dx+/dx",
    "dx+/dv",
    "dx+/du",
    "dx+/dtargets",
    "dx+/dtheta",
    "dv+/dx",
    "dv+/dv",
    "dv+/du",
    "dv+/dtargets",
    "dv+/dtheta",
];

/// Checks every Jacobian block of one step of `body` from `state` under vertex forces `u`
/// with pin `targets`, against finite differences by `config` (see the module
/// documentation for the steps). Errors: those of the step, and invalid settings.
pub fn check_soft_step(
    body: &Arc<SoftBody>,
    state: &SoftState,
    u: &DVector<f64>,
    targets: &DVector<f64>,
    options: &SoftOptions,
    config: &GradcheckConfig,
) -> Result<GradReport> {
    config.validate()?;
    let record = step(body, state, u, targets, options)?;
    let analytic = record.jacobians()?;
    let (n, np) = (body.ndof(), targets.len());
    let theta = body.param_values();
    let base = record.next_state().clone();
    let outputs = |b: &Arc<SoftBody>, s: &SoftState, u: &DVector<f64>, t: &DVector<f64>| -> Result<DVector<f64>> {
        let next = step(b, s, u, t, options)?.next_state().clone();
        Ok(DVector::from_iterator(2 * n, (next.x - &base.x).iter().chain((next.v - &base.v).iter()).copied()))
    };
    let weight = body.masses().iter().fold(0.0f64, |m, &w| m.max(w)) * body.gravity().norm();
    let speed = state.v.amax();
    let mut steps = Vec::with_capacity(3 * n + np + theta.len());
    steps.extend(std::iter::repeat_n(config.step, n));
    steps.extend(std::iter::repeat_n(config.step * speed.max(1.0), n));
    steps.extend(std::iter::repeat_n(config.step * weight.max(1.0), n));
    steps.extend(std::iter::repeat_n(config.step, np));
    let names = body.param_names();
    let mut sides = vec![Sides::Both; 3 * n + np];
    for (name, &t) in names.iter().zip(theta.iter()) {
        let (h, side) = param_step(name, t, config.step * t.abs().max(1e-2));
        steps.push(h);
        sides.push(side);
    }
    let column = |j: usize, e: f64| -> Result<DVector<f64>> {
        let (mut s, mut uu, mut t) = (state.clone(), u.clone(), targets.clone());
        match j {
            j if j < n => s.x[j] += e,
            j if j < 2 * n => s.v[j - n] += e,
            j if j < 3 * n => uu[j - 2 * n] += e,
            j if j < 3 * n + np => t[j - 3 * n] += e,
            j => {
                let mut th = theta.clone();
                th[j - 3 * n - np] += e;
                return outputs(&Arc::new(body.with_param_values(th.as_slice())?), &s, &uu, &t);
            }
        }
        outputs(body, &s, &uu, &t)
    };
    let dofs: Vec<String> = (0..n).map(|d| format!("{}{}", ["x", "y", "z"][d % 3], d / 3)).collect();
    let label = |p: &str, list: &[String]| list.iter().map(|d| format!("{p}:{d}")).collect::<Vec<_>>();
    let pins: Vec<String> = body.pinned_dofs().iter().map(|&d| dofs[d].clone()).collect();
    let cols = [label("x", &dofs), label("v", &dofs), label("u", &dofs), label("target", &pins), names];
    let rows = [label("x+", &dofs), label("v+", &dofs)];
    let mut report = GradReport {
        title: format!(
            "soft body ({} vertices, {} tets, {} pinned dofs, {} parameters), dt = {}",
            body.mesh().num_vertices(),
            body.mesh().num_tets(),
            np,
            theta.len(),
            options.dt
        ),
        blocks: vec![],
        rel_tol: config.rel_tol,
    };
    let offsets = [0, n, 2 * n, 3 * n, 3 * n + np, 3 * n + np + theta.len()];
    for &method in config.method.methods() {
        let full: FdJacobian = fd::jacobian_from(2 * n, &column, &steps, &sides, method)?;
        for (k, a) in blocks(&analytic).into_iter().enumerate() {
            let (c0, c1) = (offsets[k % 5], offsets[k % 5 + 1]);
            if c1 == c0 {
                continue;
            }
            let r0 = if k < 5 { 0 } else { n };
            let b: DMatrix<f64> = full.value.view((r0, c0), (n, c1 - c0)).into_owned();
            let errs = full.error.as_ref().map(|e| e.rows(c0, c1 - c0).into_owned());
            report.blocks.push(
                BlockReport::compare(SOFT_STEP_BLOCKS[k], method, a, &b, errs.as_ref(), config)?
                    .with_labels(rows[k / 5].clone(), cols[k % 5].clone()),
            );
        }
    }
    Ok(report)
}

/// The step and sides of the finite difference of parameter `name` (value `t`, nominal
/// step `h`) inside its domain (see the module documentation).
fn param_step(name: &str, t: f64, h: f64) -> (f64, Sides) {
    match name.split(':').next().unwrap_or("") {
        "damping_mass" | "damping_stiffness" if t < h => (h, Sides::Above),
        "damping_mass" | "damping_stiffness" => (h, Sides::Both),
        "poisson" => (h.min(0.25 * (0.5 - t)).min(0.25 * (t + 1.0)), Sides::Both),
        _ => (h.min(0.25 * t), Sides::Both),
    }
}

fn blocks(j: &SoftJacobians) -> [&DMatrix<f64>; 10] {
    [&j.x_x, &j.x_v, &j.x_u, &j.x_targets, &j.x_theta, &j.v_x, &j.v_v, &j.v_u, &j.v_targets, &j.v_theta]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradcheck::FdMethod;
    use crate::math::Vec3;
    use crate::soft::generate::box_mesh;
    use crate::soft::{MaterialModel, SoftMaterial};

    #[test]
    fn parameters_on_the_boundary_of_their_domain() {
        assert_eq!(param_step("damping_mass", 0.0, 1e-5), (1e-5, Sides::Above));
        assert_eq!(param_step("damping_stiffness", 1e-6, 1e-5), (1e-5, Sides::Above));
        assert_eq!(param_step("damping_mass", 0.3, 3e-4), (3e-4, Sides::Both));
        assert_eq!(param_step("poisson:0", 0.4999, 5e-4).1, Sides::Both);
        assert!((param_step("poisson:0", 0.4999, 5e-4).0 - 2.5e-5).abs() < 1e-15);
        assert!((param_step("poisson:2", -0.9999, 1e-3).0 - 2.5e-5).abs() < 1e-15);
        assert_eq!(param_step("poisson:0", 0.3, 3e-4), (3e-4, Sides::Both));
        assert_eq!(param_step("youngs_modulus:0", 1e5, 100.0), (100.0, Sides::Both));
        assert_eq!(param_step("density:3", 4e-6, 1e-5), (1e-6, Sides::Both));

        // An undamped body, nearly incompressible (Ridders) or not (central differences, to
        // their accuracy: ~1e-4 from truncation in x, and from Newton's noise in the damping
        // columns, whose steps are 1e-2 of the step at 0): its damping columns are one-sided,
        // its Poisson's ratio's step is small, and every block passes.
        for (poisson, method, step, rel_tol) in
            [(0.4999, FdMethod::Ridders, 1e-3, 1e-6), (0.3, FdMethod::Central, 3e-4, 2e-3)]
        {
            let mesh = box_mesh([2, 1, 1], Vec3::new(0.2, 0.1, 0.1), Vec3::zeros()).unwrap();
            let material = SoftMaterial::new(MaterialModel::StableNeoHookean, 1e5, poisson, 1000.0);
            let body = Arc::new(SoftBody::builder(mesh, material).pin_vertices(&[0, 3]).build().unwrap());
            let mut x = body.rest_positions();
            for (i, xi) in x.iter_mut().enumerate() {
                *xi += 1e-4 * ((i as f64) * 0.7).sin();
            }
            let state = SoftState { x, v: DVector::from_fn(body.ndof(), |i, _| 0.01 * ((i as f64) * 1.3).cos()) };
            let u = DVector::from_fn(body.ndof(), |i, _| 0.1 * ((i as f64) * 0.3).sin());
            let targets = DVector::from_iterator(6, body.pinned_dofs().iter().map(|&d| body.rest_positions()[d]));
            let options = SoftOptions { dt: 5e-3, tolerance: 1e-12, ..Default::default() };
            let config = GradcheckConfig { method, step, rel_tol, ..Default::default() };
            let report = check_soft_step(&body, &state, &u, &targets, &options, &config).unwrap();
            assert!(report.passed(), "{report}");
            assert_eq!(report.blocks.len(), 10);
        }
    }
}
