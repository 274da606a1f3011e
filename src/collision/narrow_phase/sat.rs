//! Separating-axis test between two convex cores, with Minkowski-face pruning of
//! the edge pairs.
//!
//! The signed separation of P and Q along a unit axis n (pointing from P to Q) is
//! `sep(n) = min_{y∈Q} n·y − max_{x∈P} n·x`; the cores are disjoint iff some axis has
//! `sep > 0`, and the largest separation over the face normals of the Minkowski
//! difference P − Q is their signed distance when they overlap (minus the penetration
//! depth). Those normals are the face normals of P, the reversed face normals of Q, and
//! the cross products `e_P × e_Q` of the edge pairs whose arcs on the Gauss map
//! intersect (Gregorius, "The Separating Axis Test between Convex Polyhedra", GDC
//! 2013). An edge's arc is the set of unit normals of the planes supporting the core
//! along that edge: the arc between its two faces' normals, the half circle from n to
//! −n through the outward direction for an edge of a flat (two-faced) triangle, and the
//! whole circle orthogonal to it for a segment. For such a pair, `m = ±e_P × e_Q`
//! oriented so that m is in P's arc and −m in Q's, both edges support their core along
//! ±m and `sep(m) = m·(q₀ − p₀)` for any points p₀, q₀ of the edges.
//!
//! Edge pairs closer to parallel than `sin θ ≤ 1e-9` are skipped: their axis is
//! undefined, and the neighbouring face axes bound the same separation. For a
//! one-sided terrain triangle as Q (face 0 the front, face 1 the back), the back face is
//! no axis and edge axes must point out of the front (`−m·n ≥ 0`).

use super::Placed;
use crate::collision::polytope::NO_FACE;
use crate::math::Vec3;

/// Skip edge pairs this close to parallel (sine of their angle).
const EDGE_PARALLEL_SIN: f64 = 1e-9;

/// `±m/|m|` (`|m|² = mn2 > 0`), the sign that puts it in P's arc `cp` and its opposite
/// in Q's arc `cq`; `None` when neither does (the arcs do not intersect on this axis).
/// The arcs are tested on the unnormalized m (no square root); only an axis that
/// passes is normalized.
fn oriented_axis(m: &Vec3, mn2: f64, cp: &Cone, cq: &Cone) -> Option<Vec3> {
    if cp.contains_unnormalized(m, mn2) && cq.contains_unnormalized(&-m, mn2) {
        Some(m / mn2.sqrt())
    } else if cp.contains_unnormalized(&-m, mn2) && cq.contains_unnormalized(m, mn2) {
        Some(-m / mn2.sqrt())
    } else {
        None
    }
}

/// The unit axis of edge `i` of P and edge `j` of Q pointing from P to Q, oriented by
/// the edges' arcs as in the edge-pair test (module notes): a function of the cores'
/// shapes alone, so it keeps its sign where the edges touch and the gap between them
/// (GJK's closest-point direction) vanishes. `None` for edges closer to parallel than
/// the test's threshold, or whose arcs do not meet on `±e_P × e_Q` (then the edges are
/// not the closest features along it).
pub(crate) fn edge_pair_axis(p: &Placed, i: usize, q: &Placed, j: usize) -> Option<Vec3> {
    let ((_, pe), (_, qe)) = (p.edge(i), q.edge(j));
    let m = pe.cross(&qe);
    let mn2 = m.norm_squared();
    let parallel = EDGE_PARALLEL_SIN * pe.norm() * qe.norm();
    if !(mn2 > parallel * parallel) {
        return None;
    }
    oriented_axis(&m, mn2, &Cone::of_edge(p, i, &pe), &Cone::of_edge(q, j, &qe))
}

/// The best edge-pair axis.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EdgeAxis {
    /// Edge of P.
    pub ep: usize,
    /// Edge of Q.
    pub eq: usize,
    /// Unit axis from P to Q (world).
    pub axis: Vec3,
    /// Separation along it.
    pub sep: f64,
}

/// The largest separations found per axis family.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sat {
    /// Best face of P and its separation (axis: P's outward normal).
    pub face_p: Option<(usize, f64)>,
    /// Best face of Q and its separation (axis: minus Q's outward normal).
    pub face_q: Option<(usize, f64)>,
    /// Best edge pair.
    pub edge: Option<EdgeAxis>,
}

impl Sat {
    /// The largest separation over all axes (−∞ without axes).
    pub fn best(&self) -> f64 {
        let mut s = f64::NEG_INFINITY;
        if let Some((_, x)) = self.face_p {
            s = s.max(x);
        }
        if let Some((_, x)) = self.face_q {
            s = s.max(x);
        }
        if let Some(e) = self.edge {
            s = s.max(e.sep);
        }
        s
    }
}

/// The arc of supporting-plane normals of an edge (see the module documentation).
enum Cone {
    /// Every direction orthogonal to the edge.
    All,
    /// Directions m (orthogonal to the edge) with `m·w ≥ cos`.
    Arc { w: Vec3, cos: f64 },
}

impl Cone {
    fn of_edge(x: &Placed, e: usize, dir: &Vec3) -> Cone {
        let edge = &x.poly.edges[e];
        let [f0, f1] = edge.faces;
        if f0 == NO_FACE || f1 == NO_FACE {
            return Cone::All;
        }
        let (a, b) = (x.face_normal(f0 as usize), x.face_normal(f1 as usize));
        let s = a + b;
        let sn = s.norm();
        if sn > 1e-9 {
            let w = s / sn;
            return Cone::Arc { w, cos: a.dot(&w) };
        }
        // back-to-back faces (a flat triangle): the outward direction in the plane
        let mid = x.vertex(edge.v[0] as usize) + dir * 0.5;
        let mut w = dir.cross(&a);
        let wn = w.norm();
        if !(wn > 0.0) {
            return Cone::All;
        }
        w /= wn;
        if w.dot(&(mid - x.center())) < 0.0 {
            w = -w;
        }
        Cone::Arc { w, cos: 0.0 }
    }

    /// Whether the direction of `m` (of squared length `norm2 > 0`) lies in the arc,
    /// within `1e-12` of its cosine: `m·w ≥ c |m|` with `c = cos − 1e-12`, decided by
    /// signs and squares.
    fn contains_unnormalized(&self, m: &Vec3, norm2: f64) -> bool {
        match self {
            Cone::All => true,
            Cone::Arc { w, cos } => {
                let c = cos - 1e-12;
                let s = m.dot(w);
                if c >= 0.0 {
                    s >= 0.0 && s * s >= c * c * norm2
                } else {
                    s >= 0.0 || s * s <= c * c * norm2
                }
            }
        }
    }
}

/// Separations of P and Q along their face normals (the edge pairs not yet tested:
/// [`edge_axes`]), or `None` as soon as one reaches `stop` (the pair is then farther
/// apart than that). With `one_sided`, Q is a terrain triangle (face 0 front, face 1
/// back).
pub(crate) fn face_axes(p: &Placed, q: &Placed, one_sided: bool, stop: f64) -> Option<Sat> {
    let mut sat = Sat { face_p: None, face_q: None, edge: None };
    for f in 0..p.poly.faces.len() {
        let n = p.face_normal(f);
        let (_, y) = q.support(&-n);
        let sep = n.dot(&y) - p.face_offset(f);
        if !(sep < stop) {
            return None;
        }
        if sat.face_p.is_none_or(|(_, b)| sep > b) {
            sat.face_p = Some((f, sep));
        }
    }
    for f in 0..q.poly.faces.len() {
        if one_sided && f != 0 {
            continue;
        }
        let n = q.face_normal(f);
        let (_, x) = p.support(&-n);
        let sep = n.dot(&x) - q.face_offset(f);
        if !(sep < stop) {
            return None;
        }
        if sat.face_q.is_none_or(|(_, b)| sep > b) {
            sat.face_q = Some((f, sep));
        }
    }
    Some(sat)
}

/// Adds to `sat` (from [`face_axes`]) the best of the Minkowski-face edge pairs of P
/// and Q; `None` as soon as one's separation reaches `stop`.
pub(crate) fn edge_axes(p: &Placed, q: &Placed, one_sided: bool, stop: f64, sat: &mut Sat) -> Option<()> {
    let front = if one_sided && !q.poly.faces.is_empty() { Some(q.face_normal(0)) } else { None };
    // P's edges in the world, with their lengths and arcs, once for all of Q's edges.
    let p_edges: Vec<(Vec3, Vec3, f64, Cone)> = (0..p.poly.edges.len())
        .map(|i| {
            let (pa, pe) = p.edge(i);
            (pa, pe, pe.norm(), Cone::of_edge(p, i, &pe))
        })
        .collect();
    for j in 0..q.poly.edges.len() {
        let (qa, qe) = q.edge(j);
        let cq = Cone::of_edge(q, j, &qe);
        let qn = qe.norm();
        for (i, (pa, pe, pn, cp)) in p_edges.iter().enumerate() {
            let m = pe.cross(&qe);
            let mn2 = m.norm_squared();
            let parallel = EDGE_PARALLEL_SIN * pn * qn;
            if !(mn2 > parallel * parallel) {
                continue;
            }
            let Some(axis) = oriented_axis(&m, mn2, cp, &cq) else { continue };
            if let Some(n) = front {
                if axis.dot(&n) > 0.0 {
                    continue;
                }
            }
            let sep = axis.dot(&(qa - pa));
            if !(sep < stop) {
                return None;
            }
            if sat.edge.is_none_or(|b| sep > b.sep) {
                sat.edge = Some(EdgeAxis { ep: i, eq: j, axis, sep });
            }
        }
    }
    Some(())
}
