//! The broad phase: candidate shape pairs from world-frame bounding boxes, by sweep and
//! prune, filtered by [`CollisionModel::allows`].
//!
//! * Finite shapes get an axis-aligned box: a convex core's vertices placed by the
//!   shape's world pose, grown by its sweep radius; a triangle mesh's shape-frame box
//!   with its eight corners placed. Every box is grown by `margin / 2`, so two shapes
//!   closer than `margin` have overlapping boxes (their closest points differ by less
//!   than `margin` along every axis).
//! * Sweep and prune along the axis of largest spread of the box centres (largest
//!   variance): boxes sorted by their lower bound; each box is tested against the
//!   following ones until a lower bound passes its upper bound. The sorted order is
//!   kept between calls and repaired by insertion sort (linear on nearly sorted
//!   data — bodies move little per step); when the axis changes, or the repair would
//!   take more than a few moves per box, it is sorted afresh.
//! * Half-spaces are infinite and handled apart: a finite shape is paired with a
//!   half-space when its lowest point along the half-space's outward normal n,
//!   `min_v n·(x_v − o) − r`, is at most `margin` (the support point of the core in
//!   the direction −n; for a mesh, of its box). Two half-spaces are never paired.
//!
//! Output: pairs `(a, b)` with `a < b`, sorted, so the order depends only on the
//! scene, never on the history of calls.

use super::bvh::Aabb;
use super::shape::{CollisionModel, ShapeCore};
use crate::error::{Error, Result};
use crate::math::{Vec3, SE3};

/// Insertion-sort moves allowed per box before falling back to a full sort.
const REPAIR_MOVES_PER_BOX: usize = 8;

/// The broad phase's workspace: boxes, the sorted order, and the pairs of the last call.
#[derive(Clone, Debug, Default)]
pub struct BroadPhase {
    /// World box of each shape (grown by radius and `margin / 2`; infinite for half-spaces).
    pub(crate) aabbs: Vec<Aabb>,
    /// Finite shapes (not half-spaces).
    finite: Vec<u32>,
    /// Half-spaces.
    half_spaces: Vec<u32>,
    /// Finite shapes sorted by lower bound along `axis` (ties by index).
    order: Vec<u32>,
    /// The sweep's boxes in sorted order.
    entries: Vec<SweepEntry>,
    /// The sweep axis of the last call (`None`: no valid order).
    axis: Option<usize>,
    /// The candidate pairs of the last call.
    pairs: Vec<(u32, u32)>,
    /// Number of shapes the lists were made for.
    nshapes: usize,
}

impl BroadPhase {
    /// An empty workspace (sized on first use).
    pub fn new() -> Self {
        Self::default()
    }

    /// The candidate pairs of the last call.
    pub fn pairs(&self) -> &[(u32, u32)] {
        &self.pairs
    }

    /// The world boxes of the last call (index: shape; infinite for half-spaces).
    pub fn aabbs(&self) -> &[Aabb] {
        &self.aabbs
    }

    /// Forgets the sorted order, so the next call sorts from scratch (call after
    /// teleporting bodies; results are identical either way, only the cost differs).
    pub fn forget_order(&mut self) {
        self.axis = None;
    }

    fn resize(&mut self, cm: &CollisionModel) {
        if self.nshapes == cm.shapes.len() && self.finite.len() + self.half_spaces.len() == cm.shapes.len() {
            return;
        }
        self.nshapes = cm.shapes.len();
        self.aabbs.clear();
        self.aabbs.resize(cm.shapes.len(), Aabb::empty());
        self.finite.clear();
        self.half_spaces.clear();
        for (i, s) in cm.shapes.iter().enumerate() {
            match s.core {
                ShapeCore::HalfSpace => self.half_spaces.push(i as u32),
                _ => self.finite.push(i as u32),
            }
        }
        self.order.clone_from(&self.finite);
        self.axis = None;
    }

    /// Computes the candidate pairs for shapes at world poses `poses` (one per shape of
    /// `cm`; see [`super::ShapeInstance::world_pose`]), closer than `margin` by their
    /// bounding volumes and allowed by the filter. The poses must be finite (the
    /// pipeline checks; non-finite poses give meaningless pairs, never a panic).
    ///
    /// Errors: `poses.len()` is not the number of shapes ([`Error::Dimension`]).
    pub fn find_pairs(&mut self, cm: &CollisionModel, poses: &[SE3], margin: f64) -> Result<&[(u32, u32)]> {
        if poses.len() != cm.shapes.len() {
            return Err(Error::Dimension { what: "shape poses", expected: cm.shapes.len(), got: poses.len() });
        }
        self.resize(cm);
        self.pairs.clear();
        let grow = 0.5 * margin;
        for &i in &self.finite {
            let i = i as usize;
            self.aabbs[i] = world_aabb(cm, i, &poses[i], grow);
        }
        for &h in &self.half_spaces {
            self.aabbs[h as usize] = Aabb { min: Vec3::repeat(f64::NEG_INFINITY), max: Vec3::repeat(f64::INFINITY) };
        }
        self.sweep(cm);
        self.half_space_pairs(cm, poses, margin);
        self.pairs.sort_unstable();
        Ok(&self.pairs)
    }

    /// The axis along which the box centres spread most.
    fn sweep_axis(&self) -> usize {
        let n = self.finite.len() as f64;
        let (mut sum, mut sum2) = (Vec3::zeros(), Vec3::zeros());
        for &i in &self.finite {
            let b = &self.aabbs[i as usize];
            let c = (b.min + b.max) * 0.5;
            sum += c;
            sum2 += c.component_mul(&c);
        }
        let var = sum2 / n - (sum / n).component_mul(&(sum / n));
        let mut axis = 0;
        for k in 1..3 {
            if var[k] > var[axis] {
                axis = k;
            }
        }
        axis
    }

    /// Sorts the boxes by lower bound along the sweep axis (repairing the previous
    /// order when the axis is unchanged), then sweeps them.
    fn sweep(&mut self, cm: &CollisionModel) {
        if self.finite.len() < 2 {
            return;
        }
        let axis = self.sweep_axis();
        let (u, w) = ((axis + 1) % 3, (axis + 2) % 3);
        // Entries in the previous order (a permutation of the finite shapes), with
        // this call's bounds: contiguous, so the sweep streams through memory.
        self.entries.clear();
        for &i in &self.order {
            let b = &self.aabbs[i as usize];
            self.entries.push(SweepEntry {
                lo: b.min[axis],
                hi: b.max[axis],
                rest: [b.min[u], b.max[u], b.min[w], b.max[w]],
                shape: i,
            });
        }
        let repaired = self.axis == Some(axis)
            && insertion_sort(&mut self.entries, SweepEntry::before, REPAIR_MOVES_PER_BOX * self.order.len());
        if !repaired {
            self.entries.sort_unstable_by(|a, b| a.lo.total_cmp(&b.lo).then(a.shape.cmp(&b.shape)));
        }
        self.axis = Some(axis);
        for (o, e) in self.order.iter_mut().zip(&self.entries) {
            *o = e.shape;
        }
        let entries = &self.entries;
        for (k, a) in entries.iter().enumerate() {
            for b in &entries[k + 1..] {
                if b.lo > a.hi {
                    break;
                }
                let (p, q) = (&a.rest, &b.rest);
                if p[0] <= q[1]
                    && q[0] <= p[1]
                    && p[2] <= q[3]
                    && q[2] <= p[3]
                    && cm.allows(a.shape as usize, b.shape as usize)
                {
                    self.pairs.push((a.shape.min(b.shape), a.shape.max(b.shape)));
                }
            }
        }
    }

    /// Pairs of every half-space with the finite shapes that reach within `margin` of it.
    fn half_space_pairs(&mut self, cm: &CollisionModel, poses: &[SE3], margin: f64) {
        for &h in &self.half_spaces {
            let plane = &poses[h as usize];
            let n = plane.rot.column(2).into_owned();
            let o = plane.trans;
            for &s in &self.finite {
                // Cheap rejection by the box (it contains the shape): its lowest corner.
                let b = &self.aabbs[s as usize];
                let c = (b.min + b.max) * 0.5;
                let r = (b.max - b.min) * 0.5;
                if n.dot(&(c - o)) - n.abs().dot(&r) > margin {
                    continue;
                }
                if lowest_along(cm, s as usize, &poses[s as usize], &n, &o) <= margin
                    && cm.allows(h as usize, s as usize)
                {
                    self.pairs.push((h.min(s), h.max(s)));
                }
            }
        }
    }
}

/// A box in the sweep: its interval along the sweep axis, its bounds along the other
/// two (`[min_u, max_u, min_w, max_w]`), its shape.
#[derive(Clone, Copy, Debug, Default)]
struct SweepEntry {
    lo: f64,
    hi: f64,
    rest: [f64; 4],
    shape: u32,
}

impl SweepEntry {
    /// The sweep order: by lower bound, ties by shape index (a total order: the bounds
    /// are finite).
    fn before(a: &SweepEntry, b: &SweepEntry) -> bool {
        a.lo < b.lo || (a.lo == b.lo && a.shape < b.shape)
    }
}

/// Insertion sort of nearly sorted data; gives up (returning `false`, the slice a
/// permutation of the input) after `budget` moves.
fn insertion_sort<T: Copy>(v: &mut [T], less: impl Fn(&T, &T) -> bool, budget: usize) -> bool {
    let mut moves = 0;
    for i in 1..v.len() {
        let x = v[i];
        let mut j = i;
        while j > 0 && less(&x, &v[j - 1]) {
            v[j] = v[j - 1];
            j -= 1;
            moves += 1;
        }
        v[j] = x;
        if moves > budget {
            return false;
        }
    }
    true
}

/// World box of finite shape `i` at pose `pose`, grown by `grow` (and its radius).
pub(crate) fn world_aabb(cm: &CollisionModel, i: usize, pose: &SE3, grow: f64) -> Aabb {
    let s = &cm.shapes[i];
    match &s.core {
        ShapeCore::Convex(p) => {
            let b = if p.vertices.len() == 1 {
                let c = pose.act_point(&p.vertices[0]);
                Aabb { min: c, max: c }
            } else if let Some(h) = box_half_extents(s) {
                // A box centred at the origin: half extents |R| h around the centre.
                let e = pose.rot.abs() * h;
                Aabb { min: pose.trans - e, max: pose.trans + e }
            } else {
                let mut b = Aabb::empty();
                for v in &p.vertices {
                    let w = pose.act_point(v);
                    b.min = b.min.inf(&w);
                    b.max = b.max.sup(&w);
                }
                b
            };
            b.inflated(s.radius + grow)
        }
        ShapeCore::TriMesh(m) => {
            let mut b = Aabb::empty();
            for corner in box_corners(&m.aabb) {
                let w = pose.act_point(&corner);
                b.min = b.min.inf(&w);
                b.max = b.max.sup(&w);
            }
            b.inflated(grow)
        }
        ShapeCore::HalfSpace => Aabb { min: Vec3::repeat(f64::NEG_INFINITY), max: Vec3::repeat(f64::INFINITY) },
    }
}

/// The half extents of a box shape (its core is `Polytope::cuboid`, whose vertex 7 is
/// `(hx, hy, hz)`), or `None` for other shapes.
fn box_half_extents(s: &super::ShapeInstance) -> Option<Vec3> {
    match (&s.core, s.kind) {
        (ShapeCore::Convex(p), super::ShapeKind::Box) if p.vertices.len() == 8 => Some(p.vertices[7]),
        _ => None,
    }
}

fn box_corners(b: &Aabb) -> [Vec3; 8] {
    std::array::from_fn(|k| {
        Vec3::new(
            if k & 1 == 0 { b.min.x } else { b.max.x },
            if k & 2 == 0 { b.min.y } else { b.max.y },
            if k & 4 == 0 { b.min.z } else { b.max.z },
        )
    })
}

/// Signed height of the lowest point of finite shape `i` (at `pose`) above the plane
/// through `o` with unit normal `n`: `min_x n·(x − o)` over the swept shape.
pub(crate) fn lowest_along(cm: &CollisionModel, i: usize, pose: &SE3, n: &Vec3, o: &Vec3) -> f64 {
    let s = &cm.shapes[i];
    let n_local = pose.rot.transpose() * n;
    let base = n.dot(&(pose.trans - o));
    match &s.core {
        ShapeCore::Convex(p) => {
            let sup = match box_half_extents(s) {
                Some(h) => n_local.abs().dot(&h),
                None => p.support(&-n_local).1,
            };
            base - sup - s.radius
        }
        ShapeCore::TriMesh(m) => {
            base + box_corners(&m.aabb).iter().map(|c| n_local.dot(c)).fold(f64::INFINITY, f64::min)
        }
        ShapeCore::HalfSpace => f64::NEG_INFINITY,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::{Inertia, SplitMix64};
    use crate::model::{CollisionShape, Geometry};
    use crate::{Body, Data, Joint, ModelBuilder};
    use nalgebra::UnitQuaternion;

    /// A random scene: free bodies carrying one or two spheres, boxes, capsules or
    /// cylinders, a few short chains (to exercise the filter), zero to two planes.
    fn scene(seed: u64) -> (crate::Model, Vec<f64>) {
        let mut rng = SplitMix64::new(seed);
        let mut b = ModelBuilder::new(format!("scene{seed}"));
        let mut world = Body::massless("world");
        for k in 0..(seed % 3) {
            let tilt =
                SE3::from_axis_angle(&Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), 0.0), 0.2 * k as f64);
            world = world.with_collision(CollisionShape::new(
                Geometry::Plane,
                SE3::new(tilt.rot, Vec3::new(0.0, 0.0, rng.range(-0.5, 0.5))),
            ));
        }
        b.add_link(world);
        let geometry = |rng: &mut SplitMix64| match rng.next_u64() % 4 {
            0 => Geometry::Sphere { radius: rng.range(0.05, 0.3) },
            1 => Geometry::Box {
                half_extents: Vec3::new(rng.range(0.05, 0.3), rng.range(0.05, 0.3), rng.range(0.05, 0.3)),
            },
            2 => Geometry::Capsule { radius: rng.range(0.05, 0.2), length: rng.range(0.0, 0.4) },
            _ => Geometry::Cylinder { radius: rng.range(0.05, 0.2), length: rng.range(0.1, 0.4) },
        };
        let shape = |rng: &mut SplitMix64| {
            let pose = SE3::new(
                SE3::from_axis_angle(
                    &Vec3::new(rng.normal(), rng.normal(), rng.normal()).normalize(),
                    rng.range(0.0, 3.0),
                )
                .rot,
                Vec3::new(rng.range(-0.1, 0.1), rng.range(-0.1, 0.1), rng.range(-0.1, 0.1)),
            );
            CollisionShape::new(geometry(rng), pose).with_filter(1 + (rng.next_u64() % 3) as u32, u32::MAX)
        };
        let nfree = 10 + (rng.next_u64() % 30) as usize;
        for k in 0..nfree {
            let mut body =
                Body::new(format!("free{k}"), Inertia::solid_sphere(1.0, 0.1)).with_collision(shape(&mut rng));
            if rng.uniform() < 0.3 {
                body = body.with_collision(shape(&mut rng));
            }
            b.add_body("world", Joint::free(format!("jf{k}")), body);
        }
        for c in 0..2 {
            let mut parent = "world".to_string();
            for k in 0..4 {
                let name = format!("c{c}l{k}");
                let joint = if k == 0 {
                    Joint::fixed(format!("c{c}j{k}"))
                        .with_placement(SE3::from_translation(Vec3::new(c as f64, 0.0, 0.5)))
                } else {
                    Joint::revolute(format!("c{c}j{k}"), Vec3::y())
                        .with_placement(SE3::from_translation(Vec3::new(0.0, 0.0, 0.2)))
                };
                b.add_body(
                    &parent,
                    joint,
                    Body::new(&name, Inertia::solid_sphere(1.0, 0.1)).with_collision(shape(&mut rng)),
                );
                parent = name;
            }
        }
        let model = b.build().unwrap();
        let mut q = model.random_configuration(seed).as_slice().to_vec();
        // Free bodies in a 2 m cube (random_configuration leaves translations near 0).
        for k in 0..nfree {
            let j = model.joint_index(&format!("jf{k}")).unwrap();
            let a = model.q_index(j);
            for d in 0..3 {
                q[a + d] = rng.range(-1.0, 1.0);
            }
            let u = UnitQuaternion::from_euler_angles(rng.range(-3.0, 3.0), rng.range(-3.0, 3.0), rng.range(-3.0, 3.0));
            q[a + 3..a + 7].copy_from_slice(&[u.w, u.i, u.j, u.k]);
        }
        (model, q)
    }

    /// A shape's world box computed independently of the broad phase: spheres and
    /// capsules from their centre(s) and radius, boxes from their eight corners, other
    /// convex cores from their vertices.
    fn reference_box(cm: &CollisionModel, i: usize, pose: &SE3) -> Aabb {
        let s = &cm.shapes[i];
        let pts: Vec<Vec3> = match s.kind {
            crate::collision::ShapeKind::Box => {
                let ShapeCore::Convex(p) = &s.core else { unreachable!() };
                let h = p.vertices.iter().fold(Vec3::zeros(), |m, v| m.sup(&v.abs()));
                (0..8)
                    .map(|k| {
                        let c = Vec3::new(
                            if k & 1 == 0 { -h.x } else { h.x },
                            if k & 2 == 0 { -h.y } else { h.y },
                            if k & 4 == 0 { -h.z } else { h.z },
                        );
                        pose.rot * c + pose.trans
                    })
                    .collect()
            }
            _ => {
                let ShapeCore::Convex(p) = &s.core else { unreachable!() };
                p.vertices.iter().map(|v| pose.rot * v + pose.trans).collect()
            }
        };
        let mut b = Aabb::empty();
        for p in &pts {
            b = b.merge(&Aabb { min: *p, max: *p });
        }
        b.inflated(s.radius)
    }

    /// Sweep and prune against brute force over all pairs, on 120 random scenes, with
    /// and without a margin, repeated after a small motion (exercising the repaired order).
    #[test]
    fn sweep_and_prune_matches_brute_force() {
        let mut total = 0;
        for seed in 0..120 {
            let (model, q0) = scene(seed);
            let cm = model.collision_model();
            let mut data = Data::new(&model);
            let mut bp = BroadPhase::new();
            let mut q = q0.clone();
            for step in 0..3 {
                if step > 0 {
                    let v: Vec<f64> =
                        (0..model.nv()).map(|k| 0.05 * ((seed as usize + k * 7 + step) % 5) as f64 - 0.1).collect();
                    q = model
                        .integrate(&nalgebra::DVector::from_vec(q), &nalgebra::DVector::from_vec(v), 1.0)
                        .unwrap()
                        .as_slice()
                        .to_vec();
                }
                crate::dynamics::forward_kinematics(&model, &mut data, &q).unwrap();
                let poses: Vec<SE3> = cm.shapes.iter().map(|s| s.world_pose(&data.x_world)).collect();
                for margin in [0.0, 0.05] {
                    let got = bp.find_pairs(cm, &poses, margin).unwrap().to_vec();
                    let mut want = vec![];
                    let n = cm.shapes.len();
                    for i in 0..n {
                        for j in i + 1..n {
                            if !cm.allows(i, j) {
                                continue;
                            }
                            let (hi, hj) = (
                                matches!(cm.shapes[i].core, ShapeCore::HalfSpace),
                                matches!(cm.shapes[j].core, ShapeCore::HalfSpace),
                            );
                            let hit = match (hi, hj) {
                                (true, true) => false,
                                (false, false) => {
                                    let a = reference_box(cm, i, &poses[i]).inflated(margin / 2.0);
                                    let b = reference_box(cm, j, &poses[j]).inflated(margin / 2.0);
                                    a.overlaps(&b)
                                }
                                _ => {
                                    let (h, s) = if hi { (i, j) } else { (j, i) };
                                    let n = poses[h].rot * Vec3::z();
                                    let ShapeCore::Convex(p) = &cm.shapes[s].core else { unreachable!() };
                                    let low = p
                                        .vertices
                                        .iter()
                                        .map(|v| n.dot(&(poses[s].act_point(v) - poses[h].trans)))
                                        .fold(f64::INFINITY, f64::min);
                                    low - cm.shapes[s].radius <= margin
                                }
                            };
                            if hit {
                                want.push((i as u32, j as u32));
                            }
                        }
                    }
                    assert_eq!(got, want, "seed {seed} step {step} margin {margin}");
                    total += want.len();
                }
            }
        }
        assert!(total > 1000, "the scenes must produce pairs ({total})");
    }

    /// Terrain meshes enter the sweep with their shape-frame box placed by the pose;
    /// two static shapes are never paired.
    #[test]
    fn triangle_meshes_are_boxed_by_their_placed_bounds() {
        use crate::collision::Material;
        use crate::collision::{CollisionFilter, Polytope, ShapeInstance, ShapeKind, TriMeshCore};
        use std::sync::Arc;
        let vertices = vec![Vec3::new(0.0, 0.0, 0.0), Vec3::new(2.0, 0.0, 0.0), Vec3::new(0.0, 1.0, 0.0)];
        let mesh =
            TriMeshCore::new(&crate::collision::TriangleMesh { vertices, triangles: vec![[0, 1, 2]], source: None })
                .expect("valid mesh");
        let instance = |body, core, radius, kind| ShapeInstance {
            body,
            index_on_body: 0,
            local: SE3::identity(),
            core,
            radius,
            kind,
            material: Material::default(),
            group: 1,
            mask: u32::MAX,
        };
        let cm = CollisionModel {
            shapes: vec![
                instance(Some(0), ShapeCore::Convex(Arc::new(Polytope::point())), 0.1, ShapeKind::Sphere),
                instance(None, ShapeCore::TriMesh(Arc::new(mesh)), 0.0, ShapeKind::Mesh),
                instance(None, ShapeCore::HalfSpace, 0.0, ShapeKind::Plane),
            ],
            filter: CollisionFilter {
                rigid_group: vec![Some(0)],
                parent_group: vec![None],
                articulation: vec![0],
                self_collision: vec![true],
                skip_parent_child: true,
                excluded_pairs: vec![],
            },
        };
        // The mesh turned by 90° about z and lifted: it covers x ∈ [−1, 0], y ∈ [0, 2], z = 1.
        let mesh_pose = SE3::new(SE3::from_axis_angle(&Vec3::z(), std::f64::consts::FRAC_PI_2).rot, Vec3::z());
        let plane_pose = SE3::from_translation(Vec3::new(0.0, 0.0, 0.5));
        let mut bp = BroadPhase::new();
        for (centre, want) in [
            (Vec3::new(-0.5, 1.5, 1.05), vec![(0, 1)]),
            (Vec3::new(0.5, 1.5, 1.05), vec![]),
            (Vec3::new(-0.5, 1.9, 0.55), vec![(0, 2)]),
            (Vec3::new(-1.05, 1.0, 0.95), vec![(0, 1)]),
        ] {
            let poses = [SE3::from_translation(centre), mesh_pose, plane_pose];
            assert_eq!(bp.find_pairs(&cm, &poses, 0.0).unwrap(), want.as_slice(), "sphere at {centre:?}");
        }
        // Within the margin of the mesh's box: paired.
        let poses = [SE3::from_translation(Vec3::new(0.13, 1.0, 1.0)), mesh_pose, plane_pose];
        assert_eq!(bp.find_pairs(&cm, &poses, 0.1).unwrap(), [(0, 1)].as_slice());
        assert!(matches!(bp.find_pairs(&cm, &poses[..2], 0.0), Err(Error::Dimension { .. })));
    }

    #[test]
    fn repaired_and_fresh_orders_agree_and_repair_is_cheap() {
        let (model, q) = scene(7);
        let cm = model.collision_model();
        let mut data = Data::new(&model);
        crate::dynamics::forward_kinematics(&model, &mut data, &q).unwrap();
        let poses: Vec<SE3> = cm.shapes.iter().map(|s| s.world_pose(&data.x_world)).collect();
        let mut bp = BroadPhase::new();
        let first = bp.find_pairs(cm, &poses, 0.01).unwrap().to_vec();
        let order = bp.order.clone();
        assert_eq!(bp.find_pairs(cm, &poses, 0.01).unwrap(), first.as_slice());
        assert_eq!(bp.order, order);
        bp.forget_order();
        assert_eq!(bp.find_pairs(cm, &poses, 0.01).unwrap(), first.as_slice());
        // A reversed order is repaired or re-sorted to the same order.
        bp.order.reverse();
        assert_eq!(bp.find_pairs(cm, &poses, 0.01).unwrap(), first.as_slice());
        assert_eq!(bp.order, order);
        let mut v = vec![3, 1, 2, 0];
        assert!(!insertion_sort(&mut v, |a: &i32, b: &i32| a < b, 2));
        let mut v = vec![0, 2, 1, 3];
        assert!(insertion_sort(&mut v, |a: &i32, b: &i32| a < b, 2) && v == [0, 1, 2, 3]);
    }
}
