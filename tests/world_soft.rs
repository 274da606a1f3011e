//! A soft body in a world (issue #21, coupling): its step VJP against Ridders along every
//! input coordinate (soft and rigid) on contact scenes away from mode switches, and its
//! physics against closed forms — no contact is the soft step itself, a resting block
//! carries its weight, a sliding block decelerates at μ g, an impact between unequal
//! masses keeps momentum, a rigid load compresses a block by `F L / (E A)`, and a drop
//! creates no energy.

mod common;

use common::contact::{free_box, material};
use common::world::assert_vjp_matches_ridders;
use nalgebra::DVector;
use std::sync::Arc;
use stiction::collision::Material;
use stiction::math::{Inertia, SplitMix64, Vec3, SE3};
use stiction::model::{Body, CollisionShape, Geometry, WORLD};
use stiction::soft::generate::box_mesh;
use stiction::soft::{
    step, MaterialModel, SoftBody, SoftDamping, SoftIntegrator, SoftMaterial, SoftOptions, SoftState,
};
use stiction::world::{Articulation, SoftSystem, StaticGeometry, System, World, WorldOptions, WorldState};
use stiction::{Joint, ModelBuilder};

const G: f64 = 9.81;
const H: f64 = 1e-3;

fn gravity() -> Vec3 {
    Vec3::new(0.0, 0.0, -G)
}

/// Newton solved to round-off, so that finite differences see a smooth map.
fn tight(integrator: SoftIntegrator) -> SoftOptions {
    SoftOptions { tolerance: 1e-12, integrator, ..Default::default() }
}

/// A block of `cells`, `extent` (m), min corner at `origin`, of `model` (E = 5e4 Pa,
/// ν = 0.3, 1000 kg/m³), damped, under gravity.
fn block(model: MaterialModel, cells: [usize; 3], extent: Vec3, origin: Vec3, pin_bottom: bool) -> SoftBody {
    let mesh = box_mesh(cells, extent, origin).unwrap();
    let bottom: Vec<usize> = (0..mesh.num_vertices()).filter(|&v| mesh.vertices()[v].z == origin.z).collect();
    let mut b = SoftBody::builder(mesh, SoftMaterial::new(model, 5e4, 0.3, 1000.0))
        .damping(SoftDamping { mass: 0.5, stiffness: 0.005 })
        .gravity(gravity());
    if pin_bottom {
        b = b.pin_vertices(&bottom);
    }
    b.build().unwrap()
}

/// The 2 × 2 × 1-cell Neo-Hookean [`block`] (10 × 10 × 4 cm), unpinned, its bottom at `z`.
fn small_block(z: f64) -> SoftBody {
    block(MaterialModel::StableNeoHookean, [2, 2, 1], Vec3::new(0.1, 0.1, 0.04), Vec3::new(-0.05, -0.05, z), false)
}

fn soft_system(body: SoftBody, integrator: SoftIntegrator, mu: f64) -> SoftSystem {
    SoftSystem::new(Arc::new(body), tight(integrator), Material::new(mu, 0.0), 0.0).unwrap()
}

fn world(systems: Vec<Arc<dyn System>>) -> World {
    World::new(systems, WorldOptions { dt: H, ..Default::default() }).unwrap()
}

/// Random jitter of `scale` on every entry.
fn jitter(rng: &mut SplitMix64, x: &mut DVector<f64>, scale: f64) {
    for e in x.iter_mut() {
        *e += rng.range(-scale, scale);
    }
}

/// A 2 × 2 × 1-cell block (10 × 10 × 4 cm) 0.2 mm into the ground, jittered, moving
/// down and slightly sideways: its nine bottom vertices in sticking contact.
fn block_on_ground(model: MaterialModel, integrator: SoftIntegrator, seed: u64) -> (World, WorldState, DVector<f64>) {
    let mut rng = SplitMix64::new(seed);
    let body = block(model, [2, 2, 1], Vec3::new(0.1, 0.1, 0.04), Vec3::new(-0.05, -0.05, -2e-4), false);
    let n = body.ndof();
    let mut x = body.rest_positions();
    jitter(&mut rng, &mut x, 3e-5);
    let mut v = DVector::from_fn(n, |d, _| if d % 3 == 2 { -0.02 } else { 0.0 });
    jitter(&mut rng, &mut v, 2e-3);
    let mut u = DVector::zeros(n);
    jitter(&mut rng, &mut u, 0.05);
    let w = world(vec![
        Arc::new(StaticGeometry::ground(Material::new(1.0, 0.0))),
        Arc::new(soft_system(body, integrator, 1.0)),
    ]);
    (w, WorldState { q: x, v }, u)
}

/// A two-link arm hinged about y at `(−0.2, 0, 0.1)`, its forearm's tip a sphere
/// (radius 3 cm) pressing 0.1 mm into the top of a 2 × 2 × 2-cell soft block
/// (10 × 10 × 6 cm) pinned at its bottom: the arm's mass matrix and the sphere's twist
/// move with q.
fn arm_on_block(model: MaterialModel, integrator: SoftIntegrator, seed: u64) -> (World, WorldState, DVector<f64>) {
    let mut rng = SplitMix64::new(seed);
    let mut b = ModelBuilder::new("arm");
    let link = |mass: f64, len: f64| {
        Inertia::from_com(
            mass,
            Vec3::new(len / 2.0, 0.0, 0.0),
            nalgebra::Matrix3::from_diagonal(&Vec3::new(1e-4, 2e-3, 2e-3)),
        )
    };
    let (r, l1, l2) = (0.03, 0.12, 0.12);
    b.add_body(
        WORLD,
        Joint::revolute("shoulder", Vec3::y()).with_placement(SE3::from_translation(Vec3::new(-0.2, 0.0, 0.1))),
        Body::new("upper", link(0.3, l1)),
    );
    let tip = CollisionShape::new(Geometry::Sphere { radius: r }, SE3::from_translation(Vec3::new(l2, 0.0, 0.0)))
        .with_material(material(0.8, 0.0));
    b.add_body(
        "upper",
        Joint::revolute("elbow", Vec3::y()).with_placement(SE3::from_translation(Vec3::new(l1, 0.0, 0.0))),
        Body::new("fore", link(0.2, l2)).with_collision(tip),
    );
    let arm = Arc::new(b.build().unwrap());
    let body = block(model, [2, 2, 2], Vec3::new(0.1, 0.1, 0.06), Vec3::new(-0.05, -0.05, 0.0), true);
    // Shoulder at (−0.2, 0.1); the elbow and the tip centre on the circle about it: tip
    // centre at (0, top + r − 1e-4), with the elbow below the line.
    let target = Vec3::new(0.0, 0.0, 0.06 + r - 1e-4);
    let d = (target - Vec3::new(-0.2, 0.0, 0.1)).norm();
    let elbow = ((l1 * l1 + l2 * l2 - d * d) / (2.0 * l1 * l2)).acos();
    let base = (target.z - 0.1).atan2(target.x + 0.2);
    let inner = (l2 * (std::f64::consts::PI - elbow).sin()).atan2(l1 + l2 * (std::f64::consts::PI - elbow).cos());
    // Rotation about y by θ maps x to (cos θ, −sin θ) in (x, z).
    let shoulder = -(base - inner);
    let elbow_q = -(std::f64::consts::PI - elbow);
    let n = body.ndof();
    let mut x = body.rest_positions();
    let pinned: Vec<usize> = body.pinned_dofs().to_vec();
    let mut jit = DVector::zeros(n);
    jitter(&mut rng, &mut jit, 2e-5);
    for d in 0..n {
        if pinned.binary_search(&d).is_err() {
            x[d] += jit[d];
        }
    }
    let soft = soft_system(body, integrator, 0.8);
    let w = world(vec![Arc::new(Articulation::new(arm)), Arc::new(soft)]);
    let mut q = DVector::zeros(2 + n);
    q[0] = shoulder;
    q[1] = elbow_q;
    q.rows_mut(2, n).copy_from(&x);
    let mut v = DVector::zeros(2 + n);
    jitter(&mut rng, &mut v, 2e-3);
    v[0] = -0.05;
    let mut u = DVector::zeros(2 + n);
    jitter(&mut rng, &mut u, 0.02);
    (w, WorldState { q, v }, u)
}

/// A 2 × 2 × 1-cell soft block (10 × 10 × 4 cm) 0.2 mm into the top of a free rigid box
/// (1.5 kg, 30 × 30 × 10 cm) that is 0.5 mm into the ground: soft–rigid and rigid–ground
/// contacts in one solve.
fn block_on_free_box(model: MaterialModel, integrator: SoftIntegrator, seed: u64) -> (World, WorldState, DVector<f64>) {
    let mut rng = SplitMix64::new(seed);
    let mut b = ModelBuilder::new("box");
    free_box(&mut b, "box", Vec3::new(0.15, 0.15, 0.05), 1.5, material(1.0, 0.0));
    let bx = Arc::new(b.build().unwrap());
    let mut qb = bx.neutral();
    qb[2] = 0.05 - 5e-4;
    let body = block(model, [2, 2, 1], Vec3::new(0.1, 0.1, 0.04), Vec3::new(-0.05, -0.04, 0.1 - 5e-4 - 2e-4), false);
    let n = body.ndof();
    let mut x = body.rest_positions();
    jitter(&mut rng, &mut x, 3e-5);
    let w = world(vec![
        Arc::new(StaticGeometry::ground(Material::new(1.0, 0.0))),
        Arc::new(Articulation::new(bx)),
        Arc::new(soft_system(body, integrator, 1.0)),
    ]);
    let mut q = DVector::zeros(7 + n);
    q.rows_mut(0, 7).copy_from(&qb);
    q.rows_mut(7, n).copy_from(&x);
    let mut v = DVector::zeros(6 + n);
    jitter(&mut rng, &mut v, 2e-3);
    let mut u = DVector::zeros(6 + n);
    jitter(&mut rng, &mut u, 0.02);
    (w, WorldState { q, v }, u)
}

/// Every scene starts in a clear contact mode: at least `min_contacts` contacts, every
/// normal row active.
fn assert_contact_mode(w: &World, s: &WorldState, u: &DVector<f64>, min_contacts: usize) {
    let rec = w.step_recorded(s, u).unwrap();
    let nc = rec.contacts().len();
    assert!(nc >= min_contacts, "{nc} contacts, expected at least {min_contacts}");
    let f = &rec.solution().f;
    for c in 0..nc {
        assert!(f[3 * c] > 0.0, "contact {c}: normal impulse {} is not active", f[3 * c]);
    }
}

/// A scene builder of this file: `(model, integrator, seed) → (world, state, controls)`.
type SceneFn = fn(MaterialModel, SoftIntegrator, u64) -> (World, WorldState, DVector<f64>);

/// Each case `(label, scene, model, integrator)` starts in a clear contact mode (at least
/// `min_contacts` active) and its VJP matches Ridders; seeds from `seed`.
fn check_cases(scene: SceneFn, cases: &[(MaterialModel, SoftIntegrator)], min_contacts: usize, seed: u64) {
    for (k, &(model, integrator)) in cases.iter().enumerate() {
        let (w, s, u) = scene(model, integrator, seed + k as u64);
        assert_contact_mode(&w, &s, &u, min_contacts);
        assert_vjp_matches_ridders(&format!("{model:?}, {integrator:?}"), &w, &s, &u, 10 * seed, 1e-5);
    }
}

#[test]
fn a_neo_hookean_block_on_the_ground_matches_ridders() {
    let nh = MaterialModel::StableNeoHookean;
    check_cases(block_on_ground, &[(nh, SoftIntegrator::BackwardEuler), (nh, SoftIntegrator::ImplicitMidpoint)], 9, 1);
}

#[test]
fn st_venant_kirchhoff_and_linear_blocks_on_the_ground_match_ridders() {
    let be = SoftIntegrator::BackwardEuler;
    check_cases(block_on_ground, &[(MaterialModel::StVenantKirchhoff, be), (MaterialModel::LinearElastic, be)], 9, 2);
}

#[test]
fn an_arm_pressing_on_a_pinned_block_matches_ridders() {
    let be = SoftIntegrator::BackwardEuler;
    check_cases(arm_on_block, &[(MaterialModel::StableNeoHookean, be), (MaterialModel::LinearElastic, be)], 1, 3);
}

#[test]
fn a_block_on_a_free_box_on_the_ground_matches_ridders() {
    let (w, s, u) = block_on_free_box(MaterialModel::StableNeoHookean, SoftIntegrator::ImplicitMidpoint, 13);
    assert_contact_mode(&w, &s, &u, 13);
    assert_vjp_matches_ridders("block on box", &w, &s, &u, 40, 1e-5);
}

/// The soft body's mass-weighted sums: momentum `Σ m_i v_i` and centre of mass.
fn momentum_and_com(body: &SoftBody, x: &[f64], v: &[f64]) -> (Vec3, Vec3) {
    let (mut p, mut c) = (Vec3::zeros(), Vec3::zeros());
    for (i, &m) in body.masses().iter().enumerate() {
        p += Vec3::new(v[3 * i], v[3 * i + 1], v[3 * i + 2]) * m;
        c += Vec3::new(x[3 * i], x[3 * i + 1], x[3 * i + 2]) * m;
    }
    (p, c / body.total_mass())
}

#[test]
fn without_contact_the_world_step_is_the_soft_step() {
    for integrator in [SoftIntegrator::BackwardEuler, SoftIntegrator::ImplicitMidpoint] {
        let (_, s, u) = block_on_ground(MaterialModel::StableNeoHookean, integrator, 5);
        let body = small_block(-2e-4);
        let body = Arc::new(body);
        let sys = SoftSystem::new(body.clone(), tight(integrator), Material::new(1.0, 0.0), 0.0).unwrap();
        let w = world(vec![Arc::new(sys)]);
        let next = w.step(&s, &u).unwrap();
        let options = SoftOptions { dt: H, ..tight(integrator) };
        let soft =
            step(&body, &SoftState { x: s.q.clone(), v: s.v.clone() }, &u, &DVector::zeros(0), &options).unwrap();
        let soft = soft.next_state();
        let scale = s.q.amax();
        assert!((&next.q - &soft.x).amax() <= 1e-14 * scale, "{integrator:?}: positions differ");
        assert!((&next.v - &soft.v).amax() <= 1e-12, "{integrator:?}: velocities differ");
    }
}

/// A block dropped from rest 2 mm above the ground settles on it: it never sinks more
/// than a fraction of a millimetre, ends at rest, and the ground's impulse per step is
/// its weight.
#[test]
fn a_block_settles_on_the_ground_carrying_its_weight() {
    let body = Arc::new(small_block(2e-3));
    let sys = SoftSystem::new(body.clone(), SoftOptions::default(), Material::new(0.8, 0.0), 0.0).unwrap();
    let w = world(vec![Arc::new(StaticGeometry::ground(Material::new(0.8, 0.0))), Arc::new(sys)]);
    let n = body.ndof();
    let mut s = WorldState { q: body.rest_positions(), v: DVector::zeros(n) };
    let u = DVector::zeros(n);
    let mut lowest = f64::INFINITY;
    let mut impulse = 0.0;
    for k in 0..600 {
        let rec = w.step_recorded(&s, &u).unwrap();
        if k == 599 {
            impulse = (0..rec.contacts().len()).map(|c| rec.solution().f[3 * c]).sum::<f64>();
        }
        s = rec.next_state();
        lowest = lowest.min((0..n / 3).map(|i| s.q[3 * i + 2]).fold(f64::INFINITY, f64::min));
    }
    assert!(lowest > -2e-4, "the block sank {lowest:.2e} m into the ground");
    let (p, _) = momentum_and_com(&body, s.q.as_slice(), s.v.as_slice());
    assert!(p.norm() < 1e-4 * body.total_mass(), "still moving: momentum {p:?}");
    let weight = body.total_mass() * G * H;
    assert!((impulse - weight).abs() < 1e-3 * weight, "ground impulse {impulse:.6e} N·s, weight × h {weight:.6e}");
}

/// A block sliding at 0.5 m/s on the ground (μ = 0.3) slows at μ g, like a rigid one
/// (without mass damping, which would brake it by α v as well).
#[test]
fn a_sliding_block_decelerates_at_mu_g() {
    let mu = 0.3;
    let body = small_block(0.0);
    let body = Arc::new(body.to_builder().damping(SoftDamping { mass: 0.0, stiffness: 0.005 }).build().unwrap());
    let sys = SoftSystem::new(body.clone(), SoftOptions::default(), Material::new(mu, 0.0), 0.0).unwrap();
    let w = world(vec![Arc::new(StaticGeometry::ground(Material::new(mu, 0.0))), Arc::new(sys)]);
    let n = body.ndof();
    // Settle first, then push.
    let mut s = WorldState { q: body.rest_positions(), v: DVector::zeros(n) };
    let u = DVector::zeros(n);
    for _ in 0..200 {
        s = w.step(&s, &u).unwrap();
    }
    for i in 0..n / 3 {
        s.v[3 * i] += 0.5;
    }
    let (p0, _) = momentum_and_com(&body, s.q.as_slice(), s.v.as_slice());
    let steps = 100;
    for _ in 0..steps {
        s = w.step(&s, &u).unwrap();
    }
    let (p1, _) = momentum_and_com(&body, s.q.as_slice(), s.v.as_slice());
    let m = body.total_mass();
    let decel = (p0.x - p1.x) / m / (steps as f64 * H);
    assert!((decel - mu * G).abs() < 0.01 * mu * G, "deceleration {decel:.4} m/s², μ g = {:.4}", mu * G);
    assert!(p1.x > 0.0, "the block stopped too early");
}

/// A soft block (0.4 kg) hits a free rigid box (1.5 kg) in zero gravity: the total
/// momentum is kept through the impact, and the box moves off.
#[test]
fn an_impact_between_unequal_soft_and_rigid_masses_keeps_momentum() {
    let mut b = ModelBuilder::new("box");
    b.gravity(Vec3::zeros());
    free_box(&mut b, "box", Vec3::new(0.05, 0.1, 0.1), 1.5, material(0.0, 0.0));
    let bx = Arc::new(b.build().unwrap());
    let mesh = box_mesh([2, 2, 2], Vec3::new(0.1, 0.1, 0.04), Vec3::new(-0.2, -0.05, -0.02)).unwrap();
    let body = Arc::new(
        SoftBody::builder(mesh, SoftMaterial::new(MaterialModel::StableNeoHookean, 5e4, 0.3, 1000.0))
            .gravity(Vec3::zeros())
            .build()
            .unwrap(),
    );
    let sys = SoftSystem::new(body.clone(), SoftOptions::default(), Material::new(0.0, 0.0), 0.0).unwrap();
    let w = world(vec![Arc::new(Articulation::new(bx.clone())), Arc::new(sys)]);
    let n = body.ndof();
    let mut q = DVector::zeros(7 + n);
    q.rows_mut(0, 7).copy_from(&bx.neutral());
    q.rows_mut(7, n).copy_from(&body.rest_positions());
    let mut v = DVector::zeros(6 + n);
    for i in 0..n / 3 {
        v[6 + 3 * i] = 1.0;
    }
    let total = |s: &WorldState| -> Vec3 {
        let (p, _) = momentum_and_com(&body, &s.q.as_slice()[7..], &s.v.as_slice()[6..]);
        p + Vec3::new(s.v[3], s.v[4], s.v[5]) * 1.5
    };
    let mut s = WorldState { q, v };
    let p0 = total(&s);
    let u = DVector::zeros(6 + n);
    let mut touched = false;
    for _ in 0..200 {
        let rec = w.step_recorded(&s, &u).unwrap();
        touched |= !rec.contacts().is_empty();
        s = rec.next_state();
        let p = total(&s);
        assert!((p - p0).norm() < 1e-10 * p0.norm(), "momentum {p:?}, started at {p0:?}");
    }
    assert!(touched && s.v[3] > 0.1, "the box did not move off: {}", s.v[3]);
}

/// A free rigid box (1.5 kg) resting on a linear-elastic block with ν = 0 (its bottom on
/// rollers, no gravity of its own; friction keeps the box from drifting, and ν = 0 leaves
/// nothing for it to resist) compresses it by `m g L / (E A)`: the rigid load goes
/// through the contact rows into the elastic Hessian, and the box settles where the
/// block's stiffness carries it (uniform strain: exact on tets).
#[test]
fn a_rigid_load_compresses_a_block_by_f_l_over_e_a() {
    let (e, side, l, mass) = (5e4, 0.1, 0.04, 1.5);
    let mut b = ModelBuilder::new("load");
    free_box(&mut b, "load", Vec3::new(0.08, 0.08, 0.02), mass, material(1.0, 0.0));
    let bx = Arc::new(b.build().unwrap());
    let mesh = box_mesh([2, 2, 2], Vec3::new(side, side, l), Vec3::new(-side / 2.0, -side / 2.0, 0.0)).unwrap();
    let bottom: Vec<usize> = (0..mesh.num_vertices()).filter(|&v| mesh.vertices()[v].z == 0.0).collect();
    let mut dofs: Vec<(usize, usize)> = bottom.iter().map(|&v| (v, 2)).collect();
    dofs.extend([(bottom[0], 0), (bottom[0], 1), (bottom[1], 1)]);
    let body = SoftBody::builder(mesh, SoftMaterial::new(MaterialModel::LinearElastic, e, 0.0, 1000.0))
        .damping(SoftDamping { mass: 2.0, stiffness: 0.01 })
        .gravity(Vec3::zeros())
        .pin_dofs(&dofs)
        .build()
        .unwrap();
    let body = Arc::new(body);
    let sys = SoftSystem::new(body.clone(), SoftOptions::default(), Material::new(1.0, 0.0), 0.0).unwrap();
    let w = world(vec![Arc::new(Articulation::new(bx.clone())), Arc::new(sys)]);
    let n = body.ndof();
    let mut q = DVector::zeros(7 + n);
    q.rows_mut(0, 7).copy_from(&bx.neutral());
    q[2] = l + 0.02;
    q.rows_mut(7, n).copy_from(&body.rest_positions());
    let mut s = WorldState { q, v: DVector::zeros(6 + n) };
    let u = DVector::zeros(6 + n);
    for _ in 0..3000 {
        s = w.step(&s, &u).unwrap();
    }
    let expected = mass * G * l / (e * side * side);
    let compression = l - (s.q[2] - 0.02);
    assert!(s.v.amax() < 1e-5, "not settled: |v| = {:.2e}", s.v.amax());
    assert!(
        (compression - expected).abs() < 0.005 * expected,
        "compression {compression:.6e} m, F L / (E A) = {expected:.6e} m"
    );
}

/// A Neo-Hookean block dropped from 5 cm on the ground, undamped, with the implicit
/// midpoint rule: its total energy (kinetic, elastic, gravitational) never rises above
/// the start through the fall, the impact and the rebound.
#[test]
fn a_dropped_block_creates_no_energy() {
    let mesh = box_mesh([2, 2, 2], Vec3::new(0.1, 0.1, 0.06), Vec3::new(-0.05, -0.05, 0.05)).unwrap();
    let body = SoftBody::builder(mesh, SoftMaterial::new(MaterialModel::StableNeoHookean, 5e4, 0.3, 1000.0))
        .gravity(gravity())
        .build()
        .unwrap();
    let body = Arc::new(body);
    let options = SoftOptions { integrator: SoftIntegrator::ImplicitMidpoint, ..Default::default() };
    let sys = SoftSystem::new(body.clone(), options, Material::new(0.5, 0.0), 0.0).unwrap();
    let w = world(vec![Arc::new(StaticGeometry::ground(Material::new(0.5, 0.0))), Arc::new(sys)]);
    let n = body.ndof();
    let energy = |s: &WorldState| -> f64 {
        let mut e = body.elastic_energy(&s.q).unwrap();
        for (i, &m) in body.masses().iter().enumerate() {
            let v = Vec3::new(s.v[3 * i], s.v[3 * i + 1], s.v[3 * i + 2]);
            e += 0.5 * m * v.norm_squared() + m * G * s.q[3 * i + 2];
        }
        e
    };
    let mut s = WorldState { q: body.rest_positions(), v: DVector::zeros(n) };
    let e0 = energy(&s);
    let u = DVector::zeros(n);
    let mut contacts = 0;
    let mut worst = f64::NEG_INFINITY;
    for _ in 0..400 {
        let rec = w.step_recorded(&s, &u).unwrap();
        contacts += rec.contacts().len();
        s = rec.next_state();
        worst = worst.max(energy(&s) - e0);
    }
    assert!(contacts > 0, "the block never reached the ground");
    assert!(worst <= 1e-6 * e0.abs(), "energy rose by {worst:.3e} J above {e0:.4e} J");
}

/// A corotated body steps in a world, but its contact VJP (which needs the third
/// derivative of Ψ) is a typed error naming the model, not a wrong gradient.
#[test]
fn a_corotated_body_in_contact_has_no_vjp_and_says_so() {
    let (_, s, u) = block_on_ground(MaterialModel::StableNeoHookean, SoftIntegrator::BackwardEuler, 3);
    let body =
        block(MaterialModel::Corotated, [2, 2, 1], Vec3::new(0.1, 0.1, 0.04), Vec3::new(-0.05, -0.05, -2e-4), false);
    let w = world(vec![
        Arc::new(StaticGeometry::ground(Material::new(1.0, 0.0))),
        Arc::new(soft_system(body, SoftIntegrator::BackwardEuler, 1.0)),
    ]);
    let rec = w.step_recorded(&s, &u).unwrap();
    assert!(!rec.contacts().is_empty());
    let err = rec.vjp(&DVector::zeros(w.nv()), &DVector::from_element(w.nv(), 1.0)).unwrap_err();
    assert!(err.to_string().contains("corotated"), "{err}");
}

#[test]
fn bad_soft_system_inputs_are_errors() {
    let body =
        Arc::new(block(MaterialModel::StableNeoHookean, [1, 1, 1], Vec3::new(0.1, 0.1, 0.1), Vec3::zeros(), false));
    for radius in [-1.0, f64::NAN, f64::INFINITY] {
        assert!(SoftSystem::new(body.clone(), SoftOptions::default(), Material::new(0.5, 0.0), radius).is_err());
    }
    assert!(SoftSystem::new(body.clone(), SoftOptions::default(), Material::new(f64::NAN, 0.0), 0.0).is_err());
    let sys = SoftSystem::new(body.clone(), SoftOptions::default(), Material::new(0.5, 0.0), 0.0).unwrap();
    assert_eq!(sys.contact_vertices().len(), 8);
    let w = world(vec![Arc::new(sys)]);
    let mut s = WorldState { q: body.rest_positions(), v: DVector::zeros(24) };
    s.v[4] = f64::NAN;
    let err = w.step(&s, &DVector::zeros(24)).unwrap_err();
    assert!(err.to_string().contains("soft body velocities"), "{err}");
}

/// A two-link arm (shoulder at the origin, about y) holding a 2 × 2 × 1-cell soft block
/// (10 × 10 × 4 cm) welded by its top vertices to the forearm, swinging under gravity;
/// with `ground`, the block's bottom is also 0.2 mm into the ground.
fn block_welded_to_arm(model: MaterialModel, ground: bool, seed: u64) -> (World, WorldState, DVector<f64>) {
    let mut rng = SplitMix64::new(seed);
    let mut b = ModelBuilder::new("arm");
    let link = |mass: f64, len: f64| {
        Inertia::from_com(
            mass,
            Vec3::new(len / 2.0, 0.0, 0.0),
            nalgebra::Matrix3::from_diagonal(&Vec3::new(1e-4, 2e-3, 2e-3)),
        )
    };
    let (l1, l2) = (0.2, 0.15);
    b.add_body(
        WORLD,
        Joint::revolute("shoulder", Vec3::y()).with_placement(SE3::from_translation(Vec3::new(-0.3, 0.0, 0.25))),
        Body::new("upper", link(0.5, l1)),
    );
    b.add_body(
        "upper",
        Joint::revolute("elbow", Vec3::y()).with_placement(SE3::from_translation(Vec3::new(l1, 0.0, 0.0))),
        Body::new("fore", link(0.3, l2)),
    );
    let arm = Arc::new(b.build().unwrap());
    // The upper arm pointing down by 0.35 rad, the forearm level; the block hangs below
    // it, welded at its top face (the anchors' points on the forearm are where the top
    // vertices are at the start).
    let (shoulder, elbow) = (0.35f64, -0.35f64);
    let bottom = if ground { -2e-4 } else { 0.05 };
    let body = block(model, [2, 2, 1], Vec3::new(0.1, 0.1, 0.04), Vec3::new(-0.11, -0.05, bottom), false);
    let n = body.ndof();
    let top: Vec<usize> =
        (0..body.mesh().num_vertices()).filter(|&v| body.mesh().vertices()[v].z == bottom + 0.04).collect();
    let mut x = body.rest_positions();
    jitter(&mut rng, &mut x, 2e-5);
    let soft = soft_system(body, SoftIntegrator::BackwardEuler, 1.0);
    let mut systems: Vec<Arc<dyn System>> = vec![Arc::new(Articulation::new(arm)), Arc::new(soft)];
    if ground {
        systems.push(Arc::new(StaticGeometry::ground(Material::new(1.0, 0.0))));
    }
    let w = world(systems);
    let mut q = DVector::zeros(2 + n);
    q[0] = shoulder;
    q[1] = elbow;
    q.rows_mut(2, n).copy_from(&x);
    let welds = w.weld(&q, 1, &top, Some((0, 1))).unwrap();
    let w = w.with_attachments(welds).unwrap();
    let mut v = DVector::zeros(2 + n);
    jitter(&mut rng, &mut v, 5e-3);
    v[0] = 0.1;
    let mut u = DVector::zeros(2 + n);
    jitter(&mut rng, &mut u, 0.02);
    (w, WorldState { q, v }, u)
}

#[test]
fn a_block_welded_to_an_arm_matches_ridders() {
    for (k, model) in [MaterialModel::StableNeoHookean, MaterialModel::StVenantKirchhoff].into_iter().enumerate() {
        let (w, s, u) = block_welded_to_arm(model, false, 51 + k as u64);
        assert_eq!(w.attachments().len(), 9);
        assert_vjp_matches_ridders(&format!("welded {model:?}"), &w, &s, &u, 50, 1e-5);
    }
    let (w, s, u) = block_welded_to_arm(MaterialModel::StableNeoHookean, true, 53);
    assert_contact_mode(&w, &s, &u, 9);
    assert_vjp_matches_ridders("welded, on the ground", &w, &s, &u, 60, 1e-5);
}

/// A block welded to the world by its top face settles where the same block with its top
/// pinned is in static equilibrium: the attachment rows carry the weight as the pins do.
#[test]
fn a_block_welded_to_the_world_hangs_like_a_pinned_one() {
    let body = block(MaterialModel::StableNeoHookean, [2, 2, 2], Vec3::new(0.1, 0.1, 0.06), Vec3::zeros(), false);
    let top: Vec<usize> = (0..body.mesh().num_vertices()).filter(|&v| body.mesh().vertices()[v].z == 0.06).collect();
    let pinned = body.to_builder().pin_vertices(&top).build().unwrap();
    let rest = pinned.rest_positions();
    let targets = DVector::from_iterator(pinned.pinned_dofs().len(), pinned.pinned_dofs().iter().map(|&d| rest[d]));
    let n = pinned.ndof();
    let want =
        stiction::soft::static_equilibrium(&pinned, &rest, &DVector::zeros(n), &targets, &SoftOptions::default())
            .unwrap()
            .0;
    let body = Arc::new(body);
    let sys = SoftSystem::new(body.clone(), SoftOptions::default(), Material::new(0.5, 0.0), 0.0).unwrap();
    let w = world(vec![Arc::new(sys)]);
    let mut s = WorldState { q: body.rest_positions(), v: DVector::zeros(n) };
    let w = w.clone().with_attachments(w.weld(&s.q, 0, &top, None).unwrap()).unwrap();
    let u = DVector::zeros(n);
    for _ in 0..3000 {
        s = w.step(&s, &u).unwrap();
    }
    let sag = (0..n / 3).map(|i| rest[3 * i + 2] - want[3 * i + 2]).fold(0.0, f64::max);
    let err = (&s.q - &want).amax();
    assert!(sag > 1e-4, "the pinned block hardly sags ({sag:.2e} m): not a test");
    assert!(err < 1e-3 * sag, "welded and pinned equilibria differ by {err:.3e} m (sag {sag:.3e} m)");
    assert!(s.v.amax() < 1e-6, "not at rest: {:.2e}", s.v.amax());
}

/// A soft block welded to a free rigid box in zero gravity, every part moving with its
/// own velocity: the welds' impulses are internal, so the total momentum stays put.
#[test]
fn a_block_welded_to_a_free_box_keeps_momentum() {
    let mut b = ModelBuilder::new("box");
    b.gravity(Vec3::zeros());
    free_box(&mut b, "box", Vec3::new(0.05, 0.05, 0.02), 0.9, material(0.0, 0.0));
    let bx = Arc::new(b.build().unwrap());
    let mesh = box_mesh([2, 2, 1], Vec3::new(0.1, 0.1, 0.04), Vec3::new(-0.05, -0.05, -0.06)).unwrap();
    let body = SoftBody::builder(mesh, SoftMaterial::new(MaterialModel::StableNeoHookean, 5e4, 0.3, 1000.0))
        .gravity(Vec3::zeros())
        .build()
        .unwrap();
    let top: Vec<usize> =
        (0..body.mesh().num_vertices()).filter(|&v| (body.mesh().vertices()[v].z + 0.02).abs() < 1e-12).collect();
    assert_eq!(top.len(), 9);
    let body = Arc::new(body);
    let sys = SoftSystem::new(body.clone(), SoftOptions::default(), Material::new(0.0, 0.0), 0.0).unwrap();
    let w = world(vec![Arc::new(Articulation::new(bx.clone())), Arc::new(sys)]);
    let n = body.ndof();
    let mut q = DVector::zeros(7 + n);
    q.rows_mut(0, 7).copy_from(&bx.neutral());
    q.rows_mut(7, n).copy_from(&body.rest_positions());
    let w = w.clone().with_attachments(w.weld(&q, 1, &top, Some((0, 0))).unwrap()).unwrap();
    let mut rng = SplitMix64::new(77);
    let mut v = DVector::zeros(6 + n);
    jitter(&mut rng, &mut v, 0.3);
    let total = |s: &WorldState| -> Vec3 {
        let (p, _) = momentum_and_com(&body, &s.q.as_slice()[7..], &s.v.as_slice()[6..]);
        p + Vec3::new(s.v[3], s.v[4], s.v[5]) * 0.9
    };
    let mut s = WorldState { q, v };
    let p0 = total(&s);
    let u = DVector::zeros(6 + n);
    for _ in 0..200 {
        s = w.step(&s, &u).unwrap();
        let p = total(&s);
        assert!((p - p0).norm() < 1e-10 * p0.norm(), "momentum {p:?}, started at {p0:?}");
    }
    // The welds hold: every top vertex stays where its anchor on the box is.
    assert_eq!(w.attachments().len(), 9);
    let box_pose = w.systems()[0].element_pose(&s.q.as_slice()[..7], 0).unwrap();
    for att in w.attachments() {
        let (stiction::world::Anchor::Element { element: vtx, .. }, stiction::world::Anchor::Element { point, .. }) =
            (att.a, att.b)
        else {
            panic!("weld anchors are elements")
        };
        let x = Vec3::new(s.q[7 + 3 * vtx], s.q[8 + 3 * vtx], s.q[9 + 3 * vtx]);
        let gap = (box_pose.act_point(&point) - x).norm();
        assert!(gap < 1e-4, "vertex {vtx} is {gap:.2e} m from its anchor");
    }
    assert!(s.v.rows(0, 6).norm() > 0.01, "the box does not move: not a test");
}

/// A 100-step rollout of a block resting on the ground under varying vertex forces (its
/// bottom vertices in sticking contact throughout): the tape's gradient of a loss on every
/// state matches Ridders along random directions of the start state, the controls and θ
/// to 1e-5 relative.
#[test]
fn a_hundred_step_world_rollout_gradient_matches_ridders() {
    let steps = 100;
    let body = small_block(0.0);
    let body = Arc::new(body);
    let sys =
        SoftSystem::new(body.clone(), tight(SoftIntegrator::BackwardEuler), Material::new(1.0, 0.0), 0.0).unwrap();
    let w = world(vec![Arc::new(StaticGeometry::ground(Material::new(1.0, 0.0))), Arc::new(sys)]);
    let n = body.ndof();
    // Settle first so that every bottom vertex carries load.
    let mut s = WorldState { q: body.rest_positions(), v: DVector::zeros(n) };
    for _ in 0..150 {
        s = w.step(&s, &DVector::zeros(n)).unwrap();
    }
    let mut rng = SplitMix64::new(91);
    let controls: Vec<DVector<f64>> =
        (0..steps).map(|k| DVector::from_fn(n, |d, _| 0.02 * ((k as f64) * 0.1 + d as f64).sin())).collect();
    let (states, tape) = w.rollout_recorded(&s, &controls).unwrap();
    let modes: Vec<_> = tape.records().iter().map(|r| r.solution().states.clone()).collect();
    assert!(tape.records().iter().all(|r| r.contacts().len() == 9), "every step keeps nine contacts");
    let gq: Vec<DVector<f64>> = (0..steps).map(|_| common::random_vector(&mut rng, n, 1.0)).collect();
    let gv: Vec<DVector<f64>> = (0..steps).map(|_| common::random_vector(&mut rng, n, 1e-2)).collect();
    let grads = tape.backward(&gq, &gv).unwrap();
    let loss = |w: &World, s0: &WorldState, us: &[DVector<f64>]| -> f64 {
        let (st, tp) = w.rollout_recorded(s0, us).unwrap();
        for (r, m) in tp.records().iter().zip(&modes) {
            assert_eq!(&r.solution().states, m, "the contact mode changed within the difference step");
        }
        st.iter().enumerate().map(|(k, x)| gq[k].dot(&(&x.q - &states[k].q)) + gv[k].dot(&x.v)).sum()
    };
    let theta = w.param_values();
    let scale = theta.map(|t| t.abs().max(1.0));
    for dir in 0..4 {
        let dq = common::random_vector(&mut rng, n, 1.0);
        let dv = common::random_vector(&mut rng, n, 1.0);
        let du: Vec<DVector<f64>> = (0..steps).map(|_| common::random_vector(&mut rng, n, 1.0)).collect();
        let dt = common::random_vector(&mut rng, theta.len(), 1.0).component_mul(&scale);
        let f = |eps: f64| -> DVector<f64> {
            let s0 = WorldState { q: &s.q + &dq * eps, v: &s.v + &dv * eps };
            let us: Vec<DVector<f64>> = controls.iter().zip(&du).map(|(u, d)| u + d * eps).collect();
            let wt = w.with_param_values(&(&theta + &dt * eps)).unwrap();
            DVector::from_element(1, loss(&wt, &s0, &us))
        };
        let (fd, err) = common::ridders(&f, 1e-6);
        let analytic = grads.q0.dot(&dq)
            + grads.v0.dot(&dv)
            + grads.u.iter().zip(&du).map(|(g, d)| g.dot(d)).sum::<f64>()
            + grads.theta.dot(&dt);
        let e = (analytic - fd[0]).abs() / fd[0].abs();
        println!("direction {dir}: fd {:.10e}, tape {analytic:.10e}, rel {e:.2e} (Ridders error {err:.1e})", fd[0]);
        assert!(e < 1e-5, "direction {dir}: rollout gradient relative error {e:.2e}");
    }
}

/// The NCP solver (isotropic cones, non-smooth Newton) in place of the boxed LCP: the same
/// soft block on the ground, its VJP (the solver's implicit-function backward pass through
/// the soft body's adjoints) against Ridders.
#[test]
fn a_block_on_the_ground_with_the_ncp_solver_matches_ridders() {
    let (w, s, u) = block_on_ground(MaterialModel::StableNeoHookean, SoftIntegrator::BackwardEuler, 17);
    let ncp =
        World::with_solver(w.systems().to_vec(), Arc::new(stiction::solver::ncp::NcpSolver::default()), *w.options())
            .unwrap();
    assert_contact_mode(&ncp, &s, &u, 9);
    assert_vjp_matches_ridders("NCP", &ncp, &s, &u, 70, 1e-5);
}
