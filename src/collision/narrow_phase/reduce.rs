//! Contact-manifold reduction: the contacts of one pair of convex shapes (or of a convex
//! shape and a half-space) cut down to at most [`MAX_PAIR_CONTACTS`], keeping the
//! deepest contact and the corners of the support polygon.
//!
//! A face pair of two convex meshes gives one contact per corner of its clipped polygon,
//! and a convex mesh on a plane one per vertex in range: a 16-sided cylinder standing on
//! its cap gives 16 contacts, the hull of a scanned part resting on the floor hundreds.
//! Rows beyond the corners of the support polygon add nothing to what the contacts can
//! hold (their normal rows are combinations of the corners' rows, up to the depth
//! differences) and cost LCP work that grows with their number. The kept set, with
//! `N` the normal of the deepest contact and areas measured in the plane ⊥ `N`:
//!
//! 1. the deepest contact (the smallest signed distance);
//! 2. the contact farthest from it;
//! 3. then, one at a time, the contact whose addition grows the area of the convex hull
//!    of the kept points the most, while some addition grows it (points inside the hull,
//!    or on a line when all are collinear, add nothing and are dropped).
//!
//! Ties go to the contact found first, so the choice is deterministic, and the kept
//! contacts stay in the order the narrow phase produced them. The choice is a discrete
//! function of the poses: the step's Jacobians are exact wherever it does not change
//! under a small motion (a change of the kept set is a contact-mode switch, like a
//! contact appearing at the margin).

use crate::collision::contact::Contact;
use crate::math::Vec3;

/// The most contacts one pair of convex shapes (or a convex shape and a half-space)
/// keeps: eight, the corners of a box face clipped against another box face.
pub const MAX_PAIR_CONTACTS: usize = 8;

/// Relative area below which an addition does not grow the hull (a point on its boundary
/// or inside, within round-off).
const AREA_RTOL: f64 = 1e-12;

/// Reduces the contacts `out[start..]` of one shape pair to at most `max` (module doc).
pub(crate) fn reduce_manifold(out: &mut Vec<Contact>, start: usize, max: usize) {
    let n = out.len() - start;
    if n <= max || max == 0 {
        return;
    }
    let cs = &out[start..];
    let deepest = (0..n).fold(0, |best, i| if cs[i].geometry.distance < cs[best].geometry.distance { i } else { best });
    let normal = cs[deepest].geometry.normal;
    let (u, v) = plane_basis(&normal);
    let origin = cs[deepest].geometry.point;
    let flat: Vec<[f64; 2]> = cs
        .iter()
        .map(|c| {
            let d = c.geometry.point - origin;
            [d.dot(&u), d.dot(&v)]
        })
        .collect();
    let mut kept = vec![deepest];
    let far = (0..n).fold(deepest, |best, i| if norm2(&flat[i]) > norm2(&flat[best]) { i } else { best });
    let scale = norm2(&flat[far]);
    if far != deepest && scale > 0.0 {
        kept.push(far);
        let mut points: Vec<[f64; 2]> = kept.iter().map(|&i| flat[i]).collect();
        let mut trial: Vec<[f64; 2]> = Vec::with_capacity(max + 1);
        let mut area = 0.0;
        while kept.len() < max {
            let mut best: Option<(usize, f64)> = None;
            for i in (0..n).filter(|i| !kept.contains(i)) {
                trial.clear();
                trial.extend_from_slice(&points);
                trial.push(flat[i]);
                let a = hull_area(&mut trial);
                if a > area + AREA_RTOL * scale && best.is_none_or(|(_, b)| a > b) {
                    best = Some((i, a));
                }
            }
            let Some((i, a)) = best else { break };
            kept.push(i);
            points.push(flat[i]);
            area = a;
        }
    }
    kept.sort_unstable();
    let mut k = 0;
    let mut index = 0;
    out.retain(|_| {
        let keep = index < start || kept.get(k).is_some_and(|&i| i + start == index);
        if index >= start && keep {
            k += 1;
        }
        index += 1;
        keep
    });
}

/// Two unit vectors that complete `n` to an orthonormal basis.
fn plane_basis(n: &Vec3) -> (Vec3, Vec3) {
    let helper = if n.x.abs() < 0.6 { Vec3::x() } else { Vec3::y() };
    let u = n.cross(&helper).normalize();
    (u, n.cross(&u))
}

fn norm2(p: &[f64; 2]) -> f64 {
    p[0] * p[0] + p[1] * p[1]
}

/// The area of the convex hull of `points` (Andrew's monotone chain; reorders them).
fn hull_area(points: &mut [[f64; 2]]) -> f64 {
    let n = points.len();
    if n < 3 {
        return 0.0;
    }
    points.sort_by(|a, b| a[0].total_cmp(&b[0]).then(a[1].total_cmp(&b[1])));
    let cross =
        |o: &[f64; 2], a: &[f64; 2], b: &[f64; 2]| (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
    let mut hull: Vec<[f64; 2]> = Vec::with_capacity(2 * n);
    for p in points.iter() {
        while hull.len() >= 2 && cross(&hull[hull.len() - 2], &hull[hull.len() - 1], p) <= 0.0 {
            hull.pop();
        }
        hull.push(*p);
    }
    let lower = hull.len() + 1;
    for p in points.iter().rev().skip(1) {
        while hull.len() >= lower && cross(&hull[hull.len() - 2], &hull[hull.len() - 1], p) <= 0.0 {
            hull.pop();
        }
        hull.push(*p);
    }
    hull.pop();
    let m = hull.len();
    0.5 * (0..m).map(|i| cross(&[0.0, 0.0], &hull[i], &hull[(i + 1) % m])).sum::<f64>().abs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hull_area_of_a_square_with_an_inside_point() {
        let mut pts = vec![[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.5, 0.5], [0.5, 0.0]];
        assert!((hull_area(&mut pts) - 1.0).abs() < 1e-15);
        let mut line = vec![[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]];
        assert_eq!(hull_area(&mut line), 0.0);
    }
}
