//! Convex hull of a 3D point set by Quickhull (Barber, Dobkin & Huhdanpaa, "The Quickhull
//! algorithm for convex hulls", ACM TOMS 1996) with conflict lists, producing a
//! triangulation of the hull surface with triangle adjacency.
//!
//! Every visibility decision ("is point p strictly in front of triangle t?") is taken
//! with the exact predicate [`super::predicates::orient3d`], so the set of triangles
//! visible from the new point is exactly that of the current (exact) hull: a topological
//! disc bounded by a single horizon loop, whatever the rounding, with coplanar and
//! collinear points included. Points on the current hull (not strictly outside) are
//! discarded, so the result holds the input points that are vertices of the hull plus
//! possibly points added before a later point made them lie on an edge or a face; the
//! face-merging step ([`super::face_merge`]) merges coplanar triangles into polygons and
//! drops such points. Floating point is used only to pick the farthest conflict point
//! (a heuristic that does not affect correctness) and to detect (nearly) flat inputs up
//! front.
//!
//! Reassigning the conflict points of deleted triangles only to the new triangles is
//! exact: a point q in front of a deleted triangle F that is outside the new hull sees a
//! new triangle, since the segment from q to F's interior (inside the new hull) leaves the
//! new hull through a point strictly in front of F's plane, where no old triangle lies.

use super::predicates::orient3d;
use crate::math::Vec3;

/// A triangulated convex hull: triangles counter-clockwise seen from outside, with
/// `adjacency[t][k]` the triangle across edge `(triangles[t][k], triangles[t][(k+1)%3])`.
/// Vertex indices refer to the input points.
#[derive(Clone, Debug)]
pub struct HullTriangulation {
    /// Triangles (indices into the input points).
    pub triangles: Vec<[u32; 3]>,
    /// Neighbouring triangle across each edge.
    pub adjacency: Vec<[u32; 3]>,
}

/// Relative flatness tolerance for hull inputs: point sets whose points all lie within
/// `FLAT_TOLERANCE × size` of a line (or a plane) through three (four) of them are
/// rejected, `size` being the largest extent of their bounding box.
pub const FLAT_TOLERANCE: f64 = 1e-9;

struct Face {
    v: [u32; 3],
    adj: [u32; 3],
    normal: Vec3,
    offset: f64,
    outside: Vec<u32>,
    alive: bool,
}

const NONE: u32 = u32::MAX;

/// The triangulated convex hull of `points`.
///
/// Points closer than [`WELD_TOLERANCE`] (relative) to an earlier point are ignored.
/// Errors: fewer than four points, a non-finite coordinate or one beyond 1e100 in
/// magnitude (naming the point), fewer than
/// four distinct points, all points (nearly) collinear or (nearly) coplanar within
/// [`FLAT_TOLERANCE`].
pub fn convex_hull_triangulation(points: &[Vec3]) -> Result<HullTriangulation, String> {
    if points.len() < 4 {
        return Err(format!("a convex hull needs at least 4 points not in a plane; got {}", points.len()));
    }
    if points.len() >= NONE as usize {
        return Err(format!("too many points for a hull ({})", points.len()));
    }
    if let Some((i, p)) = points.iter().enumerate().find(|(_, p)| !p.iter().all(|x| x.is_finite())) {
        return Err(format!("point {i} is not finite: ({}, {}, {})", p.x, p.y, p.z));
    }
    if let Some((i, p)) = points.iter().enumerate().find(|(_, p)| p.amax() > super::mesh_check::MAX_COORDINATE) {
        return Err(format!(
            "point {i} is too far from the origin: ({}, {}, {}) (|coordinate| > {:e})",
            p.x,
            p.y,
            p.z,
            super::mesh_check::MAX_COORDINATE
        ));
    }
    let kept = weld(points);
    if kept.len() == 1 {
        let p = points[0];
        return Err(format!("all {} points coincide (at ({}, {}, {}))", points.len(), p.x, p.y, p.z));
    }
    if kept.len() < 4 {
        return Err(format!(
            "a convex hull needs at least 4 distinct points not in a plane; the {} points have only {} distinct \
             positions",
            points.len(),
            kept.len()
        ));
    }
    let simplex = initial_simplex(points, &kept)?;
    let mut hull = Quickhull::new(points, &kept, simplex);
    hull.run()?;
    Ok(hull.finish())
}

/// Relative distance below which hull input points are merged (the first one in input
/// order is kept): `WELD_TOLERANCE × size`, `size` the largest extent of the bounding
/// box. Points dropped this way lie at most that far outside the hull.
pub const WELD_TOLERANCE: f64 = 5e-10;

/// Indices of the points kept after merging those closer than the weld distance to an
/// earlier kept point (hash grid with cells of the weld distance).
fn weld(points: &[Vec3]) -> Vec<u32> {
    let mut lo = points[0];
    let mut hi = points[0];
    for p in points {
        lo = lo.inf(p);
        hi = hi.sup(p);
    }
    let tol = WELD_TOLERANCE * (hi - lo).max();
    if tol == 0.0 {
        return vec![0];
    }
    let key = |p: &Vec3| -> [i64; 3] { [0, 1, 2].map(|k| ((p[k] - lo[k]) / tol).floor() as i64) };
    let mut cells: super::mesh_check::IntMap<[i64; 3], Vec<u32>> = Default::default();
    let mut kept = vec![];
    'points: for (i, p) in points.iter().enumerate() {
        let c = key(p);
        for dx in -1..=1 {
            for dy in -1..=1 {
                for dz in -1..=1 {
                    if let Some(list) = cells.get(&[c[0] + dx, c[1] + dy, c[2] + dz]) {
                        if list.iter().any(|&j| (points[j as usize] - p).norm() <= tol) {
                            continue 'points;
                        }
                    }
                }
            }
        }
        cells.entry(c).or_default().push(i as u32);
        kept.push(i as u32);
    }
    kept
}

/// Four points spanning a tetrahedron of clearly positive volume: the two extreme points
/// farthest apart among the six axis extremes, the point farthest from their line, and
/// the point farthest from the plane of those three (searching the `kept` points only).
fn initial_simplex(points: &[Vec3], kept: &[u32]) -> Result<[usize; 4], String> {
    let n = points.len();
    let at = |i: usize| points[i];
    let first = kept[0] as usize;
    let mut lo = [first; 3];
    let mut hi = [first; 3];
    for &i in kept {
        let (i, p) = (i as usize, points[i as usize]);
        for k in 0..3 {
            if p[k] < at(lo[k])[k] {
                lo[k] = i;
            }
            if p[k] > at(hi[k])[k] {
                hi[k] = i;
            }
        }
    }
    let size = (0..3).map(|k| at(hi[k])[k] - at(lo[k])[k]).fold(0.0, f64::max);
    let tol = FLAT_TOLERANCE * size;
    let extremes: Vec<usize> = lo.iter().chain(hi.iter()).copied().collect();
    let mut best = (first, first, -1.0);
    for &i in &extremes {
        for &j in &extremes {
            let d = (at(i) - at(j)).norm();
            if d > best.2 {
                best = (i, j, d);
            }
        }
    }
    let (i0, i1, span) = best;
    let axis = (at(i1) - at(i0)) / span;
    let (mut i2, mut d2) = (i0, -1.0);
    for &i in kept {
        let r = at(i as usize) - at(i0);
        let d = (r - axis * axis.dot(&r)).norm();
        if d > d2 {
            (i2, d2) = (i as usize, d);
        }
    }
    if d2 <= tol {
        return Err(format!(
            "the {n} points are collinear: all lie within {d2:.3e} of the line through points {i0} and {i1} \
             (tolerance {tol:.3e})"
        ));
    }
    let normal = (at(i1) - at(i0)).cross(&(at(i2) - at(i0))).normalize();
    let (mut i3, mut d3) = (i0, -1.0);
    for &i in kept {
        let d = normal.dot(&(at(i as usize) - at(i0))).abs();
        if d > d3 {
            (i3, d3) = (i as usize, d);
        }
    }
    if d3 <= tol || orient3d(&at(i0), &at(i1), &at(i2), &at(i3)) == 0 {
        return Err(format!(
            "the {n} points are flat: all lie within {d3:.3e} of the plane through points {i0}, {i1} and {i2} \
             (tolerance {tol:.3e})"
        ));
    }
    Ok([i0, i1, i2, i3])
}

struct Quickhull<'a> {
    points: &'a [Vec3],
    faces: Vec<Face>,
    /// Faces with conflict points still to process.
    pending: Vec<u32>,
    /// Visit marks per face (`stamp` of the current iteration: visible; `stamp + 1`: not).
    mark: Vec<u64>,
    stamp: u64,
    /// Horizon successor per vertex (scratch, reset after each iteration).
    next_on_horizon: Vec<u32>,
}

impl<'a> Quickhull<'a> {
    fn new(points: &'a [Vec3], kept: &[u32], s: [usize; 4]) -> Quickhull<'a> {
        let mut q = Quickhull {
            points,
            faces: vec![],
            pending: vec![],
            mark: vec![],
            stamp: 0,
            next_on_horizon: vec![NONE; points.len()],
        };
        // orient the tetrahedron so that s[3] is behind the base triangle (s0, s1, s2)
        let [a, b, c, d] = s.map(|i| i as u32);
        let (b, c) =
            if orient3d(&points[s[0]], &points[s[1]], &points[s[2]], &points[s[3]]) > 0 { (c, b) } else { (b, c) };
        // faces: 0 = (a, b, c), 1 = (a, d, b), 2 = (b, d, c), 3 = (c, d, a)
        let tris = [[a, b, c], [a, d, b], [b, d, c], [c, d, a]];
        let adj = [[1, 2, 3], [3, 2, 0], [1, 3, 0], [2, 1, 0]];
        for (t, v) in tris.iter().enumerate() {
            q.push_face(*v, adj[t]);
        }
        let simplex = [s[0] as u32, s[1] as u32, s[2] as u32, s[3] as u32];
        let all: Vec<u32> = kept.iter().copied().filter(|i| !simplex.contains(i)).collect();
        q.assign(&all, &[0, 1, 2, 3], NONE);
        for f in 0..4 {
            if !q.faces[f].outside.is_empty() {
                q.pending.push(f as u32);
            }
        }
        q
    }

    fn push_face(&mut self, v: [u32; 3], adj: [u32; 3]) -> u32 {
        let p = |i: u32| self.points[i as usize];
        let n = (p(v[1]) - p(v[0])).cross(&(p(v[2]) - p(v[0])));
        let normal = n.try_normalize(0.0).unwrap_or_else(Vec3::zeros);
        let offset = normal.dot(&p(v[0]));
        self.faces.push(Face { v, adj, normal, offset, outside: vec![], alive: true });
        self.mark.push(0);
        self.faces.len() as u32 - 1
    }

    /// Whether point `i` lies strictly in front of face `f` (exact).
    fn sees(&self, f: u32, i: u32) -> bool {
        let v = self.faces[f as usize].v;
        let p = |k: u32| &self.points[k as usize];
        orient3d(p(v[0]), p(v[1]), p(v[2]), p(i)) > 0
    }

    fn distance(&self, f: u32, i: u32) -> f64 {
        let face = &self.faces[f as usize];
        face.normal.dot(&self.points[i as usize]) - face.offset
    }

    /// Gives each point to the candidate face it is farthest in front of (by the rounded
    /// distance, among the faces it exactly sees); points seeing none are dropped.
    fn assign(&mut self, pts: &[u32], candidates: &[u32], skip: u32) {
        for &i in pts {
            if i == skip {
                continue;
            }
            let mut best = (NONE, f64::NEG_INFINITY);
            for &f in candidates {
                let d = self.distance(f, i);
                if (best.0 == NONE || d > best.1) && self.sees(f, i) {
                    best = (f, d);
                }
            }
            if best.0 != NONE {
                self.faces[best.0 as usize].outside.push(i);
            }
        }
    }

    fn run(&mut self) -> Result<(), String> {
        let mut visible: Vec<u32> = vec![];
        let mut horizon: Vec<(u32, u32, u32)> = vec![]; // (a, b, outer face) with a → b on the visible side
        let mut new_faces: Vec<u32> = vec![];
        while let Some(f0) = self.pending.pop() {
            if !self.faces[f0 as usize].alive || self.faces[f0 as usize].outside.is_empty() {
                continue;
            }
            // farthest conflict point of f0
            let mut apex = (NONE, f64::NEG_INFINITY);
            for &i in &self.faces[f0 as usize].outside {
                let d = self.distance(f0, i);
                if apex.0 == NONE || d > apex.1 {
                    apex = (i, d);
                }
            }
            let p = apex.0;
            // visible set: flood fill from f0 through faces that exactly see p
            self.stamp += 2;
            let (vis_mark, hid_mark) = (self.stamp, self.stamp + 1);
            visible.clear();
            horizon.clear();
            visible.push(f0);
            self.mark[f0 as usize] = vis_mark;
            let mut k = 0;
            while k < visible.len() {
                let f = visible[k];
                k += 1;
                for e in 0..3 {
                    let g = self.faces[f as usize].adj[e];
                    if self.mark[g as usize] == vis_mark {
                        continue;
                    }
                    if self.mark[g as usize] != hid_mark && self.sees(g, p) {
                        self.mark[g as usize] = vis_mark;
                        visible.push(g);
                    } else {
                        self.mark[g as usize] = hid_mark;
                        let v = self.faces[f as usize].v;
                        horizon.push((v[e], v[(e + 1) % 3], g));
                    }
                }
            }
            // order the horizon edges into one loop
            for (h, &(a, _, _)) in horizon.iter().enumerate() {
                if self.next_on_horizon[a as usize] != NONE {
                    return Err(format!("internal error: the horizon of point {p} passes twice through point {a}"));
                }
                self.next_on_horizon[a as usize] = h as u32;
            }
            let mut ordered = Vec::with_capacity(horizon.len());
            let mut h = 0usize;
            for _ in 0..horizon.len() {
                ordered.push(horizon[h]);
                let b = horizon[h].1;
                let next = self.next_on_horizon[b as usize];
                if next == NONE {
                    break;
                }
                h = next as usize;
            }
            for &(a, _, _) in &horizon {
                self.next_on_horizon[a as usize] = NONE;
            }
            if ordered.len() != horizon.len() || ordered[0].0 != ordered[ordered.len() - 1].1 {
                return Err(format!("internal error: the horizon of point {p} is not a single loop"));
            }
            // cone of new faces from p over the horizon
            new_faces.clear();
            let m = ordered.len() as u32;
            let first = self.faces.len() as u32;
            for (j, &(a, b, outer)) in ordered.iter().enumerate() {
                let j = j as u32;
                let next = first + (j + 1) % m;
                let prev = first + (j + m - 1) % m;
                let nf = self.push_face([a, b, p], [outer, next, prev]);
                new_faces.push(nf);
                let o = &mut self.faces[outer as usize];
                let slot = (0..3).find(|&s| o.v[s] == b && o.v[(s + 1) % 3] == a);
                match slot {
                    Some(s) => o.adj[s] = nf,
                    None => return Err(format!("internal error: broken adjacency at edge ({a}, {b})")),
                }
            }
            // conflict points of the deleted faces go to the new ones
            for &f in &visible {
                self.faces[f as usize].alive = false;
                let pts = std::mem::take(&mut self.faces[f as usize].outside);
                self.assign(&pts, &new_faces, p);
            }
            for &nf in &new_faces {
                if !self.faces[nf as usize].outside.is_empty() {
                    self.pending.push(nf);
                }
            }
        }
        Ok(())
    }

    fn finish(self) -> HullTriangulation {
        let mut index = vec![NONE; self.faces.len()];
        let mut triangles = vec![];
        for (f, face) in self.faces.iter().enumerate() {
            if face.alive {
                index[f] = triangles.len() as u32;
                triangles.push(face.v);
            }
        }
        let adjacency = self.faces.iter().filter(|f| f.alive).map(|f| f.adj.map(|g| index[g as usize])).collect();
        HullTriangulation { triangles, adjacency }
    }
}
