//! Face contact manifolds: the contacts between a reference face of one core and the
//! incident face (or the whole point/segment core) of the other, each a closed-form
//! feature pair (DiffDART, Werling et al. 2021, §5: vertex–face and edge–edge
//! contacts of a clipped face pair).
//!
//! With n the reference face's outward normal, the contact region is, in projection
//! along n on the reference plane, the intersection of the reference face with the
//! incident face. Its corners are
//! 1. incident vertices inside the reference face → vertex–face (reference face);
//! 2. reference vertices whose projection along the incident face's own normal falls
//!    inside the incident face → face–vertex (incident face);
//! 3. crossings of a reference edge and an incident edge in projection → edge–edge,
//!    kept only when the two lines' mutually closest points lie on both segments (the
//!    closed form is then the true distance of the two edges).
//!
//! Each candidate becomes a contact when its closed-form signed distance is below the
//! margin. A candidate whose contact point lies within 1e-6 of the length scale of an
//! earlier one's is dropped (vertex–face first, then face–vertex, then edge–edge), so
//! coincident corners — two equal boxes stacked flush — give one contact each. The incident face is, among the faces of the incident core holding a
//! given anchor feature (its deepest vertex, or its closest feature), the one whose
//! normal is most opposed to n. A face pair of two convex meshes gives as many
//! contacts as its clipped polygon has corners; `reduce` then keeps at most
//! `MAX_PAIR_CONTACTS` of them.

use super::closest_points::line_line;
use super::{Emitter, Placed};
use crate::collision::contact::{Contact, Feature};
use crate::math::Vec3;

/// Relative tolerance of the inside tests (boundary points count as inside).
const INSIDE_TOL: f64 = 1e-9;
/// Relative distance below which two manifold points are one.
const MERGE_TOL: f64 = 1e-6;

/// Whether `x` projects (along `n`, the loop's own outward normal) inside the convex
/// face loop `lp` of core `c` (counter-clockwise seen from outside), within `tol`.
fn inside(c: &Placed, lp: &[u32], n: &Vec3, x: &Vec3, tol: f64) -> bool {
    let k = lp.len();
    (0..k).all(|i| {
        let a = c.vertex(lp[i] as usize);
        let b = c.vertex(lp[(i + 1) % k] as usize);
        let e = b - a;
        e.cross(&(x - a)).dot(n) >= -tol * e.norm()
    })
}

/// The face of `c` holding the anchor feature (all faces without one) whose normal
/// is most opposed to `n`; `None` for a core without faces.
fn incident_face(c: &Placed, n: &Vec3, anchor: Option<Feature>) -> Option<usize> {
    let holds = |f: usize| -> bool {
        match anchor {
            None => true,
            Some(Feature::Face(g)) => g as usize == f,
            Some(Feature::Edge(e)) => c.poly.edges.get(e as usize).is_some_and(|ed| ed.faces.contains(&(f as u32))),
            Some(Feature::Vertex(v)) => c.poly.faces[f].vertices.contains(&v),
        }
    };
    let mut best: Option<(usize, f64)> = None;
    for pass in 0..2 {
        for f in 0..c.poly.faces.len() {
            if pass == 0 && !holds(f) {
                continue;
            }
            let d = c.face_normal(f).dot(n);
            if best.is_none_or(|(_, b)| d < b) {
                best = Some((f, d));
            }
        }
        if best.is_some() {
            break;
        }
    }
    best.map(|(f, _)| f)
}

/// Vertex lists of a point and a segment core.
const CORE_VERTICES: [u32; 2] = [0, 1];
/// Edge list of a segment core.
const CORE_EDGES: [u32; 1] = [0];

/// Contacts between face `ref_face` of P (`ref_is_p`) or of Q and the other core, as
/// described in the module documentation; `seed`, a feature pair of (P, Q) with its
/// P → Q hint, is tried first. Returns the number of contacts appended.
#[allow(clippy::too_many_arguments)]
pub(crate) fn face_manifold(
    em: &Emitter,
    p: &Placed,
    q: &Placed,
    ref_is_p: bool,
    ref_face: usize,
    anchor: Option<Feature>,
    seed: Option<(Feature, Feature, Vec3)>,
    out: &mut Vec<Contact>,
) -> usize {
    let (r, i) = if ref_is_p { (p, q) } else { (q, p) };
    let pair = |fr: Feature, fi: Feature| if ref_is_p { (fr, fi) } else { (fi, fr) };
    let n = r.face_normal(ref_face);
    let hint = if ref_is_p { n } else { -n };
    let scale = r.scale().max(i.scale());
    let tol = INSIDE_TOL * scale;
    let merge = MERGE_TOL * scale;
    let mut placed: Vec<Vec3> = Vec::new();
    let mut count = 0;
    let mut attempt = |fp: Feature, fq: Feature, h: &Vec3, out: &mut Vec<Contact>| {
        let Some(c) = em.contact(fp, fq, h) else { return };
        let x = c.midpoint();
        if placed.iter().any(|y| (y - x).norm() <= merge) {
            return;
        }
        if em.push(c, out) {
            placed.push(x);
            count += 1;
        }
    };
    if let Some((fp, fq, h)) = seed {
        attempt(fp, fq, &h, out);
    }
    let ref_loop = &r.poly.faces[ref_face].vertices;
    let ref_edges = &r.poly.faces[ref_face].edges;
    let inc = incident_face(i, &n, anchor);
    let (inc_vertices, inc_edges): (&[u32], &[u32]) = match inc {
        Some(f) => (&i.poly.faces[f].vertices, &i.poly.faces[f].edges),
        None => (&CORE_VERTICES[..i.poly.vertices.len().min(2)], &CORE_EDGES[..i.poly.edges.len().min(1)]),
    };
    // 1. incident vertices inside the reference face
    for &v in inc_vertices {
        let x = i.vertex(v as usize);
        if inside(r, ref_loop, &n, &x, tol) {
            let (fp, fq) = pair(Feature::Face(ref_face as u32), Feature::Vertex(v));
            attempt(fp, fq, &hint, out);
        }
    }
    // 2. reference vertices inside the incident face (along its own normal)
    if let Some(f) = inc {
        let ni = i.face_normal(f);
        for &w in ref_loop {
            let x = r.vertex(w as usize);
            if inside(i, inc_vertices, &ni, &x, tol) {
                let (fp, fq) = pair(Feature::Vertex(w), Feature::Face(f as u32));
                attempt(fp, fq, &hint, out);
            }
        }
    }
    // 3. edge crossings in projection on the reference plane
    let t1 = {
        let a = if n.x.abs() < 0.6 { Vec3::x() } else { Vec3::y() };
        n.cross(&a).normalize()
    };
    let t2 = n.cross(&t1);
    let flat = |x: &Vec3| (t1.dot(x), t2.dot(x));
    let k = ref_loop.len();
    for m in 0..k {
        let ra = r.vertex(ref_loop[m] as usize);
        let rb = r.vertex(ref_loop[(m + 1) % k] as usize);
        let re = rb - ra;
        let (ax, ay) = flat(&ra);
        let (rx, ry) = flat(&re);
        let rl = rx.hypot(ry);
        for &j in inc_edges {
            let (ba, be) = i.edge(j as usize);
            let (bx, by) = flat(&ba);
            let (sx, sy) = flat(&be);
            let sl = sx.hypot(sy);
            let den = rx * sy - ry * sx;
            if !(den.abs() > 1e-9 * rl * sl) {
                continue;
            }
            let (wx, wy) = (bx - ax, by - ay);
            let s = (wx * sy - wy * sx) / den;
            let t = (wx * ry - wy * rx) / den;
            let (es, et) = (tol / rl, tol / sl);
            if !(s >= -es && s <= 1.0 + es && t >= -et && t <= 1.0 + et) {
                continue;
            }
            // the closed form is the distance of the lines: require their closest
            // points to lie on both edges
            let Some((s3, t3)) = line_line(&ra, &re, &ba, &be, 1e-9) else { continue };
            let (es3, et3) = (tol / re.norm(), tol / be.norm());
            if !(s3 >= -es3 && s3 <= 1.0 + es3 && t3 >= -et3 && t3 <= 1.0 + et3) {
                continue;
            }
            let (fp, fq) = pair(Feature::Edge(ref_edges[m]), Feature::Edge(j));
            attempt(fp, fq, &hint, out);
        }
    }
    count
}
