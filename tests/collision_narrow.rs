//! Narrow phase (`collision::narrow_phase::collide`): closed forms checked against
//! hand-derived values, and a randomized comparison with an independent brute-force
//! reference (exact core distance by enumerating vertex–face, edge–edge, vertex–edge and
//! vertex–vertex pairs; overlap by a separating-axis test over every face normal and
//! every edge-pair cross product).

use std::collections::BTreeMap;
use stiction::collision::narrow_phase::collide;
use stiction::collision::{recompute, Contact, ContactKind, ShapeCore, ShapeInstance};
use stiction::math::{Mat3, SplitMix64, Vec3, SE3};

mod collision_common;
use collision_common::*;

/// Contacts of `a` (shape 0, body 0) and `b` (shape 1, body 1); checks that each
/// contact is its own closed form (`recompute` reproduces it exactly), finite, with a
/// unit normal, no duplicate identity, and that a second call gives the same list.
fn contacts(a: &ShapeInstance, xa: &SE3, b: &ShapeInstance, xb: &SE3, margin: f64) -> Vec<Contact> {
    let cm = model(a, b);
    let (a, b) = (&cm.shapes[0], &cm.shapes[1]);
    let mut out = vec![];
    collide(0, a, xa, 1, b, xb, margin, &mut out);
    let mut again = vec![];
    collide(0, a, xa, 1, b, xb, margin, &mut again);
    assert_eq!(out, again, "not deterministic");
    let x = [*xa, *xb];
    for (k, c) in out.iter().enumerate() {
        let g = recompute::recompute(&cm, &x, c).expect("closed form defined");
        assert_eq!(g, c.geometry, "recompute differs for {c:?}");
        assert!(c.geometry.distance < margin);
        assert!((c.geometry.normal.norm() - 1.0).abs() < 1e-12);
        assert_eq!((c.id.shape_a, c.id.shape_b, c.body_a, c.body_b), (0, 1, Some(0), Some(1)));
        assert_eq!(Some(c.kind), ContactKind::from_features(c.id.feature_a, c.id.feature_b));
        assert!(out[..k].iter().all(|d| d.id != c.id), "duplicate {c:?}");
    }
    out
}

fn translated(rot: Mat3, t: Vec3) -> SE3 {
    SE3::new(rot, t)
}

fn close(a: &Vec3, b: &Vec3, tol: f64) -> bool {
    (a - b).norm() <= tol
}

// ---------------------------------------------------------------- closed forms

#[test]
fn sphere_sphere_and_sphere_plane_exact() {
    let mut rng = SplitMix64::new(11);
    for _ in 0..1000 {
        let (ra, rb) = (rng.range(0.05, 1.0), rng.range(0.05, 1.0));
        let ca = Vec3::new(rng.range(-2., 2.), rng.range(-2., 2.), rng.range(-2., 2.));
        let cb = ca + rand_unit(&mut rng) * rng.range(0.1, 3.0);
        let xa = translated(rand_rot(&mut rng), ca);
        let xb = translated(rand_rot(&mut rng), cb);
        let c = contacts(&sphere(ra), &xa, &sphere(rb), &xb, 10.0);
        assert_eq!(c.len(), 1);
        let n = (cb - ca).normalize();
        let d = (cb - ca).norm() - ra - rb;
        assert_eq!(c[0].kind, ContactKind::VertexVertex);
        assert!((c[0].geometry.distance - d).abs() < 1e-12);
        assert!(close(&c[0].geometry.normal, &n, 1e-12));
        assert!(close(&c[0].geometry.point, &((ca + n * ra + cb - n * rb) / 2.0), 1e-12));
        // margin decides
        assert_eq!(contacts(&sphere(ra), &xa, &sphere(rb), &xb, 0.0).len(), usize::from(d < 0.0));

        // sphere against a tilted plane, both orders
        let xp = translated(rand_rot(&mut rng), Vec3::new(rng.range(-1., 1.), rng.range(-1., 1.), rng.range(-1., 1.)));
        let np = xp.rot * Vec3::z();
        let d = np.dot(&(ca - xp.trans)) - ra;
        let c = contacts(&sphere(ra), &xa, &plane(), &xp, 10.0);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].kind, ContactKind::VertexFace);
        assert!((c[0].geometry.distance - d).abs() < 1e-12);
        assert!(close(&c[0].geometry.normal, &-np, 1e-12));
        // the contact point lies on the face (the plane)
        assert!(close(&c[0].geometry.point, &(ca - np * (ra + d)), 1e-12));
        assert!(np.dot(&(c[0].geometry.point - xp.trans)).abs() < 1e-12);
        let c = contacts(&plane(), &xp, &sphere(ra), &xa, 10.0);
        assert_eq!(c[0].kind, ContactKind::FaceVertex);
        assert!((c[0].geometry.distance - d).abs() < 1e-12);
        assert!(close(&c[0].geometry.normal, &np, 1e-12));
        assert!(close(&c[0].geometry.point, &(ca - np * (ra + d)), 1e-12));
    }
}

/// Distance between the segments [a0, a1] and [b0, b1]: the smallest of the four
/// endpoint-to-segment distances and, when the common perpendicular of the two lines
/// meets both segments inside, its length.
fn seg_seg(a0: &Vec3, a1: &Vec3, b0: &Vec3, b1: &Vec3) -> f64 {
    let mut d = seg_point(a0, b0, b1).min(seg_point(a1, b0, b1)).min(seg_point(b0, a0, a1)).min(seg_point(b1, a0, a1));
    let (u, v, w) = (a1 - a0, b1 - b0, a0 - b0);
    if u.cross(&v).norm() > 1e-12 * u.norm() * v.norm() {
        // (w + s u − t v)·u = 0, (w + s u − t v)·v = 0
        let m = nalgebra::Matrix2::new(u.dot(&u), -u.dot(&v), u.dot(&v), -v.dot(&v));
        let r = nalgebra::Vector2::new(-u.dot(&w), -v.dot(&w));
        if let Some(st) = m.lu().solve(&r) {
            if st.iter().all(|&x| x > 0.0 && x < 1.0) {
                d = d.min((w + u * st[0] - v * st[1]).norm());
            }
        }
    }
    d
}

fn seg_point(p: &Vec3, a: &Vec3, b: &Vec3) -> f64 {
    let u = b - a;
    let uu = u.dot(&u);
    if uu == 0.0 {
        return (p - a).norm();
    }
    let t = ((p - a).dot(&u) / uu).clamp(0.0, 1.0);
    (a + u * t - p).norm()
}

#[test]
fn capsule_distances_exact() {
    let mut rng = SplitMix64::new(12);
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for _ in 0..1000 {
        let (ha, hb) = (rng.range(0.05, 0.8), rng.range(0.05, 0.8));
        let (ra, rb) = (rng.range(0.05, 0.4), rng.range(0.05, 0.4));
        let xa = translated(rand_rot(&mut rng), Vec3::new(rng.range(-1., 1.), rng.range(-1., 1.), rng.range(-1., 1.)));
        let xb = translated(rand_rot(&mut rng), xa.trans + rand_unit(&mut rng) * rng.range(0.0, 1.5));
        let seg = |x: &SE3, h: f64| (x.act_point(&Vec3::new(0., 0., -h)), x.act_point(&Vec3::new(0., 0., h)));
        let (a0, a1) = seg(&xa, ha);
        let (b0, b1) = seg(&xb, hb);
        let want = seg_seg(&a0, &a1, &b0, &b1) - ra - rb;
        let c = contacts(&capsule(ha, ra), &xa, &capsule(hb, rb), &xb, 10.0);
        assert!(!c.is_empty());
        let got = c.iter().map(|c| c.geometry.distance).fold(f64::INFINITY, f64::min);
        assert!((got - want).abs() < 1e-12, "capsule-capsule {got} vs {want}");
        for k in &c {
            *kinds.entry(k.kind.name()).or_default() += 1;
        }
        // sphere against capsule, both orders
        let p = xb.trans;
        let want = seg_point(&p, &a0, &a1) - ra - rb;
        for c in [
            contacts(&capsule(ha, ra), &xa, &sphere(rb), &xb, 10.0),
            contacts(&sphere(rb), &xb, &capsule(ha, ra), &xa, 10.0),
        ] {
            assert_eq!(c.len(), 1);
            assert!((c[0].geometry.distance - want).abs() < 1e-12);
        }
    }
    println!("capsule-capsule contact kinds: {kinds:?}");
    assert!(kinds.len() >= 3);
}

#[test]
fn capsule_resting_cases() {
    // capsule lying flat on a plane: both segment ends
    let lying =
        translated(SE3::from_axis_angle(&Vec3::x(), std::f64::consts::FRAC_PI_2).rot, Vec3::new(0.2, 0.1, 0.29));
    let c = contacts(&capsule(0.5, 0.3), &lying, &plane(), &SE3::identity(), 0.0);
    assert_eq!(c.len(), 2);
    for k in &c {
        assert!((k.geometry.distance + 0.01).abs() < 1e-14);
        assert!(((k.geometry.point.y - 0.1).abs() - 0.5).abs() < 1e-14);
    }
    // tilted: only the low end
    let tilted = translated(SE3::from_axis_angle(&Vec3::x(), 1.2).rot, Vec3::new(0.0, 0.0, 0.45));
    let c = contacts(&capsule(0.5, 0.3), &tilted, &plane(), &SE3::identity(), 0.0);
    assert_eq!(c.len(), 1);
    let low = 0.45 - 0.5 * 1.2f64.cos() - 0.3;
    assert!((c[0].geometry.distance - low).abs() < 1e-14);
    // a capsule lying on a parallel capsule: two vertex–edge contacts at the ends of the overlap
    let below = translated(lying.rot, Vec3::zeros());
    let above = translated(lying.rot, Vec3::new(0.0, 0.3, 0.59));
    let c = contacts(&capsule(0.5, 0.3), &below, &capsule(0.5, 0.3), &above, 0.0);
    assert_eq!(c.len(), 2, "{c:?}");
    let mut ys: Vec<f64> = c.iter().map(|k| k.geometry.point.y).collect();
    ys.sort_by(f64::total_cmp);
    assert!((ys[0] + 0.2).abs() < 1e-14 && (ys[1] - 0.5).abs() < 1e-14, "{ys:?}");
    for k in &c {
        assert!((k.geometry.distance + 0.01).abs() < 1e-14);
        assert!(close(&k.geometry.normal, &Vec3::z(), 1e-14));
        assert!(matches!(k.kind, ContactKind::VertexEdge | ContactKind::EdgeVertex));
    }
    // a capsule lying on a box top face: its two ends
    let c = contacts(&cuboid(Vec3::new(1.0, 1.0, 0.2)), &SE3::identity(), &capsule(0.5, 0.3), &above, 0.1);
    assert_eq!(c.len(), 2);
    for k in &c {
        assert_eq!(k.kind, ContactKind::FaceVertex);
        assert!((k.geometry.distance - (0.59 - 0.2 - 0.3)).abs() < 1e-14);
    }
}

#[test]
fn box_plane_resting_flat_gives_four_corners() {
    let h = Vec3::new(0.3, 0.2, 0.1);
    let x = translated(SE3::from_axis_angle(&Vec3::z(), 0.3).rot, Vec3::new(0.5, -0.4, 0.098));
    let c = contacts(&cuboid(h), &x, &plane(), &SE3::identity(), 0.0);
    assert_eq!(c.len(), 4);
    let mut corners = vec![];
    for sx in [-1.0, 1.0] {
        for sy in [-1.0, 1.0] {
            let p = x.act_point(&Vec3::new(sx * h.x, sy * h.y, -h.z));
            corners.push(Vec3::new(p.x, p.y, 0.0)); // on the plane, below the corner
        }
    }
    for k in &c {
        assert_eq!(k.kind, ContactKind::VertexFace);
        assert!((k.geometry.distance + 0.002).abs() < 1e-15);
        assert!(close(&k.geometry.normal, &-Vec3::z(), 1e-15));
        assert!(corners.iter().any(|p| close(p, &k.geometry.point, 1e-15)), "{:?}", k.geometry.point);
    }
    // a margin of 0.3 brings in the top corners (0.198 + 0.002 − 0.002 above... 0.198)
    assert_eq!(contacts(&cuboid(h), &x, &plane(), &SE3::identity(), 0.3).len(), 8);
}

#[test]
fn box_box_face_face() {
    let unit = cuboid(Vec3::repeat(0.5));
    let d = 0.01;
    // a unit cube on a unit cube, turned 45° about z: the octagon |x|,|y| ≤ ½, |x|+|y| ≤ √2/2,
    // whose corners are crossings of the two faces' edges → eight edge–edge contacts
    let top = translated(SE3::from_axis_angle(&Vec3::z(), std::f64::consts::FRAC_PI_4).rot, Vec3::new(0., 0., 1.0 - d));
    let c = contacts(&unit, &SE3::identity(), &unit, &top, 0.0);
    assert_eq!(c.len(), 8, "{c:?}");
    let a = std::f64::consts::FRAC_1_SQRT_2 - 0.5;
    let mut octagon = vec![];
    for s in [-1.0, 1.0] {
        for t in [-1.0, 1.0] {
            octagon.push(Vec3::new(0.5 * s, a * t, 0.5 - d / 2.0));
            octagon.push(Vec3::new(a * s, 0.5 * t, 0.5 - d / 2.0));
        }
    }
    for k in &c {
        assert_eq!(k.kind, ContactKind::EdgeEdge);
        assert!((k.geometry.distance + d).abs() < 1e-14);
        assert!(close(&k.geometry.normal, &Vec3::z(), 1e-14));
        assert!(octagon.iter().any(|p| close(p, &k.geometry.point, 1e-14)), "{:?}", k.geometry.point);
    }
    // a smaller cube turned 45° inside the top face: its four bottom corners (vertex–face)
    let small = cuboid(Vec3::repeat(0.3));
    let x = translated(top.rot, Vec3::new(0.05, -0.02, 0.8 - d));
    let c = contacts(&unit, &SE3::identity(), &small, &x, 0.0);
    assert_eq!(c.len(), 4);
    for k in &c {
        assert_eq!(k.kind, ContactKind::FaceVertex);
        assert!((k.geometry.distance + d).abs() < 1e-14);
    }
    // aligned cubes offset by (0.3, 0.2): the corners of the overlap rectangle
    // [−0.2, 0.5] × [−0.3, 0.5]: one vertex–face, one face–vertex, two edge–edge
    let x = SE3::from_translation(Vec3::new(0.3, 0.2, 1.0 - d));
    let c = contacts(&unit, &SE3::identity(), &unit, &x, 0.0);
    assert_eq!(c.len(), 4);
    let mut kinds: Vec<&str> = c.iter().map(|k| k.kind.name()).collect();
    kinds.sort();
    assert_eq!(kinds, ["edge-edge", "edge-edge", "face-vertex", "vertex-face"]);
    for (px, py) in [(-0.2, -0.3), (0.5, 0.5), (-0.2, 0.5), (0.5, -0.3)] {
        // on A's top face (z = 0.5) for face–vertex, on B's bottom face (0.5 − d) for
        // vertex–face, midway for edge–edge
        let found = c.iter().any(|k| {
            let z = match k.kind {
                ContactKind::FaceVertex => 0.5,
                ContactKind::VertexFace => 0.5 - d,
                _ => 0.5 - d / 2.0,
            };
            close(&k.geometry.point, &Vec3::new(px, py, z), 1e-14)
        });
        assert!(found, "missing ({px}, {py}): {c:?}");
    }
    // stacked flush: four corners, no duplicates at coincident corners
    let x = SE3::from_translation(Vec3::new(0.0, 0.0, 1.0 - d));
    assert_eq!(contacts(&unit, &SE3::identity(), &unit, &x, 0.0).len(), 4);
    // hovering 0.02 above, margin 0.05: the same four corners (separated cores)
    let x = translated(SE3::from_axis_angle(&Vec3::z(), 0.2).rot, Vec3::new(0.1, 0.0, 1.02));
    let small = cuboid(Vec3::new(0.3, 0.2, 0.5));
    let c = contacts(&unit, &SE3::identity(), &small, &x, 0.05);
    assert_eq!(c.len(), 4);
    for k in &c {
        assert!((k.geometry.distance - 0.02).abs() < 1e-14);
    }
}

#[test]
fn box_box_edge_edge_and_vertex_face() {
    let unit = cuboid(Vec3::repeat(0.5));
    let r2 = std::f64::consts::SQRT_2;
    let d = 0.01;
    // A turned 45° about x (top edge along x at z = √2/2), B turned 45° about y (bottom
    // edge along y): the edges cross at the origin's vertical, overlapping by d
    let xa = translated(SE3::from_axis_angle(&Vec3::x(), std::f64::consts::FRAC_PI_4).rot, Vec3::zeros());
    let xb = translated(SE3::from_axis_angle(&Vec3::y(), std::f64::consts::FRAC_PI_4).rot, Vec3::new(0.0, 0.0, r2 - d));
    let c = contacts(&unit, &xa, &unit, &xb, 0.0);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].kind, ContactKind::EdgeEdge);
    assert!((c[0].geometry.distance + d).abs() < 1e-14);
    assert!(close(&c[0].geometry.normal, &Vec3::z(), 1e-14));
    assert!(close(&c[0].geometry.point, &Vec3::new(0.0, 0.0, r2 / 2.0 - d / 2.0), 1e-14));
    // separated by 0.03 within a margin of 0.05: the same pair, distance 0.03
    let xb = translated(xb.rot, Vec3::new(0.0, 0.0, r2 + 0.03));
    let c = contacts(&unit, &xa, &unit, &xb, 0.05);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].kind, ContactKind::EdgeEdge);
    assert!((c[0].geometry.distance - 0.03).abs() < 1e-14);

    // a cube standing on a corner (body diagonal vertical) pushed into a slab's top face
    let diag = Vec3::new(-1.0, -1.0, -1.0).normalize();
    let rot = nalgebra::Rotation3::rotation_between(&diag, &-Vec3::z()).unwrap();
    let slab = cuboid(Vec3::new(2.0, 2.0, 0.5));
    let half_diag = 3f64.sqrt() / 2.0;
    let xb = translated(*rot.matrix(), Vec3::new(0.1, -0.2, 0.5 + half_diag - d));
    let c = contacts(&slab, &SE3::identity(), &unit, &xb, 0.0);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].kind, ContactKind::FaceVertex);
    assert!((c[0].geometry.distance + d).abs() < 1e-14);
    // on the slab's face, below the penetrating corner
    assert!(close(&c[0].geometry.point, &Vec3::new(0.1, -0.2, 0.5), 1e-14));
    assert!(close(&c[0].geometry.normal, &Vec3::z(), 1e-14));
    // the same seen from the cube: vertex–face
    let c = contacts(&unit, &xb, &slab, &SE3::identity(), 0.0);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].kind, ContactKind::VertexFace);
    assert!(close(&c[0].geometry.normal, &-Vec3::z(), 1e-14));
    assert!(close(&c[0].geometry.point, &Vec3::new(0.1, -0.2, 0.5), 1e-14));
}

// ---------------------------------------------------------------- brute-force reference

/// A core in the world: vertices, edges (segments) and faces (vertex loops with normals).
struct World {
    v: Vec<Vec3>,
    e: Vec<(Vec3, Vec3)>,
    f: Vec<(Vec<Vec3>, Vec3)>,
}

fn world(s: &ShapeInstance, x: &SE3) -> World {
    let ShapeCore::Convex(p) = &s.core else { unreachable!() };
    World {
        v: p.vertices.iter().map(|v| x.act_point(v)).collect(),
        e: p.edges
            .iter()
            .map(|e| (x.act_point(&p.vertices[e.v[0] as usize]), x.act_point(&p.vertices[e.v[1] as usize])))
            .collect(),
        f: p.faces
            .iter()
            .map(|f| (f.vertices.iter().map(|&i| x.act_point(&p.vertices[i as usize])).collect(), x.rot * f.normal))
            .collect(),
    }
}

/// Distance from a point to a convex polygon's interior region (`None` when its
/// projection falls outside: the polygon's edges then hold the closest point).
fn point_polygon(p: &Vec3, loop_: &[Vec3], n: &Vec3) -> Option<f64> {
    for k in 0..loop_.len() {
        let (a, b) = (loop_[k], loop_[(k + 1) % loop_.len()]);
        if (b - a).cross(&(p - a)).dot(n) < 0.0 {
            return None;
        }
    }
    Some(n.dot(&(p - loop_[0])).abs())
}

/// Exact distance of two disjoint cores by enumerating every feature pair.
fn ref_distance(a: &World, b: &World) -> f64 {
    let mut d = f64::INFINITY;
    for p in &a.v {
        for q in &b.v {
            d = d.min((p - q).norm());
        }
        for (q0, q1) in &b.e {
            d = d.min(seg_point(p, q0, q1));
        }
        for (l, n) in &b.f {
            if let Some(x) = point_polygon(p, l, n) {
                d = d.min(x);
            }
        }
    }
    for q in &b.v {
        for (p0, p1) in &a.e {
            d = d.min(seg_point(q, p0, p1));
        }
        for (l, n) in &a.f {
            if let Some(x) = point_polygon(q, l, n) {
                d = d.min(x);
            }
        }
    }
    for (p0, p1) in &a.e {
        for (q0, q1) in &b.e {
            d = d.min(seg_seg(p0, p1, q0, q1));
        }
    }
    d
}

/// Largest separation over every face normal and every edge-pair cross product (both
/// orientations): positive iff the cores are disjoint, minus the penetration depth when
/// they overlap.
fn ref_sat(a: &World, b: &World) -> f64 {
    let mut axes: Vec<Vec3> = a.f.iter().chain(b.f.iter()).map(|(_, n)| *n).collect();
    for (p0, p1) in &a.e {
        for (q0, q1) in &b.e {
            let m = (p1 - p0).cross(&(q1 - q0));
            if m.norm() > 1e-9 * (p1 - p0).norm() * (q1 - q0).norm() {
                axes.push(m.normalize());
            }
        }
    }
    let range = |w: &World, n: &Vec3| {
        w.v.iter().map(|v| n.dot(v)).fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)))
    };
    let mut best = f64::NEG_INFINITY;
    for n in &axes {
        let (alo, ahi) = range(a, n);
        let (blo, bhi) = range(b, n);
        best = best.max((blo - ahi).max(alo - bhi));
    }
    best
}

/// Reference signed distance of two swept cores and whether the cores are disjoint.
fn reference(a: &ShapeInstance, xa: &SE3, b: &ShapeInstance, xb: &SE3) -> (f64, bool) {
    let (wa, wb) = (world(a, xa), world(b, xb));
    let radii = a.radius + b.radius;
    if wa.f.is_empty() && wb.f.is_empty() {
        return (ref_distance(&wa, &wb) - radii, true);
    }
    let s = ref_sat(&wa, &wb);
    if s > 0.0 {
        (ref_distance(&wa, &wb) - radii, true)
    } else {
        (s - radii, false)
    }
}

#[test]
fn randomized_pairs_against_brute_force() {
    let mut rng = SplitMix64::new(2024);
    let n_pairs: usize = std::env::var("NARROW_PAIRS").ok().and_then(|s| s.parse().ok()).unwrap_or(4000);
    let (mut separated, mut overlapping, mut boundary, mut with_contacts) = (0, 0, 0, 0);
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    let mut worst_sep = 0.0f64;
    let mut worst_overlap_gap = 0.0f64;
    for pair in 0..n_pairs {
        let a = random_shape(&mut rng);
        let b = random_shape(&mut rng);
        let size = |s: &ShapeInstance| {
            let ShapeCore::Convex(p) = &s.core else { unreachable!() };
            p.bounding_radius + s.radius
        };
        let xa = translated(rand_rot(&mut rng), Vec3::new(rng.range(-1., 1.), rng.range(-1., 1.), rng.range(-1., 1.)));
        let reach = (size(&a) + size(&b)) * rng.range(0.15, 1.1);
        // a third of the pairs share axes (rotations by multiples of 90°, sometimes
        // perturbed by 1e-7): parallel faces and edges, flush contacts
        let rb = match (rng.uniform() * 6.0) as usize {
            0 => xa.rot * quarter_turns(&mut rng),
            1 => xa.rot * quarter_turns(&mut rng) * SE3::from_axis_angle(&rand_unit(&mut rng), 1e-7).rot,
            _ => rand_rot(&mut rng),
        };
        let xb = translated(rb, xa.trans + rand_unit(&mut rng) * reach);
        let (sd, disjoint) = reference(&a, &xa, &b, &xb);
        if disjoint {
            separated += 1;
        } else {
            overlapping += 1;
        }
        for margin in [0.0, 0.05] {
            if (sd - margin).abs() < 1e-9 {
                boundary += 1;
                continue;
            }
            for (c, swapped) in
                [(contacts(&a, &xa, &b, &xb, margin), false), (contacts(&b, &xb, &a, &xa, margin), true)]
            {
                assert_eq!(
                    !c.is_empty(),
                    sd < margin,
                    "pair {pair} (swapped {swapped}, margin {margin}): reference {sd}, contacts {c:?}\nA {a:?} at {xa:?}\nB {b:?} at {xb:?}"
                );
                if c.is_empty() {
                    continue;
                }
                if !swapped {
                    with_contacts += 1;
                    for k in &c {
                        *kinds.entry(k.kind.name()).or_default() += 1;
                    }
                }
                let min = c.iter().map(|k| k.geometry.distance).fold(f64::INFINITY, f64::min);
                if disjoint {
                    worst_sep = worst_sep.max((min - sd).abs());
                    assert!(
                        (min - sd).abs() < 1e-9,
                        "pair {pair}: min contact distance {min} vs reference {sd}: {c:?}"
                    );
                    for k in &c {
                        assert!(k.geometry.distance >= sd - 1e-9, "pair {pair}: contact below the distance: {k:?}");
                    }
                } else {
                    // the deepest contact is as deep as the penetration, up to the
                    // narrow phase's preference for face axes (5 % + 1e-6 of the size)
                    worst_overlap_gap = worst_overlap_gap.max(min - sd);
                    let core_sep = sd + a.radius + b.radius;
                    assert!(
                        min - sd <= 0.05 * core_sep.abs() + 1e-5,
                        "pair {pair}: deepest contact {min} vs {sd}: {c:?}"
                    );
                }
            }
        }
    }
    println!(
        "{n_pairs} pairs × 2 margins × 2 orders: {separated} disjoint cores, {overlapping} overlapping, \
         {boundary} at the margin boundary skipped, {with_contacts} with contacts; kinds {kinds:?}; \
         worst |min distance − reference| (disjoint) {worst_sep:.2e}; overlapping: largest min distance − \
         reference {worst_overlap_gap:.2e}"
    );
    assert!(separated > 500 && overlapping > 500);
    assert!(boundary < 10);
}

// ---------------------------------------------------------------- terrain

#[test]
fn terrain_flat_ground_has_no_ghost_contacts() {
    let ground = terrain(grid_terrain(8, 0.5, |_, _| 0.0));
    let mut rng = SplitMix64::new(5);
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for _ in 0..300 {
        // a sphere: one vertex–face contact, from the front only
        let r = rng.range(0.1, 0.4);
        let c = Vec3::new(rng.range(-1.5, 1.5), rng.range(-1.5, 1.5), r + rng.range(-0.05, 0.05));
        let k = contacts(&sphere(r), &SE3::from_translation(c), &ground, &SE3::identity(), 0.06);
        assert_eq!(k.len(), 1, "{k:?}");
        assert_eq!(k[0].kind, ContactKind::VertexFace);
        assert!((k[0].geometry.distance - (c.z - r)).abs() < 1e-14);
        assert!(close(&k[0].geometry.normal, &-Vec3::z(), 1e-15));
        let k = contacts(&ground, &SE3::identity(), &sphere(r), &SE3::from_translation(c), 0.06);
        assert_eq!(k.len(), 1);
        assert_eq!(k[0].kind, ContactKind::FaceVertex);
        let below = Vec3::new(c.x, c.y, -c.z);
        assert!(contacts(&sphere(r), &SE3::from_translation(below), &ground, &SE3::identity(), 0.06).is_empty());

        // a box resting flat, turned about z: every contact at depth 0.01 with a vertical
        // normal, its four bottom corners among them
        let h = Vec3::new(rng.range(0.2, 0.6), rng.range(0.2, 0.6), 0.2);
        let aligned = rng.uniform() < 0.2;
        let (angle, xy) = if aligned {
            // corners and edges on grid vertices and lines
            (0.0, Vec3::new(0.5 * (rng.uniform() * 4.0).floor() - 1.0, 0.5 * (rng.uniform() * 4.0).floor() - 1.0, 0.0))
        } else {
            (rng.range(0.0, 3.0), Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), 0.0))
        };
        let h = if aligned { Vec3::new(0.5, 0.25, 0.2) } else { h };
        let x = SE3::new(SE3::from_axis_angle(&Vec3::z(), angle).rot, xy + Vec3::new(0.0, 0.0, 0.19));
        let k = contacts(&cuboid(h), &x, &ground, &SE3::identity(), 0.0);
        for c in &k {
            assert!((c.geometry.distance + 0.01).abs() < 1e-14, "{c:?}");
            assert!(close(&c.geometry.normal, &-Vec3::z(), 1e-14), "ghost contact {c:?}");
            *kinds.entry(c.kind.name()).or_default() += 1;
        }
        // exactly the four corners: flat internal edges and vertices carry nothing
        assert_eq!(k.len(), 4, "{k:?}");
        for sx in [-1.0, 1.0] {
            for sy in [-1.0, 1.0] {
                let p = x.act_point(&Vec3::new(sx * h.x, sy * h.y, -h.z));
                let p = Vec3::new(p.x, p.y, 0.0); // on the ground's face
                assert_eq!(k.iter().filter(|c| close(&c.geometry.point, &p, 1e-9)).count(), 1, "corner {p:?}: {k:?}");
            }
        }
        for (i, c) in k.iter().enumerate() {
            assert!(k[..i].iter().all(|d| !close(&d.geometry.point, &c.geometry.point, 1e-9)), "repeated point");
        }
    }
    println!("box on flat terrain, contact kinds: {kinds:?}");
}

#[test]
fn terrain_ridge_and_valley() {
    // a roof: two slopes of 26.6° meeting at a ridge along x at z = 0.5
    let roof = |z_mid: f64, z_side: f64| {
        let v = vec![
            Vec3::new(-1.0, -1.0, z_side),
            Vec3::new(1.0, -1.0, z_side),
            Vec3::new(-1.0, 0.0, z_mid),
            Vec3::new(1.0, 0.0, z_mid),
            Vec3::new(-1.0, 1.0, z_side),
            Vec3::new(1.0, 1.0, z_side),
        ];
        terrain(trimesh(v, vec![[0, 1, 3], [0, 3, 2], [2, 3, 5], [2, 5, 4]]))
    };
    let ridge = roof(0.5, 0.0);
    let r = 0.3;
    // above the ridge, inside its normal cone: one vertex–edge contact on the ridge
    let c = Vec3::new(0.1, 0.02, 0.5 + 0.28);
    let k = contacts(&sphere(r), &SE3::from_translation(c), &ridge, &SE3::identity(), 0.0);
    assert_eq!(k.len(), 1, "{k:?}");
    assert_eq!(k[0].kind, ContactKind::VertexEdge);
    assert!((k[0].geometry.distance - (0.02f64.hypot(0.28) - r)).abs() < 1e-14);
    // a valley: two vertex–face contacts, none on the concave edge
    let valley = roof(0.0, 0.5);
    let z0 = 0.29;
    let c = Vec3::new(0.1, 0.0, z0);
    let k = contacts(&sphere(r), &SE3::from_translation(c), &valley, &SE3::identity(), 0.0);
    assert_eq!(k.len(), 2, "{k:?}");
    let cos = 2.0 / 5f64.sqrt();
    for c in &k {
        assert_eq!(c.kind, ContactKind::VertexFace);
        assert!((c.geometry.distance - (z0 * cos - r)).abs() < 1e-14);
    }
}

/// Distance from a point to a triangle: the plane distance when the projection falls
/// inside, else the nearest of the three edges.
fn point_triangle(p: &Vec3, t: &[Vec3; 3]) -> f64 {
    let n = (t[1] - t[0]).cross(&(t[2] - t[0])).normalize();
    point_polygon(p, t, &n)
        .unwrap_or_else(|| seg_point(p, &t[0], &t[1]).min(seg_point(p, &t[1], &t[2])).min(seg_point(p, &t[2], &t[0])))
}

/// Spheres whose centre is above a bumpy heightfield mesh: contacts exist iff the
/// exact point–mesh distance (over every triangle) minus the radius is below the
/// margin, and the nearest contact is that distance.
#[test]
fn terrain_spheres_against_brute_force() {
    let height = |x: f64, y: f64| 0.3 * (1.3 * x).sin() * (0.9 * y).cos() + 0.1 * (3.1 * x + 2.0 * y).sin();
    let mesh = grid_terrain(10, 0.4, height);
    let tris: Vec<[Vec3; 3]> = mesh.triangles.iter().map(|t| t.map(|i| mesh.vertices[i as usize])).collect();
    let ground = terrain(mesh);
    // the terrain on a tilted, moved body: the result must not depend on its pose
    let xm = SE3::new(SE3::from_axis_angle(&Vec3::new(0.3, -0.5, 0.8).normalize(), 0.4).rot, Vec3::new(0.2, -0.1, 0.3));
    let mut rng = SplitMix64::new(77);
    let (mut hits, mut kinds) = (0, BTreeMap::<&str, usize>::new());
    let margin = 0.1;
    for _ in 0..2000 {
        let r = rng.range(0.05, 0.5);
        let (x, y) = (rng.range(-1.2, 1.2), rng.range(-1.2, 1.2));
        let local = Vec3::new(x, y, mesh_height(&tris, x, y) + rng.range(0.0, r + 0.3));
        let want = tris.iter().map(|t| point_triangle(&local, t)).fold(f64::INFINITY, f64::min) - r;
        if (want - margin).abs() < 1e-9 {
            continue;
        }
        let c = contacts(&sphere(r), &SE3::from_translation(xm.act_point(&local)), &ground, &xm, margin);
        assert_eq!(!c.is_empty(), want < margin, "reference {want}: {c:?}");
        if c.is_empty() {
            continue;
        }
        hits += 1;
        let min = c.iter().map(|k| k.geometry.distance).fold(f64::INFINITY, f64::min);
        assert!((min - want).abs() < 1e-9, "min contact {min} vs reference {want}: {c:?}");
        for k in &c {
            assert!(k.geometry.distance >= want - 1e-9);
            *kinds.entry(k.kind.name()).or_default() += 1;
        }
    }
    println!("sphere on bumpy terrain: {hits} with contacts; kinds {kinds:?}");
    assert!(hits > 500 && kinds.len() == 3);
}

// ---------------------------------------------------------------- manifold reduction

/// An n-sided prism of radius `r` and half height `h` about z.
fn ngon_prism(n: usize, r: f64, h: f64) -> stiction::collision::Polytope {
    let mut v = vec![];
    for z in [-h, h] {
        for k in 0..n {
            let a = k as f64 * std::f64::consts::TAU / n as f64;
            v.push(Vec3::new(a.cos() * r, a.sin() * r, z));
        }
    }
    let n32 = n as u32;
    let mut loops = vec![(0..n32).collect::<Vec<_>>(), (n32..2 * n32).collect()];
    for k in 0..n32 {
        loops.push(vec![k, (k + 1) % n32, n32 + (k + 1) % n32, n32 + k]);
    }
    polytope(v, loops)
}

/// The area of the convex polygon of `pts` projected along z (points in hull order
/// not needed: gift wrapping by angle about the centroid).
fn polygon_area_xy(pts: &[Vec3]) -> f64 {
    let c = pts.iter().sum::<Vec3>() / pts.len() as f64;
    let mut p: Vec<&Vec3> = pts.iter().collect();
    p.sort_by(|a, b| (a.y - c.y).atan2(a.x - c.x).total_cmp(&(b.y - c.y).atan2(b.x - c.x)));
    0.5 * (0..p.len())
        .map(|i| {
            let (a, b) = (p[i], p[(i + 1) % p.len()]);
            a.x * b.y - a.y * b.x
        })
        .sum::<f64>()
        .abs()
}

/// A 24-sided prism standing on the plane, tilted a little: of its 24 bottom corners in
/// range, at most `MAX_PAIR_CONTACTS` are kept — the deepest one, and corners whose
/// polygon covers at least 85 % of the full support polygon (a regular octagon inscribed
/// in the 24-gon covers 91 %). Tilted the other way, the deepest is another corner.
#[test]
fn a_many_sided_prism_on_the_plane_keeps_the_deepest_and_the_support_polygon() {
    use stiction::collision::narrow_phase::MAX_PAIR_CONTACTS;
    let n = 24;
    let prism = convex(ngon_prism(n, 0.3, 0.1), 0.0);
    for tilt in [2e-4, -3e-4] {
        let rot = *nalgebra::Rotation3::from_axis_angle(&Vec3::x_axis(), tilt).matrix()
            * *nalgebra::Rotation3::from_axis_angle(&Vec3::z_axis(), 0.05).matrix();
        let x = translated(rot, Vec3::new(0.2, -0.1, 0.1 - 5e-4));
        let c = contacts(&prism, &x, &plane(), &SE3::identity(), 0.01);
        assert!(c.len() <= MAX_PAIR_CONTACTS && c.len() >= 4, "{} contacts", c.len());
        // Every bottom corner is within the margin: the deepest of them must be kept.
        let bottom: Vec<Vec3> = (0..n).map(|k| x.act_point(&ngon_prism(n, 0.3, 0.1).vertices[k])).collect();
        let deepest = bottom.iter().map(|p| p.z).fold(f64::INFINITY, f64::min);
        let kept_min = c.iter().map(|k| k.geometry.distance).fold(f64::INFINITY, f64::min);
        assert!((kept_min - deepest).abs() < 1e-12, "deepest {deepest} not kept ({kept_min})");
        let kept: Vec<Vec3> = c.iter().map(|k| k.geometry.point).collect();
        let ratio = polygon_area_xy(&kept) / polygon_area_xy(&bottom);
        assert!(ratio >= 0.85, "the kept contacts cover {ratio:.3} of the support polygon");
    }
    // Few contacts are not touched: a box on the plane keeps its four corners.
    let c = contacts(
        &cuboid(Vec3::new(0.2, 0.1, 0.05)),
        &translated(Mat3::identity(), Vec3::new(0.0, 0.0, 0.049)),
        &plane(),
        &SE3::identity(),
        0.01,
    );
    assert_eq!(c.len(), 4);
}

/// Two 24-sided prisms stacked face on face, the upper one turned by half a side: their
/// clipped polygon has 48 corners, reduced to `MAX_PAIR_CONTACTS`, which still hold the
/// upper prism (their polygon covers most of the overlap).
#[test]
fn a_face_pair_of_many_sided_prisms_is_reduced() {
    use stiction::collision::narrow_phase::MAX_PAIR_CONTACTS;
    let n = 24;
    let lower = convex(ngon_prism(n, 0.3, 0.1), 0.0);
    let upper = convex(ngon_prism(n, 0.3, 0.1), 0.0);
    let turn = *nalgebra::Rotation3::from_axis_angle(&Vec3::z_axis(), std::f64::consts::PI / n as f64).matrix();
    let xa = SE3::identity();
    let xb = translated(turn, Vec3::new(0.0, 0.0, 0.2 - 2e-4));
    let c = contacts(&lower, &xa, &upper, &xb, 0.01);
    assert!(c.len() <= MAX_PAIR_CONTACTS && c.len() >= 4, "{} contacts", c.len());
    let kept: Vec<Vec3> = c.iter().map(|k| k.geometry.point).collect();
    // The overlap of the two 24-gons is close to the disc of radius 0.3·cos(π/24).
    let full = 0.5 * 48.0 * (0.3 * (std::f64::consts::PI / 24.0).cos()).powi(2) * (std::f64::consts::TAU / 48.0).sin();
    let ratio = polygon_area_xy(&kept) / full;
    assert!(ratio >= 0.85, "the kept contacts cover {ratio:.3} of the overlap");
}
