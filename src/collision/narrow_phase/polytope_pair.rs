//! Convex core against convex core (P a point, a segment or a polytope; Q a polytope
//! or a one-sided terrain triangle): the separating-axis test decides, then
//!
//! * some axis separates the cores by at least `margin + r_P + r_Q`: no contact
//!   (exact: the distance is at least any axis's separation);
//! * the cores are disjoint (largest separation > 0): their exact distance and
//!   closest points by GJK (`gjk`), whose closest features (classified vertex, edge or
//!   face within 1e-9 of the cores' size) give the contact — a single vertex–vertex,
//!   vertex–edge or edge–edge pair, the vertex–edge pairs at the ends of the overlap of
//!   parallel edges, or, when either closest feature is a face, the face manifold on
//!   that face (`manifold`), so that a box hovering flat over a box gets its four
//!   corners;
//! * the cores overlap: the axis of largest separation, preferring P's faces over
//!   Q's and faces over edge pairs unless the other is larger by 5 % of the separation
//!   plus 1e-6 of the size (stable manifolds under round-off), gives a face manifold
//!   or a single edge–edge contact. A face manifold that clips to nothing falls back on
//!   the deepest vertex against the reference face, whose distance is the axis's
//!   separation, so overlapping cores always give a contact (except against a terrain
//!   triangle, whose neighbours hold the contacts its filter rejects).
//!
//! A point or segment core against a flat triangle has a Minkowski difference whose
//! face normals the axes above do not all reach, so that pair asks GJK first.

use super::closest_points::{parallel_overlap, OverlapEnd, Parallel};
use super::gjk::{closest_points, Closest};
use super::manifold::face_manifold;
use super::sat::{edge_axes, edge_pair_axis, face_axes, Sat};
use super::{Emitter, Placed, PARALLEL_SIN};
use crate::collision::contact::{Contact, Feature};
use crate::math::Vec3;

/// Relative tolerance of the closest-feature classification.
const CLASSIFY_TOL: f64 = 1e-9;
/// Axis preference: another axis wins only when larger by this fraction of |separation| ...
const PREFER_REL: f64 = 0.05;
/// ... plus this fraction of the cores' size.
const PREFER_ABS: f64 = 1e-6;

/// All contacts between P and Q (see the module documentation). With `one_sided`, Q is
/// a terrain triangle (face 0 the front).
///
/// The edge pairs are tested only when the face axes leave the cores overlapping or GJK
/// does not answer: a face axis that separates the cores sends the pair to GJK, whose
/// exact distance bounds every axis's separation, so the edge pairs could only have ended
/// the test sooner. Most pairs of a resting pile are such neighbours, a millimetre apart
/// within the margin: their 144 box edge pairs are skipped.
pub(crate) fn collide_convex(em: &Emitter, p: &Placed, q: &Placed, one_sided: bool, out: &mut Vec<Contact>) {
    let radii = p.radius + q.radius;
    let stop = em.margin + radii;
    let Some(mut sat) = face_axes(p, q, one_sided, stop) else { return };
    let degenerate = p.poly.faces.is_empty() && one_sided;
    let faces_separate = sat.best() > 0.0 || degenerate;
    if !faces_separate && edge_axes(p, q, one_sided, stop, &mut sat).is_none() {
        return;
    }
    if sat.best() > 0.0 || degenerate {
        if let Some(c) = closest_points(p, q) {
            if c.distance - radii >= em.margin {
                return;
            }
            separated(em, p, q, &c, out);
            return;
        }
        // GJK did not answer: the edge pairs, if not yet tested, decide.
        if faces_separate && edge_axes(p, q, one_sided, stop, &mut sat).is_none() {
            return;
        }
    }
    overlapping(em, p, q, &sat, one_sided, out);
}

/// The feature of `x` holding its surface point `c` (world): a vertex within the
/// tolerance, else an edge within it, else the face whose plane holds `c` and faces
/// `toward` the other core most.
fn classify(x: &Placed, c: &Vec3, toward: &Vec3) -> Feature {
    let poly = x.poly;
    if poly.vertices.len() == 1 {
        return Feature::Vertex(0);
    }
    let local = x.pose.inv_act_point(c);
    let dir = x.pose.rot.tr_mul(toward);
    let tol = CLASSIFY_TOL * (poly.bounding_radius + (local - poly.center).norm()).max(1e-300);
    let mut best = (0usize, f64::INFINITY);
    for (i, v) in poly.vertices.iter().enumerate() {
        let d = (v - local).norm();
        if d < best.1 {
            best = (i, d);
        }
    }
    if best.1 <= tol {
        return Feature::Vertex(best.0 as u32);
    }
    let mut best = (0usize, f64::INFINITY);
    for e in 0..poly.edges.len() {
        let (a, u) = poly.edge_segment(e);
        let t = super::closest_points::point_segment(&local, &a, &u);
        let d = (a + u * t - local).norm();
        if d < best.1 {
            best = (e, d);
        }
    }
    if best.1 <= tol || poly.faces.is_empty() {
        return Feature::Edge(best.0 as u32);
    }
    let mut on_plane: Option<(usize, f64)> = None;
    let mut nearest = (0usize, f64::INFINITY);
    for (f, face) in poly.faces.iter().enumerate() {
        let d = (face.normal.dot(&local) - face.offset).abs();
        if d < nearest.1 {
            nearest = (f, d);
        }
        if d <= tol {
            let facing = face.normal.dot(&dir);
            if on_plane.is_none_or(|(_, b)| facing > b) {
                on_plane = Some((f, facing));
            }
        }
    }
    Feature::Face(on_plane.map_or(nearest.0, |(f, _)| f) as u32)
}

/// Disjoint cores: the contacts of their closest features. Returns the number appended.
fn separated(em: &Emitter, p: &Placed, q: &Placed, c: &Closest, out: &mut Vec<Contact>) -> usize {
    let dir = c.q - c.p;
    let fp = classify(p, &c.p, &dir);
    let fq = classify(q, &c.q, &-dir);
    match (fp, fq) {
        (Feature::Face(f), other) => {
            let seed = matches!(other, Feature::Vertex(_)).then_some((fp, fq, dir));
            face_manifold(em, p, q, true, f as usize, Some(other), seed, out)
        }
        (other, Feature::Face(f)) => {
            let seed = matches!(other, Feature::Vertex(_)).then_some((fp, fq, dir));
            face_manifold(em, p, q, false, f as usize, Some(other), seed, out)
        }
        (Feature::Edge(i), Feature::Edge(j)) => {
            let (_, pe) = p.edge(i as usize);
            let (_, qe) = q.edge(j as usize);
            if pe.cross(&qe).norm() <= PARALLEL_SIN * pe.norm() * qe.norm() {
                parallel_edges(em, p, i as usize, q, j as usize, &dir, out)
            } else {
                // The normal's sign from the edges' arcs: at touching, `dir` is rounding
                // noise in no particular direction.
                let hint = edge_pair_axis(p, i as usize, q, j as usize).unwrap_or(dir);
                em.emit(fp, fq, &hint, out).is_some() as usize
            }
        }
        _ => em.emit(fp, fq, &dir, out).is_some() as usize,
    }
}

/// Parallel edges `i` of P and `j` of Q: vertex–edge contacts at the ends of their
/// overlap, or the vertex–vertex contact of their nearest ends.
pub(crate) fn parallel_edges(
    em: &Emitter,
    p: &Placed,
    i: usize,
    q: &Placed,
    j: usize,
    hint: &Vec3,
    out: &mut Vec<Contact>,
) -> usize {
    let (pa, pe) = p.edge(i);
    let (qa, qe) = q.edge(j);
    let pv = p.poly.edges[i].v;
    let qv = q.poly.edges[j].v;
    let tol = 1e-9 * p.scale().max(q.scale());
    let mut count = 0;
    match parallel_overlap(&pa, &pe, &qa, &qe, tol) {
        Parallel::Overlap(ends) => {
            for end in ends {
                let (fp, fq) = match end {
                    OverlapEnd::First(k) => (Feature::Vertex(pv[k]), Feature::Edge(j as u32)),
                    OverlapEnd::Second(k) => (Feature::Edge(i as u32), Feature::Vertex(qv[k])),
                };
                count += em.emit(fp, fq, hint, out).is_some() as usize;
            }
        }
        Parallel::Ends(kp, kq) => {
            count += em.emit(Feature::Vertex(pv[kp]), Feature::Vertex(qv[kq]), hint, out).is_some() as usize;
        }
    }
    count
}

/// Overlapping (or touching) cores: the contacts of the axis of largest separation.
fn overlapping(em: &Emitter, p: &Placed, q: &Placed, sat: &Sat, one_sided: bool, out: &mut Vec<Contact>) {
    let scale = p.scale().max(q.scale());
    let wins = |x: f64, y: f64| x > y + PREFER_REL * y.abs() + PREFER_ABS * scale;
    let face = match (sat.face_p, sat.face_q) {
        (Some(fp), Some(fq)) => Some(if wins(fq.1, fp.1) { (false, fq) } else { (true, fp) }),
        (Some(fp), None) => Some((true, fp)),
        (None, Some(fq)) => Some((false, fq)),
        (None, None) => None,
    };
    if let Some(e) = sat.edge {
        if face.is_none_or(|(_, (_, s))| wins(e.sep, s))
            && em.emit(Feature::Edge(e.ep as u32), Feature::Edge(e.eq as u32), &e.axis, out).is_some()
        {
            return;
        }
    }
    let Some((ref_is_p, (f, _))) = face else { return };
    let (r, i) = if ref_is_p { (p, q) } else { (q, p) };
    let n = r.face_normal(f);
    let (v, _) = i.support(&-n);
    let anchor = Feature::Vertex(v as u32);
    // (not for terrain triangles: there an empty manifold means the candidates lay on
    // flat or concave mesh features, whose neighbours carry the contacts)
    if face_manifold(em, p, q, ref_is_p, f, Some(anchor), None, out) == 0 && !one_sided {
        let (fp, fq, hint) =
            if ref_is_p { (Feature::Face(f as u32), anchor, n) } else { (anchor, Feature::Face(f as u32), -n) };
        em.emit(fp, fq, &hint, out);
    }
}
