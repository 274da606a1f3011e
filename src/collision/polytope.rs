//! Convex polytopes with face, edge and vertex adjacency: the cores of boxes, convex
//! meshes, cylinders (as a documented prism approximation), capsules (a segment),
//! spheres (a point) and terrain triangles.
//!
//! A polytope may be degenerate (a point or a segment: no faces) — the narrow phase
//! handles those through the same feature machinery, with the shape's sweep radius.

pub use super::mesh_check::{PolyEdge, NO_FACE};
use crate::math::Vec3;

/// Relative tolerance of mesh validation (convex meshes and terrain): two used vertices
/// closer than `MESH_TOLERANCE × size` are duplicates, and a triangle whose smallest
/// height is below it has zero area (`size`: the largest extent of the bounding box of
/// the used vertices).
pub const MESH_TOLERANCE: f64 = 1e-9;

/// Relative tolerance of the convexity check of [`Polytope::from_convex_mesh`]: a vertex
/// may lie up to `CONVEXITY_TOLERANCE × size` in front of a triangle's plane. It is loose
/// enough for meshes stored in single precision (STL, most OBJ exports: relative
/// rounding about 6e-8).
pub const CONVEXITY_TOLERANCE: f64 = 1e-6;

/// Relative tolerance of [`Polytope::validate`].
pub const VALIDATE_TOLERANCE: f64 = 1e-8;

/// Relative tolerance of the internal check of every hull built by
/// [`Polytope::convex_hull`] (ten times the face-merging tolerance).
const HULL_CHECK_TOLERANCE: f64 = 1e-8;

/// Number of sides of the prism standing for a cylinder in compiled models (see
/// [`Polytope::cylinder`]): radial error `r (1 − cos(π/16)) ≈ 0.019 r`.
pub const CYLINDER_SEGMENTS: usize = 16;

/// A planar convex face.
#[derive(Clone, Debug, PartialEq)]
pub struct PolyFace {
    /// Unit outward normal.
    pub normal: Vec3,
    /// Plane offset: `normal · x = offset` on the face.
    pub offset: f64,
    /// Vertex loop, counter-clockwise seen from outside.
    pub vertices: Vec<u32>,
    /// Edge indices, `edges[k]` joining `vertices[k]` and `vertices[k+1]`.
    pub edges: Vec<u32>,
}

/// A convex polytope in its shape frame.
#[derive(Clone, Debug, PartialEq)]
pub struct Polytope {
    /// Vertex positions.
    pub vertices: Vec<Vec3>,
    /// Edges.
    pub edges: Vec<PolyEdge>,
    /// Faces (empty for a point or a segment).
    pub faces: Vec<PolyFace>,
    /// An interior point (the vertex centroid).
    pub center: Vec3,
    /// Largest distance from `center` to a vertex.
    pub bounding_radius: f64,
}

impl Polytope {
    /// A single point at the origin (the core of a sphere).
    pub fn point() -> Polytope {
        Polytope {
            vertices: vec![Vec3::zeros()],
            edges: vec![],
            faces: vec![],
            center: Vec3::zeros(),
            bounding_radius: 0.0,
        }
    }

    /// The segment from `(0, 0, −half_length)` to `(0, 0, half_length)` (the core of a capsule).
    pub fn segment(half_length: f64) -> Polytope {
        Polytope {
            vertices: vec![Vec3::new(0.0, 0.0, -half_length), Vec3::new(0.0, 0.0, half_length)],
            edges: vec![PolyEdge { v: [0, 1], faces: [NO_FACE, NO_FACE] }],
            faces: vec![],
            center: Vec3::zeros(),
            bounding_radius: half_length,
        }
    }

    /// An axis-aligned box centred at the origin with the given half extents.
    ///
    /// Vertex `i` has coordinates `(±hx, ±hy, ±hz)` with the sign of axis k negative
    /// when bit k of i is 0.
    pub fn cuboid(half_extents: &Vec3) -> Polytope {
        let h = half_extents;
        let vertices: Vec<Vec3> = (0..8)
            .map(|i| {
                Vec3::new(
                    if i & 1 == 0 { -h.x } else { h.x },
                    if i & 2 == 0 { -h.y } else { h.y },
                    if i & 4 == 0 { -h.z } else { h.z },
                )
            })
            .collect();
        // faces as CCW loops seen from outside: −x, +x, −y, +y, −z, +z
        let loops: [([u32; 4], Vec3); 6] = [
            ([0, 4, 6, 2], -Vec3::x()),
            ([1, 3, 7, 5], Vec3::x()),
            ([0, 1, 5, 4], -Vec3::y()),
            ([2, 6, 7, 3], Vec3::y()),
            ([0, 2, 3, 1], -Vec3::z()),
            ([4, 5, 7, 6], Vec3::z()),
        ];
        let faces = loops.iter().map(|(l, n)| (l.to_vec(), *n)).collect::<Vec<_>>();
        Polytope::from_faces(vertices, faces)
    }

    /// Builds edges and adjacency from vertex loops (CCW seen from outside) with their
    /// unit outward normals. The input must describe a closed convex polytope; callers
    /// validate before, or check the result with [`Polytope::validate`].
    ///
    /// Each face's `offset` is the largest `normal · x` over its loop's vertices (all
    /// equal for an exactly planar face). Edges are numbered in order of first use;
    /// `edges[e].v` is sorted (low index first), `edges[e].faces[0]` is the face whose
    /// loop runs from `v[0]` to `v[1]` and `faces[1]` the face running from `v[1]` to
    /// `v[0]`.
    pub fn from_faces(vertices: Vec<Vec3>, loops: Vec<(Vec<u32>, Vec3)>) -> Polytope {
        let mut edges: Vec<PolyEdge> = vec![];
        let mut index: super::mesh_check::IntMap<(u32, u32), u32> = Default::default();
        let mut faces = Vec::with_capacity(loops.len());
        for (f, (l, n)) in loops.into_iter().enumerate() {
            let mut fe = Vec::with_capacity(l.len());
            for k in 0..l.len() {
                let (i, j) = (l[k], l[(k + 1) % l.len()]);
                let key = (i.min(j), i.max(j));
                let e = *index.entry(key).or_insert_with(|| {
                    edges.push(PolyEdge { v: [key.0, key.1], faces: [NO_FACE, NO_FACE] });
                    edges.len() as u32 - 1
                });
                let slot = &mut edges[e as usize].faces;
                // the face running v[0] → v[1] goes first; on invalid input (two faces
                // running the same way) fall back to the free slot — `validate` reports it
                let preferred = if i < j { 0 } else { 1 };
                if slot[preferred] == NO_FACE {
                    slot[preferred] = f as u32;
                } else if slot[1 - preferred] == NO_FACE {
                    slot[1 - preferred] = f as u32;
                }
                fe.push(e);
            }
            let offset = l.iter().map(|&i| n.dot(&vertices[i as usize])).fold(f64::NEG_INFINITY, f64::max);
            faces.push(PolyFace { normal: n, offset, vertices: l, edges: fe });
        }
        let center = vertices.iter().sum::<Vec3>() / vertices.len() as f64;
        let bounding_radius = vertices.iter().map(|v| (v - center).norm()).fold(0.0, f64::max);
        Polytope { vertices, edges, faces, center, bounding_radius }
    }

    /// The polytope bounded by a closed, consistently oriented triangle mesh, which must
    /// be convex: coplanar neighbouring triangles are merged into polygonal faces.
    /// Errors name the defect (non-finite or duplicate vertices, zero-area or degenerate
    /// triangles, open or non-manifold edges, inconsistent winding, non-convexity).
    ///
    /// Checks, in order (`size`: largest extent of the bounding box of the vertices used
    /// by the triangles; tolerances relative to it): at least 4 triangles; finite
    /// vertices; indices in range; no triangle repeating a vertex; no two used vertices
    /// within [`MESH_TOLERANCE`]`·size`; no triangle of height ≤ [`MESH_TOLERANCE`]`·size`;
    /// every edge shared by exactly two triangles running along it in opposite directions
    /// (closed, manifold, consistently wound); one connected piece with Euler
    /// characteristic V − E + F = 2; positive enclosed volume (outward winding: all
    /// triangles counter-clockwise seen from outside); convexity: no used vertex more
    /// than [`CONVEXITY_TOLERANCE`]`·size` in front of any triangle's plane (the error names
    /// the vertex and the triangle of the largest violation).
    ///
    /// The polytope is then built as the exact convex hull of the used vertices
    /// ([`Polytope::convex_hull`]), which for a convex mesh is the same solid with the
    /// coplanar triangles merged into polygons and the vertices in the middle of
    /// straight edges or inside flat faces dropped (slight concavities within the
    /// tolerance are flattened). Its vertex numbering is its own (the used vertices in
    /// increasing mesh order, minus the dropped ones). A mesh whose volume differs from
    /// its hull's by more than 1e-4 relative (one folding over itself) is rejected.
    pub fn from_convex_mesh(mesh: &crate::collision::TriangleMesh) -> Result<Polytope, String> {
        use super::mesh_check::{check_areas, check_duplicates, check_indices, edge_table, fmt_point, size};
        let (vertices, triangles) = (&mesh.vertices, &mesh.triangles);
        let used = check_indices(vertices, triangles, 4)?;
        let l = size(vertices, &used);
        check_duplicates(vertices, &used, MESH_TOLERANCE * l)?;
        check_areas(vertices, triangles, MESH_TOLERANCE * l)?;
        let (edges, _) = edge_table(triangles)?;
        let open: Vec<&PolyEdge> = edges.iter().filter(|e| e.faces.contains(&NO_FACE)).collect();
        if let Some(e) = open.first() {
            let t = if e.faces[0] == NO_FACE { e.faces[1] } else { e.faces[0] };
            return Err(format!(
                "open mesh: edge ({}, {}) of triangle {t} has no neighbouring triangle across it ({} boundary edge{} \
                 in all); a convex mesh must be closed",
                e.v[0],
                e.v[1],
                open.len(),
                if open.len() == 1 { "" } else { "s" }
            ));
        }
        // connected pieces (union–find over triangles sharing an edge)
        let mut parent: Vec<u32> = (0..triangles.len() as u32).collect();
        fn root(parent: &mut [u32], mut i: u32) -> u32 {
            while parent[i as usize] != i {
                parent[i as usize] = parent[parent[i as usize] as usize];
                i = parent[i as usize];
            }
            i
        }
        for e in &edges {
            let (a, b) = (root(&mut parent, e.faces[0]), root(&mut parent, e.faces[1]));
            parent[a.max(b) as usize] = a.min(b);
        }
        if let Some(t) = (0..triangles.len() as u32).find(|&t| root(&mut parent, t) != 0) {
            let pieces = (0..triangles.len() as u32).filter(|&t| root(&mut parent, t) == t).count();
            return Err(format!(
                "the mesh consists of {pieces} separate pieces (triangle 0 and triangle {t} are not connected through \
                 shared edges); a convex mesh must be one closed surface"
            ));
        }
        let nv = used.iter().filter(|&&u| u).count() as i64;
        let euler = nv - edges.len() as i64 + triangles.len() as i64;
        if euler != 2 {
            return Err(format!(
                "the mesh is not a closed surface of genus 0: V − E + F = {nv} − {} + {} = {euler} (a convex surface \
                 has 2)",
                edges.len(),
                triangles.len()
            ));
        }
        let used_points: Vec<Vec3> = vertices.iter().zip(&used).filter(|(_, &u)| u).map(|(p, _)| *p).collect();
        let centroid = used_points.iter().sum::<Vec3>() / used_points.len() as f64;
        let volume: f64 = triangles
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| vertices[i as usize] - centroid);
                a.dot(&b.cross(&c)) / 6.0
            })
            .sum();
        let vol_tol = MESH_TOLERANCE * l * l * l;
        if volume.abs() <= vol_tol {
            return Err(format!("the mesh encloses no volume (signed volume {volume:.3e}): it is flat"));
        }
        if volume < 0.0 {
            return Err(format!(
                "the mesh is inside out: its triangles are wound clockwise seen from outside (signed volume \
                 {volume:.6e} < 0); reverse the vertex order of every triangle"
            ));
        }
        let tol = CONVEXITY_TOLERANCE * l;
        let mut worst: Option<(usize, usize, f64)> = None;
        for (t, tri) in triangles.iter().enumerate() {
            let [a, b, c] = tri.map(|i| vertices[i as usize]);
            let n = (b - a).cross(&(c - a)).normalize();
            let offset = n.dot(&((a + b + c) / 3.0));
            for (i, p) in vertices.iter().enumerate() {
                let d = n.dot(p) - offset;
                if used[i] && d > tol && worst.is_none_or(|w| d > w.2) {
                    worst = Some((i, t, d));
                }
            }
        }
        if let Some((i, t, d)) = worst {
            let tri = triangles[t];
            return Err(format!(
                "non-convex mesh declared convex: vertex {i} at {} lies {d:.6e} in front of the plane of triangle {t} \
                 (vertices {}, {}, {}), beyond the tolerance {tol:.3e}",
                fmt_point(&vertices[i]),
                tri[0],
                tri[1],
                tri[2]
            ));
        }
        let poly = Polytope::convex_hull(&used_points).map_err(|e| format!("convex hull of the mesh: {e}"))?;
        let hull_volume = poly.volume();
        if (hull_volume - volume).abs() > 1e-4 * hull_volume {
            return Err(format!(
                "the mesh folds over itself: it encloses a volume of {volume:.6e} but its convex hull {hull_volume:.6e}"
            ));
        }
        Ok(poly)
    }

    /// The convex hull of a point set (at least four points not all in a plane).
    ///
    /// Built by Quickhull with exact orientation predicates ([`super::hull`]), then
    /// coplanar triangles are merged into convex polygon faces and vertices in the middle
    /// of straight edges dropped ([`super::face_merge`]). Every vertex of the result is
    /// one of the input points (in increasing input order); points inside the hull, on
    /// its faces or on its edges are not vertices.
    ///
    /// Errors: fewer than 4 points, a non-finite point (named), and point sets that are
    /// coincident, collinear or flat within `1e-9 × size` (`size`: the largest extent of
    /// their bounding box).
    pub fn convex_hull(points: &[Vec3]) -> Result<Polytope, String> {
        let tri = super::hull::convex_hull_triangulation(points)?;
        let loops = super::face_merge::merge_coplanar(points, &tri)?;
        let mut index = vec![u32::MAX; points.len()];
        for (l, _) in &loops {
            for &i in l {
                index[i as usize] = 0;
            }
        }
        let mut vertices = vec![];
        for (i, slot) in index.iter_mut().enumerate() {
            if *slot == 0 {
                *slot = vertices.len() as u32;
                vertices.push(points[i]);
            }
        }
        let loops = loops.into_iter().map(|(l, n)| (l.into_iter().map(|i| index[i as usize]).collect(), n)).collect();
        let poly = Polytope::from_faces(vertices, loops);
        poly.check(HULL_CHECK_TOLERANCE, false).map_err(|e| format!("internal error: the hull is invalid: {e}"))?;
        Ok(poly)
    }

    /// A prism with `segments` sides approximating the cylinder of the given radius and
    /// full length along z, centred at the origin. Its vertices lie on the cylinder's two
    /// rim circles (the prism is inscribed): vertex `k` (`k < segments`) is the bottom
    /// vertex at angle `2πk/segments` from +x, vertex `segments + k` the top vertex above
    /// it. Faces: the sides (face k between vertices k and k+1, outward normal at angle
    /// `π(2k+1)/segments`), then the bottom (−z) and the top (+z).
    ///
    /// The side faces lie at distance `r cos(π/segments)` from the axis, so the prism
    /// misses at most `r (1 − cos(π/segments))` of the radius: 1.9 % with the 16 segments
    /// the model builder uses ([`CYLINDER_SEGMENTS`]), 0.5 % with 32, 0.1 % with 64.
    /// Fewer than 3 segments are taken as 3. `radius` and `length` must be finite and
    /// positive (the model builder checks them).
    pub fn cylinder(radius: f64, length: f64, segments: usize) -> Polytope {
        let s = segments.max(3);
        let h = length / 2.0;
        let step = 2.0 * std::f64::consts::PI / s as f64;
        let mut vertices = Vec::with_capacity(2 * s);
        for z in [-h, h] {
            for k in 0..s {
                let a = step * k as f64;
                vertices.push(Vec3::new(radius * a.cos(), radius * a.sin(), z));
            }
        }
        let s32 = s as u32;
        let mut loops: Vec<(Vec<u32>, Vec3)> = (0..s32)
            .map(|k| {
                let k1 = (k + 1) % s32;
                let a = step * (k as f64 + 0.5);
                (vec![k, k1, s32 + k1, s32 + k], Vec3::new(a.cos(), a.sin(), 0.0))
            })
            .collect();
        loops.push(((0..s32).rev().collect(), -Vec3::z()));
        loops.push(((s32..2 * s32).collect(), Vec3::z()));
        Polytope::from_faces(vertices, loops)
    }

    /// Volume enclosed by the faces (divergence theorem over the face loops); 0 for a
    /// point or a segment.
    pub fn volume(&self) -> f64 {
        let c = self.center;
        self.faces
            .iter()
            .map(|f| {
                let p0 = self.vertices[f.vertices[0] as usize] - c;
                (1..f.vertices.len() - 1)
                    .map(|k| {
                        let a = self.vertices[f.vertices[k] as usize] - c;
                        let b = self.vertices[f.vertices[k + 1] as usize] - c;
                        p0.dot(&a.cross(&b)) / 6.0
                    })
                    .sum::<f64>()
            })
            .sum()
    }

    /// Volume, centroid and rotational inertia about the centroid for unit density, by
    /// the divergence theorem over the tetrahedra from the origin to each face triangle
    /// (`∫ x xᵀ dV = V/20 (a aᵀ + b bᵀ + c cᵀ + s sᵀ)`, `s = a + b + c`). `None` for a
    /// point, a segment, or a polytope of non-positive or non-finite volume.
    pub fn mass_properties(&self) -> Option<(f64, Vec3, crate::math::Mat3)> {
        let (mut vol, mut first, mut second) = (0.0, Vec3::zeros(), crate::math::Mat3::zeros());
        for f in &self.faces {
            for k in 1..f.vertices.len().saturating_sub(1) {
                let [a, b, c] = [f.vertices[0], f.vertices[k], f.vertices[k + 1]].map(|i| self.vertices[i as usize]);
                let v = a.dot(&b.cross(&c)) / 6.0;
                let s = a + b + c;
                vol += v;
                first += s * (v / 4.0);
                second += (a * a.transpose() + b * b.transpose() + c * c.transpose() + s * s.transpose()) * (v / 20.0);
            }
        }
        if !(vol.is_finite() && vol > 0.0) {
            return None;
        }
        let com = first / vol;
        let about_com = second - com * com.transpose() * vol;
        Some((vol, com, crate::math::Mat3::identity() * about_com.trace() - about_com))
    }

    /// The faces as a closed triangle mesh (each face fanned from its first vertex,
    /// counter-clockwise seen from outside): the input a convex-mesh geometry takes.
    pub fn triangle_mesh(&self) -> crate::collision::TriangleMesh {
        let triangles = self
            .faces
            .iter()
            .flat_map(|f| {
                (1..f.vertices.len().saturating_sub(1)).map(move |k| [f.vertices[0], f.vertices[k], f.vertices[k + 1]])
            })
            .collect();
        crate::collision::TriangleMesh { vertices: self.vertices.clone(), triangles, source: None }
    }

    /// Checks the invariants of a built polytope with [`VALIDATE_TOLERANCE`] (see
    /// [`Polytope::validate_with_tolerance`]).
    pub fn validate(&self) -> Result<(), String> {
        self.validate_with_tolerance(VALIDATE_TOLERANCE)
    }

    /// Checks the invariants of a built polytope, with geometric tolerances
    /// `rel_tol × size` (`size`: largest extent of the vertices' bounding box):
    ///
    /// * finite vertices; `center` the vertex centroid; `bounding_radius` its largest
    ///   distance to a vertex;
    /// * a point (1 vertex, no edge), a segment (2 distinct vertices, one edge without
    ///   faces), or a solid:
    /// * every face: at least 3 distinct in-range vertices, a unit normal (to 1e-12),
    ///   `offset = normal · x` for its vertices, a loop counter-clockwise seen from
    ///   outside and convex (no corner inside the chord joining its neighbours),
    ///   `edges[k]` joining `vertices[k]` and `vertices[k+1]`;
    /// * every edge: distinct sorted vertices, unique, two faces with `faces[0]` running
    ///   `v[0] → v[1]` and `faces[1]` running back, each listing the edge;
    /// * every vertex on at least three faces; no vertex in front of any face plane
    ///   (convexity); Euler characteristic V − E + F = 2.
    pub fn validate_with_tolerance(&self, rel_tol: f64) -> Result<(), String> {
        self.check(rel_tol, true)
    }

    /// [`Polytope::validate_with_tolerance`]; with `global` false, convexity is checked
    /// only against the vertices of each face's neighbours (linear time instead of
    /// V × F: enough for a hull, convex by construction).
    fn check(&self, rel_tol: f64, global: bool) -> Result<(), String> {
        let nv = self.vertices.len();
        if nv == 0 {
            return Err("the polytope has no vertices".into());
        }
        if let Some(i) = self.vertices.iter().position(|v| !v.iter().all(|x| x.is_finite())) {
            return Err(format!("vertex {i} is not finite"));
        }
        let mut lo = self.vertices[0];
        let mut hi = lo;
        for v in &self.vertices {
            lo = lo.inf(v);
            hi = hi.sup(v);
        }
        let size = (hi - lo).max();
        let tol = rel_tol * size.max(f64::MIN_POSITIVE);
        let centroid = self.vertices.iter().sum::<Vec3>() / nv as f64;
        if (centroid - self.center).norm() > tol {
            return Err(format!("center {:?} is not the vertex centroid {:?}", self.center, centroid));
        }
        let radius = self.vertices.iter().map(|v| (v - self.center).norm()).fold(0.0, f64::max);
        if (radius - self.bounding_radius).abs() > tol {
            return Err(format!(
                "bounding radius {} differs from the largest vertex distance {radius}",
                self.bounding_radius
            ));
        }
        if self.faces.is_empty() {
            return match (nv, self.edges.as_slice()) {
                (1, []) => Ok(()),
                (2, [e]) if e.v == [0, 1] && e.faces == [NO_FACE, NO_FACE] => {
                    if (self.vertices[1] - self.vertices[0]).norm() > 0.0 {
                        Ok(())
                    } else {
                        Err("the segment's two vertices coincide".into())
                    }
                }
                _ => Err(format!(
                    "a polytope without faces must be a point or a segment; this one has {nv} vertices and {} edges",
                    self.edges.len()
                )),
            };
        }
        // edges
        let mut seen: super::mesh_check::IntSet<(u32, u32)> = Default::default();
        for (e, edge) in self.edges.iter().enumerate() {
            let [a, b] = edge.v;
            if a >= b || b as usize >= nv {
                return Err(format!("edge {e} has vertices ({a}, {b}): they must be in range and sorted"));
            }
            if !seen.insert((a, b)) {
                return Err(format!("edge {e} ({a}, {b}) is listed twice"));
            }
            for (s, &f) in edge.faces.iter().enumerate() {
                let face = self.faces.get(f as usize).ok_or_else(|| {
                    format!("edge {e} ({a}, {b}) has no face on side {s} (face index {f}): the surface is open")
                })?;
                let (from, to) = if s == 0 { (a, b) } else { (b, a) };
                let m = face.vertices.len();
                let k = (0..m).find(|&k| face.vertices[k] == from && face.vertices[(k + 1) % m] == to);
                match k {
                    Some(k) if face.edges.get(k) == Some(&(e as u32)) => {}
                    Some(k) => {
                        return Err(format!(
                            "face {f} runs along edge {e} ({from} → {to}) at corner {k} but lists edge {:?} there",
                            face.edges.get(k)
                        ))
                    }
                    None => {
                        return Err(format!(
                            "edge {e} ({a}, {b}) lists face {f} on side {s}, but that face's loop does not run \
                             {from} → {to}"
                        ))
                    }
                }
            }
        }
        // faces
        let mut degree = vec![0usize; nv];
        let mut face_edge_refs = 0;
        for (f, face) in self.faces.iter().enumerate() {
            let l = &face.vertices;
            let m = l.len();
            if m < 3 {
                return Err(format!("face {f} has {m} vertices; at least 3 are needed"));
            }
            if face.edges.len() != m {
                return Err(format!("face {f} has {m} vertices but {} edges", face.edges.len()));
            }
            if let Some(&i) = l.iter().find(|&&i| i as usize >= nv) {
                return Err(format!("face {f} refers to vertex {i}, but there are only {nv}"));
            }
            for k in 0..m {
                if l[(k + 1)..].contains(&l[k]) {
                    return Err(format!("face {f} visits vertex {} twice", l[k]));
                }
                degree[l[k] as usize] += 1;
                let (i, j) = (l[k], l[(k + 1) % m]);
                let e = face.edges[k] as usize;
                if self.edges.get(e).map(|ed| ed.v) != Some([i.min(j), i.max(j)]) {
                    return Err(format!("face {f}: edge {e} at corner {k} does not join vertices {i} and {j}"));
                }
            }
            face_edge_refs += m;
            let n = face.normal;
            if !n.iter().all(|x| x.is_finite()) || (n.norm() - 1.0).abs() > 1e-12 {
                return Err(format!("face {f}: normal {n:?} is not a unit vector"));
            }
            if !face.offset.is_finite() {
                return Err(format!("face {f}: offset {} is not finite", face.offset));
            }
            let p = |k: usize| self.vertices[l[k % m] as usize];
            let mut newell = Vec3::zeros();
            for k in 0..m {
                let d = n.dot(&p(k)) - face.offset;
                if d.abs() > tol {
                    return Err(format!(
                        "face {f}: vertex {} is off the face plane by {d:.3e} (tolerance {tol:.3e})",
                        l[k]
                    ));
                }
                newell += (p(k) - p(0)).cross(&(p(k + 1) - p(0)));
                // corner k+1 may lie at most `tol` inside the chord joining its neighbours
                let turn = (p(k + 1) - p(k)).cross(&(p(k + 2) - p(k + 1))).dot(&n);
                if turn < -tol * (p(k + 2) - p(k)).norm() {
                    return Err(format!(
                        "face {f}: the loop turns clockwise (reflex corner) at vertex {} (seen from outside)",
                        l[(k + 1) % m]
                    ));
                }
            }
            if newell.dot(&n) <= -tol * size {
                return Err(format!("face {f}: the loop is clockwise seen from outside (against its normal)"));
            }
            // convexity: every vertex (of the neighbouring faces) behind the plane
            let in_front = |i: usize| -> Result<(), String> {
                let d = n.dot(&self.vertices[i]) - face.offset;
                if d > tol {
                    return Err(format!(
                        "not convex: vertex {i} lies {d:.3e} in front of face {f} (tolerance {tol:.3e})"
                    ));
                }
                Ok(())
            };
            if global {
                (0..nv).try_for_each(in_front)?;
            } else {
                for &e in &face.edges {
                    for g in self.edges[e as usize].faces {
                        self.faces[g as usize].vertices.iter().try_for_each(|&i| in_front(i as usize))?;
                    }
                }
            }
        }
        if face_edge_refs != 2 * self.edges.len() {
            return Err(format!(
                "the faces use {face_edge_refs} edge sides but the {} edges have {}",
                self.edges.len(),
                2 * self.edges.len()
            ));
        }
        if let Some(i) = degree.iter().position(|&d| d < 3) {
            return Err(format!("vertex {i} lies on {} face(s); every vertex of a solid needs at least 3", degree[i]));
        }
        let euler = nv as i64 - self.edges.len() as i64 + self.faces.len() as i64;
        if euler != 2 {
            return Err(format!(
                "Euler characteristic V − E + F = {nv} − {} + {} = {euler}, not 2",
                self.edges.len(),
                self.faces.len()
            ));
        }
        Ok(())
    }

    /// The vertex farthest along `dir` and its support value `dir · v`.
    pub fn support(&self, dir: &Vec3) -> (usize, f64) {
        let mut best = (0, f64::NEG_INFINITY);
        for (i, v) in self.vertices.iter().enumerate() {
            let s = dir.dot(v);
            if s > best.1 {
                best = (i, s);
            }
        }
        best
    }

    /// Start point and edge vector of edge `i`.
    pub fn edge_segment(&self, i: usize) -> (Vec3, Vec3) {
        let [a, b] = self.edges[i].v;
        let a = self.vertices[a as usize];
        (a, self.vertices[b as usize] - a)
    }
}
