//! Shapes, random poses, hand-made polytopes and terrain meshes shared by the
//! collision tests.
#![allow(dead_code)]

use std::sync::Arc;
use stiction::collision::{
    CollisionFilter, CollisionModel, Polytope, ShapeCore, ShapeInstance, ShapeKind, TriMeshCore,
};
use stiction::math::{Mat3, SplitMix64, Vec3, SE3};
use stiction::model::Material;

fn inst(core: ShapeCore, radius: f64, body: usize, kind: ShapeKind) -> ShapeInstance {
    ShapeInstance {
        body: Some(body),
        index_on_body: 0,
        local: SE3::identity(),
        core,
        radius,
        kind,
        material: Material::default(),
        group: 1,
        mask: u32::MAX,
    }
}

pub fn sphere(r: f64) -> ShapeInstance {
    inst(ShapeCore::Convex(Arc::new(Polytope::point())), r, 0, ShapeKind::Sphere)
}

pub fn capsule(half: f64, r: f64) -> ShapeInstance {
    inst(ShapeCore::Convex(Arc::new(Polytope::segment(half))), r, 0, ShapeKind::Capsule)
}

pub fn cuboid(h: Vec3) -> ShapeInstance {
    inst(ShapeCore::Convex(Arc::new(Polytope::cuboid(&h))), 0.0, 0, ShapeKind::Box)
}

pub fn plane() -> ShapeInstance {
    inst(ShapeCore::HalfSpace, 0.0, 0, ShapeKind::Plane)
}

pub fn convex(p: Polytope, r: f64) -> ShapeInstance {
    inst(ShapeCore::Convex(Arc::new(p)), r, 0, ShapeKind::ConvexMesh)
}

/// A polytope from vertex loops; each loop is oriented counter-clockwise seen from
/// outside (its Newell normal pointing away from the centroid).
pub fn polytope(vertices: Vec<Vec3>, loops: Vec<Vec<u32>>) -> Polytope {
    let c = vertices.iter().sum::<Vec3>() / vertices.len() as f64;
    let faces = loops
        .into_iter()
        .map(|mut l| {
            let mut n = Vec3::zeros();
            for k in 0..l.len() {
                n += vertices[l[k] as usize].cross(&vertices[l[(k + 1) % l.len()] as usize]);
            }
            let mut n = n.normalize();
            if n.dot(&(vertices[l[0] as usize] - c)) < 0.0 {
                l.reverse();
                n = -n;
            }
            (l, n)
        })
        .collect();
    Polytope::from_faces(vertices, faces)
}

pub fn tetrahedron() -> (Vec<Vec3>, Vec<Vec<u32>>) {
    let v = [(1., 1., 1.), (1., -1., -1.), (-1., 1., -1.), (-1., -1., 1.)];
    (
        v.iter().map(|&(x, y, z)| Vec3::new(x, y, z) * 0.5).collect(),
        vec![vec![0, 1, 2], vec![0, 1, 3], vec![0, 2, 3], vec![1, 2, 3]],
    )
}

pub fn octahedron() -> (Vec<Vec3>, Vec<Vec<u32>>) {
    let v = vec![Vec3::x(), -Vec3::x(), Vec3::y(), -Vec3::y(), Vec3::z(), -Vec3::z()];
    let mut loops = vec![];
    for sx in [0, 1] {
        for sy in [2, 3] {
            for sz in [4, 5] {
                loops.push(vec![sx, sy, sz]);
            }
        }
    }
    (v.into_iter().map(|x| x * 0.7).collect(), loops)
}

pub fn prism() -> (Vec<Vec3>, Vec<Vec<u32>>) {
    let mut v = vec![];
    for z in [-0.5, 0.5] {
        for k in 0..3 {
            let a = k as f64 * std::f64::consts::TAU / 3.0;
            v.push(Vec3::new(a.cos() * 0.6, a.sin() * 0.6, z));
        }
    }
    (v, vec![vec![0, 1, 2], vec![3, 4, 5], vec![0, 1, 4, 3], vec![1, 2, 5, 4], vec![2, 0, 3, 5]])
}

pub fn rand_rot(rng: &mut SplitMix64) -> Mat3 {
    let q = rng.unit_quaternion();
    let u = nalgebra::UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(q[0], q[1], q[2], q[3]));
    *u.to_rotation_matrix().matrix()
}

/// A random rotation by multiples of 90° about the axes.
pub fn quarter_turns(rng: &mut SplitMix64) -> Mat3 {
    let mut r = Mat3::identity();
    for axis in [Vec3::x(), Vec3::y(), Vec3::z()] {
        let k = (rng.uniform() * 4.0) as usize;
        r *= SE3::from_axis_angle(&axis, k as f64 * std::f64::consts::FRAC_PI_2).rot;
    }
    r
}

pub fn rand_unit(rng: &mut SplitMix64) -> Vec3 {
    loop {
        let v = Vec3::new(rng.normal(), rng.normal(), rng.normal());
        if v.norm() > 1e-3 {
            return v.normalize();
        }
    }
}

/// A random affine image `R₁ diag(s) R₂ x` of a hand-made polytope (positive scales,
/// condition number ≤ 3).
pub fn affine(rng: &mut SplitMix64, (v, loops): (Vec<Vec3>, Vec<Vec<u32>>)) -> Polytope {
    let s = Mat3::from_diagonal(&Vec3::new(rng.range(0.25, 0.75), rng.range(0.25, 0.75), rng.range(0.25, 0.75)));
    let m = rand_rot(rng) * s * rand_rot(rng);
    polytope(v.iter().map(|x| m * x).collect(), loops)
}

pub fn random_shape(rng: &mut SplitMix64) -> ShapeInstance {
    let rounded = |rng: &mut SplitMix64| if rng.uniform() < 0.25 { rng.range(0.02, 0.1) } else { 0.0 };
    match (rng.uniform() * 6.0) as usize {
        0 => sphere(rng.range(0.1, 0.5)),
        1 => capsule(rng.range(0.1, 0.5), rng.range(0.05, 0.3)),
        2 => {
            let mut b = cuboid(Vec3::new(rng.range(0.1, 0.6), rng.range(0.1, 0.6), rng.range(0.1, 0.6)));
            b.radius = rounded(rng);
            b
        }
        3 => {
            let p = affine(rng, tetrahedron());
            convex(p, rounded(rng))
        }
        4 => {
            let p = affine(rng, octahedron());
            convex(p, rounded(rng))
        }
        _ => {
            let p = affine(rng, prism());
            convex(p, rounded(rng))
        }
    }
}

pub fn model(a: &ShapeInstance, b: &ShapeInstance) -> CollisionModel {
    let (mut a, mut b) = (a.clone(), b.clone());
    a.body = Some(0);
    b.body = Some(1);
    CollisionModel {
        shapes: vec![a, b],
        filter: CollisionFilter {
            rigid_group: vec![Some(0), Some(1)],
            parent_group: vec![None, None],
            articulation: vec![0, 1],
            self_collision: vec![false, false],
            skip_parent_child: true,
            excluded_pairs: vec![],
        },
    }
}

/// A static triangle mesh compiled by `TriMeshCore::new` (validation, normals from the
/// counter-clockwise winding, edge table, bounding-volume hierarchy).
pub fn trimesh(vertices: Vec<Vec3>, triangles: Vec<[u32; 3]>) -> TriMeshCore {
    let mesh = stiction::model::TriangleMesh { vertices, triangles, source: None };
    TriMeshCore::new(&mesh).expect("valid test mesh")
}

/// An n × n grid of square cells of side `h` centred at the origin with heights
/// `height(x, y)`, each cell split into two triangles facing +z.
pub fn grid_terrain(n: usize, h: f64, height: impl Fn(f64, f64) -> f64) -> TriMeshCore {
    let mut vertices = vec![];
    let off = n as f64 * h / 2.0;
    for j in 0..=n {
        for i in 0..=n {
            let (x, y) = (i as f64 * h - off, j as f64 * h - off);
            vertices.push(Vec3::new(x, y, height(x, y)));
        }
    }
    let id = |i: usize, j: usize| (j * (n + 1) + i) as u32;
    let mut triangles = vec![];
    for j in 0..n {
        for i in 0..n {
            let (a, b, c, d) = (id(i, j), id(i + 1, j), id(i + 1, j + 1), id(i, j + 1));
            if (i + j) % 2 == 0 {
                triangles.push([a, b, c]);
                triangles.push([a, c, d]);
            } else {
                triangles.push([a, b, d]);
                triangles.push([b, c, d]);
            }
        }
    }
    trimesh(vertices, triangles)
}

/// A terrain shape instance.
pub fn terrain(mesh: TriMeshCore) -> ShapeInstance {
    inst(ShapeCore::TriMesh(Arc::new(mesh)), 0.0, 0, ShapeKind::Mesh)
}

/// Height of a heightfield mesh at (x, y): the interpolation over the triangle below.
pub fn mesh_height(tris: &[[Vec3; 3]], x: f64, y: f64) -> f64 {
    for t in tris {
        let (a, b, c) = (t[0], t[1], t[2]);
        let det = (b.x - a.x) * (c.y - a.y) - (c.x - a.x) * (b.y - a.y);
        let l1 = ((x - a.x) * (c.y - a.y) - (c.x - a.x) * (y - a.y)) / det;
        let l2 = ((b.x - a.x) * (y - a.y) - (x - a.x) * (b.y - a.y)) / det;
        if l1 >= 0.0 && l2 >= 0.0 && l1 + l2 <= 1.0 {
            return a.z + l1 * (b.z - a.z) + l2 * (c.z - a.z);
        }
    }
    panic!("outside the mesh")
}
