//! Scenes of the NCP paper (Macklin et al. 2019, §10; digest-000 §10.5–6) in the simulator.
//!
//! - The self-supporting arch (`samples::arch`) and the convex-hull mass properties it is
//!   built from: closed forms for the mass properties, the blocks face on face at the
//!   neutral configuration, a statically admissible thrust line (Heyman's safe theorem), so
//!   the arch can stand as rigid blocks with μ = 0.6, and the arch standing for 5 s with
//!   the paper's 6 Newton × 20 conjugate-residual iterations, and with exact solves (NCP
//!   direct, and the boxed LCP).
//! - A pile of 54 boxes of 4.7 kg, μ = 0.7, resting with 4 Newton × 20 conjugate-residual
//!   iterations (the paper's "table pile" setting, with boxes in place of its tables).
//! - The paper's pile of 54 tables (`samples::table_pile`) coming to rest with the same setting.

use stiction::collision::{ContactKind, Polytope};
use stiction::constraint::{contacts_at, CollisionOptions};
use stiction::math::{Inertia, Mat3, Vec3};
use stiction::model::samples::{arch, ARCH_FRICTION};
use stiction::Error;

#[test]
fn polytope_mass_properties_match_closed_forms() {
    // A box of sides 0.2 × 0.4 × 1.2 centred at (1, −2, 3).
    let (h, c) = (Vec3::new(0.1, 0.2, 0.6), Vec3::new(1.0, -2.0, 3.0));
    let corners: Vec<Vec3> = (0..8)
        .map(|k| {
            c + Vec3::new(
                if k & 1 == 0 { -h.x } else { h.x },
                if k & 2 == 0 { -h.y } else { h.y },
                if k & 4 == 0 { -h.z } else { h.z },
            )
        })
        .collect();
    let (v, com, i) = Polytope::convex_hull(&corners).unwrap().mass_properties().unwrap();
    let want = Inertia::solid_box(1.0, h * 2.0);
    assert!((v - 8.0 * h.x * h.y * h.z).abs() < 1e-15);
    assert!((com - c).norm() < 1e-14);
    assert!((i / v - want.rot).norm() < 1e-14, "{i} against {}", want.rot * v);
    // The corner tetrahedron (0, e1, e2, e3): V = 1/6, centroid (1/4, 1/4, 1/4), and about
    // it ∫ x² dV = 1/160, ∫ x y dV = −1/480, so I = diag(1/80) with off-diagonals 1/480.
    let tet = [Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::z()];
    let (v, com, i) = Polytope::convex_hull(&tet).unwrap().mass_properties().unwrap();
    assert!((v - 1.0 / 6.0).abs() < 1e-15 && (com - Vec3::repeat(0.25)).norm() < 1e-15);
    let want = Mat3::from_fn(|r, s| if r == s { 1.0 / 80.0 } else { 1.0 / 480.0 });
    assert!((i - want).norm() < 1e-15, "{i}");
    // Its faces as a triangle mesh give back the same polytope.
    let hull = Polytope::convex_hull(&corners).unwrap();
    let again = Polytope::from_convex_mesh(&hull.triangle_mesh()).unwrap();
    assert_eq!(again.faces.len(), 6);
    assert!((again.volume() - hull.volume()).abs() < 1e-15);
    // Points and segments have no volume.
    assert!(Polytope::point().mass_properties().is_none());
    assert!(Polytope::segment(1.0).mass_properties().is_none());
}

#[test]
fn arch_blocks_sit_face_on_face_with_unequal_masses() {
    assert!(matches!(arch(1), Err(Error::InvalidInput(_))));
    let model = arch(20).unwrap();
    assert_eq!(model.nv(), 120);
    let masses: Vec<f64> = model.bodies().iter().map(|b| b.inertia.mass).collect();
    assert_eq!(masses.len(), 20);
    for k in 0..10 {
        assert!((masses[k] - masses[19 - k]).abs() < 1e-9 * masses[k], "symmetric: {masses:?}");
        assert!(masses[k] > masses[k + 1] || k == 9, "heavier towards the feet: {masses:?}");
    }
    assert!(masses[9] > 17.0 && masses[9] < 19.0 && masses[0] > 70.0 && masses[0] < 72.0, "{masses:?}");
    // Every joint touches face on face (four corners, zero distance), and nothing else.
    let contacts = contacts_at(&model, model.neutral().as_slice(), &CollisionOptions { margin: 1e-6 }).unwrap();
    assert_eq!(contacts.len(), 84);
    let mut per_joint = std::collections::BTreeMap::new();
    for c in &contacts {
        assert!(c.geometry.distance.abs() < 1e-9, "distance {}", c.geometry.distance);
        assert_ne!(c.kind, ContactKind::EdgeEdge);
        let (a, b) = (c.body_a.map_or(-1, |x| x as i64), c.body_b.map_or(-1, |x| x as i64));
        let key = (a.min(b), a.max(b));
        assert!(key.0 == -1 && (key.1 == 0 || key.1 == 19) || key.1 == key.0 + 1, "blocks {key:?} touch");
        *per_joint.entry(key).or_insert(0) += 1;
    }
    assert_eq!(per_joint.len(), 21);
    assert!(per_joint.values().all(|&n| n == 4), "{per_joint:?}");
}

/// The joints of the built arch from its contacts: per joint between blocks `k − 1` and `k`
/// (joint 0 and 20: the feet on the ground), its two ends in the x–z plane.
fn joints(model: &stiction::Model) -> Vec<[Vec3; 2]> {
    let contacts = contacts_at(model, model.neutral().as_slice(), &CollisionOptions { margin: 1e-6 }).unwrap();
    let n = model.bodies().len();
    (0..=n)
        .map(|j| {
            let sides = |c: &&stiction::collision::Contact| {
                let ids = [c.body_a, c.body_b];
                let left = if j == 0 { None } else { Some(j - 1) };
                let right = if j == n { None } else { Some(j) };
                (ids == [left, right] || ids == [right, left]) && (left.is_some() || right.is_some())
            };
            let pts: Vec<Vec3> = contacts.iter().filter(sides).map(|c| c.geometry.point).collect();
            assert_eq!(pts.len(), 4, "joint {j}");
            // The two ends: the pair of points farthest apart in the x–z plane.
            let flat = |p: &Vec3| Vec3::new(p.x, 0.0, p.z);
            let mut ends = [flat(&pts[0]), flat(&pts[0])];
            let mut best = -1.0;
            for a in &pts {
                for b in &pts {
                    let d = (flat(a) - flat(b)).norm();
                    if d > best {
                        (best, ends) = (d, [flat(a), flat(b)]);
                    }
                }
            }
            ends
        })
        .collect()
}

#[test]
fn the_arch_admits_a_thrust_line_inside_the_middle_third_of_every_joint() {
    // Heyman's safe theorem: rigid blocks stand if a line of thrust in equilibrium with the
    // weights lies inside every joint, and without sliding if it leans less than atan μ from
    // every joint's normal. Half the arch, from the vertical crown joint (horizontal thrust
    // H at a chosen height there) down to the right foot.
    let model = arch(20).unwrap();
    let joints = joints(&model);
    let g = 9.81;
    let weights: Vec<(f64, Vec3)> =
        model.bodies().iter().zip(model.joints()).map(|(b, j)| (b.inertia.mass * g, j.placement.trans)).collect();
    let crown = joints[10];
    assert!((crown[0].x).abs() < 1e-9 && (crown[1].x).abs() < 1e-9, "the crown joint is vertical");
    let mut best: Option<(f64, f64)> = None;
    for a in 1..100 {
        let at = crown[0] + (crown[1] - crown[0]) * (a as f64 / 100.0);
        for h in 1..=400 {
            let thrust = 5.0 * h as f64;
            // Resultant (fx, fz) and its moment about the origin (y component of r × F,
            // taken as x fz − z fx).
            let (fx, mut fz, mut moment) = (thrust, 0.0, -at.z * thrust);
            let (mut margin, mut lean): (f64, f64) = (f64::INFINITY, 0.0);
            for (k, joint) in joints.iter().enumerate().skip(11) {
                let (w, c) = weights[k - 1];
                fz -= w;
                moment -= c.x * w;
                let (p, d) = (joint[0], joint[1] - joint[0]);
                // The point p + u d where the resultant crosses the joint.
                let u = (moment - (p.x * fz - p.z * fx)) / (d.x * fz - d.z * fx);
                margin = margin.min(u.min(1.0 - u));
                let (along, across) = ((fx * d.x + fz * d.z).abs() / d.norm(), (fx * d.z - fz * d.x).abs() / d.norm());
                lean = lean.max(along / across);
            }
            if lean < ARCH_FRICTION && best.is_none_or(|(m, _)| margin > m) {
                best = Some((margin, lean));
            }
        }
    }
    let (margin, lean) = best.expect("a line of thrust inside the arch");
    assert!(margin > 1.0 / 3.0, "the thrust line leaves the middle third: margin {margin}");
    assert!(lean < 0.3, "friction demand {lean} (μ = {ARCH_FRICTION})");
}

/// Steps the 20-block arch from rest for `steps` steps of 1/120 s with `contact`'s solver;
/// returns the largest displacement (m) and turn (rad) of any block over the run, and the
/// simulator.
fn arch_run(
    contact: impl FnOnce(&mut stiction::step::ContactOptions),
    steps: usize,
) -> (f64, f64, stiction::Simulator) {
    use nalgebra::DVector;
    use stiction::{Control, SimOptions, Simulator, State};
    let model = arch(20).unwrap();
    let mut options = SimOptions { dt: 1.0 / 120.0, ..Default::default() };
    contact(&mut options.contact);
    let mut sim = Simulator::new(model.clone(), options).unwrap();
    let mut state = State::neutral(&model);
    let control = Control::torques(DVector::zeros(model.nv()));
    let (mut moved, mut turned) = (0.0_f64, 0.0_f64);
    for _ in 0..steps {
        state = sim.step(&state, &control).unwrap();
        for k in 0..20 {
            let q = state.q.rows(7 * k, 7);
            moved = moved.max(q.rows(0, 3).norm());
            turned = turned.max(2.0 * q.rows(4, 3).norm().atan2(q[3]));
        }
    }
    (moved, turned, sim)
}

#[test]
fn the_arch_stands_for_five_seconds_with_six_newton_by_twenty_conjugate_residual_iterations() {
    // The paper's claim (§10, digest-000 §10.5): the arch stands with PCR. Its setting:
    // h = 1/120 s, 6 Newton iterations of 20 conjugate-residual iterations each. Every block
    // stays within 0.2 mm and 0.1 mrad of where it was built for 5 s (measured: 83 µm and
    // 3.1 µrad; the residual of 20 linear iterations settles the arch, then it stays).
    use stiction::solver::ncp::LinearSolve;
    use stiction::step::ContactSolver;
    let (moved, turned, sim) = arch_run(
        |contact| {
            contact.solver = ContactSolver::Ncp;
            contact.ncp.linear = LinearSolve::ConjugateResidual(20);
            contact.ncp.max_iterations = 6;
        },
        600,
    );
    assert!(moved < 2e-4 && turned < 1e-4, "the arch moved {moved:.2e} m and turned {turned:.2e} rad");
    let stats = sim.stats();
    assert_eq!(stats.ncp_solves, 600);
    assert!(stats.newton_iterations <= 600 * 6 * 10, "{stats:?}");
}

#[test]
fn the_arch_stands_for_five_seconds_with_exact_solves() {
    // With direct linear solves to convergence the NCP solver holds the arch still: every
    // block within 1e-9 m and 1e-9 rad of where it was built (measured: 8e-14 m), every solve
    // exact and standardized. So does the boxed LCP (the default solver): its first step is
    // solved by its first guess (every row clamping), every later one by the warm start,
    // with no fallback.
    use stiction::step::ContactSolver;
    let (moved, turned, sim) = arch_run(|contact| contact.solver = ContactSolver::Ncp, 600);
    assert!(moved < 1e-9 && turned < 1e-9, "NCP: the arch moved {moved:.2e} m and turned {turned:.2e} rad");
    let stats = sim.stats();
    assert_eq!((stats.ncp_solves, stats.inexact_solves, stats.unstandardized_solves), (600, 0, 0), "{stats:?}");
    let (_, _, first) = arch_run(|_| {}, 1);
    assert_eq!(first.last_constraints().unwrap().stats.path, stiction::solver::lcp::SolvePath::FirstGuess);
    let (moved, turned, sim) = arch_run(|_| {}, 600);
    assert!(moved < 1e-9 && turned < 1e-9, "LCP: the arch moved {moved:.2e} m and turned {turned:.2e} rad");
    let stats = sim.stats();
    assert_eq!((stats.lcp_solves, stats.warm_start_hits, stats.lcp_fallbacks), (600, 599, 0), "{stats:?}");
    assert_eq!(stats.unstandardized_solves, 0);
    // One solve a step: every joint's contacts join the first pass.
    assert_eq!(sim.last_constraints().unwrap().passes, 1);
}

/// Steps `model` (free bodies only) from rest for `steps` steps of 1/120 s with the NCP
/// solver's 4 Newton × 20 conjugate-residual iterations (the paper's table-pile setting);
/// returns the largest displacement of a body after step `settled` (from where it was
/// then), the last state and the simulator.
fn settle_with_four_by_twenty(
    model: &stiction::Model,
    steps: usize,
    settled: usize,
) -> (f64, stiction::State, stiction::Simulator) {
    use nalgebra::DVector;
    use stiction::solver::ncp::LinearSolve;
    use stiction::step::ContactSolver;
    use stiction::{Control, SimOptions, Simulator, State};
    let mut options = SimOptions { dt: 1.0 / 120.0, ..Default::default() };
    options.contact.solver = ContactSolver::Ncp;
    options.contact.ncp.linear = LinearSolve::ConjugateResidual(20);
    options.contact.ncp.max_iterations = 4;
    let mut sim = Simulator::new(model.clone(), options).unwrap();
    let mut state = State::neutral(model);
    let control = Control::torques(DVector::zeros(model.nv()));
    let bodies = model.bodies().len();
    let mut reference = None;
    let mut moved: f64 = 0.0;
    for step in 1..=steps {
        state = sim.step(&state, &control).unwrap();
        if step == settled {
            reference = Some(state.q.clone());
        }
        if let Some(q0) = &reference {
            for k in 0..bodies {
                moved = moved.max((state.q.rows(7 * k, 3) - q0.rows(7 * k, 3)).norm());
            }
        }
    }
    (moved, state, sim)
}

#[test]
fn a_pile_of_54_boxes_rests_with_four_newton_by_twenty_conjugate_residual_iterations() {
    // The paper's table-pile setting (4.7 kg bodies, μ = 0.7, h = 1/120 s, 4 Newton × 20
    // linear iterations) on 54 boxes of 20 cm in three layers of 6 × 3 columns, spawned
    // 1 mm apart. After 0.5 s of settling no box moves more than 1 mm over 1.5 s.
    use stiction::math::SE3;
    use stiction::model::{Body, CollisionShape, Geometry, Material, WORLD};
    use stiction::{Joint, ModelBuilder};
    let (half, gap, material) = (Vec3::repeat(0.1), 1e-3, Material::new(0.7, 0.0));
    let mut b = ModelBuilder::new("pile54");
    b.add_link(
        Body::massless(WORLD)
            .with_collision(CollisionShape::new(Geometry::Plane, SE3::identity()).with_material(material)),
    );
    for k in 0..54 {
        let (layer, column) = (k / 18, k % 18);
        let at = Vec3::new((column / 3) as f64, (column % 3) as f64, layer as f64) * (0.2 + gap) + Vec3::z() * 0.1;
        b.add_body(
            WORLD,
            Joint::free(format!("free{k}")).with_placement(SE3::from_translation(at)),
            Body::new(format!("box{k}"), Inertia::solid_box(4.7, half * 2.0)).with_collision(
                CollisionShape::new(Geometry::Box { half_extents: half }, SE3::identity()).with_material(material),
            ),
        );
    }
    let model = b.build().unwrap();
    let (moved, state, sim) = settle_with_four_by_twenty(&model, 240, 60);
    assert!(moved < 1e-3, "a box moved {moved:.2e} m after settling");
    assert!(state.v.amax() < 1e-2, "still moving at {:.2e}", state.v.amax());
    let record = sim.last_constraints().unwrap();
    let deepest = record.contacts.iter().map(|c| c.geometry.distance).fold(f64::INFINITY, f64::min);
    assert!(deepest > -1e-3, "penetration {deepest:.2e} m");
    assert_eq!(sim.stats().ncp_solves, 240);
    assert_eq!(sim.stats().lcp_fallbacks, 0);
}

#[test]
fn the_table_pile_starts_with_no_two_shapes_touching() {
    use stiction::model::samples::table_pile;
    let model = table_pile(54, 1);
    assert_eq!(model.bodies().len(), 54);
    for body in model.bodies() {
        assert!((body.inertia.mass - 4.7).abs() < 1e-12);
        // A table's centre of mass lies below its top's centre, on its axis.
        let com = body.inertia.h / body.inertia.mass;
        assert!(com.x.abs() < 1e-12 && com.y.abs() < 1e-12 && com.z < -0.02, "{com}");
    }
    let q = model.neutral();
    assert!(contacts_at(&model, q.as_slice(), &CollisionOptions { margin: 1e-3 }).unwrap().is_empty());
    // Six tables a column, stacked bounding box on bounding box: none starts higher than 4.5 m.
    let heights: Vec<f64> = model.joints().iter().map(|j| j.placement.trans.z).collect();
    assert!(heights.iter().all(|&z| z > 0.3 && z < 4.5), "{heights:?}");
}

#[test]
fn the_table_pile_comes_to_rest_with_four_newton_by_twenty_conjugate_residual_iterations() {
    // The paper's claim (§10, digest-000 §10.6): 54 tables (4.7 kg, a top on four legs,
    // μ = 0.7) dropped in a heap rest with 4 Newton × 20 conjugate-residual iterations,
    // h = 1/120 s. Seed 1: the tables fall, tangle into one pile of about 430 contacts and
    // settle by 8 s (the last shift, 3 cm, ends near 7 s); from 8 s to 10 s no table moves
    // more than 1 mm (measured: 4e-14 m) and the pile ends still (speeds 1e-13 m/s).
    use stiction::model::samples::table_pile;
    let (moved, state, sim) = settle_with_four_by_twenty(&table_pile(54, 1), 1200, 960);
    assert!(moved < 1e-3, "a table moved {moved:.2e} m over the last 2 s");
    assert!(state.v.amax() < 1e-6, "still moving at {:.2e}", state.v.amax());
    let record = sim.last_constraints().unwrap();
    assert!(record.contacts.len() > 300, "{} contacts: the tables did not pile up", record.contacts.len());
    let deepest = record.contacts.iter().map(|c| c.geometry.distance).fold(f64::INFINITY, f64::min);
    assert!(deepest > -1e-3, "penetration {deepest:.2e} m");
    assert_eq!(sim.stats().lcp_fallbacks, 0);
}
