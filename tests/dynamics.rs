//! Rigid-body algorithms on models of 1–60 DoF (chains, branching trees, a 50-DoF
//! floating-base humanoid, every joint type, random trees), at random states:
//! - M (CRBA) is symmetric positive definite and equals Σ Jᵢᵀ Iᵢ Jᵢ;
//! - ABA(q, v, τ) = M⁻¹(τ − c), RNEA(q, v, ABA(q, v, τ)) = τ, CRBA = RNEA(e_k) − c,
//!   all to 1e-10 relative;
//! - ½ vᵀ M v is the kinetic energy; the gravity forces are the gradient of the
//!   potential energy (Ridders); body velocities and accelerations are the derivatives
//!   of poses and velocities (Ridders); on floating models the rate of total momentum
//!   equals the gravity wrench whatever the internal torques.

mod common;
use common::{random_vector, rel_err, rel_err_mat, ridders, test_models};
use nalgebra::{DMatrix, DVector};
use stiction::dynamics::*;
use stiction::math::{se3_log, Force, SplitMix64};
use stiction::{Data, Model};

const STATES: usize = 20;

fn states(model: &Model, seed: u64) -> Vec<(DVector<f64>, DVector<f64>, DVector<f64>)> {
    let mut rng = SplitMix64::new(seed);
    (0..STATES)
        .map(|k| {
            let q = model.random_configuration(seed * 1000 + k as u64);
            let v = random_vector(&mut rng, model.nv(), 2.0);
            let tau = random_vector(&mut rng, model.nv(), 5.0);
            (q, v, tau)
        })
        .collect()
}

#[test]
fn mass_matrix_is_symmetric_positive_definite() {
    for model in test_models() {
        let mut data = Data::new(&model);
        for (q, _, _) in states(&model, 1) {
            let m = crba(&model, &mut data, q.as_slice()).unwrap().clone();
            assert!(rel_err_mat(&m, &m.transpose(), 1e-300) < 1e-14, "{}: M not symmetric", model.name());
            assert!(m.clone().cholesky().is_some(), "{}: M not positive definite", model.name());
            if model.nv() == 0 {
                continue; // a welded single body: nothing to factor
            }
            let eig = m.symmetric_eigenvalues();
            assert!(eig.min() > 0.0, "{}: min eigenvalue {}", model.name(), eig.min());
        }
    }
}

#[test]
fn aba_equals_inverse_mass_matrix_times_generalized_forces() {
    for model in test_models() {
        let mut data = Data::new(&model);
        for (q, v, tau) in states(&model, 2) {
            let (q, v, tau) = (q.as_slice(), v.as_slice(), tau.as_slice());
            let m = crba(&model, &mut data, q).unwrap().clone();
            let c = bias_forces(&model, &mut data, q, v).unwrap().clone();
            let rhs = DVector::from_column_slice(tau) - &c;
            let expected = m.cholesky().unwrap().solve(&rhs);
            let qdd = aba(&model, &mut data, q, v, tau, None).unwrap().clone();
            let err = rel_err(&qdd, &expected, 1e-12);
            assert!(err < 1e-10, "{}: ABA vs M⁻¹(τ−c): rel err {err:e}", model.name());
        }
    }
}

#[test]
fn rnea_inverts_aba() {
    for model in test_models() {
        let mut data = Data::new(&model);
        for (q, v, tau) in states(&model, 3) {
            let (q, v) = (q.as_slice(), v.as_slice());
            let qdd = aba(&model, &mut data, q, v, tau.as_slice(), None).unwrap().clone();
            let back = rnea(&model, &mut data, q, v, qdd.as_slice(), None).unwrap().clone();
            let err = rel_err(&back, &tau, 1e-12);
            assert!(err < 1e-10, "{}: RNEA(ABA(τ)) vs τ: rel err {err:e}", model.name());
        }
    }
}

#[test]
fn rnea_and_aba_agree_with_external_wrenches() {
    for model in test_models() {
        let mut data = Data::new(&model);
        let mut rng = SplitMix64::new(9);
        for (q, v, tau) in states(&model, 4).into_iter().take(5) {
            let (q, v) = (q.as_slice(), v.as_slice());
            let fext: Vec<Force> = (0..model.nbodies())
                .map(|_| {
                    Force::new(
                        random_vector(&mut rng, 3, 2.0).fixed_rows::<3>(0).into(),
                        random_vector(&mut rng, 3, 2.0).fixed_rows::<3>(0).into(),
                    )
                })
                .collect();
            let qdd = aba(&model, &mut data, q, v, tau.as_slice(), Some(&fext)).unwrap().clone();
            let back = rnea(&model, &mut data, q, v, qdd.as_slice(), Some(&fext)).unwrap().clone();
            assert!(rel_err(&back, &tau, 1e-12) < 1e-10, "{}", model.name());
            // External wrenches act as Jᵀ f (world-frame Jacobian about the origin).
            forward_kinematics(&model, &mut data, q).unwrap();
            let mut jtf = DVector::zeros(model.nv());
            for (i, f) in fext.iter().enumerate() {
                let j = body_jacobian(&model, &data, i, ReferenceFrame::World).unwrap();
                jtf += j.transpose() * f.to_vector();
            }
            let zero = vec![0.0; model.nv()];
            let with = rnea(&model, &mut data, q, v, &zero, Some(&fext)).unwrap().clone();
            let without = rnea(&model, &mut data, q, v, &zero, None).unwrap().clone();
            assert!(rel_err(&(without - with), &jtf, 1e-12) < 1e-10, "{}: Jᵀf", model.name());
        }
    }
}

#[test]
fn crba_equals_rnea_unit_accelerations_minus_bias() {
    for model in test_models() {
        let mut data = Data::new(&model);
        for (q, v, _) in states(&model, 5).into_iter().take(5) {
            let (q, v) = (q.as_slice(), v.as_slice());
            let m = crba(&model, &mut data, q).unwrap().clone();
            let c = bias_forces(&model, &mut data, q, v).unwrap().clone();
            let mut from_rnea = DMatrix::zeros(model.nv(), model.nv());
            for k in 0..model.nv() {
                let mut e = vec![0.0; model.nv()];
                e[k] = 1.0;
                let col = rnea(&model, &mut data, q, v, &e, None).unwrap() - &c;
                from_rnea.set_column(k, &col);
            }
            let err = rel_err_mat(&m, &from_rnea, 1e-12);
            assert!(err < 1e-10, "{}: CRBA vs RNEA: {err:e}", model.name());
        }
    }
}

#[test]
fn mass_matrix_equals_sum_of_body_jacobian_inertias() {
    for model in test_models() {
        let mut data = Data::new(&model);
        for (q, v, _) in states(&model, 6).into_iter().take(5) {
            let q = q.as_slice();
            let m = crba(&model, &mut data, q).unwrap().clone();
            let mut expected = DMatrix::from_diagonal(model.armature());
            for i in 0..model.nbodies() {
                let j = body_jacobian(&model, &data, i, ReferenceFrame::Local).unwrap();
                let inertia = model.bodies()[i].inertia.to_matrix();
                expected += j.transpose() * inertia * &j;
            }
            assert!(rel_err_mat(&m, &expected, 1e-12) < 1e-10, "{}", model.name());
            let ke = kinetic_energy(&model, &mut data, q, v.as_slice()).unwrap();
            let quad = 0.5 * v.dot(&(&m * &v));
            assert!((ke - quad).abs() < 1e-10 * quad.abs().max(1e-12), "{}: {ke} vs {quad}", model.name());
        }
    }
}

#[test]
fn gravity_forces_are_the_gradient_of_potential_energy() {
    for model in test_models() {
        let mut data = Data::new(&model);
        for (q, _, _) in states(&model, 7).into_iter().take(3) {
            let g = gravity_forces(&model, &mut data, q.as_slice()).unwrap().clone();
            let mut springs = DVector::zeros(model.nv());
            // Potential energy includes springs; their generalized force is k ⊙ (q ⊖ q_rest)
            // only along directions where the difference map is linear, so compare
            // against the gradient with springs removed.
            let no_spring = strip_springs(&model);
            for k in 0..model.nv() {
                let f = |e: f64| {
                    let mut dv = DVector::zeros(model.nv());
                    dv[k] = e;
                    let qe = no_spring.integrate(&q, &dv, 1.0).unwrap();
                    DVector::from_element(
                        1,
                        potential_energy(&no_spring, &mut Data::new(&no_spring), qe.as_slice()).unwrap(),
                    )
                };
                springs[k] = ridders(&f, 1e-2).0[0];
            }
            let err = rel_err(&springs, &g, 1e-6);
            assert!(err < 1e-8, "{}: gravity vs ∂V/∂q: {err:e}\n{g}\n{springs}", model.name());
        }
    }
}

fn strip_springs(model: &Model) -> Model {
    let mut b: stiction::ModelBuilder = model.clone().into();
    for j in &mut b.joints {
        j.joint.dynamics.stiffness.iter_mut().for_each(|k| *k = 0.0);
    }
    b.build().unwrap()
}

#[test]
fn body_velocities_and_accelerations_are_derivatives_of_poses() {
    for model in test_models() {
        let mut data = Data::new(&model);
        let mut rng = SplitMix64::new(8);
        for (q, v, _) in states(&model, 8).into_iter().take(3) {
            let a = random_vector(&mut rng, model.nv(), 2.0);
            forward_kinematics_acceleration(&model, &mut data, q.as_slice(), v.as_slice(), a.as_slice()).unwrap();
            let (x0, v0, a0) = (data.x_world.clone(), data.v.clone(), data.a.clone());
            let d2 = std::cell::RefCell::new(Data::new(&model));
            for i in 0..model.nbodies() {
                let fv = |e: f64| {
                    let qe = model.integrate(&q, &v, e).unwrap();
                    let d2 = &mut *d2.borrow_mut();
                    forward_kinematics(&model, d2, qe.as_slice()).unwrap();
                    DVector::from_column_slice(se3_log(&(x0[i].inverse() * d2.x_world[i])).to_vector().as_slice())
                };
                let (dv, _) = ridders(&fv, 1e-2);
                let expected = DVector::from_column_slice(v0[i].to_vector().as_slice());
                assert!(rel_err(&dv, &expected, 1.0) < 1e-8, "{} body {i}: velocity", model.name());
                let fa = |e: f64| {
                    let qe = model.integrate(&q, &v, e).unwrap();
                    let ve = &v + &a * e;
                    let d2 = &mut *d2.borrow_mut();
                    forward_kinematics_velocity(&model, d2, qe.as_slice(), ve.as_slice()).unwrap();
                    DVector::from_column_slice(d2.v[i].to_vector().as_slice())
                };
                let (da, _) = ridders(&fa, 1e-2);
                let expected = DVector::from_column_slice(a0[i].to_vector().as_slice());
                assert!(rel_err(&da, &expected, 1.0) < 1e-8, "{} body {i}: acceleration", model.name());
            }
        }
    }
}

#[test]
fn floating_momentum_rate_equals_gravity_wrench() {
    for model in test_models().into_iter().filter(|m| matches!(m.joints()[0].kind, stiction::JointType::Free)) {
        let mut data = Data::new(&model);
        for (q, v, mut tau) in states(&model, 9).into_iter().take(5) {
            tau.rows_mut(0, 6).fill(0.0); // no actuation on the free root
            let qdd = aba(&model, &mut data, q.as_slice(), v.as_slice(), tau.as_slice(), None).unwrap().clone();
            let f = |e: f64| {
                let qe = model.integrate(&q, &v, e).unwrap();
                let ve = &v + &qdd * e;
                let h = momentum(&model, &mut Data::new(&model), qe.as_slice(), ve.as_slice()).unwrap();
                DVector::from_column_slice(h.to_vector().as_slice())
            };
            let (hdot, _) = ridders(&f, 1e-3);
            let com = center_of_mass(&model, &mut data, q.as_slice()).unwrap();
            let mg = model.gravity() * model.total_mass();
            let expected = DVector::from_column_slice(Force::from_point_force(&com, &mg).to_vector().as_slice());
            let err = rel_err(&hdot, &expected, 1.0);
            assert!(err < 1e-8, "{}: ḣ vs gravity wrench: {err:e}\n{hdot}\n{expected}", model.name());
        }
    }
}

#[test]
fn invalid_inputs_are_errors_not_panics() {
    let model = stiction::model::samples::all_joint_types();
    let mut data = Data::new(&model);
    let q = model.neutral();
    let v = vec![0.0; model.nv()];
    assert!(matches!(aba(&model, &mut data, &q.as_slice()[1..], &v, &v, None), Err(stiction::Error::Dimension { .. })));
    let mut bad = q.clone();
    bad[2] = f64::NAN;
    let e = rnea(&model, &mut data, bad.as_slice(), &v, &v, None).unwrap_err();
    assert!(matches!(e, stiction::Error::NonFinite { what: "q", index: 2, .. }), "{e}");
    let mut vnan = v.clone();
    vnan[0] = f64::INFINITY;
    assert!(matches!(
        aba(&model, &mut data, q.as_slice(), &vnan, &v, None),
        Err(stiction::Error::NonFinite { what: "v", .. })
    ));
    let mut zero_quat = q.clone();
    zero_quat.rows_mut(3, 4).fill(0.0);
    let e = crba(&model, &mut data, zero_quat.as_slice()).unwrap_err();
    assert!(e.to_string().contains("quaternion"), "{e}");
    assert!(body_jacobian(&model, &data, 999, ReferenceFrame::World).is_err());
}

#[test]
fn point_and_body_jacobians_are_derivatives_of_kinematics() {
    for model in test_models() {
        let mut data = Data::new(&model);
        let mut rng = SplitMix64::new(10);
        for (q, v, _) in states(&model, 10).into_iter().take(3) {
            forward_kinematics_velocity(&model, &mut data, q.as_slice(), v.as_slice()).unwrap();
            let x0 = data.x_world.clone();
            for i in 0..model.nbodies() {
                let p = stiction::math::Vec3::new(rng.range(-0.3, 0.3), rng.range(-0.3, 0.3), rng.range(-0.3, 0.3));
                let jp = point_jacobian(&model, &data, i, &p).unwrap();
                let f = |e: f64| {
                    let qe = model.integrate(&q, &v, e).unwrap();
                    let mut d = Data::new(&model);
                    forward_kinematics(&model, &mut d, qe.as_slice()).unwrap();
                    DVector::from_column_slice(point_position(&d, i, &p).as_slice())
                };
                let (dp, _) = ridders(&f, 1e-2);
                assert!(
                    rel_err(&dp, &DVector::from_column_slice((&jp * &v).as_slice()), 1.0) < 1e-8,
                    "{} body {i}: point Jacobian",
                    model.name()
                );
                // Body Jacobians: Local is the body velocity; World and LocalWorldAligned are its transforms.
                let local = body_jacobian(&model, &data, i, ReferenceFrame::Local).unwrap() * &v;
                assert!((local - data.v[i].to_vector()).amax() < 1e-12 * (1.0 + v.amax()));
                let world = body_jacobian(&model, &data, i, ReferenceFrame::World).unwrap() * &v;
                assert!((world - x0[i].act_motion(&data.v[i]).to_vector()).amax() < 1e-12 * (1.0 + v.amax()));
                let aligned = body_jacobian(&model, &data, i, ReferenceFrame::LocalWorldAligned).unwrap() * &v;
                let vw = x0[i].act_motion(&data.v[i]);
                let origin_vel = vw.lin + vw.ang.cross(&x0[i].trans);
                assert!((aligned.fixed_rows::<3>(3) - origin_vel).amax() < 1e-12 * (1.0 + v.amax()));
                assert!((jp.clone() - point_jacobian(&model, &data, i, &p).unwrap()).amax() == 0.0);
            }
        }
    }
}
