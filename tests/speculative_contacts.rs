//! Speculative contacts that wait outside the LCP (docs/contact.md, "Per island"): a
//! gap within the contact margin that the free motion does not close is left out of the
//! solve and joins it when the solution would close it, in the velocity stage and in the
//! split recovery's position stage; its rows stay in the record, separating. A resting
//! pile's neighbours then do not join its columns into one island.

mod common;

use common::contact::{add_cube_pile, free_bodies_at, free_body, free_box, ground, material};
use nalgebra::DVector;
use stiction::math::{Inertia, Vec3};
use stiction::model::Geometry;
use stiction::solver::lcp::RowState;
use stiction::step::{PenetrationRecovery, RowKind};
use stiction::{Control, ModelBuilder, SimOptions, Simulator, State};

const R: f64 = 0.1;

/// Ball `a` 2 mm deep in the ground, ball `b` resting 1 mm above it: the recovery lifts
/// `a` by 2 mm within the step, which closes the gap that the free motion leaves open.
fn stacked_balls() -> (stiction::Model, State) {
    let mut b = ModelBuilder::new("stacked_balls");
    ground(&mut b, material(0.5, 0.0), 0.0);
    for name in ["a", "b"] {
        free_body(&mut b, name, Geometry::Sphere { radius: R }, Inertia::solid_sphere(1.0, R), material(0.5, 0.0));
    }
    let model = b.build().unwrap();
    let mut q = model.neutral();
    q[2] = R - 2e-3;
    q[9] = R - 2e-3 + 2.0 * R + 1e-3;
    (model, State { q, v: DVector::zeros(12) })
}

fn ball_gap(q: &DVector<f64>) -> f64 {
    let d = Vec3::new(q[7] - q[0], q[8] - q[1], q[9] - q[2]);
    d.norm() - 2.0 * R
}

#[test]
fn a_gap_that_the_solution_closes_joins_the_lcp() {
    let (model, state) = stacked_balls();
    for recovery in [PenetrationRecovery::Velocity, PenetrationRecovery::Split] {
        let mut options = SimOptions { dt: 1e-3, ..Default::default() };
        options.contact.penetration = recovery;
        let mut sim = Simulator::new(model.clone(), options).unwrap();
        let (next, rec) = sim.step_recorded(&state, &Control::torques(DVector::zeros(12))).unwrap();
        let c = rec.constraints().expect("contact rows");
        assert_eq!(c.contacts.len(), 2, "{recovery:?}: ground–a and a–b");
        let between = (0..c.contacts.len()).find(|&i| c.contacts[i].body_a.is_some()).expect("the a–b contact");
        let normal = c.rows.iter().position(|k| *k == RowKind::ContactNormal { contact: between }).unwrap();
        assert!(c.contacts[between].geometry.distance > 0.0, "a speculative contact");
        // Without the a–b rows, a would rise 2 mm into b (1 mm of penetration). The
        // split recovery's position stage is regularized (`position_regularization`):
        // with every row in one solve it leaves the balls 2.0e-6 m into each other too.
        let gap = ball_gap(&next.q);
        let floor = if recovery == PenetrationRecovery::Split { -2.1e-6 } else { -1e-9 };
        assert!(gap >= floor, "{recovery:?}: the balls end {gap:e} m apart");
        match recovery {
            PenetrationRecovery::Velocity => {
                assert!(c.impulses[normal] > 0.0, "the velocity stage pushes b: {}", c.impulses[normal]);
                assert_eq!(c.states[normal], RowState::Clamping);
                assert!(next.v[11] > 0.5, "b is carried up at {} m/s", next.v[11]);
            }
            PenetrationRecovery::Split => {
                let p = c.correction.as_ref().expect("a position correction");
                assert!(p.impulses[normal] > 0.0, "the position stage pushes b: {}", p.impulses[normal]);
            }
        }
    }
}

/// Two columns of two boxes, 1 mm apart (inside the 5 mm margin): the speculative
/// contacts between the columns are recorded, separating with zero impulse, the two
/// columns are two islands, and both rest.
#[test]
fn a_resting_pile_splits_into_its_columns() {
    let mut b = ModelBuilder::new("two_columns");
    ground(&mut b, material(0.5, 0.0), 0.0);
    let h = Vec3::new(0.05, 0.05, 0.05);
    for k in 0..4 {
        free_box(&mut b, &format!("box{k}"), h, 1.0, material(0.5, 0.0));
    }
    let model = b.build().unwrap();
    let mut q = model.neutral();
    for k in 0..4 {
        q[7 * k] = if k % 2 == 0 { 0.0 } else { 2.0 * h.x + 1e-3 };
        q[7 * k + 2] = h.z + if k < 2 { 0.0 } else { 2.0 * h.z };
    }
    let q0 = q.clone();
    let mut sim = Simulator::new(model.clone(), SimOptions { dt: 1e-3, ..Default::default() }).unwrap();
    let mut state = State { q, v: DVector::zeros(24) };
    let u = Control::torques(DVector::zeros(24));
    for step in 0..500 {
        let (next, rec) = sim.step_recorded(&state, &u).unwrap();
        let c = rec.constraints().expect("rows");
        assert_eq!(c.stats.islands, 2, "step {step}: {:?}", c.stats);
        let lateral: Vec<usize> = (0..c.contacts.len())
            .filter(|&i| c.contacts[i].geometry.distance > 5e-4 && c.contacts[i].body_a.is_some())
            .collect();
        assert!(!lateral.is_empty(), "step {step}: the columns' speculative contacts are recorded");
        for i in lateral {
            for (r, k) in c.rows.iter().enumerate() {
                if matches!(*k, RowKind::ContactNormal { contact } | RowKind::ContactFriction { contact, .. } if contact == i)
                {
                    assert_eq!(c.impulses[r], 0.0);
                    assert_eq!(c.states[r], RowState::Separating);
                }
            }
        }
        state = next;
    }
    let moved = (0..4).map(|k| (state.q.rows(7 * k, 3) - q0.rows(7 * k, 3)).norm()).fold(0.0, f64::max);
    assert!(moved < 1e-6, "a box moved by {moved:e} m over 0.5 s");
    assert_eq!(sim.stats().lcp_fallbacks, 0);
}

/// A pile of 100 boxes (5 × 5 columns of 4, 1 mm apart) settles for 100 steps, then one
/// step is recorded and differentiated: 400 contacts, about 1,200 clamping rows on 600
/// dofs in the velocity stage (its `Â` kept factored) and 400 regularized normal rows in
/// the position stage (started by penetrations of rounding size: penetration tolerance 0).
/// The position stage's `Â` has ten distinct eigenvalues, repeated up
/// to a hundred times; its eigendecomposition (`math::SymmetricEigenWorkspace`) needed 80
/// iterations for one of them and failed under a cap of 60 per eigenvalue ("the
/// pseudo-inverse of A_CC failed"). The Jacobians exist, are finite, and are the VJP's.
#[test]
fn a_pile_of_a_hundred_boxes_is_differentiated() {
    let mut b = ModelBuilder::new("pile100");
    ground(&mut b, material(0.5, 0.0), 0.0);
    let centres = add_cube_pile(&mut b, 4, 5, 0.05, -2.0, |_| 1.0);
    let model = b.build().unwrap();
    let q = free_bodies_at(&model, &centres);
    let nv = model.nv();
    // The resting pile's penetrations are of rounding size: with no tolerance they start
    // the position stage, whose backward pass is under test here.
    let mut options = SimOptions { dt: 1e-3, ..Default::default() };
    options.contact.penetration_tolerance = 0.0;
    let mut sim = Simulator::new(model.clone(), options).unwrap();
    let control = Control::torques(DVector::zeros(nv));
    let mut state = State { q, v: DVector::zeros(nv) };
    for _ in 0..100 {
        state = sim.step(&state, &control).unwrap();
    }
    let (_, rec) = sim.step_recorded(&state, &control).unwrap();
    let c = rec.constraints().unwrap();
    let clamping = c.states.iter().filter(|&&s| s == RowState::Clamping).count();
    assert!(clamping > nv, "{clamping} clamping rows");
    assert!(c.correction.is_some(), "no position stage");
    let jac = rec.jacobians().unwrap();
    assert!(jac.dv_dq.iter().chain(jac.dv_dv.iter()).all(|x| x.is_finite()));
    let g = DVector::from_fn(nv, |i, _| ((i * 7919) % 13) as f64 / 13.0 - 0.5);
    let got = rec.vjp(&DVector::zeros(nv), &g).unwrap();
    let want = jac.dv_dv.tr_mul(&g);
    let scale = jac.dv_dv.abs().tr_mul(&g.abs()).amax().max(1.0);
    assert!((&got.v - &want).amax() <= 1e-9 * scale, "VJP off by {:e}", (&got.v - &want).amax());
}
