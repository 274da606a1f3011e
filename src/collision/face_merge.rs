//! Polygonal faces from a triangulated convex surface: neighbouring coplanar triangles
//! are merged into one convex polygon, and vertices left in the middle of a straight
//! polygon edge are dropped.
//!
//! Triangles are grouped by flood fill over the adjacency, seeded by the largest
//! remaining triangle: a neighbour joins a group when its three corners lie within
//! `δ/2` of the seed's plane (`δ = MERGE_TOLERANCE × size`, `size` the largest extent of
//! the points' bounding box) and its normal is not opposite; normals are computed
//! exactly ([`super::predicates::cross_accurate`]), since a sliver's plane is well
//! defined by its exact corners but not by the rounded cross product of its edges. A
//! group's face is the boundary loop of its triangles (counter-clockwise seen from
//! outside, since every triangle is) with the seed's unit normal, so that every vertex of
//! the group lies within δ below the face plane once its offset is set to the largest
//! `normal · x` ([`super::Polytope::from_faces`]). A group whose boundary is not a single
//! simple loop, or whose loop has a reflex corner (a corner more than δ/2 inside the
//! chord joining its neighbours, possible when the triangles are only nearly coplanar
//! and the group covers part of a slightly curved region), is left as separate
//! triangles.
//!
//! Finally a vertex on exactly two faces lies on a straight edge between them (a vertex
//! of a convex polytope has at least three faces), so it is removed from both loops
//! (unless a loop would be left with fewer than three corners).

use super::hull::HullTriangulation;
use super::mesh_check::IntMap;
use super::predicates::cross_accurate;
use crate::math::Vec3;

/// Relative tolerance for merging coplanar triangles: corners within
/// `MERGE_TOLERANCE × size` of a face plane (`size`: the largest extent of the bounding
/// box of the points) belong to it.
pub const MERGE_TOLERANCE: f64 = 1e-9;

/// Polygon faces (vertex loops counter-clockwise seen from outside, unit outward normal)
/// of a closed convex triangulation. Vertex indices refer to `points`.
pub fn merge_coplanar(points: &[Vec3], tri: &HullTriangulation) -> Result<Vec<(Vec<u32>, Vec3)>, String> {
    let nt = tri.triangles.len();
    let p = |i: u32| points[i as usize];
    let mut lo = Vec3::repeat(f64::INFINITY);
    let mut hi = Vec3::repeat(f64::NEG_INFINITY);
    for t in &tri.triangles {
        for &i in t {
            lo = lo.inf(&p(i));
            hi = hi.sup(&p(i));
        }
    }
    let half_band = 0.5 * MERGE_TOLERANCE * (hi - lo).max();
    let cross: Vec<Vec3> = tri.triangles.iter().map(|t| cross_accurate(&p(t[0]), &p(t[1]), &p(t[2]))).collect();
    let normal: Vec<Vec3> = cross.iter().map(|c| c.try_normalize(0.0).unwrap_or_else(Vec3::zeros)).collect();
    let mut order: Vec<usize> = (0..nt).collect();
    order.sort_by(|&a, &b| cross[b].norm().total_cmp(&cross[a].norm()).then(a.cmp(&b)));

    let mut grouping =
        Grouping { tri, normal: &normal, points, group: vec![NONE; nt], queue: vec![], next: IntMap::default() };
    let mut faces: Vec<(Vec<u32>, Vec3)> = vec![];
    for &seed in &order {
        if grouping.group[seed] != NONE {
            continue;
        }
        let g = faces.len() as u32;
        // grow with the full band, then narrower ones if the union is not a convex disc;
        // in the end the seed alone (its neighbours stay free for other faces)
        let mut face = None;
        for band in [half_band, half_band / 16.0, half_band / 256.0] {
            if let Some(l) = grouping.grow(seed, g, band) {
                face = Some(l);
                break;
            }
        }
        let l = face.unwrap_or_else(|| {
            grouping.group[seed] = g;
            tri.triangles[seed].to_vec()
        });
        faces.push((l, normal[seed]));
    }
    remove_straight_vertices(points.len(), &mut faces)?;
    Ok(faces)
}

const NONE: u32 = u32::MAX;

struct Grouping<'a> {
    tri: &'a HullTriangulation,
    normal: &'a [Vec3],
    points: &'a [Vec3],
    /// Face of each triangle (NONE: free).
    group: Vec<u32>,
    queue: Vec<u32>,
    next: IntMap<u32, u32>,
}

impl Grouping<'_> {
    /// Flood fill from `seed` over free triangles whose corners lie within `band` of the
    /// seed's plane; returns the boundary loop if the union is a convex disc (and keeps
    /// the triangles as group `g`), else frees them again.
    fn grow(&mut self, seed: usize, g: u32, band: f64) -> Option<Vec<u32>> {
        let (tri, points) = (self.tri, self.points);
        let p = |i: u32| points[i as usize];
        let n = self.normal[seed];
        let d = tri.triangles[seed].iter().map(|&i| n.dot(&p(i))).sum::<f64>() / 3.0;
        let mut members = vec![seed as u32];
        self.group[seed] = g;
        self.queue.clear();
        self.queue.push(seed as u32);
        while let Some(t) = self.queue.pop() {
            for &u in &tri.adjacency[t as usize] {
                let ui = u as usize;
                if self.group[ui] != NONE {
                    continue;
                }
                let on_plane = tri.triangles[ui].iter().all(|&i| (n.dot(&p(i)) - d).abs() <= band);
                // no normal test beyond excluding the far side of a thin hull: a sliver
                // along an edge may face either neighbour, yet lies in both planes
                if on_plane && self.normal[ui].dot(&n) > -0.5 {
                    self.group[ui] = g;
                    members.push(u);
                    self.queue.push(u);
                }
            }
        }
        if members.len() == 1 {
            return Some(tri.triangles[seed].to_vec());
        }
        let boundary = self.boundary(&members, g, n, band);
        if boundary.is_none() {
            for &t in &members {
                self.group[t as usize] = NONE;
            }
        }
        boundary
    }

    /// The boundary loop of group `g` if it is one simple loop, convex seen along `n`: no
    /// corner more than `band` inside the chord joining its neighbours (straight corners
    /// pass; they are removed later).
    fn boundary(&mut self, members: &[u32], g: u32, n: Vec3, band: f64) -> Option<Vec<u32>> {
        let (tri, points) = (self.tri, self.points);
        let p = |i: u32| points[i as usize];
        self.next.clear();
        let mut count = 0;
        for &t in members {
            let v = tri.triangles[t as usize];
            for k in 0..3 {
                if self.group[tri.adjacency[t as usize][k] as usize] != g
                    && self.next.insert(v[k], v[(k + 1) % 3]).is_some()
                {
                    return None;
                }
                count += (self.group[tri.adjacency[t as usize][k] as usize] != g) as usize;
            }
        }
        // walk the successor map: one simple loop iff it first returns after `count` steps
        let start = *self.next.keys().min()?;
        let mut boundary = Vec::with_capacity(count);
        let mut v = start;
        for step in 0..count {
            boundary.push(v);
            match self.next.get(&v) {
                Some(&w) if w != start || step + 1 == count => v = w,
                _ => return None,
            }
        }
        if v != start {
            return None;
        }
        let m = boundary.len();
        let convex = (0..m).all(|k| {
            let (a, b, c) = (p(boundary[k]), p(boundary[(k + 1) % m]), p(boundary[(k + 2) % m]));
            (b - a).cross(&(c - b)).dot(&n) >= -band * (c - a).norm()
        });
        convex.then_some(boundary)
    }
}

/// Removes the vertices that lie on exactly two faces. Such a vertex lies on a straight
/// edge between them and is dropped from both loops; if one of the two is a triangle, the
/// triangle is a sliver between the vertex's two edges (it shares both with the other
/// face), so it is deleted and the vertex dropped from the other face, whose loop then
/// runs along the sliver's third edge. Repeats until no such vertex is left.
fn remove_straight_vertices(n: usize, faces: &mut Vec<(Vec<u32>, Vec3)>) -> Result<(), String> {
    loop {
        let mut degree = vec![0u32; n];
        let mut on: Vec<[u32; 2]> = vec![[NONE; 2]; n];
        for (f, (l, _)) in faces.iter().enumerate() {
            for &i in l {
                let d = &mut degree[i as usize];
                if *d < 2 {
                    on[i as usize][*d as usize] = f as u32;
                }
                *d += 1;
            }
        }
        if let Some(i) = degree.iter().position(|&d| d == 1) {
            return Err(format!("internal error: point {i} lies on a single face of the hull"));
        }
        let mut changed = false;
        let mut drop = vec![false; n];
        let mut touched = vec![false; faces.len()];
        let mut corners: Vec<usize> = faces.iter().map(|(l, _)| l.len()).collect();
        let mut delete: Vec<usize> = vec![];
        for i in 0..n {
            if degree[i] != 2 {
                continue;
            }
            let [f, g] = on[i].map(|f| f as usize);
            if touched[f] || touched[g] {
                continue; // handled in the next round, with fresh degrees
            }
            let (nf, ng) = (corners[f], corners[g]);
            if nf > 3 && ng > 3 {
                drop[i] = true;
                corners[f] -= 1;
                corners[g] -= 1;
            } else if corners[f] < faces[f].0.len() || corners[g] < faces[g].0.len() {
                continue; // a corner of these faces is already dropped this round
            } else if nf == 3 && ng > 3 {
                delete.push(f);
                drop[i] = true;
                touched[f] = true;
                touched[g] = true;
            } else if ng == 3 && nf > 3 {
                delete.push(g);
                drop[i] = true;
                touched[f] = true;
                touched[g] = true;
            } else {
                return Err(format!("internal error: point {i} lies on two triangles only"));
            }
            changed = true;
        }
        if !changed {
            return Ok(());
        }
        delete.sort_unstable();
        for &f in delete.iter().rev() {
            faces.swap_remove(f);
        }
        for (l, _) in faces.iter_mut() {
            l.retain(|&i| !drop[i as usize]);
        }
    }
}
