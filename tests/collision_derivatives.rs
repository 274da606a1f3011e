//! Exact derivatives of narrow-phase contacts: for every contact kind and shape
//! family, the derivatives of point, normal and signed distance with respect to the
//! two bodies' world-frame twists (`recompute::recompute_with_derivatives`) against
//! Ridders' extrapolated finite differences of the recomputed closed form under
//! `X ← exp(εδ) X` (columns 0..6 body A, 6..12 body B), and through the kinematics of an
//! articulated model against Ridders on `q ⊕ εδ`.
//!
//! Error measure: `‖J_fd − J‖∞ / max(1, ‖J‖∞)` over the 7 × 12 block (rows: point,
//! normal, distance), required ≤ 1e-7. A contact is skipped — counted and reported,
//! the count bounded — when `collide` at the poses moved by ±2h (h the initial Ridders
//! step) along any of the twelve directions no longer returns its feature pair: it sits
//! next to a switch of features, where the derivative of the *detected* geometry jumps.
//! The skipped fraction must stay below 20 % per group (it is 0–10 % here: most skips
//! come from the draws that align the shapes' axes on purpose, which sit exactly on
//! such switches).

mod collision_common;
use collision_common::*;

use nalgebra::{DMatrix, DVector};
use std::collections::BTreeMap;
use stiction::collision::narrow_phase::collide;
use stiction::collision::{recompute, CollisionFilter, CollisionModel, Contact, ContactKind, Polytope, ShapeCore};
use stiction::collision::{ShapeInstance, ShapeKind};
use stiction::dynamics::{body_jacobian, forward_kinematics, ReferenceFrame};
use stiction::gradcheck::fd::ridders;
use stiction::math::{se3_exp, Inertia, Motion, SplitMix64, Vec3, Vec6, SE3};
use stiction::model::{samples::rod, Body, CollisionShape, Geometry, Joint, Material, ModelBuilder, WORLD};
use stiction::{Data, Error};

/// Initial Ridders step (rad and m).
const H: f64 = 1e-3;
/// Required relative agreement.
const TOL: f64 = 1e-7;

fn geometry_vector(g: &stiction::collision::ContactGeometry) -> DVector<f64> {
    DVector::from_iterator(7, g.point.iter().chain(g.normal.iter()).copied().chain([g.distance]))
}

/// Poses with body `k / 6` moved by `exp(ε e_{k mod 6}) X`.
fn moved(x: &[SE3; 2], k: usize, eps: f64) -> [SE3; 2] {
    let mut tw = Vec6::zeros();
    tw[k % 6] = eps;
    let mut y = *x;
    y[k / 6] = se3_exp(&Motion::from_vector(&tw)) * y[k / 6];
    y
}

fn detect(cm: &CollisionModel, x: &[SE3; 2], margin: f64) -> Vec<Contact> {
    let mut out = vec![];
    collide(0, &cm.shapes[0], &x[0], 1, &cm.shapes[1], &x[1], margin, &mut out);
    out
}

#[derive(Default)]
struct Tally {
    configs: usize,
    contacts: usize,
    skipped: usize,
    worst: f64,
    kinds: BTreeMap<&'static str, usize>,
    skipped_kinds: BTreeMap<&'static str, usize>,
}

/// Checks every contact of `a` (body 0) and `b` (body 1) at poses `x` that `keep`
/// selects; returns whether at least one was checked.
fn check(
    a: &ShapeInstance,
    b: &ShapeInstance,
    x: [SE3; 2],
    margin: f64,
    keep: &dyn Fn(&Contact) -> bool,
    tally: &mut Tally,
) -> bool {
    let cm = model(a, b);
    let mut any = false;
    for c in detect(&cm, &x, margin).iter().filter(|c| keep(c)) {
        let stable = (0..12).all(|k| {
            [-2.0 * H, 2.0 * H].iter().all(|&e| detect(&cm, &moved(&x, k, e), margin).iter().any(|d| d.id == c.id))
        });
        if !stable {
            tally.skipped += 1;
            *tally.skipped_kinds.entry(c.kind.name()).or_default() += 1;
            continue;
        }
        let (g, d) = recompute::recompute_with_derivatives(&cm, &x, c).expect("non-degenerate contact");
        // the dual-number evaluation rounds differently from the plain one (x·(1/y) for x/y)
        assert!((geometry_vector(&g) - geometry_vector(&c.geometry)).amax() < 1e-13, "{g:?} vs {:?}", c.geometry);
        let mut jac = DMatrix::zeros(7, 12);
        for k in 0..12 {
            for i in 0..3 {
                jac[(i, k)] = d.point[(i, k)];
                jac[(3 + i, k)] = d.normal[(i, k)];
            }
            jac[(6, k)] = d.distance[(0, k)];
        }
        let mut fd = DMatrix::zeros(7, 12);
        for k in 0..12 {
            let f = |e: f64| {
                recompute::recompute(&cm, &moved(&x, k, e), c)
                    .map(|g| geometry_vector(&g))
                    .ok_or_else(|| Error::InvalidInput("degenerate closed form".into()))
            };
            fd.set_column(k, &ridders(&f, H).expect("finite differences").derivative);
        }
        let rel = (&fd - &jac).amax() / jac.amax().max(1.0);
        assert!(rel <= TOL, "{:?} {:?}: relative error {rel:.2e}\nanalytic {jac:.6}\nfd {fd:.6}", c.kind, c.id);
        tally.worst = tally.worst.max(rel);
        tally.contacts += 1;
        *tally.kinds.entry(c.kind.name()).or_default() += 1;
        any = true;
    }
    if any {
        tally.configs += 1;
    }
    any
}

fn report(name: &str, t: &Tally) {
    println!(
        "{name:>16}: {} configurations, {} contacts checked, {} skipped near a switch ({:.1} %), worst relative \
         error {:.1e}; kinds {:?}, skipped {:?}",
        t.configs,
        t.contacts,
        t.skipped,
        100.0 * t.skipped as f64 / (t.skipped + t.contacts).max(1) as f64,
        t.worst,
        t.kinds,
        t.skipped_kinds
    );
    assert!(t.configs >= 200, "{name}: only {} configurations", t.configs);
    // 30 % of the box draws share axes on purpose (parallel faces and edges: exactly at
    // a switch between single contacts and manifolds), which dominates the skips
    assert!(t.skipped * 5 <= t.contacts + t.skipped, "{name}: too many switches ({} of {})", t.skipped, t.contacts);
}

fn random_pose(rng: &mut SplitMix64, center: Vec3) -> SE3 {
    SE3::new(rand_rot(rng), center)
}

fn random_point(rng: &mut SplitMix64) -> Vec3 {
    Vec3::new(rng.range(-1., 1.), rng.range(-1., 1.), rng.range(-1., 1.))
}

/// Random poses with the shapes near each other; with `aligned`, 30 % share axes (face
/// manifolds, parallel edges).
fn near(rng: &mut SplitMix64, a: &ShapeInstance, b: &ShapeInstance, aligned: bool) -> [SE3; 2] {
    let size = |s: &ShapeInstance| match &s.core {
        ShapeCore::Convex(p) => p.bounding_radius + s.radius,
        _ => 0.0,
    };
    let xa = {
        let c = random_point(rng);
        random_pose(rng, c)
    };
    let reach = (size(a) + size(b)) * rng.range(0.3, 1.0);
    let rb = if aligned && rng.uniform() < 0.3 { xa.rot * quarter_turns(rng) } else { rand_rot(rng) };
    [xa, SE3::new(rb, xa.trans + rand_unit(rng) * reach)]
}

/// A configuration: shape A, shape B, their poses and the margin.
type Draw = (ShapeInstance, ShapeInstance, [SE3; 2], f64);

/// Draws configurations until `tally` holds 200 checked ones.
fn family(name: &str, seed: u64, draw: &dyn Fn(&mut SplitMix64) -> Draw) {
    let mut rng = SplitMix64::new(seed);
    let mut t = Tally::default();
    for _ in 0..20_000 {
        if t.configs >= 200 {
            break;
        }
        let (a, b, x, margin) = draw(&mut rng);
        check(&a, &b, x, margin, &|_| true, &mut t);
    }
    report(name, &t);
}

#[test]
fn every_contact_kind() {
    let mut rng = SplitMix64::new(99);
    let kinds = [
        ContactKind::VertexFace,
        ContactKind::FaceVertex,
        ContactKind::EdgeEdge,
        ContactKind::VertexVertex,
        ContactKind::VertexEdge,
        ContactKind::EdgeVertex,
    ];
    let mut tallies: Vec<Tally> = kinds.iter().map(|_| Tally::default()).collect();
    for _ in 0..50_000 {
        if tallies.iter().all(|t| t.configs >= 200) {
            break;
        }
        let (a, b) = (random_shape(&mut rng), random_shape(&mut rng));
        let x = near(&mut rng, &a, &b, true);
        let margin = if rng.uniform() < 0.5 { 0.0 } else { 0.1 };
        for (kind, t) in kinds.iter().zip(tallies.iter_mut()) {
            if t.configs < 200 {
                check(&a, &b, x, margin, &|c| c.kind == *kind, t);
            }
        }
    }
    for (kind, t) in kinds.iter().zip(&tallies) {
        report(kind.name(), t);
    }
}

#[test]
fn shape_families() {
    family("sphere-plane", 1, &|rng| {
        let r = rng.range(0.1, 0.5);
        let xp = random_pose(rng, Vec3::zeros());
        let c = xp.act_point(&Vec3::new(rng.range(-1., 1.), rng.range(-1., 1.), r + rng.range(-0.1, 0.05)));
        (sphere(r), plane(), [random_pose(rng, c), xp], 0.0)
    });
    family("sphere-sphere", 2, &|rng| {
        let (a, b) = (sphere(rng.range(0.1, 0.5)), sphere(rng.range(0.1, 0.5)));
        let x = near(rng, &a, &b, false);
        (a, b, x, 0.0)
    });
    family("capsule-capsule", 3, &|rng| {
        let (a, b) =
            (capsule(rng.range(0.1, 0.5), rng.range(0.05, 0.3)), capsule(rng.range(0.1, 0.5), rng.range(0.05, 0.3)));
        let x = near(rng, &a, &b, false);
        (a, b, x, 0.05)
    });
    family("capsule-box", 4, &|rng| {
        let a = capsule(rng.range(0.1, 0.5), rng.range(0.05, 0.3));
        let b = cuboid(Vec3::new(rng.range(0.1, 0.6), rng.range(0.1, 0.6), rng.range(0.1, 0.6)));
        let x = near(rng, &a, &b, true);
        (a, b, x, 0.05)
    });
    family("box-box", 5, &|rng| {
        let a = cuboid(Vec3::new(rng.range(0.1, 0.6), rng.range(0.1, 0.6), rng.range(0.1, 0.6)));
        let b = cuboid(Vec3::new(rng.range(0.1, 0.6), rng.range(0.1, 0.6), rng.range(0.1, 0.6)));
        let x = near(rng, &a, &b, true);
        (a, b, x, 0.05)
    });
    family("box-plane", 6, &|rng| {
        let b = cuboid(Vec3::new(rng.range(0.1, 0.6), rng.range(0.1, 0.6), rng.range(0.1, 0.6)));
        let xp = random_pose(rng, Vec3::zeros());
        // resting nearly flat on the plane or tumbled onto it
        let rot = if rng.uniform() < 0.5 {
            xp.rot * SE3::from_axis_angle(&rand_unit(rng), rng.range(0.0, 0.05)).rot
        } else {
            rand_rot(rng)
        };
        let ShapeCore::Convex(p) = &b.core else { unreachable!() };
        let nz = xp.rot * Vec3::z();
        let low = p.vertices.iter().map(|v| nz.dot(&(rot * v))).fold(f64::INFINITY, f64::min);
        let c = xp.trans
            + xp.rot * Vec3::new(rng.range(-1., 1.), rng.range(-1., 1.), 0.0)
            + nz * (-low + rng.range(-0.05, 0.02));
        (b, plane(), [SE3::new(rot, c), xp], 0.0)
    });
    family("convex-convex", 7, &|rng| {
        let pick = |rng: &mut SplitMix64| match (rng.uniform() * 3.0) as usize {
            0 => convex(affine(rng, tetrahedron()), 0.0),
            1 => convex(affine(rng, octahedron()), 0.0),
            _ => convex(affine(rng, prism()), 0.0),
        };
        let (a, b) = (pick(rng), pick(rng));
        let x = near(rng, &a, &b, true);
        (a, b, x, 0.05)
    });
}

fn bumpy() -> (stiction::collision::TriMeshCore, Vec<[Vec3; 3]>) {
    let height = |x: f64, y: f64| 0.3 * (1.3 * x).sin() * (0.9 * y).cos() + 0.1 * (3.1 * x + 2.0 * y).sin();
    let mesh = grid_terrain(8, 0.5, height);
    let tris = mesh.triangles.iter().map(|t| t.map(|i| mesh.vertices[i as usize])).collect();
    (mesh, tris)
}

#[test]
fn terrain_families() {
    let (mesh, tris) = bumpy();
    let ground = terrain(mesh);
    family("terrain-sphere", 8, &|rng| {
        let r = rng.range(0.05, 0.4);
        let xm = {
            let c = random_point(rng);
            random_pose(rng, c)
        };
        let (x, y) = (rng.range(-1.5, 1.5), rng.range(-1.5, 1.5));
        let local = Vec3::new(x, y, mesh_height(&tris, x, y) + r + rng.range(-0.1, 0.05));
        (ground.clone(), sphere(r), [xm, random_pose(rng, xm.act_point(&local))], 0.0)
    });
    family("terrain-box", 9, &|rng| {
        let b = cuboid(Vec3::new(rng.range(0.05, 0.4), rng.range(0.05, 0.4), rng.range(0.05, 0.4)));
        let xm = {
            let c = random_point(rng);
            random_pose(rng, c)
        };
        let rot = rand_rot(rng);
        let ShapeCore::Convex(p) = &b.core else { unreachable!() };
        let low = p.vertices.iter().map(|v| (rot * v).z).fold(f64::INFINITY, f64::min);
        let (x, y) = (rng.range(-1.5, 1.5), rng.range(-1.5, 1.5));
        let local = Vec3::new(x, y, mesh_height(&tris, x, y) - low + rng.range(-0.1, 0.02));
        // box first: the mesh is shape B here
        (b, ground.clone(), [SE3::new(xm.rot * rot, xm.act_point(&local)), xm], 0.02)
    });
}

/// Contact geometry through the kinematics: a two-link arm carrying a box on its tip
/// against the ground plane and a free-floating ball. `∂(point, normal, distance)/∂q =
/// D_A J_A + D_B J_B` (D the twist derivatives, J the bodies' world-frame Jacobians)
/// against Ridders on `q ⊕ εδ`.
#[test]
fn through_the_kinematics() {
    let box_half = Vec3::new(0.08, 0.06, 0.05);
    let mut b = ModelBuilder::new("arm_box_ball");
    b.add_link(Body::massless(WORLD).with_collision(CollisionShape::new(Geometry::Plane, SE3::identity())));
    b.add_body(
        WORLD,
        Joint::revolute("shoulder", Vec3::z()).with_placement(SE3::from_translation(Vec3::new(0.0, 0.0, 0.3))),
        rod("upper", 1.0, 0.5, 0.03, Vec3::x()),
    );
    b.add_body(
        "upper",
        Joint::revolute("elbow", Vec3::y()).with_placement(SE3::from_translation(Vec3::new(0.5, 0.0, 0.0))),
        rod("fore", 1.0, 0.4, 0.03, Vec3::x()).with_collision(CollisionShape::new(
            Geometry::Box { half_extents: box_half },
            SE3::from_xyz_rpy(&Vec3::new(0.4, 0.0, 0.0), &Vec3::new(0.1, 0.2, 0.3)),
        )),
    );
    b.add_body(
        WORLD,
        Joint::free("ball_joint"),
        Body::new("ball", Inertia::solid_sphere(0.5, 0.1))
            .with_collision(CollisionShape::new(Geometry::Sphere { radius: 0.1 }, SE3::identity())),
    );
    let model = b.build().unwrap();
    // the collision shapes compiled by hand (the collision model compiler is built elsewhere)
    let instance = |body: Option<usize>, s: &CollisionShape| {
        let (core, radius, kind) = match &s.geometry {
            Geometry::Plane => (ShapeCore::HalfSpace, 0.0, ShapeKind::Plane),
            Geometry::Box { half_extents } => {
                (ShapeCore::Convex(std::sync::Arc::new(Polytope::cuboid(half_extents))), 0.0, ShapeKind::Box)
            }
            Geometry::Sphere { radius } => {
                (ShapeCore::Convex(std::sync::Arc::new(Polytope::point())), *radius, ShapeKind::Sphere)
            }
            _ => unreachable!(),
        };
        ShapeInstance {
            body,
            index_on_body: 0,
            local: s.origin,
            core,
            radius,
            kind,
            material: Material::default(),
            group: 1,
            mask: u32::MAX,
        }
    };
    let (fore, ball) = (model.body_index("fore").unwrap(), model.body_index("ball").unwrap());
    let shapes = vec![
        instance(Some(fore), &model.bodies()[fore].collisions[0]),
        instance(Some(ball), &model.bodies()[ball].collisions[0]),
        instance(None, &model.world_shapes()[0]),
    ];
    let nb = model.nbodies();
    let cm = CollisionModel {
        shapes,
        filter: CollisionFilter {
            rigid_group: (0..nb).map(Some).collect(),
            parent_group: vec![None; nb],
            articulation: vec![0; nb],
            self_collision: vec![false; nb],
            skip_parent_child: true,
            excluded_pairs: vec![],
        },
    };
    let mut data = Data::new(&model);
    let contacts_at = |data: &mut Data, q: &DVector<f64>| {
        forward_kinematics(&model, data, q.as_slice()).unwrap();
        let mut out = vec![];
        for (i, j) in [(0usize, 2usize), (0, 1), (1, 2)] {
            let (a, b) = (&cm.shapes[i], &cm.shapes[j]);
            collide(
                i as u32,
                a,
                &a.world_pose(&data.x_world),
                j as u32,
                b,
                &b.world_pose(&data.x_world),
                0.02,
                &mut out,
            );
        }
        out
    };
    let mut rng = SplitMix64::new(31);
    let (mut configs, mut checked, mut worst) = (0, 0, 0.0f64);
    let mut kinds = BTreeMap::<&str, usize>::new();
    for _ in 0..2000 {
        if configs >= 20 {
            break;
        }
        let mut q = model.neutral();
        q[model.q_index(model.joint_index("shoulder").unwrap())] = rng.range(-3.0, 3.0);
        q[model.q_index(model.joint_index("elbow").unwrap())] = rng.range(0.45, 0.7);
        forward_kinematics(&model, &mut data, q.as_slice()).unwrap();
        let box_center = cm.shapes[0].world_pose(&data.x_world).trans;
        let c = box_center + rand_unit(&mut rng) * rng.range(0.15, 0.2);
        let qb = model.q_index(model.joint_index("ball_joint").unwrap());
        q[qb] = c.x;
        q[qb + 1] = c.y;
        q[qb + 2] = c.z.max(0.09);
        let u = rng.unit_quaternion();
        q.as_mut_slice()[qb + 3..qb + 7].copy_from_slice(&u);
        let found = contacts_at(&mut data, &q);
        let pairs = |s: u32, t: u32| found.iter().filter(|c| c.id.shape_a == s && c.id.shape_b == t).count();
        if pairs(0, 2) == 0 || pairs(0, 1) == 0 {
            continue;
        }
        configs += 1;
        forward_kinematics(&model, &mut data, q.as_slice()).unwrap();
        let nv = model.nv();
        for c in &found {
            // skip contacts whose features change under the perturbations
            let stable = (0..nv).all(|j| {
                [-2.0 * H, 2.0 * H].iter().all(|&e| {
                    let qe = model.integrate(&q, &DVector::from_fn(nv, |i, _| f64::from(i == j)), e).unwrap();
                    contacts_at(&mut data.clone(), &qe).iter().any(|d| d.id == c.id)
                })
            });
            if !stable {
                continue;
            }
            forward_kinematics(&model, &mut data, q.as_slice()).unwrap();
            let (_, d) = recompute::recompute_with_derivatives(&cm, &data.x_world, c).unwrap();
            let mut jq = DMatrix::zeros(7, nv);
            for (cols, body) in [(0usize, c.body_a), (6, c.body_b)] {
                let Some(body) = body else { continue };
                let jb = body_jacobian(&model, &data, body, ReferenceFrame::World).unwrap();
                for i in 0..3 {
                    for j in 0..nv {
                        for k in 0..6 {
                            jq[(i, j)] += d.point[(i, cols + k)] * jb[(k, j)];
                            jq[(3 + i, j)] += d.normal[(i, cols + k)] * jb[(k, j)];
                        }
                    }
                }
                for j in 0..nv {
                    for k in 0..6 {
                        jq[(6, j)] += d.distance[(0, cols + k)] * jb[(k, j)];
                    }
                }
            }
            let mut fd = DMatrix::zeros(7, nv);
            for j in 0..nv {
                let f = |e: f64| {
                    let qe = model.integrate(&q, &DVector::from_fn(nv, |i, _| f64::from(i == j)), e)?;
                    let mut dd = data.clone();
                    forward_kinematics(&model, &mut dd, qe.as_slice())?;
                    recompute::recompute(&cm, &dd.x_world, c)
                        .map(|g| geometry_vector(&g))
                        .ok_or_else(|| Error::InvalidInput("degenerate closed form".into()))
                };
                fd.set_column(j, &ridders(&f, H).unwrap().derivative);
            }
            let rel = (&fd - &jq).amax() / jq.amax().max(1.0);
            assert!(rel <= TOL, "{:?}: relative error {rel:.2e}\n{jq:.6}\n{fd:.6}", c.id);
            worst = worst.max(rel);
            checked += 1;
            *kinds.entry(c.kind.name()).or_default() += 1;
        }
    }
    println!(
        "through the kinematics: {configs} configurations, {checked} contacts, worst {worst:.1e}, kinds {kinds:?}"
    );
    assert!(configs >= 20 && checked >= 40);
}
