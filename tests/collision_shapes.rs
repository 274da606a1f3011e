//! Shape construction and validation: boxes, cylinders (prisms), convex hulls, convex
//! meshes and terrain meshes (edge tables and the bounding-volume hierarchy), against
//! references computed here independently (brute-force hulls by enumerating point
//! triples, closed-form volumes and counts, brute-force box queries), and every class of
//! bad input against the message it must produce.

use stiction::collision::polytope::{PolyEdge, NO_FACE};
use stiction::collision::{Aabb, Bvh, Polytope, TriMeshCore};
use stiction::math::{SplitMix64, Vec3};
use stiction::model::TriangleMesh;

fn mesh(vertices: Vec<Vec3>, triangles: Vec<[u32; 3]>) -> TriangleMesh {
    TriangleMesh { vertices, triangles, source: None }
}

fn size_of(points: &[Vec3]) -> f64 {
    let mut lo = points[0];
    let mut hi = points[0];
    for p in points {
        lo = lo.inf(p);
        hi = hi.sup(p);
    }
    (hi - lo).max()
}

/// Volume of a polytope by fan tetrahedra from the origin over each face loop.
fn volume_of(p: &Polytope) -> f64 {
    let mut v = 0.0;
    for f in &p.faces {
        let a = p.vertices[f.vertices[0] as usize];
        for k in 1..f.vertices.len() - 1 {
            let b = p.vertices[f.vertices[k] as usize];
            let c = p.vertices[f.vertices[k + 1] as usize];
            v += a.dot(&b.cross(&c)) / 6.0;
        }
    }
    v
}

/// The supporting planes of the convex hull of `points`, by brute force over all point
/// triples (unit normal, offset), deduplicated.
fn brute_force_planes(points: &[Vec3], tol: f64) -> Vec<(Vec3, f64)> {
    let n = points.len();
    let mut planes: Vec<(Vec3, f64)> = vec![];
    for i in 0..n {
        for j in i + 1..n {
            for k in j + 1..n {
                let c = (points[j] - points[i]).cross(&(points[k] - points[i]));
                if c.norm() < 1e-6 * size_of(points).powi(2) {
                    continue;
                }
                let nrm = c.normalize();
                let d = nrm.dot(&points[i]);
                let (mut above, mut below) = (false, false);
                for p in points {
                    let s = nrm.dot(p) - d;
                    above |= s > tol;
                    below |= s < -tol;
                }
                let candidate = match (above, below) {
                    (false, true) => (nrm, d),
                    (true, false) => (-nrm, -d),
                    (false, false) => panic!("all points coplanar"),
                    (true, true) => continue,
                };
                if !planes.iter().any(|(m, e)| (m - candidate.0).norm() < 1e-6 && (e - candidate.1).abs() < 1e-6) {
                    planes.push(candidate);
                }
            }
        }
    }
    planes
}

/// Independent checks of a hull of `points`: the polytope validates; every vertex is an
/// input point; every input point is on or behind every face plane; every face plane
/// holds at least 3 input points and the face's own vertices; every face corner is
/// strictly convex (no vertex in the middle of an edge); Euler characteristic 2.
fn check_hull(points: &[Vec3], hull: &Polytope) {
    let tol = 1e-9 * size_of(points);
    hull.validate_with_tolerance(1e-9).unwrap_or_else(|e| panic!("invalid hull: {e}"));
    for (i, v) in hull.vertices.iter().enumerate() {
        assert!(points.iter().any(|p| p == v), "hull vertex {i} {v:?} is not an input point");
    }
    for (f, face) in hull.faces.iter().enumerate() {
        let n = face.normal;
        assert!((n.norm() - 1.0).abs() < 1e-12);
        let mut on = 0;
        for (i, p) in points.iter().enumerate() {
            let s = n.dot(p) - face.offset;
            assert!(s <= tol, "point {i} lies {s:e} in front of face {f}");
            if s.abs() <= tol {
                on += 1;
            }
        }
        assert!(on >= 3, "face {f} plane holds only {on} input points");
        let m = face.vertices.len();
        let p = |k: usize| hull.vertices[face.vertices[k % m] as usize];
        for k in 0..m {
            assert!((n.dot(&p(k)) - face.offset).abs() <= tol);
            let e1 = p(k + 1) - p(k);
            let e2 = p(k + 2) - p(k + 1);
            let sin = e1.cross(&e2).dot(&n) / (e1.norm() * e2.norm());
            assert!(
                sin > 1e-9,
                "face {f} corner at vertex {} is not strictly convex (sin {sin:e})",
                face.vertices[(k + 1) % m]
            );
        }
    }
    let euler = hull.vertices.len() as i64 - hull.edges.len() as i64 + hull.faces.len() as i64;
    assert_eq!(euler, 2);
}

fn random_point(rng: &mut SplitMix64, kind: usize) -> Vec3 {
    let mut r = || rng.range(-1.0, 1.0);
    match kind {
        // uniform in a cube
        0 => Vec3::new(r(), r(), r()),
        // uniform in a ball (rejection)
        1 => loop {
            let p = Vec3::new(r(), r(), r());
            if p.norm() <= 1.0 {
                break p;
            }
        },
        // on a sphere (every point extreme)
        2 => loop {
            let p = Vec3::new(r(), r(), r());
            if p.norm() > 0.1 {
                break p.normalize() * 2.0;
            }
        },
        // flattened, skewed ellipsoid-ish cloud
        _ => Vec3::new(3.0 * r(), 0.5 * r(), 0.05 * r() + 0.2 * r()),
    }
}

fn rotation(rng: &mut SplitMix64) -> nalgebra::Rotation3<f64> {
    let q = rng.unit_quaternion();
    nalgebra::UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(q[0], q[1], q[2], q[3])).to_rotation_matrix()
}

// ---------------------------------------------------------------- boxes and cylinders

#[test]
fn cuboid_is_valid() {
    let h = Vec3::new(0.3, 0.5, 1.25);
    let b = Polytope::cuboid(&h);
    b.validate_with_tolerance(1e-14).unwrap();
    assert_eq!((b.vertices.len(), b.edges.len(), b.faces.len()), (8, 12, 6));
    assert!((volume_of(&b) - 8.0 * h.x * h.y * h.z).abs() < 1e-14);
    assert!(b.faces.iter().all(|f| f.vertices.len() == 4));
    // same faces as the hull of its corners
    let hull = Polytope::convex_hull(&b.vertices).unwrap();
    assert_eq!(hull.faces.len(), 6);
    for f in &b.faces {
        assert!(hull.faces.iter().any(|g| (g.normal - f.normal).norm() < 1e-14 && (g.offset - f.offset).abs() < 1e-14));
    }
}

#[test]
fn cylinder_prisms() {
    let (r, len) = (0.7, 2.5);
    for s in [3usize, 4, 5, 7, 16, 33, 64, 256] {
        let c = Polytope::cylinder(r, len, s);
        c.validate_with_tolerance(1e-12).unwrap_or_else(|e| panic!("{s} segments: {e}"));
        assert_eq!((c.vertices.len(), c.edges.len(), c.faces.len()), (2 * s, 3 * s, s + 2), "{s} segments");
        for v in &c.vertices {
            assert!((v.xy().norm() - r).abs() < 1e-14 && (v.z.abs() - len / 2.0).abs() < 1e-15);
        }
        // volume of the inscribed prism: s/2 r² sin(2π/s) · length
        let expected = s as f64 / 2.0 * r * r * (2.0 * std::f64::consts::PI / s as f64).sin() * len;
        assert!((volume_of(&c) - expected).abs() < 1e-12 * expected, "{s}: {} vs {expected}", volume_of(&c));
        // the largest radial gap r(1 − cos(π/s)) is attained at the side-face normals:
        // the support distance in horizontal directions ranges over [r cos(π/s), r]
        let apothem = r * (std::f64::consts::PI / s as f64).cos();
        let support = |a: f64| {
            let u = Vec3::new(a.cos(), a.sin(), 0.0);
            c.vertices.iter().map(|v| u.dot(v)).fold(f64::NEG_INFINITY, f64::max)
        };
        for k in 0..3600 {
            let h = support(2.0 * std::f64::consts::PI * k as f64 / 3600.0);
            assert!(h >= apothem - 1e-12 && h <= r + 1e-12);
        }
        for k in 0..s {
            // the gap is largest halfway between two vertices
            let h = support(std::f64::consts::PI * (2 * k + 1) as f64 / s as f64);
            assert!((h - apothem).abs() < 1e-12, "{s}: {h} vs {apothem}");
        }
        for f in &c.faces[..s] {
            assert!((f.offset - apothem).abs() < 1e-12 && f.normal.z == 0.0);
        }
        // same solid as the hull of its vertices
        let hull = Polytope::convex_hull(&c.vertices).unwrap();
        check_hull(&c.vertices, &hull);
        assert_eq!(hull.faces.len(), s + 2, "{s} segments");
        assert!((volume_of(&hull) - expected).abs() < 1e-12 * expected);
    }
    // fewer than 3 segments: a triangular prism
    assert_eq!(Polytope::cylinder(1.0, 1.0, 1).faces.len(), 5);
}

#[test]
fn from_faces_edge_convention() {
    // regular tetrahedron by hand
    let v = vec![
        Vec3::new(1.0, 1.0, 1.0),
        Vec3::new(1.0, -1.0, -1.0),
        Vec3::new(-1.0, 1.0, -1.0),
        Vec3::new(-1.0, -1.0, 1.0),
    ];
    let loops = [[0u32, 1, 2], [0, 3, 1], [0, 2, 3], [1, 3, 2]];
    let faces = loops
        .iter()
        .map(|l| {
            let [a, b, c] = l.map(|i| v[i as usize]);
            (l.to_vec(), (b - a).cross(&(c - a)).normalize())
        })
        .collect();
    let t = Polytope::from_faces(v, faces);
    t.validate_with_tolerance(1e-14).unwrap();
    for (e, edge) in t.edges.iter().enumerate() {
        assert!(edge.v[0] < edge.v[1]);
        let runs = |f: u32, a: u32, b: u32| {
            let l = &t.faces[f as usize].vertices;
            (0..l.len()).any(|k| l[k] == a && l[(k + 1) % l.len()] == b)
        };
        assert!(runs(edge.faces[0], edge.v[0], edge.v[1]), "edge {e}");
        assert!(runs(edge.faces[1], edge.v[1], edge.v[0]), "edge {e}");
    }
    assert!((volume_of(&t) - 8.0 / 3.0).abs() < 1e-14);
    // a flipped face loop is reported
    let mut bad = t.clone();
    bad.faces[0].vertices.reverse();
    assert!(bad.validate().is_err());
}

// ---------------------------------------------------------------- convex hulls

#[test]
fn hull_of_random_clouds_against_brute_force() {
    let mut rng = SplitMix64::new(2024);
    let mut compared = 0;
    for trial in 0..120 {
        let kind = trial % 4;
        let n = 4 + (trial * 7) % 40;
        let pts: Vec<Vec3> = (0..n).map(|_| random_point(&mut rng, kind)).collect();
        let hull = Polytope::convex_hull(&pts).unwrap_or_else(|e| panic!("trial {trial}: {e}"));
        check_hull(&pts, &hull);
        let planes = brute_force_planes(&pts, 1e-9 * size_of(&pts));
        assert_eq!(planes.len(), hull.faces.len(), "trial {trial}: brute force finds {} faces", planes.len());
        for f in &hull.faces {
            assert!(
                planes.iter().any(|(n, d)| (n - f.normal).norm() < 1e-6 && (d - f.offset).abs() < 1e-6),
                "trial {trial}: face {f:?} is not a supporting plane"
            );
        }
        if kind == 2 {
            // points on a sphere are all extreme
            assert_eq!(hull.vertices.len(), n, "trial {trial}");
        }
        compared += 1;
    }
    println!("hulls compared with brute force: {compared}");
}

#[test]
fn hull_of_large_clouds() {
    let mut rng = SplitMix64::new(99);
    for (kind, n) in [(0usize, 2000usize), (1, 20000), (2, 5000), (3, 3000)] {
        let pts: Vec<Vec3> = (0..n).map(|_| random_point(&mut rng, kind)).collect();
        let t = std::time::Instant::now();
        let hull = Polytope::convex_hull(&pts).unwrap();
        let dt = t.elapsed();
        check_hull(&pts, &hull);
        println!(
            "hull of {n} points (kind {kind}): {} vertices, {} faces, {dt:?}",
            hull.vertices.len(),
            hull.faces.len()
        );
    }
}

#[test]
fn hull_of_cube_with_interior_face_and_edge_points() {
    let mut rng = SplitMix64::new(5);
    let corners: Vec<Vec3> = (0..8)
        .map(|i| {
            Vec3::new((i & 1) as f64 * 2.0 - 1.0, (i >> 1 & 1) as f64 * 2.0 - 1.0, (i >> 2 & 1) as f64 * 2.0 - 1.0)
        })
        .collect();
    let mut pts = vec![];
    for _ in 0..200 {
        pts.push(Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)));
    }
    // points on faces and on edges (exactly coplanar and collinear), and duplicates
    for _ in 0..100 {
        let axis = (rng.next_u64() % 3) as usize;
        let mut p = Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0));
        p[axis] = if rng.uniform() < 0.5 { -1.0 } else { 1.0 };
        pts.push(p);
        let mut q = Vec3::zeros();
        for k in 0..3 {
            q[k] = if k == axis {
                rng.range(-1.0, 1.0)
            } else if rng.uniform() < 0.5 {
                -1.0
            } else {
                1.0
            };
        }
        pts.push(q);
    }
    // corners last, so that edge and face points are added to the hull first
    pts.extend(corners.iter());
    pts.extend(corners.iter());
    let hull = Polytope::convex_hull(&pts).unwrap();
    check_hull(&pts, &hull);
    assert_eq!((hull.vertices.len(), hull.edges.len(), hull.faces.len()), (8, 12, 6));
    assert!(hull.faces.iter().all(|f| f.vertices.len() == 4));
    assert!((volume_of(&hull) - 8.0).abs() < 1e-13);
    assert!((hull.volume() - 8.0).abs() < 1e-13);

    // integer lattice: massive coplanarity and collinearity
    let mut lattice = vec![];
    for i in 0..5 {
        for j in 0..4 {
            for k in 0..3 {
                lattice.push(Vec3::new(i as f64, j as f64, k as f64));
            }
        }
    }
    let hull = Polytope::convex_hull(&lattice).unwrap();
    check_hull(&lattice, &hull);
    assert_eq!((hull.vertices.len(), hull.faces.len()), (8, 6));
    assert!((volume_of(&hull) - 24.0).abs() < 1e-12);

    // the same lattice rotated: coplanarity only up to rounding, merged by the tolerance
    let rot = rotation(&mut rng);
    let turned: Vec<Vec3> = lattice.iter().map(|p| rot * p).collect();
    let hull = Polytope::convex_hull(&turned).unwrap();
    check_hull(&turned, &hull);
    assert_eq!((hull.vertices.len(), hull.faces.len()), (8, 6));
    assert!((volume_of(&hull) - 24.0).abs() < 1e-12);
}

#[test]
fn hull_of_platonic_solids() {
    let phi = (1.0 + 5f64.sqrt()) / 2.0;
    let mut ico = vec![];
    for s in [-1.0, 1.0] {
        for t in [-1.0, 1.0] {
            ico.push(Vec3::new(0.0, s, t * phi));
            ico.push(Vec3::new(s, t * phi, 0.0));
            ico.push(Vec3::new(t * phi, 0.0, s));
        }
    }
    let hull = Polytope::convex_hull(&ico).unwrap();
    check_hull(&ico, &hull);
    assert_eq!((hull.vertices.len(), hull.edges.len(), hull.faces.len()), (12, 30, 20));
    // volume of the icosahedron with edge 2: (5/12)(3 + √5)·8
    assert!((volume_of(&hull) - 5.0 / 12.0 * (3.0 + 5f64.sqrt()) * 8.0).abs() < 1e-12);

    let mut dodeca = vec![];
    for i in 0..8 {
        dodeca.push(Vec3::new(
            if i & 1 == 0 { -1.0 } else { 1.0 },
            if i & 2 == 0 { -1.0 } else { 1.0 },
            if i & 4 == 0 { -1.0 } else { 1.0 },
        ));
    }
    for s in [-1.0, 1.0] {
        for t in [-1.0, 1.0] {
            dodeca.push(Vec3::new(0.0, s / phi, t * phi));
            dodeca.push(Vec3::new(s / phi, t * phi, 0.0));
            dodeca.push(Vec3::new(t * phi, 0.0, s / phi));
        }
    }
    let hull = Polytope::convex_hull(&dodeca).unwrap();
    check_hull(&dodeca, &hull);
    assert_eq!((hull.vertices.len(), hull.edges.len(), hull.faces.len()), (20, 30, 12));
    assert!(hull.faces.iter().all(|f| f.vertices.len() == 5));
    // edge 2/φ: volume (15 + 7√5)/4 a³
    let a = 2.0 / phi;
    assert!((volume_of(&hull) - (15.0 + 7.0 * 5f64.sqrt()) / 4.0 * a * a * a).abs() < 1e-12);
}

#[test]
fn hull_of_single_precision_surface_points() {
    // Points on the faces of a rotated box, rounded to f32: the faces are flat only to
    // about 1e-7 relative, above the merging tolerance, so they stay split into many
    // nearly coplanar faces; the hull must still be exact and valid.
    let mut rng = SplitMix64::new(77);
    let mut faces_total = 0;
    for trial in 0..10 {
        let rot = rotation(&mut rng);
        let h = Vec3::new(0.5, 0.3, 0.2);
        let mut pts = vec![];
        for _ in 0..400 {
            let axis = (rng.next_u64() % 3) as usize;
            let mut p = Vec3::new(rng.range(-h.x, h.x), rng.range(-h.y, h.y), rng.range(-h.z, h.z));
            p[axis] = if rng.uniform() < 0.5 { -h[axis] } else { h[axis] };
            let q = rot * p;
            pts.push(Vec3::new(q.x as f32 as f64, q.y as f32 as f64, q.z as f32 as f64));
        }
        let hull = Polytope::convex_hull(&pts).unwrap_or_else(|e| panic!("trial {trial}: {e}"));
        check_hull(&pts, &hull);
        faces_total += hull.faces.len();
    }
    println!("single-precision box surfaces: {faces_total} faces over 10 hulls");
}

/// Nearly degenerate point sets: lattices (exact and rotated), prisms, quantised
/// spheres, box surfaces, thin slabs, lattice points with noise from 1e-15 to 1e-8
/// (around the merging tolerance), stars of collinear points and jittered spheres, half
/// of them rounded to single precision. Every hull must validate and contain every
/// point; for exact double-precision inputs with noise well below the tolerance every
/// face corner must be strictly convex (no vertex in the middle of an edge).
#[test]
fn hull_of_degenerate_point_sets() {
    let mut rng = SplitMix64::new(123);
    let mut by_kind = [0usize; 9];
    for trial in 0..1800 {
        let kind = (trial / 2) % 9;
        let n = 10 + (rng.next_u64() % 300) as usize;
        let rot = rotation(&mut rng);
        let noise = [1e-15, 1e-13, 1e-11, 3e-10, 1e-9, 3e-9, 1e-8][trial % 7];
        let single = trial % 2 == 0;
        let pts: Vec<Vec3> = (0..n)
            .map(|_| {
                let mut u = |m: u64| (rng.next_u64() % m) as f64;
                let p = match kind {
                    0 => Vec3::new(u(5), u(5), u(5)),
                    1 => {
                        let a = rng.range(0.0, 6.3);
                        Vec3::new(a.cos(), a.sin(), if rng.uniform() < 0.5 { -1.0 } else { 1.0 })
                    }
                    2 => {
                        (Vec3::new(rng.normal(), rng.normal(), rng.normal()).normalize() * 8.0).map(|x| x.round()) / 8.0
                    }
                    3 => {
                        let a = u(12) * std::f64::consts::PI / 6.0;
                        Vec3::new(a.cos(), a.sin(), u(3))
                    }
                    4 => {
                        let mut p = Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0));
                        let axis = (rng.next_u64() % 3) as usize;
                        p[axis] = p[axis].signum();
                        p
                    }
                    5 => Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1e-6, 1e-6)),
                    6 => Vec3::new(u(3), u(3), u(3)) + Vec3::new(rng.normal(), rng.normal(), rng.normal()) * noise,
                    7 => {
                        let t = rng.range(-1.0, 1.0);
                        [Vec3::new(t, 0.0, 0.0), Vec3::new(0.0, t, 0.0), Vec3::new(0.0, 0.0, t), Vec3::repeat(t / 2.0)]
                            [(rng.next_u64() % 4) as usize]
                    }
                    _ => Vec3::new(rng.normal(), rng.normal(), rng.normal()).normalize() * (1.0 + 1e-12 * rng.normal()),
                };
                let q = rot * p;
                if single {
                    q.map(|x| x as f32 as f64)
                } else {
                    q
                }
            })
            .collect();
        let hull = Polytope::convex_hull(&pts).unwrap_or_else(|e| panic!("trial {trial} (kind {kind}): {e}"));
        let tol = 1e-9 * size_of(&pts);
        hull.validate_with_tolerance(1e-9).unwrap_or_else(|e| panic!("trial {trial} (kind {kind}): {e}"));
        for (f, face) in hull.faces.iter().enumerate() {
            for p in &pts {
                assert!(face.normal.dot(p) - face.offset <= tol, "trial {trial}: a point is in front of face {f}");
            }
            let exact_input = !single && (kind != 6 || noise <= 1e-11);
            let strict = exact_input;
            let m = face.vertices.len();
            let v = |k: usize| hull.vertices[face.vertices[k % m] as usize];
            for k in 0..m {
                let (e1, e2) = (v(k + 1) - v(k), v(k + 2) - v(k + 1));
                let turn = e1.cross(&e2).dot(&face.normal);
                if strict {
                    assert!(turn > 1e-9 * e1.norm() * e2.norm(), "trial {trial} (kind {kind}): straight corner");
                } else {
                    assert!(turn >= -tol * (e1 + e2).norm(), "trial {trial} (kind {kind}): reflex corner");
                }
            }
        }
        for v in &hull.vertices {
            assert!(pts.contains(v));
        }
        by_kind[kind] += 1;
    }
    println!("degenerate hulls per kind: {by_kind:?}");
}

#[test]
fn hull_rejects_bad_point_sets() {
    let err = |pts: &[Vec3]| Polytope::convex_hull(pts).unwrap_err();
    let e = err(&[Vec3::zeros(), Vec3::x(), Vec3::y()]);
    assert!(e.contains("at least 4 points") && e.contains("got 3"), "{e}");
    let mut pts = vec![Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::z(), Vec3::repeat(0.1)];
    pts[3].y = f64::NAN;
    let e = err(&pts);
    assert!(e.contains("point 3 is not finite"), "{e}");
    pts[3].y = 1e200;
    let e = err(&pts);
    assert!(e.contains("point 3 is too far from the origin"), "{e}");
    let e = err(&[Vec3::repeat(1.5); 6]);
    assert!(e.contains("coincide"), "{e}");
    let line: Vec<Vec3> = (0..10).map(|i| Vec3::new(1.0, 2.0, 3.0) * i as f64).collect();
    let e = err(&line);
    assert!(e.contains("collinear"), "{e}");
    let mut rng = SplitMix64::new(1);
    let rot = rotation(&mut rng);
    let plane: Vec<Vec3> = (0..50).map(|_| rot * Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), 0.0)).collect();
    let e = err(&plane);
    assert!(e.contains("flat") && e.contains("plane through points"), "{e}");
}

// ---------------------------------------------------------------- convex meshes

/// The 12-triangle mesh of a box (counter-clockwise from outside).
fn box_mesh(h: Vec3) -> TriangleMesh {
    let v: Vec<Vec3> = (0..8)
        .map(|i| {
            Vec3::new(
                if i & 1 == 0 { -h.x } else { h.x },
                if i & 2 == 0 { -h.y } else { h.y },
                if i & 4 == 0 { -h.z } else { h.z },
            )
        })
        .collect();
    let quads = [[0, 4, 6, 2], [1, 3, 7, 5], [0, 1, 5, 4], [2, 6, 7, 3], [0, 2, 3, 1], [4, 5, 7, 6]];
    let mut t = vec![];
    for q in quads {
        t.push([q[0], q[1], q[2]]);
        t.push([q[0], q[2], q[3]]);
    }
    mesh(v, t)
}

/// A cube [-1, 1]³ with every face split into a 2×2 grid of quads (8 triangles per
/// face): 26 vertices (corners, edge midpoints, face centres), 48 triangles.
fn subdivided_cube() -> TriangleMesh {
    let mut vertices: Vec<Vec3> = vec![];
    let id = |p: Vec3, vertices: &mut Vec<Vec3>| -> u32 {
        match vertices.iter().position(|q| (q - p).norm() < 1e-12) {
            Some(i) => i as u32,
            None => {
                vertices.push(p);
                vertices.len() as u32 - 1
            }
        }
    };
    let mut triangles = vec![];
    for axis in 0..3 {
        for side in [-1.0, 1.0] {
            // face frame (u, w, n) right-handed with n outward
            let n = Vec3::ith(axis, side);
            let u = Vec3::ith((axis + 1) % 3, 1.0);
            let w = n.cross(&u);
            for i in 0..2 {
                for j in 0..2 {
                    let c = |a: i32, b: i32| n + u * (a as f64 - 1.0) + w * (b as f64 - 1.0);
                    let p00 = id(c(i, j), &mut vertices);
                    let p10 = id(c(i + 1, j), &mut vertices);
                    let p11 = id(c(i + 1, j + 1), &mut vertices);
                    let p01 = id(c(i, j + 1), &mut vertices);
                    triangles.push([p00, p10, p11]);
                    triangles.push([p00, p11, p01]);
                }
            }
        }
    }
    mesh(vertices, triangles)
}

/// Triangles of the hull of points in general position, by brute force over triples.
fn brute_force_triangles(points: &[Vec3]) -> Vec<[u32; 3]> {
    let n = points.len();
    let mut out = vec![];
    for i in 0..n {
        for j in 0..n {
            for k in 0..n {
                if i == j || j == k || i == k || !(i < j && i < k) {
                    continue;
                }
                let c = (points[j] - points[i]).cross(&(points[k] - points[i]));
                if points.iter().all(|p| c.dot(&(p - points[i])) <= 1e-12) {
                    out.push([i as u32, j as u32, k as u32]);
                }
            }
        }
    }
    out
}

#[test]
fn convex_meshes() {
    let b = Polytope::from_convex_mesh(&box_mesh(Vec3::new(0.5, 1.0, 1.5))).unwrap();
    b.validate_with_tolerance(1e-12).unwrap();
    assert_eq!((b.vertices.len(), b.edges.len(), b.faces.len()), (8, 12, 6));
    assert!((volume_of(&b) - 6.0).abs() < 1e-13);

    let s = subdivided_cube();
    assert_eq!((s.vertices.len(), s.triangles.len()), (26, 48));
    let c = Polytope::from_convex_mesh(&s).unwrap();
    c.validate_with_tolerance(1e-12).unwrap();
    assert_eq!((c.vertices.len(), c.edges.len(), c.faces.len()), (8, 12, 6));
    assert!(c.faces.iter().all(|f| f.vertices.len() == 4));
    assert!(c.vertices.iter().all(|v| v.iter().all(|x| x.abs() == 1.0)));
    assert!((volume_of(&c) - 8.0).abs() < 1e-13);

    // a triangulated cylinder with cap centres (fans) → prism faces, centres dropped
    let seg = 12u32;
    let mut v = vec![];
    for z in [-1.0, 1.0] {
        for k in 0..seg {
            let a = 2.0 * std::f64::consts::PI * k as f64 / seg as f64;
            v.push(Vec3::new(a.cos(), a.sin(), z));
        }
    }
    v.push(Vec3::new(0.0, 0.0, -1.0));
    v.push(Vec3::new(0.0, 0.0, 1.0));
    let mut t = vec![];
    for k in 0..seg {
        let k1 = (k + 1) % seg;
        t.push([k, k1, seg + k1]);
        t.push([k, seg + k1, seg + k]);
        t.push([2 * seg, k1, k]);
        t.push([2 * seg + 1, seg + k, seg + k1]);
    }
    let cyl = Polytope::from_convex_mesh(&mesh(v, t)).unwrap();
    cyl.validate_with_tolerance(1e-12).unwrap();
    assert_eq!((cyl.vertices.len(), cyl.faces.len()), (24, 14));

    // random points on a sphere, triangulated by brute force: every triangle is a face
    let mut rng = SplitMix64::new(3);
    for trial in 0..5 {
        let pts: Vec<Vec3> = (0..24).map(|_| random_point(&mut rng, 2)).collect();
        let tris = brute_force_triangles(&pts);
        assert_eq!(tris.len(), 2 * 24 - 4);
        let m = mesh(pts.clone(), tris);
        let p = Polytope::from_convex_mesh(&m).unwrap_or_else(|e| panic!("trial {trial}: {e}"));
        check_hull(&pts, &p);
        assert_eq!((p.vertices.len(), p.faces.len()), (24, 44));
    }
}

#[test]
fn convex_meshes_from_files_in_single_precision() {
    // A subdivided cube rotated and stored in single precision: faces flat only to about
    // 1e-7, within the convexity tolerance; the result is the exact hull of the vertices.
    let mut rng = SplitMix64::new(21);
    for trial in 0..20 {
        let rot = rotation(&mut rng);
        let mut m = subdivided_cube();
        for v in m.vertices.iter_mut() {
            *v = (rot * *v).map(|x| x as f32 as f64);
        }
        let p = Polytope::from_convex_mesh(&m).unwrap_or_else(|e| panic!("trial {trial}: {e}"));
        p.validate_with_tolerance(1e-9).unwrap();
        assert!((volume_of(&p) - 8.0).abs() < 1e-5, "trial {trial}: volume {}", volume_of(&p));
        for v in &m.vertices {
            for f in &p.faces {
                assert!(f.normal.dot(v) - f.offset <= 1e-9 * 2.0 * 3f64.sqrt());
            }
        }
    }
    // round trip of a large convex polytope through a fan-triangulated mesh
    let pts: Vec<Vec3> = (0..600).map(|_| random_point(&mut rng, 2)).collect();
    let hull = Polytope::convex_hull(&pts).unwrap();
    let mut tris = vec![];
    for f in &hull.faces {
        for k in 1..f.vertices.len() - 1 {
            tris.push([f.vertices[0], f.vertices[k], f.vertices[k + 1]]);
        }
    }
    let t = std::time::Instant::now();
    let p = Polytope::from_convex_mesh(&mesh(hull.vertices.clone(), tris)).unwrap();
    println!("convex mesh of {} vertices: {:?}", hull.vertices.len(), t.elapsed());
    assert_eq!((p.vertices.len(), p.faces.len()), (hull.vertices.len(), hull.faces.len()));
    assert!((volume_of(&p) - volume_of(&hull)).abs() < 1e-12);
}

fn mesh_err(m: &TriangleMesh) -> String {
    Polytope::from_convex_mesh(m).unwrap_err()
}

#[test]
fn convex_mesh_errors() {
    let good = box_mesh(Vec3::new(1.0, 1.0, 1.0));

    let mut m = good.clone();
    m.vertices[3].z = f64::NAN;
    let e = mesh_err(&m);
    assert!(e.contains("vertex 3 is not finite"), "{e}");

    let mut m = good.clone();
    m.triangles[5][1] = 42;
    let e = mesh_err(&m);
    assert!(e.contains("triangle 5 refers to vertex 42") && e.contains("only 8 vertices"), "{e}");

    let mut m = good.clone();
    m.triangles[7] = [2, 6, 2];
    let e = mesh_err(&m);
    assert!(e.contains("triangle 7 is degenerate") && e.contains("repeats vertex 2"), "{e}");

    // zero-area triangle: a tetrahedron with a vertex on the line through two others
    let m = mesh(
        vec![Vec3::zeros(), Vec3::new(2.0, 0.0, 0.0), Vec3::y(), Vec3::new(1.0, 0.0, 0.0)],
        vec![[0, 2, 1], [0, 1, 3], [1, 2, 3], [2, 0, 3]],
    );
    let e = mesh_err(&m);
    assert!(e.contains("triangle 1 (vertices 0, 1, 3) has zero area"), "{e}");

    // duplicate vertex: vertex 8 is vertex 0 again, used by one triangle
    let mut m = good.clone();
    m.vertices.push(m.vertices[0] + Vec3::repeat(1e-12));
    let t = m.triangles.iter().position(|t| t.contains(&0)).unwrap();
    for i in m.triangles[t].iter_mut() {
        if *i == 0 {
            *i = 8;
        }
    }
    let e = mesh_err(&m);
    assert!(e.contains("duplicate vertices: vertices 0 and 8 coincide"), "{e}");

    // open: one triangle missing
    let mut m = good.clone();
    m.triangles.remove(4);
    let e = mesh_err(&m);
    assert!(e.contains("open mesh") && e.contains("3 boundary edges"), "{e}");

    // one triangle flipped: inconsistent winding
    let mut m = good.clone();
    m.triangles[9].swap(1, 2);
    let e = mesh_err(&m);
    assert!(e.contains("inconsistent winding") && e.contains("9"), "{e}");

    // all flipped: inside out
    let mut m = good.clone();
    m.triangles.iter_mut().for_each(|t| t.swap(1, 2));
    let e = mesh_err(&m);
    assert!(e.contains("inside out") && e.contains("reverse"), "{e}");

    // too few triangles
    let m = mesh(good.vertices.clone(), good.triangles[..3].to_vec());
    let e = mesh_err(&m);
    assert!(e.contains("3 triangles") && e.contains("at least 4"), "{e}");

    // non-manifold: two tetrahedra sharing an edge
    let v = vec![
        Vec3::zeros(),
        Vec3::x(),
        Vec3::new(0.3, 1.0, 0.2),
        Vec3::new(0.3, 0.2, 1.0),
        Vec3::new(0.4, -1.0, -0.1),
        Vec3::new(0.4, -0.2, -1.0),
    ];
    let tet = |a: u32, b: u32, c: u32, d: u32| vec![[a, c, b], [a, b, d], [b, c, d], [c, a, d]];
    let mut t = tet(0, 1, 2, 3);
    t.extend(tet(0, 1, 4, 5));
    let e = mesh_err(&mesh(v, t));
    assert!(e.contains("non-manifold edge (0, 1)") || e.contains("inconsistent winding"), "{e}");

    // two separate boxes
    let mut m = good.clone();
    let other = box_mesh(Vec3::new(1.0, 1.0, 1.0));
    m.vertices.extend(other.vertices.iter().map(|p| p + Vec3::new(5.0, 0.0, 0.0)));
    m.triangles.extend(other.triangles.iter().map(|t| t.map(|i| i + 8)));
    let e = mesh_err(&m);
    assert!(e.contains("2 separate pieces"), "{e}");

    // flat: a triangle and its back
    let m = mesh(vec![Vec3::zeros(), Vec3::x(), Vec3::y()], vec![[0, 1, 2], [0, 2, 1], [0, 1, 2], [0, 2, 1]]);
    let e = mesh_err(&m);
    assert!(e.contains("inconsistent winding") || e.contains("non-manifold"), "{e}");
    let m = mesh(
        vec![Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::new(0.2, 0.2, 0.0)],
        vec![[0, 1, 3], [1, 2, 3], [2, 0, 3], [0, 2, 1]],
    );
    let e = mesh_err(&m);
    assert!(e.contains("encloses no volume"), "{e}");
}

#[test]
fn non_convex_mesh_names_a_vertex_and_a_face() {
    // a cube with the centre of its top face pushed in
    let mut m = subdivided_cube();
    let centre = m.vertices.iter().position(|v| (v - Vec3::z()).norm() < 1e-12).unwrap();
    m.vertices[centre].z = 0.7;
    let e = mesh_err(&m);
    assert!(e.starts_with("non-convex mesh declared convex"), "{e}");
    // parse "vertex i" and "triangle t" and check the claim independently
    let num_after = |key: &str| -> usize {
        let s = &e[e.find(key).unwrap() + key.len()..];
        s.chars().take_while(|c| c.is_ascii_digit()).collect::<String>().parse().unwrap()
    };
    let (i, t) = (num_after("vertex "), num_after("triangle "));
    let [a, b, c] = m.triangles[t].map(|k| m.vertices[k as usize]);
    let n = (b - a).cross(&(c - a)).normalize();
    let d = n.dot(&(m.vertices[i] - a));
    assert!(d > 0.05, "vertex {i} is only {d} in front of triangle {t}: {e}");

    // a slight dent within the tolerance (single-precision rounding) is accepted and flattened
    let mut m = subdivided_cube();
    m.vertices[centre].z = 1.0 - 1e-8;
    let p = Polytope::from_convex_mesh(&m).unwrap();
    assert_eq!(p.faces.len(), 6);
    // and a dent just beyond it is not
    m.vertices[centre].z = 1.0 - 1e-5;
    assert!(mesh_err(&m).starts_with("non-convex"));
}

// ---------------------------------------------------------------- terrain meshes

/// A height-field grid of nx × ny cells over [0, nx·dx] × [0, ny·dx], two triangles per
/// cell, counter-clockwise seen from above. Vertex (i, j) is `i·(ny+1) + j`.
fn grid(nx: u32, ny: u32, dx: f64) -> TriangleMesh {
    let mut v = vec![];
    for i in 0..=nx {
        for j in 0..=ny {
            let (x, y) = (i as f64 * dx, j as f64 * dx);
            v.push(Vec3::new(x, y, 0.3 * (0.7 * x).sin() * (0.4 * y).cos() + 0.01 * x));
        }
    }
    let id = |i: u32, j: u32| i * (ny + 1) + j;
    let mut t = vec![];
    for i in 0..nx {
        for j in 0..ny {
            t.push([id(i, j), id(i + 1, j), id(i + 1, j + 1)]);
            t.push([id(i, j), id(i + 1, j + 1), id(i, j + 1)]);
        }
    }
    mesh(v, t)
}

#[test]
fn terrain_edges_normals_and_boxes() {
    let (nx, ny) = (30u32, 20u32);
    let m = grid(nx, ny, 0.25);
    let core = TriMeshCore::new(&m).unwrap();
    let (nx_, ny_) = (nx as usize, ny as usize);
    assert_eq!(core.vertices.len(), (nx_ + 1) * (ny_ + 1));
    assert_eq!(core.triangles.len(), 2 * nx_ * ny_);
    // x-parallel + y-parallel + diagonals
    assert_eq!(core.edges.len(), nx_ * (ny_ + 1) + ny_ * (nx_ + 1) + nx_ * ny_);
    let boundary: Vec<&PolyEdge> = core.edges.iter().filter(|e| e.faces.contains(&NO_FACE)).collect();
    assert_eq!(boundary.len(), 2 * (nx_ + ny_));
    for e in &boundary {
        // boundary edges lie on the grid's rim
        let [a, b] = e.v.map(|i| core.vertices[i as usize]);
        let on_rim = |p: Vec3| {
            p.x == 0.0 || p.y == 0.0 || (p.x - nx as f64 * 0.25).abs() < 1e-12 || (p.y - ny as f64 * 0.25).abs() < 1e-12
        };
        assert!(on_rim(a) && on_rim(b));
    }
    for (e, edge) in core.edges.iter().enumerate() {
        assert!(edge.v[0] < edge.v[1]);
        for (s, &t) in edge.faces.iter().enumerate() {
            if t == NO_FACE {
                continue;
            }
            let tri = core.triangles[t as usize];
            let (from, to) = if s == 0 { (edge.v[0], edge.v[1]) } else { (edge.v[1], edge.v[0]) };
            let k = (0..3).find(|&k| tri[k] == from && tri[(k + 1) % 3] == to).expect("edge side");
            assert_eq!(core.triangle_edges[t as usize][k], e as u32);
        }
    }
    for (t, tri) in core.triangles.iter().enumerate() {
        let [a, b, c] = tri.map(|i| core.vertices[i as usize]);
        let n = core.normals[t];
        assert!((n.norm() - 1.0).abs() < 1e-14 && n.z > 0.5);
        assert!(n.dot(&(b - a)).abs() < 1e-14 && n.dot(&(c - a)).abs() < 1e-14);
        assert!((b - a).cross(&(c - a)).dot(&n) > 0.0);
        let bx = &core.triangle_boxes[t];
        for k in 0..3 {
            assert_eq!(bx.min[k], a[k].min(b[k]).min(c[k]));
            assert_eq!(bx.max[k], a[k].max(b[k]).max(c[k]));
        }
        for k in 0..3 {
            let e = &core.edges[core.triangle_edges[t][k] as usize];
            let (i, j) = (tri[k], tri[(k + 1) % 3]);
            assert_eq!(e.v, [i.min(j), i.max(j)]);
        }
    }
    let lo = m.vertices.iter().fold(Vec3::repeat(f64::INFINITY), |a, v| a.inf(v));
    let hi = m.vertices.iter().fold(Vec3::repeat(f64::NEG_INFINITY), |a, v| a.sup(v));
    assert_eq!(core.aabb, Aabb { min: lo, max: hi });
}

fn brute_force_query(m: &TriangleMesh, q: &Aabb) -> Vec<u32> {
    (0..m.triangles.len() as u32)
        .filter(|&t| {
            let c = m.triangles[t as usize].map(|i| m.vertices[i as usize]);
            (0..3).all(|k| {
                let lo = c[0][k].min(c[1][k]).min(c[2][k]);
                let hi = c[0][k].max(c[1][k]).max(c[2][k]);
                lo <= q.max[k] && q.min[k] <= hi
            })
        })
        .collect()
}

#[test]
fn terrain_bvh_query_matches_brute_force() {
    let m = grid(60, 45, 0.2);
    let core = TriMeshCore::new(&m).unwrap();
    let n = core.triangles.len();
    let depth_bound = ((n as f64 / 4.0).log2().ceil() as usize) + 1;
    assert!(core.bvh.depth() <= depth_bound, "depth {} > {depth_bound}", core.bvh.depth());
    let mut flat = core.clone();
    flat.bvh = Bvh::default();
    let mut rng = SplitMix64::new(8);
    let (mut out, mut out_flat) = (vec![], vec![]);
    let (mut hits, mut empty) = (0, 0);
    for q in 0..1000 {
        let c = Vec3::new(rng.range(-1.0, 13.0), rng.range(-1.0, 10.0), rng.range(-0.6, 0.9));
        let scale = [0.01, 0.2, 1.0, 5.0][q % 4];
        let h = Vec3::new(rng.range(0.0, scale), rng.range(0.0, scale), rng.range(0.0, scale));
        let b = Aabb { min: c - h, max: c + h };
        out.clear();
        out.push(u32::MAX); // the query appends: what was there stays
        core.query(&b, &mut out);
        assert_eq!(out[0], u32::MAX);
        let reference = brute_force_query(&m, &b);
        assert_eq!(&out[1..], &reference[..], "query {q}: {b:?}");
        out_flat.clear();
        flat.query(&b, &mut out_flat);
        assert_eq!(out_flat, reference);
        hits += reference.len();
        empty += reference.is_empty() as usize;
    }
    println!("1000 terrain queries: {hits} hits, {empty} empty");
    assert!(empty > 50 && empty < 950);
}

#[test]
fn terrain_bvh_speed() {
    let m = grid(300, 300, 0.1);
    let t0 = std::time::Instant::now();
    let core = TriMeshCore::new(&m).unwrap();
    let build = t0.elapsed();
    let mut flat = core.clone();
    flat.bvh = Bvh::default();
    let mut rng = SplitMix64::new(4);
    let boxes: Vec<Aabb> = (0..2000)
        .map(|_| {
            let c = Vec3::new(rng.range(0.0, 30.0), rng.range(0.0, 30.0), rng.range(-0.3, 0.3));
            Aabb { min: c.add_scalar(-0.15), max: c.add_scalar(0.15) }
        })
        .collect();
    let mut out = Vec::with_capacity(1024);
    let t1 = std::time::Instant::now();
    let mut total = 0;
    for b in &boxes {
        out.clear();
        core.query(b, &mut out);
        total += out.len();
    }
    let fast = t1.elapsed();
    let t2 = std::time::Instant::now();
    let mut total_flat = 0;
    for b in boxes.iter().take(200) {
        out.clear();
        flat.query(b, &mut out);
        total_flat += out.len();
    }
    let slow = t2.elapsed() * 10;
    println!(
        "terrain of {} triangles: build {build:?}; 2000 queries: BVH {fast:?} ({total} hits), linear scan ≈ {slow:?} \
         ({total_flat} hits in the first 200)",
        core.triangles.len()
    );
    assert!(fast * 5 < slow, "the BVH should beat the linear scan by far: {fast:?} vs {slow:?}");
}

fn terrain_err(m: &TriangleMesh) -> String {
    TriMeshCore::new(m).unwrap_err()
}

#[test]
fn terrain_errors() {
    let good = grid(4, 3, 1.0);
    assert!(TriMeshCore::new(&good).is_ok());

    let e = terrain_err(&mesh(vec![Vec3::zeros()], vec![]));
    assert!(e.contains("0 triangles") && e.contains("at least 1"), "{e}");

    let mut m = good.clone();
    m.vertices[6].x = f64::INFINITY;
    let e = terrain_err(&m);
    assert!(e.contains("vertex 6 is not finite"), "{e}");

    let mut m = good.clone();
    m.vertices[2].z = -1e150;
    let e = terrain_err(&m);
    assert!(e.contains("vertex 2 is too far from the origin"), "{e}");

    let mut m = good.clone();
    m.triangles[11][2] = 20;
    let e = terrain_err(&m);
    assert!(e.contains("triangle 11 refers to vertex 20") && e.contains("only 20 vertices"), "{e}");

    let mut m = good.clone();
    m.triangles[3] = [4, 4, 5];
    let e = terrain_err(&m);
    assert!(e.contains("triangle 3 is degenerate") && e.contains("repeats vertex 4"), "{e}");

    // zero area: three collinear vertices
    let mut m = good.clone();
    m.vertices.push(Vec3::new(10.0, 0.0, 0.0));
    m.vertices.push(Vec3::new(11.0, 0.0, 0.0));
    m.vertices.push(Vec3::new(12.0, 0.0, 0.0));
    m.triangles.push([20, 21, 22]);
    let e = terrain_err(&m);
    assert!(e.contains("triangle 24 (vertices 20, 21, 22) has zero area"), "{e}");

    // duplicate vertices: a seam that is not welded
    let mut m = good.clone();
    m.vertices.push(m.vertices[7]);
    assert!(m.triangles[5].contains(&7));
    m.triangles[5] = m.triangles[5].map(|i| if i == 7 { 20 } else { i });
    let e = terrain_err(&m);
    assert!(e.contains("duplicate vertices: vertices 7 and 20"), "{e}");

    // non-manifold: a fin on an interior edge
    let mut m = good.clone();
    let [a, b, _] = m.triangles[8];
    m.vertices.push((m.vertices[a as usize] + m.vertices[b as usize]) / 2.0 + Vec3::z());
    m.triangles.push([a, b, 20]);
    let e = terrain_err(&m);
    assert!(e.contains("non-manifold edge") || e.contains("inconsistent winding"), "{e}");
    let mut m = good.clone();
    m.vertices.push(Vec3::new(0.5, -1.0, 1.0));
    m.vertices.push(Vec3::new(0.5, -1.0, -1.0));
    // edge (0, 4) is a rim edge used by triangle 0 (0 → 4); add two more triangles on it
    m.triangles.push([4, 0, 20]);
    m.triangles.push([0, 4, 21]);
    let e = terrain_err(&m);
    assert!(e.contains("non-manifold edge (0, 4): shared by triangles 0, 24 and 25"), "{e}");

    // a flipped triangle
    let mut m = good.clone();
    m.triangles[13].swap(0, 1);
    let e = terrain_err(&m);
    assert!(e.contains("inconsistent winding") && e.contains("13"), "{e}");
}
