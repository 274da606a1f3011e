//! A world of several systems: a toy second system (point-mass particles) colliding with
//! rigid bodies through the same rows and solver. Physics against closed forms
//! (resting contact, sliding on an incline, momentum in a particle–body collision with
//! unequal masses) and the step's VJP against Ridders finite differences, in every
//! input direction, at states inside their contact mode.

mod common;

use common::contact::{free_box, material};
use common::ridders;
use common::world::{assert_vjp_matches_ridders, perturbed, vjp_error_with};
use nalgebra::DVector;
use std::sync::Arc;
use stiction::collision::Material;
use stiction::math::{Inertia, SplitMix64, Vec3, SE3};
use stiction::model::{Body, CollisionShape, Geometry, WORLD};
use stiction::solver::lcp::RowState;
use stiction::world::{
    Articulation, ContactSide, Particles, StaticGeometry, System, World, WorldBatchRollout, WorldOptions, WorldState,
};
use stiction::{Error, Joint, Model, ModelBuilder};

const G: f64 = 9.81;
const H: f64 = 1e-3;

fn options() -> WorldOptions {
    WorldOptions { dt: H, ..Default::default() }
}

fn gravity() -> Vec3 {
    Vec3::new(0.0, 0.0, -G)
}

/// A board (2 kg, half extents 0.3 × 0.15 × 0.02 m, centred 0.3 m along x) on a hinge
/// about y at the origin.
fn hinged_board(mu: f64) -> Model {
    let mut b = ModelBuilder::new("hinged_board");
    let half = Vec3::new(0.3, 0.15, 0.02);
    let at = SE3::from_translation(Vec3::new(0.3, 0.0, 0.0));
    let inertia = Inertia::from_com(2.0, at.trans, Inertia::solid_box(2.0, half * 2.0).rot);
    let shape = CollisionShape::new(Geometry::Box { half_extents: half }, at).with_material(material(mu, 0.0));
    b.add_body(WORLD, Joint::revolute("hinge", Vec3::y()), Body::new("board", inertia).with_collision(shape));
    b.build().unwrap()
}

/// A two-link arm in the x–z plane: an upper link (1 kg, 0.4 m) on a shoulder hinge
/// about y at the origin, and the hinged board of [`hinged_board`] on an elbow hinge
/// about y at its end — a mass matrix and element twists that move with q.
fn arm_with_board(mu: f64) -> Model {
    let mut b = ModelBuilder::new("arm_with_board");
    let upper = Inertia::from_com(
        1.0,
        Vec3::new(0.2, 0.0, 0.0),
        nalgebra::Matrix3::from_diagonal(&Vec3::new(1e-3, 0.014, 0.014)),
    );
    b.add_body(WORLD, Joint::revolute("shoulder", Vec3::y()), Body::new("upper", upper));
    let half = Vec3::new(0.3, 0.15, 0.02);
    let at = SE3::from_translation(Vec3::new(0.3, 0.0, 0.0));
    let inertia = Inertia::from_com(2.0, at.trans, Inertia::solid_box(2.0, half * 2.0).rot);
    let shape = CollisionShape::new(Geometry::Box { half_extents: half }, at).with_material(material(mu, 0.0));
    let elbow = SE3::from_translation(Vec3::new(0.4, 0.0, 0.0));
    b.add_body(
        "upper",
        Joint::revolute("elbow", Vec3::y()).with_placement(elbow),
        Body::new("board", inertia).with_collision(shape),
    );
    b.build().unwrap()
}

/// A particle on the board of [`arm_with_board`] (shoulder at −0.2 rad, elbow at 0.5 rad:
/// the board tilts down by 0.3 rad), 1 mm into it, at 0.25 m from the elbow.
fn particle_on_arm(mu: f64, speed: f64) -> (World, WorldState, DVector<f64>) {
    let arm = arm_with_board(mu);
    let r = 0.02;
    let (q1, q2) = (-0.2f64, 0.5f64);
    let rot1 = SE3::from_axis_angle(&Vec3::y(), q1).rot;
    let rot = SE3::from_axis_angle(&Vec3::y(), q1 + q2).rot;
    let elbow = rot1 * Vec3::new(0.4, 0.0, 0.0);
    let p = elbow + rot * Vec3::new(0.25, 0.01, 0.02 + r - 1e-3);
    let vp = rot * Vec3::new(speed, 0.02, 0.0);
    let w = world(vec![Arc::new(Articulation::new(Arc::new(arm))), Arc::new(particles(&[0.3], r, mu, gravity()))]);
    let state = WorldState {
        q: DVector::from_vec(vec![q1, q2, p.x, p.y, p.z]),
        v: DVector::from_vec(vec![0.4, -0.3, vp.x, vp.y, vp.z]),
    };
    (w, state, DVector::from_vec(vec![0.5, -0.2, 0.1, -0.2, 0.05]))
}

/// A free box (1.5 kg, half extents 0.2 × 0.15 × 0.05 m).
fn free_box_model(mu: f64) -> Model {
    let mut b = ModelBuilder::new("box");
    free_box(&mut b, "box", Vec3::new(0.2, 0.15, 0.05), 1.5, material(mu, 0.0));
    b.build().unwrap()
}

fn particles(masses: &[f64], radius: f64, mu: f64, gravity: Vec3) -> Particles {
    Particles::new(masses, &vec![radius; masses.len()], Material::new(mu, 0.0), gravity).unwrap()
}

fn world(systems: Vec<Arc<dyn System>>) -> World {
    World::new(systems, options()).unwrap()
}

/// A particle of radius 2 cm on the hinged board tilted by `tilt` (rad, downhill towards
/// +x), 1 mm into it, at 0.25 m from the hinge, moving along the board at `speed`.
fn particle_on_board(mu: f64, tilt: f64, speed: f64) -> (World, WorldState, DVector<f64>) {
    let board = hinged_board(mu);
    let r = 0.02;
    let rot = SE3::from_axis_angle(&Vec3::y(), tilt).rot;
    let p = rot * Vec3::new(0.25, 0.01, 0.02 + r - 1e-3);
    let vp = rot * Vec3::new(speed, 0.02, 0.0);
    let w = world(vec![Arc::new(Articulation::new(Arc::new(board))), Arc::new(particles(&[0.3], r, mu, gravity()))]);
    let state = WorldState {
        q: DVector::from_vec(vec![tilt, p.x, p.y, p.z]),
        v: DVector::from_vec(vec![0.1, vp.x, vp.y, vp.z]),
    };
    let u = DVector::from_vec(vec![0.5, 0.1, -0.2, 0.05]);
    (w, state, u)
}

/// The free box 1 mm into the static ground, slightly turned, with two particles
/// (0.2 and 0.7 kg, radius 1.5 cm) on its top, 1 mm into it.
fn particles_on_box(mu: f64) -> (World, WorldState, DVector<f64>) {
    let bx = free_box_model(mu);
    let mut q = bx.neutral();
    q[2] = 0.05 - 1e-3;
    let (yaw, r) = (0.3f64, 0.015);
    q[3] = (0.5 * yaw).cos();
    q[6] = (0.5 * yaw).sin();
    let rot = SE3::from_axis_angle(&Vec3::z(), yaw).rot;
    let top = 0.1 - 1e-3 + r - 1e-3;
    let p1 = rot * Vec3::new(0.1, 0.05, 0.0) + Vec3::new(0.0, 0.0, top);
    let p2 = rot * Vec3::new(-0.12, -0.04, 0.0) + Vec3::new(0.0, 0.0, top);
    let systems: Vec<Arc<dyn System>> = vec![
        Arc::new(StaticGeometry::ground(Material::new(mu, 0.0))),
        Arc::new(Articulation::new(Arc::new(bx))),
        Arc::new(particles(&[0.2, 0.7], r, mu, gravity())),
    ];
    let w = world(systems);
    let mut v = DVector::zeros(12);
    v[0] = 0.05; // a small spin about the box's x axis
    v[4] = 0.01;
    v[6] = 0.02;
    let mut q_all = DVector::zeros(w.nq());
    q_all.rows_mut(0, 7).copy_from(&q);
    q_all.rows_mut(7, 6).copy_from_slice(&[p1.x, p1.y, p1.z, p2.x, p2.y, p2.z]);
    let u = DVector::from_vec(vec![0.1, 0.0, 0.2, 0.0, 0.0, 0.3, 0.05, 0.0, 0.0, 0.0, 0.1, 0.0]);
    (w, WorldState { q: q_all, v }, u)
}

/// The free box of [`free_box_model`] sliding along x at 0.5 m/s and spinning about z on
/// the static ground (μ = 0.3: every friction row of the four contacts at its bound, a
/// rank-deficient, non-symmetric clamped system), 0.1 mm
/// into it, with a 0.4 kg particle riding on its top.
fn particle_on_sliding_box() -> (World, WorldState, DVector<f64>) {
    let mu = 0.3;
    let bx = free_box_model(mu);
    let r = 0.015;
    let mut q = DVector::zeros(10);
    q.rows_mut(0, 7).copy_from(&bx.neutral());
    q[2] = 0.05 - 1e-4;
    q.rows_mut(7, 3).copy_from_slice(&[0.05, -0.03, 0.1 - 1e-4 + r - 1e-4]);
    let systems: Vec<Arc<dyn System>> = vec![
        Arc::new(StaticGeometry::ground(Material::new(mu, 0.0))),
        Arc::new(Articulation::new(Arc::new(bx))),
        Arc::new(particles(&[0.4], r, 0.9, gravity())),
    ];
    let w = world(systems);
    // Sliding at 0.5 m/s along x and spinning at 3 rad/s about z: the corners slide in
    // different directions; the particle moves with the box.
    let mut v = DVector::zeros(9);
    v[2] = 3.0;
    v[3] = 0.5;
    v.rows_mut(6, 3).copy_from_slice(&[0.5 + 3.0 * 0.03, 3.0 * 0.05, 0.0]);
    (w, WorldState { q, v }, DVector::from_vec(vec![0.01, 0.02, 0.0, 0.3, 0.1, 0.0, 0.0, 0.05, 0.0]))
}

/// Two particles (0.4 and 1.1 kg, radius 3 cm) 1 mm into each other and approaching,
/// the lighter one also 1 mm into the ground.
fn colliding_particles() -> (World, WorldState, DVector<f64>) {
    let r = 0.03;
    let systems: Vec<Arc<dyn System>> = vec![
        Arc::new(StaticGeometry::ground(Material::new(0.4, 0.0))),
        Arc::new(particles(&[0.4, 1.1], r, 0.4, gravity())),
    ];
    let w = world(systems);
    let d = Vec3::new(0.8, 0.1, 0.59).normalize() * (2.0 * r - 1e-3);
    let p1 = Vec3::new(0.0, 0.0, r - 1e-3);
    let p2 = p1 + d;
    let state = WorldState {
        q: DVector::from_vec(vec![p1.x, p1.y, p1.z, p2.x, p2.y, p2.z]),
        v: DVector::from_vec(vec![0.3, 0.05, 0.0, -0.4, 0.0, -0.2]),
    };
    (w, state, DVector::from_vec(vec![0.0, 0.1, 0.0, 0.2, 0.0, 0.0]))
}

#[test]
fn particle_and_rigid_board_share_one_contact_row_block() {
    let (w, state, u) = particle_on_board(0.8, 0.3, 0.0);
    let rec = w.step_recorded(&state, &u).unwrap();
    assert_eq!(rec.contacts().len(), 1);
    let c = &rec.contacts()[0];
    assert_eq!(c.side_a, ContactSide::Element { system: 0, element: 0 });
    assert_eq!(c.side_b, ContactSide::Element { system: 1, element: 0 });
    // The rows couple the board's hinge column and the particle's three columns.
    let j = rec.constraint_jacobian();
    assert_eq!(j.shape(), (3, 4));
    assert!(j.column(0).amax() > 0.1 && j.columns(1, 3).amax() > 0.9);
    // The particle's normal row is the normal itself (its element twist is [0; v]).
    let n = c.contact.geometry.normal;
    for r in 0..3 {
        assert!((j[(0, 1 + r)] - n[r]).abs() < 1e-14);
    }
}

#[test]
fn world_step_vjp_matches_ridders_for_a_particle_on_a_hinged_board() {
    // Sticking (μ = 0.8 > tan 0.3) and sliding (μ = 0.1, friction at its bound).
    for (mu, speed, sliding) in [(0.8, 0.0, false), (0.1, 0.3, true)] {
        let (w, state, u) = particle_on_board(mu, 0.3, speed);
        let rec = w.step_recorded(&state, &u).unwrap();
        let at_bound = rec.solution().states.iter().any(|s| matches!(s, RowState::AtBound { .. }));
        assert_eq!(at_bound, sliding, "mode of μ = {mu}: {:?}", rec.solution().states);
        assert_vjp_matches_ridders(&format!("μ = {mu}"), &w, &state, &u, 10, 1e-4);
    }
}

#[test]
fn world_step_vjp_matches_ridders_for_a_particle_on_a_two_link_arm() {
    // M(q) and the board's twist Jacobian move with q: the systems' mass and
    // element-velocity adjoints both enter.
    for (mu, speed, sliding) in [(0.8, 0.0, false), (0.1, 0.3, true)] {
        let (w, state, u) = particle_on_arm(mu, speed);
        let rec = w.step_recorded(&state, &u).unwrap();
        assert_eq!(rec.contacts().len(), 1);
        let at_bound = rec.solution().states.iter().any(|s| matches!(s, RowState::AtBound { .. }));
        assert_eq!(at_bound, sliding, "mode of μ = {mu}: {:?}", rec.solution().states);
        assert_vjp_matches_ridders(&format!("μ = {mu}"), &w, &state, &u, 40, 1e-4);
    }
}

#[test]
fn world_step_vjp_matches_ridders_for_a_particle_on_a_sliding_box() {
    // Four ground contacts at their friction bound: Â = (A E)_CC is rank-deficient and
    // not symmetric (the rectangle's corner wrenches are dependent, so the solver VJP's
    // null-space term vanishes here; the solver test below has one where it does not).
    let (w, state, u) = particle_on_sliding_box();
    let rec = w.step_recorded(&state, &u).unwrap();
    assert_eq!(rec.contacts().len(), 5);
    let bound = rec.solution().states.iter().filter(|s| matches!(s, RowState::AtBound { .. })).count();
    assert_eq!(bound, 8, "{:?}", rec.solution().states);
    assert_vjp_matches_ridders("world step", &w, &state, &u, 50, 1e-5);
}

#[test]
fn world_step_vjp_matches_ridders_for_particles_on_a_free_box_on_the_ground() {
    // A rank-deficient clamped system: four ground contacts on three normal directions
    // of the box (the null-space term of the solver's VJP), plus two particles on top.
    let (w, state, u) = particles_on_box(0.7);
    let rec = w.step_recorded(&state, &u).unwrap();
    let sides = |a: ContactSide, b: ContactSide| {
        rec.contacts().iter().filter(|c| (c.side_a, c.side_b) == (a, b) || (c.side_a, c.side_b) == (b, a)).count()
    };
    let box_side = ContactSide::Element { system: 1, element: 0 };
    assert_eq!(sides(ContactSide::Static, box_side), 4);
    assert_eq!(sides(box_side, ContactSide::Element { system: 2, element: 0 }), 1);
    assert_eq!(sides(box_side, ContactSide::Element { system: 2, element: 1 }), 1);
    assert_vjp_matches_ridders("world step", &w, &state, &u, 20, 1e-4);
}

#[test]
fn world_step_vjp_matches_ridders_for_colliding_particles() {
    let (w, state, u) = colliding_particles();
    let rec = w.step_recorded(&state, &u).unwrap();
    assert_eq!(rec.contacts().len(), 2);
    assert_vjp_matches_ridders("world step", &w, &state, &u, 30, 1e-4);
}

#[test]
fn a_particle_resting_on_the_ground_stays_put_with_the_weight_impulse() {
    let m = 0.37;
    let w = world(vec![
        Arc::new(StaticGeometry::ground(Material::new(0.5, 0.0))),
        Arc::new(particles(&[m], 0.01, 0.5, gravity())),
    ]);
    let state = WorldState { q: DVector::from_vec(vec![0.2, -0.1, 0.01]), v: DVector::zeros(3) };
    let rec = w.step_recorded(&state, &DVector::zeros(3)).unwrap();
    let next = rec.next_state();
    assert!(next.v.amax() < 1e-12, "v⁺ = {}", next.v);
    assert!((rec.solution().f[0] - m * G * H).abs() < 1e-12 * m * G * H + 1e-15);
}

#[test]
fn a_particle_slides_down_an_incline_at_the_coulomb_acceleration() {
    // Static incline (tilted ground), μ = 0.2 < tan θ: a = g (sin θ − μ cos θ) along it.
    let (theta, mu, m) = (0.4f64, 0.2, 0.8);
    let rot = SE3::from_axis_angle(&Vec3::y(), theta);
    let mut ground = StaticGeometry::ground(Material::new(mu, 0.0));
    ground = StaticGeometry::new(
        ground.shapes().iter().map(|s| stiction::collision::ShapeInstance { local: rot, ..s.clone() }).collect(),
    )
    .unwrap();
    let w = world(vec![Arc::new(ground), Arc::new(particles(&[m], 0.01, mu, gravity()))]);
    let normal = rot.rot * Vec3::z();
    let down = rot.rot * Vec3::x(); // downhill direction for a tilt about +y
    assert!(down.z < 0.0);
    let mut state = WorldState { q: DVector::from_column_slice((normal * 0.01).as_slice()), v: DVector::zeros(3) };
    let steps = 200;
    for _ in 0..steps {
        state = w.step(&state, &DVector::zeros(3)).unwrap();
    }
    let along = Vec3::new(state.v[0], state.v[1], state.v[2]).dot(&down);
    let expected = G * (theta.sin() - mu * theta.cos()) * H * steps as f64;
    assert!((along - expected).abs() < 1e-9 * expected, "speed {along} vs {expected}");
    let off = Vec3::new(state.v[0], state.v[1], state.v[2]).dot(&normal);
    assert!(off.abs() < 1e-9, "normal speed {off}");
}

#[test]
fn a_particle_hitting_a_free_box_conserves_momentum_with_unequal_masses() {
    // No gravity, no ground: a 0.25 kg particle hits the side of a 1.5 kg box off its
    // centre line. Linear momentum is conserved, and (erp = 0 on a penetrating contact,
    // μ = 0) the normal relative velocity at the contact point ends at zero.
    let mut b = ModelBuilder::new("floating_box");
    free_box(&mut b, "box", Vec3::new(0.2, 0.15, 0.05), 1.5, material(0.0, 0.0));
    let model = b.build().unwrap().with_gravity(Vec3::zeros()).unwrap();
    let (m, r) = (0.25, 0.02);
    let systems: Vec<Arc<dyn System>> =
        vec![Arc::new(Articulation::new(Arc::new(model.clone()))), Arc::new(particles(&[m], r, 0.0, Vec3::zeros()))];
    let w = World::new(systems, WorldOptions { dt: H, erp: 0.0, ..Default::default() }).unwrap();
    let mut q = DVector::zeros(10);
    q.rows_mut(0, 7).copy_from(&model.neutral());
    q.rows_mut(7, 3).copy_from_slice(&[0.2 + r - 1e-3, 0.08, 0.0]);
    let mut v = DVector::zeros(9);
    v.rows_mut(6, 3).copy_from_slice(&[-2.0, 0.3, 0.0]);
    let state = WorldState { q, v };
    let rec = w.step_recorded(&state, &DVector::zeros(9)).unwrap();
    let next = rec.next_state();
    // The box's linear velocity: free-joint velocity [ω_body; ṗ_world].
    let momentum =
        |s: &WorldState| -> Vec3 { Vec3::new(s.v[3], s.v[4], s.v[5]) * 1.5 + Vec3::new(s.v[6], s.v[7], s.v[8]) * m };
    let (p0, p1) = (momentum(&state), momentum(&next));
    assert!((p0 - p1).norm() < 1e-12, "momentum {p0} -> {p1}");
    assert!(rec.solution().f[0] > 0.0);
    let vn = (rec.constraint_jacobian().row(0) * &next.v)[0];
    assert!(vn.abs() < 1e-10, "normal relative velocity after the impact {vn}");
    // The box was hit off its centre line: it turns about z, opposite for a hit below
    // and above the centre.
    assert!(next.v[2].abs() > 1e-3);
}

#[test]
fn bad_world_inputs_are_typed_errors() {
    let (w, state, u) = particle_on_board(0.5, 0.3, 0.0);
    let mut bad = state.clone();
    bad.v[2] = f64::NAN;
    let e = w.step(&bad, &u).unwrap_err();
    assert!(matches!(e, Error::InSystem { system: 1, .. }), "{e:?}");
    assert!(matches!(e.root(), Error::NonFinite { .. }), "{e:?}");
    let e = w.step(&state, &DVector::zeros(3)).unwrap_err();
    assert!(matches!(e, Error::Dimension { what: "world u", .. }), "{e:?}");
    assert!(Particles::new(&[1.0, -2.0], &[0.1, 0.1], Material::default(), gravity()).is_err());
    assert!(Particles::new(&[1.0], &[0.1, 0.1], Material::default(), gravity()).is_err());
    assert!(World::new(vec![], WorldOptions { dt: -1.0, ..Default::default() }).is_err());
    let rec = w.step_recorded(&state, &u).unwrap();
    let nan = DVector::from_element(w.nv(), f64::NAN);
    assert!(rec.vjp(&nan, &DVector::zeros(w.nv())).is_err());
    assert!(rec.vjp(&DVector::zeros(2), &DVector::zeros(w.nv())).is_err());
}

/// The boxed-LCP solver's own VJP against Ridders on a loss of the impulses themselves,
/// `ℓ = ḡ · f`: a body on four coplanar contacts, sliding and spinning (every friction
/// row at its bound; the clamped system has rank 3 of 4, and its null space moves with
/// the mass, so the pseudo-inverse's null-space term enters). `A = J X Jᵀ` is perturbed
/// through X (rank kept) and `b = J v` through v.
#[test]
fn boxed_lcp_solver_vjp_matches_ridders_on_a_rank_deficient_sliding_problem() {
    use nalgebra::{DMatrix, Matrix6};
    use stiction::math::Force;
    use stiction::solver::lcp::RowBound;
    use stiction::solver::{BoxedLcpSolver, ConstraintProblem, ConstraintSolver, DenseDelassus};
    // A general quadrilateral (a rectangle makes the four wrenches of E dependent and
    // the null-space term vanish).
    let corners = [(0.2, 0.15), (0.25, -0.1), (-0.15, -0.2), (-0.2, 0.1)];
    let mut j = DMatrix::zeros(12, 6);
    for (i, &(x, y)) in corners.iter().enumerate() {
        let p = Vec3::new(x, y, 0.0);
        for (r, d) in [Vec3::z(), Vec3::x(), Vec3::y()].iter().enumerate() {
            let w = Force::from_point_force(&p, d).to_vector();
            j.row_mut(3 * i + r).copy_from(&w.transpose());
        }
    }
    let mut rng = SplitMix64::new(7);
    let spd = |rng: &mut SplitMix64, scale: f64| {
        let r = DMatrix::from_fn(6, 6, |_, _| rng.range(-1.0, 1.0));
        Matrix6::from_iterator((&r * r.transpose() * scale).iter().copied())
    };
    let x0 = {
        let mut x = Matrix6::from_diagonal(&nalgebra::Vector6::new(30.0, 25.0, 12.0, 0.7, 0.7, 0.7));
        x += spd(&mut rng, 0.3);
        x
    };
    let dx = spd(&mut rng, 1.0);
    // Sliding along x at 0.5 m/s, spinning at 3 rad/s about z, approaching at 0.1 m/s.
    let v0 = nalgebra::Vector6::new(0.0, 0.0, 3.0, 0.5, 0.0, -0.1);
    let dv = nalgebra::Vector6::from_fn(|_, _| rng.range(-1.0, 1.0));
    let bounds: Vec<RowBound> = (0..4)
        .flat_map(|i| {
            let normal = 3 * i;
            [RowBound::UNILATERAL, RowBound::Friction { normal, mu: 0.3 }, RowBound::Friction { normal, mu: 0.3 }]
        })
        .collect();
    let solver = BoxedLcpSolver::default();
    let problem_at = |eps: f64| {
        let x = DMatrix::from_iterator(6, 6, (x0 + dx * eps).iter().copied());
        let a = &j * x * j.transpose();
        let v = DVector::from_iterator(6, (v0 + dv * eps).iter().copied());
        (DenseDelassus((&a + a.transpose()) * 0.5), &j * v)
    };
    let (a, b) = problem_at(0.0);
    let sol = solver.solve(&ConstraintProblem { delassus: &a, b: &b, bounds: &bounds }, None).unwrap();
    let at_bound = sol.states.iter().filter(|s| matches!(s, RowState::AtBound { .. })).count();
    assert_eq!(at_bound, 8, "{:?}", sol.states);
    let g = common::random_vector(&mut rng, 12, 1.0);
    let cot = solver.vjp(&ConstraintProblem { delassus: &a, b: &b, bounds: &bounds }, &sol, &g).unwrap();
    let (a1, b1) = problem_at(1.0);
    let (da, db) = (&a1.0 - &a.0, &b1 - &b); // A and b are affine in ε
    let analytic = cot.a_dense().dot(&da) + cot.b.dot(&db);
    let f = |eps: f64| {
        let (a, b) = problem_at(eps);
        let s = solver.solve(&ConstraintProblem { delassus: &a, b: &b, bounds: &bounds }, None).unwrap();
        assert_eq!(s.states, sol.states, "mode changed");
        DVector::from_element(1, g.dot(&s.f))
    };
    let (fd, err) = ridders(&f, 1e-4);
    let e = (analytic - fd[0]).abs() / fd[0].abs().max(1.0);
    assert!(err < 1e-8 && e < 1e-7, "solver VJP {analytic} vs Ridders {} (error estimate {err:.1e})", fd[0]);
    // The null-space term is not negligible here.
    assert!(cot.a.len() == 2, "expected the null-space term");
    let without = {
        let mut c = cot.clone();
        c.a.truncate(1);
        c.a_dense().dot(&da) + c.b.dot(&db)
    };
    assert!((without - fd[0]).abs() > 1e3 * (analytic - fd[0]).abs().max(1e-12), "{without} vs {}", fd[0]);
}

/// The tape's reverse sweep against Ridders on a loss over a 40-step rollout of the
/// particle on the two-link arm (in contact for the first steps, then thrown off by the
/// penetration recovery).
#[test]
fn world_tape_backward_matches_ridders_over_a_rollout() {
    let (w, state, u) = particle_on_arm(0.8, 0.0);
    let steps = 40;
    let controls = vec![u.clone(); steps];
    let (states, tape) = w.rollout_recorded(&state, &controls).unwrap();
    let in_contact = tape.records().iter().filter(|r| !r.contacts().is_empty()).count();
    assert!(in_contact >= 5, "{in_contact} steps in contact");
    let mut rng = SplitMix64::new(99);
    let (nv, nu) = (w.nv(), w.nu());
    let weights: Vec<(DVector<f64>, DVector<f64>)> = (0..steps)
        .map(|_| (common::random_vector(&mut rng, nv, 1.0), common::random_vector(&mut rng, nv, 1.0)))
        .collect();
    let (gq, gv): (Vec<_>, Vec<_>) = weights.iter().cloned().unzip();
    let grads = tape.backward(&gq, &gv).unwrap();
    let loss = |s0: &WorldState, controls: &[DVector<f64>]| -> DVector<f64> {
        let (xs, _) = w.rollout_recorded(s0, controls).unwrap();
        let l = xs
            .iter()
            .zip(&states)
            .zip(&weights)
            .map(|((x, x0), (a, b))| a.dot(&w.difference(&x0.q, &x.q).unwrap()) + b.dot(&x.v))
            .sum::<f64>();
        DVector::from_element(1, l)
    };
    let mut worst = 0.0f64;
    for k in 0..(2 * nv + nu) {
        let f = |eps: f64| {
            let (s, control) = perturbed(&w, &state, k, eps);
            let mut cs = controls.clone();
            if let Some(c) = control {
                cs[7][c] += eps; // the control of step 7
            }
            loss(&s, &cs)
        };
        let (fd, _) = ridders(&f, 1e-5);
        let analytic = [grads.q0.as_slice(), grads.v0.as_slice(), grads.u[7].as_slice()].concat()[k];
        worst = worst.max((analytic - fd[0]).abs() / fd[0].abs().max(1.0));
    }
    assert!(worst < 1e-6, "rollout VJP vs Ridders: relative error {worst:.2e}");
    assert!(tape.backward(&gq[1..], &gv).is_err());
}

/// The same systems under other options and another solver.
fn rebuilt(w: &World, options: WorldOptions, solver: Arc<dyn stiction::solver::ConstraintSolver>) -> World {
    World::with_solver(w.systems().to_vec(), solver, options).unwrap()
}

/// Two solvers behind one trait: with no-slip friction (equality rows) the boxed LCP and
/// the PPM give the same step, and the tape differentiates both through the solvers' own
/// VJPs — including the free box on four ground contacts, whose dependent equality rows
/// the PPM drops (FIND-INDICES) where the LCP takes the minimum-norm impulses.
#[test]
fn the_ppm_and_the_boxed_lcp_plug_into_the_world_alike() {
    use stiction::solver::{BoxedLcpSolver, PpmSolver};
    use stiction::step::ContactModel;
    let no_slip = WorldOptions { dt: H, friction: ContactModel::NoSlip, ..Default::default() };
    for (name, (w, state, u)) in
        [("particle on arm", particle_on_arm(0.1, 0.3)), ("particles on box", particles_on_box(0.7))]
    {
        let lcp = rebuilt(&w, no_slip, Arc::new(BoxedLcpSolver::default()));
        let ppm = rebuilt(&w, no_slip, Arc::new(PpmSolver::default()));
        let (a, b) = (lcp.step_recorded(&state, &u).unwrap(), ppm.step_recorded(&state, &u).unwrap());
        assert_eq!(b.solution().report.solver, "PPM");
        assert_eq!(b.solution().report.fallbacks, 0, "{name}: the PPM fell back");
        let (na, nb) = (a.next_state(), b.next_state());
        let dv = (&na.v - &nb.v).amax();
        assert!(dv < 1e-10 * na.v.amax().max(1.0), "{name}: v⁺ differs by {dv:e}");
        // No slip: every contact ends with zero tangential relative velocity.
        let j = a.constraint_jacobian();
        for c in 0..a.contacts().len() {
            for r in [1, 2] {
                let vt = (j.row(3 * c + r) * &na.v)[0];
                assert!(vt.abs() < 1e-10, "{name}: contact {c} slides at {vt:e}");
            }
        }
        for (solver, world) in [("LCP", &lcp), ("PPM", &ppm)] {
            // The PPM's choice among the box's dependent normals may flip within a
            // difference step; the velocities do not.
            let e = vjp_error_with(world, &state, &u, 60, 1e-4, solver == "LCP");
            assert!(e < 1e-6, "{name} with the {solver}: VJP vs Ridders relative error {e:.2e}");
        }
    }
    // The PPM takes no Coulomb rows: a typed error, not a wrong answer.
    let (w, state, u) = particle_on_arm(0.1, 0.3);
    let coulomb_ppm = rebuilt(&w, options(), Arc::new(PpmSolver::default()));
    assert!(matches!(coulomb_ppm.step(&state, &u).unwrap_err().root(), Error::InvalidInput(_)));
    let viscous = WorldOptions { friction: ContactModel::Viscous, ..options() };
    assert!(World::new(vec![], viscous).is_err());
}

/// A one-system world is the rigid engine's step: for a model alone (its own ground and
/// bodies, contacts within it), the world step equals the `Simulator`'s under the same
/// scheme (velocity penetration recovery, no warm start), and the world's VJP — built
/// from the systems' and the solver's adjoints — equals the rigid tape's, an independent
/// implementation of the same derivative.
#[test]
fn a_one_system_world_steps_and_differentiates_like_the_simulator() {
    use stiction::model::samples::{two_finger_grasp, two_finger_grasp_configuration};
    use stiction::step::{ContactOptions, PenetrationRecovery};
    use stiction::{Control, SimOptions, Simulator, State};
    let spinning_box = {
        let mut b = ModelBuilder::new("box_on_ground");
        common::contact::ground(&mut b, material(0.3, 0.0), 0.0);
        free_box(&mut b, "box", Vec3::new(0.2, 0.15, 0.05), 1.5, material(0.3, 0.0));
        let model = b.build().unwrap();
        let mut q = model.neutral();
        q[2] = 0.05 - 1e-4;
        let mut v = DVector::zeros(6);
        v[2] = 3.0;
        v[3] = 0.5;
        (model, State { q, v }, DVector::from_vec(vec![0.01, 0.02, 0.0, 0.3, 0.1, 0.0]))
    };
    let grasp = {
        let model = two_finger_grasp(2, 1, Material::new(0.8, 0.0));
        let q = two_finger_grasp_configuration(&model, 2, 0.05);
        let v = DVector::zeros(model.nv());
        let mut tau = DVector::zeros(model.nv());
        tau[0] = 40.0;
        tau[1] = -40.0;
        (model, State { q, v }, tau)
    };
    for (name, (model, state, tau)) in [("spinning box", spinning_box), ("two-finger grasp", grasp)] {
        let contact =
            ContactOptions { penetration: PenetrationRecovery::Velocity, warm_start: false, ..Default::default() };
        let options = SimOptions { dt: H, contact, ..Default::default() };
        let mut sim = Simulator::new(model.clone(), options).unwrap();
        let control = Control { tau: tau.clone(), wrenches: None };
        let (next, rec) = sim.step_recorded(&state, &control).unwrap();
        let rows = rec.constraints().map_or(0, |c| c.contacts.len());
        let w =
            World::new(vec![Arc::new(Articulation::new(Arc::new(model.clone())))], options_world(&contact)).unwrap();
        let ws = WorldState { q: state.q.clone(), v: state.v.clone() };
        let wrec = w.step_recorded(&ws, &tau).unwrap();
        assert_eq!(wrec.contacts().len(), rows, "{name}: contact count");
        assert!(rows >= 4, "{name}: {rows} contacts");
        let wn = wrec.next_state();
        let scale = next.v.amax().max(1.0);
        assert!((&wn.v - &next.v).amax() < 1e-10 * scale, "{name}: v⁺ {} vs {}", wn.v, next.v);
        assert!(w.difference(&next.q, &wn.q).unwrap().amax() < 1e-12, "{name}: q⁺");
        let mut rng = SplitMix64::new(5);
        for _ in 0..3 {
            let gq = common::random_vector(&mut rng, model.nv(), 1.0);
            let gv = common::random_vector(&mut rng, model.nv(), 1.0);
            let a = rec.vjp(&gq, &gv).unwrap();
            let b = wrec.vjp(&gq, &gv).unwrap();
            for (what, x, y) in [("q", &a.q, &b.q), ("v", &a.v, &b.v), ("tau", &a.tau, &b.u)] {
                let e = (x - y).amax() / x.amax().max(1.0);
                assert!(e < 1e-11, "{name}: ∂ℓ/∂{what} of the world {y} vs the simulator {x} ({e:.1e})");
            }
        }
    }
}

/// World options matching a `Simulator`'s contact options.
fn options_world(c: &stiction::step::ContactOptions) -> WorldOptions {
    WorldOptions { dt: H, margin: c.margin, erp: c.erp, friction: c.model }
}

/// Contact must not create energy over a long run (3 s, 3,000 steps): a 1.5 kg box on the
/// ground with three particles of unequal masses on its top, one of them sliding across
/// it with friction; everything starts touching (zero gap) and at rest but the slider.
/// The total energy (kinetic + potential, box and particles) never rises above its
/// start by more than 1e-9 J, falls as friction stops the slider, and the resting bodies
/// do not drift.
#[test]
fn contact_creates_no_energy_over_a_long_run_with_unequal_masses() {
    use stiction::dynamics::{kinetic_energy, potential_energy};
    let bx = free_box_model(0.6);
    let r = 0.015;
    let masses = [0.1, 0.45, 1.2];
    let systems: Vec<Arc<dyn System>> = vec![
        Arc::new(StaticGeometry::ground(Material::new(0.6, 0.0))),
        Arc::new(Articulation::new(Arc::new(bx.clone()))),
        Arc::new(particles(&masses, r, 0.6, gravity())),
    ];
    let w = world(systems);
    let mut q = DVector::zeros(w.nq());
    q.rows_mut(0, 7).copy_from(&bx.neutral());
    q[2] = 0.05;
    let top = 0.1 + r;
    q.rows_mut(7, 9).copy_from_slice(&[0.1, 0.05, top, -0.1, -0.05, top, 0.0, 0.0, top]);
    let mut v = DVector::zeros(w.nv());
    v[6] = 0.4; // the light particle slides along x
    let energy = |s: &WorldState| -> f64 {
        let mut data = stiction::dynamics::Data::new(&bx);
        let (qb, vb) = (s.q.rows(0, 7).into_owned(), s.v.rows(0, 6).into_owned());
        let e_box = kinetic_energy(&bx, &mut data, qb.as_slice(), vb.as_slice()).unwrap()
            + potential_energy(&bx, &mut data, qb.as_slice()).unwrap();
        let e_p: f64 = (0..3)
            .map(|i| {
                let vi = s.v.rows(6 + 3 * i, 3).norm_squared();
                0.5 * masses[i] * vi + masses[i] * G * s.q[7 + 3 * i + 2]
            })
            .sum();
        e_box + e_p
    };
    let mut s = WorldState { q, v };
    let e0 = energy(&s);
    let mut e_max = e0;
    let u = DVector::zeros(w.nu());
    for _ in 0..3000 {
        s = w.step(&s, &u).unwrap();
        e_max = e_max.max(energy(&s));
    }
    assert!(e_max - e0 < 1e-9, "energy rose by {:e} J", e_max - e0);
    // The slider's kinetic energy (8 mJ) is gone to friction; the rest stayed put.
    let e1 = energy(&s);
    assert!(e0 - e1 > 0.5 * 0.5 * 0.1 * 0.4 * 0.4, "energy {e0} -> {e1}");
    assert!(s.v.amax() < 1e-9, "still moving: {}", s.v.amax());
    for (i, x0) in [(1usize, -0.1), (2, 0.0)] {
        assert!((s.q[7 + 3 * i] - x0).abs() < 1e-9, "particle {i} drifted to x = {}", s.q[7 + 3 * i]);
    }
    assert!((s.q[2] - 0.05).abs() < 1e-9, "the box sank or rose to z = {}", s.q[2]);
}

#[test]
fn world_rollout_batch_equals_sequential_rollouts_and_coordinate_maps_follow_the_systems() {
    let (w, state, u) = particles_on_box(0.8);
    let mut other = state.clone();
    other.v[7] += 0.3;
    let controls = vec![u.clone(); 6];
    let batch = vec![
        WorldBatchRollout { state: state.clone(), controls: controls.clone(), theta: None },
        WorldBatchRollout { state: other.clone(), controls: controls.clone(), theta: Some(w.param_values()) },
    ];
    for threads in [None, Some(1), Some(2)] {
        let out = w.rollout_batch(&batch, threads).unwrap();
        for (item, (states, tape)) in batch.iter().zip(&out) {
            let (want, want_tape) = w.rollout_recorded(&item.state, &item.controls).unwrap();
            assert_eq!(states, &want);
            assert_eq!(tape.len(), want_tape.len());
            assert_eq!(tape.world().map(|t| t.nv()), Some(w.nv()));
        }
    }
    let mut bad = batch.clone();
    bad[1].controls[3][0] = f64::NAN;
    let e = w.rollout_batch(&bad, None).unwrap_err().to_string();
    assert!(e.contains("batch rollout 1") && e.contains("step 3"), "{e}");
    assert!(w.rollout_batch(&batch, Some(0)).is_err());

    // The box's block maps as its model does; the particles' blocks are the identity.
    let bx = free_box_model(0.8);
    let mut rng = SplitMix64::new(7);
    let mut q = state.q.clone();
    q.rows_mut(3, 4).scale_mut(1.3); // a quaternion off the unit sphere
    let normalized = w.normalize(&q).unwrap();
    let box_q = DVector::from_column_slice(&q.as_slice()[..7]);
    assert_eq!(normalized.rows(0, 7), bx.normalize(&box_q).unwrap());
    assert_eq!(normalized.rows(7, 6), q.rows(7, 6));
    let g = common::random_vector(&mut rng, w.nq(), 1.0);
    let t = w.tangent_gradient(&normalized, &g).unwrap();
    let box_t = bx.tangent_gradient(&normalized.rows(0, 7).into(), &g.rows(0, 7).into()).unwrap();
    assert_eq!(t.rows(0, 6), box_t);
    assert_eq!(t.rows(6, 6), g.rows(7, 6));
    let gt = common::random_vector(&mut rng, w.nv(), 1.0);
    let c = w.coordinate_gradient(&q, &gt).unwrap();
    assert_eq!(c.rows(0, 7), bx.coordinate_gradient(&box_q, &gt.rows(0, 6).into()).unwrap());
    assert_eq!(c.rows(7, 6), gt.rows(6, 6));
    assert!(w.coordinate_gradient(&q, &g).is_err());
    let mut zero = q.clone();
    zero.rows_mut(3, 4).fill(0.0);
    assert!(w.normalize(&zero).is_err());
}
