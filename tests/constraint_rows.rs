//! Contact constraint rows and their configuration derivatives (`stiction::constraint`).
//!
//! * `J u` against the relative point velocities `d · (v_B(p) − v_A(p))` computed
//!   independently from the bodies' velocities (`forward_kinematics_velocity`); the
//!   normal rows against `∂distance/∂q`; a contact seen from B (`Contact::swapped`)
//!   against the same rows up to the sign of the t₁ row.
//! * `∂(J u)/∂q`, `∂(Jᵀλ)/∂q` and `∂distance/∂q` against Ridders' extrapolated central
//!   differences along `q ⊕ ε e_k`, keeping each contact's features fixed
//!   (`recompute_contacts` at the perturbed configuration). Error measure:
//!   `‖fd − analytic‖_max / max(1, ‖analytic‖_max)` ≤ 1e-7.
//! * The vector–Jacobian products against `μᵀ(matrix)`, `zᵀ(matrix)` to 1e-12.
//! * `ContactFrame`: orthonormal, right-handed, tangent derivatives against Ridders.
//! * Bad input: typed errors.
//!
//! Scenes: an arm (revolute, revolute, ball wrist) with a box on its hand over a plane;
//! free boxes, spheres and capsules on a plane; a prismatic slide carrying a chain of
//! ball joints with a box touching a static world sphere; two free bodies touching each
//! other; a floating tree whose two branches (universal + screw, planar) touch each
//! other, so that the contact's chains share the free base. Contacts whose normal lies
//! within 0.05 of the tangent seed switch (|n_x| = 0.9) are left out (the frame is not
//! differentiable there) and counted.

use nalgebra::{DMatrix, DVector, Matrix3xX};
use stiction::collision::Contact;
use stiction::constraint::{contacts_at, CollisionOptions};
use stiction::constraint::{recompute_contacts, ContactFrame, ContactRowDerivatives, ContactRows};
use stiction::dynamics::{forward_kinematics, forward_kinematics_velocity};
use stiction::gradcheck::fd::ridders;
use stiction::gradcheck::manifold::perturb_configuration;
use stiction::math::{Inertia, Motion, SplitMix64, Vec3, SE3};
use stiction::model::samples::{bodies_on_plane, rod, RestingShape};
use stiction::model::{CollisionShape, Geometry, WORLD};
use stiction::{Body, Data, Error, Joint, Model, ModelBuilder};

/// Required agreement with Ridders' differences.
const TOL: f64 = 1e-7;
/// Required agreement of the vector–Jacobian products with the matrices.
const VJP_TOL: f64 = 1e-12;
/// Initial Ridders step (rad, m).
const H: f64 = 1e-3;

fn rel_err(fd: &DMatrix<f64>, an: &DMatrix<f64>) -> f64 {
    (fd - an).amax() / an.amax().max(1.0)
}

fn random_vec(rng: &mut SplitMix64, n: usize) -> DVector<f64> {
    DVector::from_fn(n, |_, _| rng.range(-1.0, 1.0))
}

fn random_unit(rng: &mut SplitMix64) -> Vec3 {
    loop {
        let v = Vec3::new(rng.normal(), rng.normal(), rng.normal());
        if v.norm() > 1e-3 {
            return v.normalize();
        }
    }
}

/// A unit quaternion `[w, x, y, z]` of a rotation by at most `max_angle`.
fn small_rotation(rng: &mut SplitMix64, max_angle: f64) -> [f64; 4] {
    let a = random_unit(rng) * rng.range(0.0, max_angle);
    let q = nalgebra::UnitQuaternion::from_scaled_axis(a);
    [q.w, q.i, q.j, q.k]
}

/// Worst errors and counts over the checked configurations.
#[derive(Debug, Default)]
struct Stats {
    configs: usize,
    contacts: usize,
    near_switch: usize,
    j: f64,
    distance: f64,
    jv: f64,
    jtf: f64,
    vjp: f64,
    kinds: std::collections::BTreeMap<&'static str, usize>,
}

impl Stats {
    fn merge(&mut self, o: &Stats) {
        self.configs += o.configs;
        self.contacts += o.contacts;
        self.near_switch += o.near_switch;
        self.j = self.j.max(o.j);
        self.distance = self.distance.max(o.distance);
        self.jv = self.jv.max(o.jv);
        self.jtf = self.jtf.max(o.jtf);
        self.vjp = self.vjp.max(o.vjp);
        for (k, n) in &o.kinds {
            *self.kinds.entry(k).or_default() += n;
        }
    }
}

/// Rows of `contacts` (features fixed) at `q ⊕ ε e_k`, and the recomputed contacts.
fn rows_at(
    model: &Model,
    q: &DVector<f64>,
    k: usize,
    eps: f64,
    contacts: &[Contact],
) -> stiction::Result<(ContactRows, Vec<Contact>)> {
    let qe = perturb_configuration(model, q, k, eps)?;
    let mut data = Data::new(model);
    forward_kinematics(model, &mut data, qe.as_slice())?;
    let cs = recompute_contacts(model, &data, contacts)?;
    for (c, c0) in cs.iter().zip(contacts) {
        // keep every perturbed frame on the same side of the tangent seed switch
        if (c.geometry.normal.x.abs() > 0.9) != (c0.geometry.normal.x.abs() > 0.9) {
            return Err(Error::InvalidInput("the tangent seed switched".into()));
        }
    }
    Ok((ContactRows::new(model, &data, &cs)?, cs))
}

/// Checks every derivative at `q` for the contacts detected with `margin`; `None` when
/// no contact is left to check.
fn check_configuration(model: &Model, q: &DVector<f64>, margin: f64, rng: &mut SplitMix64) -> Option<Stats> {
    let nv = model.nv();
    let mut st = Stats::default();
    let all = contacts_at(model, q.as_slice(), &CollisionOptions { margin }).unwrap();
    let contacts: Vec<Contact> =
        all.iter().copied().filter(|c| (c.geometry.normal.x.abs() - 0.9).abs() > 0.05).collect();
    st.near_switch = all.len() - contacts.len();
    if contacts.is_empty() {
        return None;
    }
    let nc = contacts.len();
    let mut data = Data::new(model);
    forward_kinematics(model, &mut data, q.as_slice()).unwrap();
    let rows = ContactRows::new(model, &data, &contacts).unwrap();
    assert_eq!((rows.nrows(), rows.j.ncols()), (3 * nc, nv));
    let der = ContactRowDerivatives::new(model, &data, &contacts, &rows).unwrap();

    // J u against relative point velocities from the bodies' own velocities.
    let u = random_vec(rng, nv);
    let mut dv = Data::new(model);
    forward_kinematics_velocity(model, &mut dv, q.as_slice(), u.as_slice()).unwrap();
    let point_velocity = |body: Option<usize>, p: &Vec3| -> Vec3 {
        body.map_or(Vec3::zeros(), |b| {
            let w: Motion = dv.x_world[b].act_motion(&dv.v[b]);
            w.lin + w.ang.cross(p)
        })
    };
    let ju = &rows.jacobian() * &u;
    let mut expect = DVector::zeros(3 * nc);
    for (i, c) in contacts.iter().enumerate() {
        let p = c.geometry.point;
        let rel = point_velocity(c.body_b, &p) - point_velocity(c.body_a, &p);
        let f = &rows.frames[i];
        for (r, d) in [f.normal, f.t1, f.t2].iter().enumerate() {
            expect[3 * i + r] = d.dot(&rel);
        }
    }
    st.j = (&ju - &expect).amax() / expect.amax().max(1.0);
    assert!(st.j < 1e-12, "{}: J u vs point velocities {:.2e}", model.name(), st.j);

    // The normal rows are the derivative of the signed distance (the closest points
    // differ along n). Seen from B (n → −n: t₁ is unchanged, t₂ = n × t₁ flips, and the
    // relative velocity reverses) a contact has the same normal and t₂ rows and −t₁.
    let dist = der.distance_q();
    for i in 0..nc {
        let e = (rows.jacobian().row(3 * i) - dist.row(i)).amax();
        assert!(e < 1e-12 * dist.amax().max(1.0), "{}: normal row {i} vs ∂d/∂q: {e:.2e}", model.name());
    }
    let swapped: Vec<Contact> = contacts.iter().map(|c| c.swapped()).collect();
    let rows_swapped = ContactRows::new(model, &data, &swapped).unwrap();
    let flip = DMatrix::from_diagonal(&DVector::from_fn(3 * nc, |r, _| if r % 3 == 1 { -1.0 } else { 1.0 }));
    let e = (&rows_swapped.jacobian() - flip * &rows.jacobian()).amax();
    assert!(e < 1e-14 * rows.jacobian().amax().max(1.0), "{}: swapped rows {e:.2e}", model.name());

    // Finite differences with the features fixed.
    let lambda = random_vec(rng, 3 * nc);
    let jv = der.jv_q(model, &data, &rows, u.as_slice()).unwrap();
    let jtf = der.jtf_q(model, &data, &rows, lambda.as_slice()).unwrap();
    let mut fd_jv = DMatrix::zeros(3 * nc, nv);
    let mut fd_jtf = DMatrix::zeros(nv, nv);
    let mut fd_dist = DMatrix::zeros(nc, nv);
    for k in 0..nv {
        let f = |e: f64| rows_at(model, q, k, e, &contacts).map(|(r, _)| &r.jacobian() * &u);
        fd_jv.set_column(k, &ridders(&f, H).unwrap().derivative);
        let f = |e: f64| rows_at(model, q, k, e, &contacts).map(|(r, _)| r.jacobian().tr_mul(&lambda));
        fd_jtf.set_column(k, &ridders(&f, H).unwrap().derivative);
        let f = |e: f64| {
            rows_at(model, q, k, e, &contacts)
                .map(|(_, cs)| DVector::from_iterator(nc, cs.iter().map(|c| c.geometry.distance)))
        };
        fd_dist.set_column(k, &ridders(&f, H).unwrap().derivative);
    }
    st.jv = rel_err(&fd_jv, &jv);
    st.jtf = rel_err(&fd_jtf, &jtf);
    st.distance = rel_err(&fd_dist, &dist);
    assert!(st.jv <= TOL, "{}: ∂(Ju)/∂q error {:.2e}\nanalytic {jv:.6}\nfd {fd_jv:.6}", model.name(), st.jv);
    assert!(st.jtf <= TOL, "{}: ∂(Jᵀλ)/∂q error {:.2e}\nanalytic {jtf:.6}\nfd {fd_jtf:.6}", model.name(), st.jtf);
    assert!(st.distance <= TOL, "{}: ∂d/∂q error {:.2e}", model.name(), st.distance);

    // Vector–Jacobian products.
    let mu = random_vec(rng, 3 * nc);
    let z = random_vec(rng, nv);
    let a = der.jv_q_vjp(model, &data, &rows, u.as_slice(), mu.as_slice()).unwrap();
    let want = jv.tr_mul(&mu);
    let e1 = (&a - &want).amax() / want.amax().max(1.0);
    let b = der.jtf_q_vjp(model, &data, &rows, lambda.as_slice(), z.as_slice()).unwrap();
    let want = jtf.tr_mul(&z);
    let e2 = (&b - &want).amax() / want.amax().max(1.0);
    st.vjp = e1.max(e2);
    assert!(e1 <= VJP_TOL && e2 <= VJP_TOL, "{}: VJP errors {e1:.2e} {e2:.2e}", model.name());
    st.configs = 1;
    st.contacts = nc;
    for c in &contacts {
        *st.kinds.entry(c.kind.name()).or_default() += 1;
    }
    Some(st)
}

/// Draws configurations with `draw` until `want` have contacts, checking each.
fn run(
    name: &str,
    model: &Model,
    margin: f64,
    want: usize,
    seed: u64,
    draw: &dyn Fn(&mut SplitMix64) -> DVector<f64>,
) -> Stats {
    let mut rng = SplitMix64::new(seed);
    let mut total = Stats::default();
    for _ in 0..50 * want {
        if total.configs >= want {
            break;
        }
        let q = draw(&mut rng);
        if let Some(s) = check_configuration(model, &q, margin, &mut rng) {
            total.merge(&s);
        }
    }
    println!(
        "{name:>18}: {} configurations, {} contacts ({} near the seed switch left out); worst J {:.1e}, \
         ∂d/∂q {:.1e}, ∂(Ju)/∂q {:.1e}, ∂(Jᵀλ)/∂q {:.1e}, VJP {:.1e}; kinds {:?}",
        total.configs,
        total.contacts,
        total.near_switch,
        total.j,
        total.distance,
        total.jv,
        total.jtf,
        total.vjp,
        total.kinds
    );
    assert_eq!(total.configs, want, "{name}: too few configurations with contacts");
    total
}

fn set_quat(q: &mut DVector<f64>, at: usize, r: [f64; 4]) {
    q.as_mut_slice()[at..at + 4].copy_from_slice(&r);
}

/// Arm: shoulder (revolute z), elbow (revolute y), ball wrist, box on the hand, over the
/// world plane.
fn arm_box_plane() -> Model {
    let mut b = ModelBuilder::new("arm_box_plane");
    b.add_link(Body::massless(WORLD).with_collision(CollisionShape::new(Geometry::Plane, SE3::identity())));
    b.add_body(
        WORLD,
        Joint::revolute("shoulder", Vec3::z()).with_placement(SE3::from_translation(Vec3::new(0.0, 0.0, 0.3))),
        rod("upper", 1.0, 0.5, 0.03, Vec3::x()),
    );
    b.add_body(
        "upper",
        Joint::revolute("elbow", Vec3::y()).with_placement(SE3::from_translation(Vec3::new(0.5, 0.0, 0.0))),
        rod("fore", 1.0, 0.4, 0.03, Vec3::x()),
    );
    b.add_body(
        "fore",
        Joint::spherical("wrist").with_placement(SE3::from_translation(Vec3::new(0.4, 0.0, 0.0))),
        Body::new("hand", Inertia::solid_box(0.5, Vec3::new(0.16, 0.12, 0.1))).with_collision(CollisionShape::new(
            Geometry::Box { half_extents: Vec3::new(0.08, 0.06, 0.05) },
            SE3::from_xyz_rpy(&Vec3::new(0.05, 0.0, 0.0), &Vec3::new(0.1, 0.2, 0.3)),
        )),
    );
    b.build().unwrap()
}

#[test]
fn arm_with_a_box_over_a_plane() {
    let m = arm_box_plane();
    let (sh, el, wr) =
        (m.joint_q_index("shoulder").unwrap(), m.joint_q_index("elbow").unwrap(), m.joint_q_index("wrist").unwrap());
    run("arm box plane", &m, 0.1, 40, 1, &|rng| {
        let mut q = m.neutral();
        q[sh] = rng.range(-3.0, 3.0);
        q[el] = rng.range(0.35, 0.6);
        set_quat(&mut q, wr, small_rotation(rng, 1.5));
        q
    });
}

/// Free joints: perturbs each body of `bodies_on_plane` by a random tilt and shift.
fn tilted(m: &Model, rng: &mut SplitMix64, tilt: f64) -> DVector<f64> {
    let v = DVector::from_fn(m.nv(), |i, _| if i % 6 < 3 { rng.range(-tilt, tilt) } else { rng.range(-0.03, 0.03) });
    m.integrate(&m.neutral(), &v, 1.0).unwrap()
}

#[test]
fn free_bodies_on_a_plane() {
    for (shape, seed) in [(RestingShape::Box, 2), (RestingShape::Sphere, 3), (RestingShape::Capsule, 4)] {
        let m = bodies_on_plane(2, shape);
        run(&format!("{shape:?} on plane"), &m, 0.05, 15, seed, &|rng| tilted(&m, rng, 0.4));
    }
}

/// A prismatic slide (z) carrying three ball joints, a box on the last link, above a
/// static world sphere.
fn ball_chain_on_sphere() -> Model {
    let mut b = ModelBuilder::new("ball_chain_sphere");
    b.add_link(Body::massless(WORLD).with_collision(CollisionShape::new(
        Geometry::Sphere { radius: 0.5 },
        SE3::from_translation(Vec3::new(0.0, 0.0, -0.5)),
    )));
    b.add_body(
        WORLD,
        Joint::prismatic("slide", Vec3::z()).with_placement(SE3::from_translation(Vec3::new(0.0, 0.0, 1.0))),
        Body::new("carriage", Inertia::solid_box(1.0, Vec3::new(0.1, 0.1, 0.1))),
    );
    let mut parent = "carriage".to_string();
    for k in 0..3 {
        let name = format!("link{k}");
        let placement = if k == 0 { SE3::identity() } else { SE3::from_translation(Vec3::new(0.0, 0.0, -0.3)) };
        let mut body = rod(&name, 0.5, 0.3, 0.02, -Vec3::z());
        if k == 2 {
            body = body.with_collision(CollisionShape::new(
                Geometry::Box { half_extents: Vec3::new(0.07, 0.05, 0.04) },
                SE3::from_xyz_rpy(&Vec3::new(0.0, 0.0, -0.3), &Vec3::new(0.3, -0.2, 0.1)),
            ));
        }
        b.add_body(&parent, Joint::spherical(format!("ball{k}")).with_placement(placement), body);
        parent = name;
    }
    b.build().unwrap()
}

#[test]
fn ball_joint_chain_touching_a_sphere() {
    let m = ball_chain_on_sphere();
    let slide = m.joint_q_index("slide").unwrap();
    let balls: Vec<usize> = (0..3).map(|k| m.joint_q_index(&format!("ball{k}")).unwrap()).collect();
    run("ball chain sphere", &m, 0.15, 40, 5, &|rng| {
        let mut q = m.neutral();
        // the box hangs 0.9 m below the slide; the sphere's top is at z = 0
        q[slide] = rng.range(-0.1, 0.0);
        for &at in &balls {
            set_quat(&mut q, at, small_rotation(rng, 0.35));
        }
        q
    });
}

/// Two free bodies (a box and a capsule) near each other: both sides of every contact move.
fn two_free_bodies() -> Model {
    let mut b = ModelBuilder::new("two_free");
    b.add_body(
        WORLD,
        Joint::free("fa"),
        Body::new("a", Inertia::solid_box(1.0, Vec3::new(0.3, 0.2, 0.16))).with_collision(CollisionShape::new(
            Geometry::Box { half_extents: Vec3::new(0.15, 0.1, 0.08) },
            SE3::identity(),
        )),
    );
    b.add_body(
        WORLD,
        Joint::free("fb"),
        Body::new("b", Inertia::solid_cylinder(1.0, 0.06, 0.3)).with_collision(CollisionShape::new(
            Geometry::Capsule { radius: 0.06, length: 0.3 },
            SE3::from_xyz_rpy(&Vec3::new(0.02, 0.0, 0.0), &Vec3::new(0.0, 0.4, 0.0)),
        )),
    );
    b.build().unwrap()
}

#[test]
fn two_free_bodies_touching() {
    let m = two_free_bodies();
    let (fa, fb) = (m.joint_q_index("fa").unwrap(), m.joint_q_index("fb").unwrap());
    run("two free bodies", &m, 0.08, 40, 6, &|rng| {
        let mut q = m.neutral();
        let ca = Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(0.0, 1.0));
        q.as_mut_slice()[fa..fa + 3].copy_from_slice(ca.as_slice());
        set_quat(&mut q, fa + 3, small_rotation(rng, 3.0));
        let cb = ca + random_unit(rng) * rng.range(0.15, 0.3);
        q.as_mut_slice()[fb..fb + 3].copy_from_slice(cb.as_slice());
        set_quat(&mut q, fb + 3, small_rotation(rng, 3.0));
        q
    });
}

/// A floating torso with two branches whose tips touch: universal joint then a screw
/// joint carrying a box on one side, a planar joint carrying a capsule on the other.
fn self_touching_tree() -> Model {
    let mut b = ModelBuilder::new("self_touching_tree");
    b.add_body(WORLD, Joint::free("root"), Body::new("torso", Inertia::solid_box(3.0, Vec3::new(0.2, 0.5, 0.2))));
    b.add_body(
        "torso",
        Joint::universal("hip", Vec3::x(), Vec3::z()).with_placement(SE3::from_translation(Vec3::new(0.0, 0.25, 0.0))),
        rod("thigh", 1.0, 0.1, 0.02, -Vec3::y()),
    );
    b.add_body(
        "thigh",
        Joint::screw("twist", Vec3::y(), 0.05).with_placement(SE3::from_translation(Vec3::new(0.0, -0.1, 0.0))),
        Body::new("foot", Inertia::solid_box(0.5, Vec3::new(0.1, 0.1, 0.1))).with_collision(CollisionShape::new(
            Geometry::Box { half_extents: Vec3::new(0.05, 0.05, 0.05) },
            SE3::from_xyz_rpy(&Vec3::new(0.0, -0.05, 0.0), &Vec3::new(0.2, 0.1, -0.3)),
        )),
    );
    b.add_body(
        "torso",
        Joint::planar("slider", Vec3::z()).with_placement(SE3::from_translation(Vec3::new(0.0, -0.25, 0.0))),
        Body::new("paddle", Inertia::solid_cylinder(0.5, 0.04, 0.2)).with_collision(CollisionShape::new(
            Geometry::Capsule { radius: 0.04, length: 0.2 },
            SE3::from_xyz_rpy(&Vec3::new(0.0, 0.21, 0.0), &Vec3::new(0.3, 0.0, 0.2)),
        )),
    );
    b.build().unwrap()
}

#[test]
fn tree_branches_touching_each_other() {
    let m = self_touching_tree();
    let (root, hip, twist, slider) = (
        m.joint_q_index("root").unwrap(),
        m.joint_q_index("hip").unwrap(),
        m.joint_q_index("twist").unwrap(),
        m.joint_q_index("slider").unwrap(),
    );
    let stats = run("tree self-contact", &m, 0.1, 40, 7, &|rng| {
        let mut q = m.neutral();
        for i in 0..3 {
            q[root + i] = rng.range(-1.0, 1.0);
        }
        set_quat(&mut q, root + 3, small_rotation(rng, 3.0));
        q[hip] = rng.range(-0.4, 0.4);
        q[hip + 1] = rng.range(-0.4, 0.4);
        q[twist] = rng.range(-1.0, 1.0);
        q[slider] = rng.range(-0.05, 0.05);
        q[slider + 1] = rng.range(-0.05, 0.05);
        q[slider + 2] = rng.range(-0.5, 0.5);
        q
    });
    assert!(stats.contacts >= 40);
}

/// The comparison can fail: a derivative missing one term (the kinematic part of
/// ∂(Ju)/∂q, i.e. the subspaces held fixed) or slightly off is caught.
#[test]
fn the_check_detects_wrong_derivatives() {
    let m = arm_box_plane();
    let mut q = m.neutral();
    q[m.joint_q_index("shoulder").unwrap()] = 0.7;
    q[m.joint_q_index("elbow").unwrap()] = 0.45;
    set_quat(&mut q, m.joint_q_index("wrist").unwrap(), [0.9, 0.3, -0.2, 0.1]);
    let q = m.normalize(&q).unwrap();
    let contacts = contacts_at(&m, q.as_slice(), &CollisionOptions { margin: 0.1 }).unwrap();
    assert!(!contacts.is_empty());
    let mut data = Data::new(&m);
    forward_kinematics(&m, &mut data, q.as_slice()).unwrap();
    let rows = ContactRows::new(&m, &data, &contacts).unwrap();
    let der = ContactRowDerivatives::new(&m, &data, &contacts, &rows).unwrap();
    let u = DVector::from_element(m.nv(), 1.0);
    let jv = der.jv_q(&m, &data, &rows, u.as_slice()).unwrap();
    let mut fd = DMatrix::zeros(rows.nrows(), m.nv());
    let mut geometric_only = DMatrix::zeros(rows.nrows(), m.nv());
    for k in 0..m.nv() {
        let f = |e: f64| rows_at(&m, &q, k, e, &contacts).map(|(r, _)| &r.jacobian() * &u);
        fd.set_column(k, &ridders(&f, H).unwrap().derivative);
        // subspaces held at q, only the contact geometry moved
        let f = |e: f64| {
            let (_, cs) = rows_at(&m, &q, k, e, &contacts)?;
            Ok(&ContactRows::new(&m, &data, &cs)?.jacobian() * &u)
        };
        geometric_only.set_column(k, &ridders(&f, H).unwrap().derivative);
    }
    assert!(rel_err(&fd, &jv) <= TOL);
    assert!(rel_err(&fd, &geometric_only) > 1e-3, "the kinematic term matters here");
    let mut off = jv.clone();
    off[(0, 0)] += 1e-5;
    assert!(rel_err(&fd, &off) > TOL);
}

#[test]
fn contact_frames_are_orthonormal_with_exact_tangent_derivatives() {
    let mut rng = SplitMix64::new(8);
    let mut worst: f64 = 0.0;
    let mut checked = 0;
    for trial in 0..400 {
        // random normals, plus normals close to the axes and to the seed switch's two sides
        let n = match trial % 4 {
            0 => Vec3::x() * if rng.uniform() < 0.5 { 1.0 } else { -1.0 },
            1 => (Vec3::new(0.85, 0.0, 0.0) + random_unit(&mut rng) * 0.3).normalize(),
            _ => random_unit(&mut rng),
        };
        let f = ContactFrame::new(&n);
        let g = ContactFrame::try_new(&n).unwrap();
        assert_eq!(f, g);
        for (a, b) in [(f.normal, f.t1), (f.normal, f.t2), (f.t1, f.t2)] {
            assert!(a.dot(&b).abs() < 1e-14);
        }
        for v in [f.t1, f.t2] {
            assert!((v.norm() - 1.0).abs() < 1e-14);
        }
        assert!((f.t1.cross(&f.t2) - n).norm() < 1e-14, "right-handed");
        if (n.x.abs() - 0.9).abs() < 0.02 {
            continue;
        }
        // any directions, including ones along n (the formulas are differentiated as written)
        let dn = Matrix3xX::from_fn(4, |_, _| rng.range(-1.0, 1.0));
        let (dt1, dt2) = f.tangent_derivatives(&dn);
        for c in 0..4 {
            let d = dn.column(c).into_owned();
            let at = |e: f64| {
                let fe = ContactFrame::new(&(n + d * e));
                Ok(DVector::from_iterator(6, fe.t1.iter().chain(fe.t2.iter()).copied()))
            };
            let fd = ridders(&at, 1e-3).unwrap().derivative;
            let an = DVector::from_iterator(6, dt1.column(c).iter().chain(dt2.column(c).iter()).copied());
            let e = (&fd - &an).amax() / an.amax().max(1.0);
            assert!(e < 1e-9, "n = {n:?}: tangent derivative error {e:.2e}");
            worst = worst.max(e);
        }
        checked += 1;
    }
    println!("contact frames: {checked} normals, worst tangent-derivative error {worst:.1e}");
    assert!(checked > 300);
    // the seed switch: x̂ below |n_x| = 0.9, ŷ above
    assert!(ContactFrame::new(&Vec3::x()).t1.dot(&Vec3::y()).abs() > 0.99);
    assert!(ContactFrame::new(&Vec3::z()).t1.dot(&Vec3::x()).abs() > 0.99);
    assert!(ContactFrame::try_new(&Vec3::new(1.0, 1.0, 0.0)).is_err());
    assert!(ContactFrame::try_new(&Vec3::new(f64::NAN, 0.0, 1.0)).is_err());
}

/// A frame turned by a constant angle (the slip frame of a sliding contact under the NCP
/// solver, `ContactFrame::turned`): still orthonormal and right-handed, turns compose,
/// and its tangent derivatives are those of the turned seed construction (Ridders, 1e-9).
#[test]
fn turned_contact_frames_have_exact_tangent_derivatives() {
    let mut rng = SplitMix64::new(9);
    for _ in 0..100 {
        let n = random_unit(&mut rng);
        if (n.x.abs() - 0.9).abs() < 0.02 {
            continue;
        }
        let (a1, a2) = (rng.range(-3.0, 3.0), rng.range(-3.0, 3.0));
        let f = ContactFrame::new(&n).turned(a1.cos(), a1.sin()).turned(a2.cos(), a2.sin());
        let once = ContactFrame::new(&n).turned((a1 + a2).cos(), (a1 + a2).sin());
        assert!((f.t1 - once.t1).norm() < 1e-14 && (f.t2 - once.t2).norm() < 1e-14, "turns compose");
        assert!(f.t1.dot(&n).abs() < 1e-14 && f.t2.dot(&n).abs() < 1e-14 && f.t1.dot(&f.t2).abs() < 1e-14);
        assert!((f.t1.cross(&f.t2) - n).norm() < 1e-14, "right-handed");
        let base = ContactFrame::new(&n);
        let dn = Matrix3xX::from_fn(3, |_, _| rng.range(-1.0, 1.0));
        let (dt1, dt2) = f.tangent_derivatives(&dn);
        let (bt1, _) = base.tangent_derivatives(&dn);
        let mut differs = false;
        for c in 0..3 {
            let d = dn.column(c).into_owned();
            let at = |e: f64| {
                let fe = ContactFrame::new(&(n + d * e)).turned((a1 + a2).cos(), (a1 + a2).sin());
                Ok(DVector::from_iterator(6, fe.t1.iter().chain(fe.t2.iter()).copied()))
            };
            let fd = ridders(&at, 1e-3).unwrap().derivative;
            let an = DVector::from_iterator(6, dt1.column(c).iter().chain(dt2.column(c).iter()).copied());
            let e = (&fd - &an).amax() / an.amax().max(1.0);
            assert!(e < 1e-9, "n = {n:?}: turned tangent derivative error {e:.2e}");
            differs |= (dt1.column(c) - bt1.column(c)).amax() > 1e-3;
        }
        // The check can fail: the unturned derivatives are not the turned frame's.
        assert!(differs || (a1 + a2).sin().abs() < 1e-2);
    }
}

#[test]
fn bad_inputs_are_typed_errors() {
    let m = bodies_on_plane(2, RestingShape::Box);
    let q = m.neutral();
    let contacts = contacts_at(&m, q.as_slice(), &CollisionOptions { margin: 0.01 }).unwrap();
    assert_eq!(contacts.len(), 8);
    let mut data = Data::new(&m);
    forward_kinematics(&m, &mut data, q.as_slice()).unwrap();
    let rows = ContactRows::new(&m, &data, &contacts).unwrap();
    let der = ContactRowDerivatives::new(&m, &data, &contacts, &rows).unwrap();
    let (nv, nc) = (m.nv(), contacts.len());

    // Shape index out of range, body out of range, a body that is not the shape's.
    let mut bad = contacts.clone();
    bad[3].id.shape_b = 99;
    assert!(matches!(ContactRows::new(&m, &data, &bad), Err(Error::InvalidInput(_))));
    assert!(matches!(ContactRowDerivatives::new(&m, &data, &bad, &rows), Err(Error::InvalidInput(_))));
    assert!(matches!(recompute_contacts(&m, &data, &bad), Err(Error::InvalidInput(_))));
    let mut bad = contacts.clone();
    bad[0].body_a = Some(17);
    assert!(matches!(ContactRows::new(&m, &data, &bad), Err(Error::InvalidInput(_))));
    let mut bad = contacts.clone();
    bad[0].body_a = Some(1 - contacts[0].body_a.unwrap());
    assert!(matches!(ContactRows::new(&m, &data, &bad), Err(Error::InvalidInput(_))));
    // Non-finite or non-unit geometry.
    let mut bad = contacts.clone();
    bad[1].geometry.point.y = f64::NAN;
    assert!(matches!(ContactRows::new(&m, &data, &bad), Err(Error::NonFinite { .. })));
    let mut bad = contacts.clone();
    bad[1].geometry.normal *= 2.0;
    assert!(matches!(ContactRows::new(&m, &data, &bad), Err(Error::InvalidInput(_))));
    // Geometry that is not the features' geometry at these poses.
    let mut bad = contacts.clone();
    bad[2].geometry.point.x += 0.1;
    let bad_rows = ContactRows::new(&m, &data, &bad).unwrap();
    assert!(matches!(ContactRowDerivatives::new(&m, &data, &bad, &bad_rows), Err(Error::InvalidInput(_))));
    // Rows of another contact set.
    assert!(matches!(ContactRowDerivatives::new(&m, &data, &contacts[1..], &rows), Err(Error::Dimension { .. })));
    // Data of another model, non-finite poses.
    let other = Data::new(&bodies_on_plane(3, RestingShape::Box));
    assert!(matches!(ContactRows::new(&m, &other, &contacts), Err(Error::Dimension { .. })));
    assert!(matches!(der.jv_q(&m, &other, &rows, &vec![0.0; nv]), Err(Error::Dimension { .. })));
    let mut nan = data.clone();
    nan.x_world[1].trans.z = f64::INFINITY;
    assert!(matches!(ContactRows::new(&m, &nan, &contacts), Err(Error::NonFinite { .. })));
    // Wrong lengths and non-finite entries of u, λ, μ, z.
    let (u, l, z) = (vec![0.1; nv], vec![0.2; 3 * nc], vec![0.3; nv]);
    assert!(der.jv_q(&m, &data, &rows, &u).is_ok());
    assert!(matches!(der.jv_q(&m, &data, &rows, &u[1..]), Err(Error::Dimension { .. })));
    assert!(matches!(der.jtf_q(&m, &data, &rows, &l[1..]), Err(Error::Dimension { .. })));
    assert!(matches!(der.jtf_q(&m, &data, &rows, &u), Err(Error::Dimension { .. })));
    assert!(matches!(der.jv_q_vjp(&m, &data, &rows, &u, &l[2..]), Err(Error::Dimension { .. })));
    assert!(matches!(der.jv_q_vjp(&m, &data, &rows, &u[1..], &l), Err(Error::Dimension { .. })));
    assert!(matches!(der.jtf_q_vjp(&m, &data, &rows, &l, &z[1..]), Err(Error::Dimension { .. })));
    assert!(matches!(der.jtf_q_vjp(&m, &data, &rows, &l[1..], &z), Err(Error::Dimension { .. })));
    let mut un = u.clone();
    un[4] = f64::NAN;
    assert!(matches!(der.jv_q(&m, &data, &rows, &un), Err(Error::NonFinite { .. })));
    assert!(matches!(der.jtf_q_vjp(&m, &data, &rows, &l, &un), Err(Error::NonFinite { .. })));
    // Rows of the wrong size for the derivatives.
    let fewer = ContactRows::new(&m, &data, &contacts[..4]).unwrap();
    assert!(matches!(der.jtf_q(&m, &data, &fewer, &l), Err(Error::Dimension { .. })));
    // No contacts: empty rows and zero derivatives.
    let empty = ContactRows::new(&m, &data, &[]).unwrap();
    assert_eq!((empty.nrows(), empty.j.ncols()), (0, nv));
    let d0 = ContactRowDerivatives::new(&m, &data, &[], &empty).unwrap();
    assert_eq!(d0.jtf_q(&m, &data, &empty, &[]).unwrap(), DMatrix::zeros(nv, nv));
    assert_eq!(d0.distance_q().nrows(), 0);
}

/// A rebuild reuses the storage of the previous contacts, clearing only the columns of
/// their chains: rebuilt on contacts of other bodies (a box lifted off the plane, then
/// put back while another is lifted), it gives exactly the derivatives of fresh ones.
#[test]
fn a_rebuild_on_other_bodies_matches_fresh_derivatives() {
    let m = bodies_on_plane(4, RestingShape::Box);
    let nv = m.nv();
    let mut rng = SplitMix64::new(17);
    let mut der = ContactRowDerivatives::default();
    let base = m.neutral();
    // Each configuration lifts one box (or none) well clear of the plane.
    for lifted in [Some(0), None, Some(2), Some(1), Some(3), None] {
        let mut q = base.clone();
        if let Some(b) = lifted {
            q[7 * b + 2] += 0.5;
        }
        let contacts = contacts_at(&m, q.as_slice(), &CollisionOptions { margin: 0.01 }).unwrap();
        assert!(!contacts.is_empty());
        let mut data = Data::new(&m);
        forward_kinematics(&m, &mut data, q.as_slice()).unwrap();
        let rows = ContactRows::new(&m, &data, &contacts).unwrap();
        der.rebuild(&m, &data, &contacts, &rows).unwrap();
        let fresh = ContactRowDerivatives::new(&m, &data, &contacts, &rows).unwrap();
        let u = random_vec(&mut rng, nv);
        let l = random_vec(&mut rng, 3 * contacts.len());
        assert_eq!(
            der.jv_q(&m, &data, &rows, u.as_slice()).unwrap(),
            fresh.jv_q(&m, &data, &rows, u.as_slice()).unwrap()
        );
        assert_eq!(
            der.jtf_q(&m, &data, &rows, l.as_slice()).unwrap(),
            fresh.jtf_q(&m, &data, &rows, l.as_slice()).unwrap()
        );
        assert_eq!(der.distance_q(), fresh.distance_q());
        assert_eq!(der.contacts(), fresh.contacts(), "lifted {lifted:?}");
    }
}
