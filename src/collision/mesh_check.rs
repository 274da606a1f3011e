//! Validation of raw triangle meshes and their undirected edge table, shared by the
//! convex-mesh constructor ([`super::Polytope::from_convex_mesh`]) and the terrain
//! compiler ([`super::TriMeshCore::new`]).
//!
//! Checks, each returning a message that names the offending vertices and triangles:
//! finite coordinates, indices in range, no repeated index in a triangle, no two
//! referenced vertices within `tol` of each other (a hash grid), no triangle of height `2·area / longest edge ≤ tol`,
//! and edge manifoldness: every undirected edge used by at most two triangles, in
//! opposite directions (consistent winding).

use crate::math::Vec3;

/// No adjacent face (edges of a segment, or of a one-sided triangle).
pub const NO_FACE: u32 = u32::MAX;

/// An edge: two vertex indices and the (up to two) faces that share it.
#[derive(Clone, Debug, PartialEq)]
pub struct PolyEdge {
    /// Start and end vertex.
    pub v: [u32; 2],
    /// The faces on either side ([`NO_FACE`] where none).
    pub faces: [u32; 2],
}
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A fast, non-cryptographic hasher for integer keys (multiply–rotate, as in the Firefox
/// hash): the mesh tables hash millions of small keys, for which SipHash is needlessly slow.
#[derive(Default)]
pub(crate) struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u32(&mut self, x: u32) {
        self.write_u64(x as u64);
    }
    fn write_i64(&mut self, x: i64) {
        self.write_u64(x as u64);
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
}

/// Hash map with [`IntHasher`].
pub(crate) type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

/// Hash set with [`IntHasher`].
pub(crate) type IntSet<K> = std::collections::HashSet<K, BuildHasherDefault<IntHasher>>;

/// Largest accepted coordinate magnitude of mesh vertices and hull points: products of
/// three coordinate differences must not overflow (the exact predicates need finite
/// products).
pub const MAX_COORDINATE: f64 = 1e100;

/// Lists vertices as `(x, y, z)` for messages.
pub(crate) fn fmt_point(p: &Vec3) -> String {
    format!("({}, {}, {})", p.x, p.y, p.z)
}

/// Basic validity: at least `min_triangles` triangles, finite vertices, indices in
/// range, no repeated index. Returns which vertices the triangles use.
pub(crate) fn check_indices(
    vertices: &[Vec3],
    triangles: &[[u32; 3]],
    min_triangles: usize,
) -> Result<Vec<bool>, String> {
    if triangles.len() < min_triangles {
        return Err(format!(
            "the mesh has {} triangle{} ({} vertices); at least {min_triangles} are needed",
            triangles.len(),
            if triangles.len() == 1 { "" } else { "s" },
            vertices.len()
        ));
    }
    if vertices.len() >= u32::MAX as usize || triangles.len() >= u32::MAX as usize {
        return Err(format!("the mesh is too large ({} vertices, {} triangles)", vertices.len(), triangles.len()));
    }
    if let Some((i, p)) = vertices.iter().enumerate().find(|(_, p)| !p.iter().all(|x| x.is_finite())) {
        return Err(format!("vertex {i} is not finite: {}", fmt_point(p)));
    }
    if let Some((i, p)) = vertices.iter().enumerate().find(|(_, p)| p.amax() > MAX_COORDINATE) {
        return Err(format!(
            "vertex {i} is too far from the origin: {} (|coordinate| > {MAX_COORDINATE:e})",
            fmt_point(p)
        ));
    }
    let mut used = vec![false; vertices.len()];
    for (t, tri) in triangles.iter().enumerate() {
        for (k, &i) in tri.iter().enumerate() {
            if i as usize >= vertices.len() {
                return Err(format!(
                    "triangle {t} refers to vertex {i} (corner {k}), but there are only {} vertices",
                    vertices.len()
                ));
            }
        }
        if tri[0] == tri[1] || tri[1] == tri[2] || tri[2] == tri[0] {
            let r = if tri[0] == tri[1] || tri[0] == tri[2] { tri[0] } else { tri[1] };
            return Err(format!(
                "triangle {t} is degenerate: it repeats vertex {r} ({}, {}, {})",
                tri[0], tri[1], tri[2]
            ));
        }
        for &i in tri {
            used[i as usize] = true;
        }
    }
    Ok(used)
}

/// Largest extent of the bounding box of the used vertices.
pub(crate) fn size(vertices: &[Vec3], used: &[bool]) -> f64 {
    let mut lo = Vec3::repeat(f64::INFINITY);
    let mut hi = Vec3::repeat(f64::NEG_INFINITY);
    for (p, _) in vertices.iter().zip(used).filter(|(_, &u)| u) {
        lo = lo.inf(p);
        hi = hi.sup(p);
    }
    if lo.x > hi.x {
        0.0
    } else {
        (hi - lo).max()
    }
}

/// No two used vertices within `tol` (Euclidean distance ≤ tol).
///
/// Hash grid with cells of `CELL × tol`: a vertex's neighbours within `tol` lie in its
/// own cell, or in the adjacent cell along an axis where it is within `tol` of the cell's
/// side (so usually one cell is probed, at most eight).
pub(crate) fn check_duplicates(vertices: &[Vec3], used: &[bool], tol: f64) -> Result<(), String> {
    const CELL: f64 = 1024.0;
    let cell = if tol > 0.0 { CELL * tol } else { f64::MIN_POSITIVE };
    let mut head: IntMap<[i64; 3], u32> = IntMap::default();
    let mut next = vec![u32::MAX; vertices.len()];
    for (i, p) in vertices.iter().enumerate() {
        if !used[i] {
            continue;
        }
        let scaled = p / cell;
        let c = [0, 1, 2].map(|k| scaled[k].floor() as i64);
        // per axis: the neighbouring cell to probe (−1, +1) or none (0)
        let side = [0, 1, 2].map(|k| {
            let frac = scaled[k] - scaled[k].floor();
            if frac * cell <= tol {
                -1
            } else if (1.0 - frac) * cell <= tol {
                1
            } else {
                0
            }
        });
        for mask in 0..8u32 {
            if (0..3).any(|k| mask & (1 << k) != 0 && side[k] == 0) {
                continue;
            }
            let nc = [0, 1, 2].map(|k| if mask & (1 << k) != 0 { c[k].saturating_add(side[k]) } else { c[k] });
            let mut j = head.get(&nc).copied().unwrap_or(u32::MAX);
            while j != u32::MAX {
                let d = (vertices[j as usize] - p).norm();
                if d <= tol {
                    return Err(format!(
                        "duplicate vertices: vertices {j} and {i} coincide (distance {d:.3e} ≤ tolerance {tol:.3e}) \
                         at {}; weld them so that the triangles share one vertex",
                        fmt_point(p)
                    ));
                }
                j = next[j as usize];
            }
        }
        let slot = head.entry(c).or_insert(u32::MAX);
        next[i] = *slot;
        *slot = i as u32;
    }
    Ok(())
}

/// Twice the area over the longest edge (the smallest height) of each triangle must
/// exceed `tol`.
pub(crate) fn check_areas(vertices: &[Vec3], triangles: &[[u32; 3]], tol: f64) -> Result<(), String> {
    for (t, tri) in triangles.iter().enumerate() {
        let [a, b, c] = tri.map(|i| vertices[i as usize]);
        let longest = (b - a).norm().max((c - b).norm()).max((a - c).norm());
        let height = (b - a).cross(&(c - a)).norm() / longest;
        if height.is_nan() || height <= tol {
            return Err(format!(
                "triangle {t} (vertices {}, {}, {}) has zero area: its corners are collinear (height {height:.3e} \
                 ≤ tolerance {tol:.3e})",
                tri[0], tri[1], tri[2]
            ));
        }
    }
    Ok(())
}

/// The undirected edges of a triangle set and each triangle's edges.
///
/// `edges[e].v` is sorted (low index first); `edges[e].faces[0]` is the triangle that runs
/// along the edge from `v[0]` to `v[1]`, `faces[1]` the one running from `v[1]` to `v[0]`
/// ([`NO_FACE`] where none). `triangle_edges[t][k]` joins corners k and k+1 of triangle t.
/// Errors: an edge used by more than two triangles (non-manifold), or by two triangles in
/// the same direction (inconsistent winding).
pub(crate) fn edge_table(triangles: &[[u32; 3]]) -> Result<(Vec<PolyEdge>, Vec<[u32; 3]>), String> {
    edge_table_with(triangles, false).map(|(edges, triangle_edges, _)| (edges, triangle_edges))
}

/// The edges, each triangle's edges, and the number of split edges.
pub(crate) type SplitEdgeTable = (Vec<PolyEdge>, Vec<[u32; 3]>, usize);

/// [`edge_table`]; with `split`, an edge that a triangle cannot join (a third triangle
/// on it, or a second one running the same way) gets a new, open edge of its own for
/// that triangle instead of an error, and the number of such splits is returned.
pub(crate) fn edge_table_with(triangles: &[[u32; 3]], split: bool) -> Result<SplitEdgeTable, String> {
    let mut splits = 0;
    let mut edges: Vec<PolyEdge> = Vec::with_capacity(triangles.len() * 3 / 2 + 3);
    let mut index: IntMap<u64, u32> = IntMap::with_capacity_and_hasher(triangles.len() * 3 / 2 + 3, Default::default());
    let mut triangle_edges = Vec::with_capacity(triangles.len());
    for (t, tri) in triangles.iter().enumerate() {
        let mut te = [0u32; 3];
        for k in 0..3 {
            let (i, j) = (tri[k], tri[(k + 1) % 3]);
            let key = (i.min(j), i.max(j));
            let e = *index.entry(((key.0 as u64) << 32) | key.1 as u64).or_insert_with(|| {
                edges.push(PolyEdge { v: [key.0, key.1], faces: [NO_FACE, NO_FACE] });
                edges.len() as u32 - 1
            });
            let slot = if i < j { 0 } else { 1 };
            if split && edges[e as usize].faces[slot] != NO_FACE {
                let mut faces = [NO_FACE, NO_FACE];
                faces[slot] = t as u32;
                edges.push(PolyEdge { v: [key.0, key.1], faces });
                te[k] = edges.len() as u32 - 1;
                splits += 1;
                continue;
            }
            let faces = &mut edges[e as usize].faces;
            if faces[slot] != NO_FACE {
                return Err(if faces[1 - slot] != NO_FACE {
                    format!(
                        "non-manifold edge ({}, {}): shared by triangles {}, {} and {t} (an edge may join at most \
                         two triangles)",
                        key.0, key.1, faces[0], faces[1]
                    )
                } else {
                    format!(
                        "inconsistent winding: triangles {} and {t} both run along edge {i} → {j} in the same \
                         direction (one of them is flipped; neighbouring triangles must traverse their shared edge \
                         in opposite directions)",
                        faces[slot]
                    )
                });
            }
            faces[slot] = t as u32;
            te[k] = e;
        }
        triangle_edges.push(te);
    }
    Ok((edges, triangle_edges, splits))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::SplitMix64;

    #[test]
    fn duplicate_search_matches_brute_force() {
        let mut rng = SplitMix64::new(17);
        let tol = 1e-3;
        let mut found = [0; 2];
        for trial in 0..300 {
            // points near the cell grid (cell 1024·tol), some pairs closer than tol across a side
            let cell = 1024.0 * tol;
            let mut pts: Vec<Vec3> = (0..40)
                .map(|_| {
                    Vec3::new(
                        (rng.next_u64() % 4) as f64 * cell + rng.range(-2.0 * tol, 2.0 * tol),
                        (rng.next_u64() % 4) as f64 * cell + rng.range(-2.0 * tol, 2.0 * tol),
                        rng.range(-5.0, 5.0),
                    )
                })
                .collect();
            if trial % 2 == 0 {
                let i = (rng.next_u64() % 40) as usize;
                let dir = Vec3::new(rng.normal(), rng.normal(), rng.normal()).normalize();
                let d = tol * rng.range(0.5, 1.5);
                pts.push(pts[i] + dir * d);
            }
            let used = vec![true; pts.len()];
            let brute = (0..pts.len()).any(|i| (0..i).any(|j| (pts[i] - pts[j]).norm() <= tol));
            assert_eq!(check_duplicates(&pts, &used, tol).is_err(), brute, "trial {trial}");
            found[brute as usize] += 1;
        }
        assert!(found[0] > 30 && found[1] > 30, "{found:?}");
    }
}
